/*
 * test_canonical.c — the same bits for any rank count. L leaves (micro-batch gradients) are
 * split over N ranks in aligned blocks; each rank accumulates its block (schedc_accum, leaves in
 * a shuffled order), then an allreduce with a plan verified as canonical combines the ranks. For
 * N = 1, 2, 3, 4, 5, 6, 8, 16 every rank's result must equal, bit for bit, the test's own
 * recursive evaluation of the canonical tree over all L leaves. A ring (not canonical) must not.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "schedc/schedc.h"

#define COUNT 1001

static float **leaves;

/* The canonical tree over leaves [lo, hi): left subtree = largest power of two below the count. */
static void canon(int lo, int hi, float *out) {
  if (hi - lo == 1) { memcpy(out, leaves[lo], COUNT * sizeof *out); return; }
  int left = 1;
  while (left * 2 < hi - lo) left *= 2;
  float *r = malloc(COUNT * sizeof *r);
  canon(lo, lo + left, out);
  canon(lo + left, hi, r);
  for (int i = 0; i < COUNT; i++) out[i] = out[i] + r[i];
  free(r);
}

typedef struct job { schedc_comm *comm; const schedc_plan *plan; int m; float out[COUNT]; schedc_status st; } job;

static void *rank_main(void *p) {
  job *j = p;
  int r = schedc_comm_rank(j->comm);
  schedc_accum *a;
  j->st = schedc_accum_create(COUNT, SCHEDC_F32, SCHEDC_SUM, r * j->m, j->m, &a);
  if (j->st) return NULL;
  /* add the block's leaves in a scrambled order: arrival order must not matter */
  for (int k = 0; k < j->m; k++) {
    int leaf = r * j->m + (k * 5 + r) % j->m;
    if (j->m % 5 == 0) leaf = r * j->m + (j->m - 1 - k);
    if ((j->st = schedc_accumulate(a, leaf, leaves[leaf])) != SCHEDC_OK) break;
  }
  if (!j->st) j->st = schedc_accum_result(a, j->out);
  schedc_accum_free(a);
  if (!j->st) j->st = schedc_allreduce(j->out, j->out, COUNT, SCHEDC_F32, SCHEDC_SUM, j->comm, j->plan);
  return NULL;
}

static int g_nodes; /* nodes for the next run (hierarchical), 0: one */

static int run(const char *sched_dir, const char *file, const char *const *defs, int nd, int N, int L,
               const float *want, int canonical) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", sched_dir, file);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = N;
  lo.nnodes = g_nodes;
  lo.defines = defs;
  lo.ndefines = nd;
  schedc_plan *plan;
  if (schedc_plan_from_script(path, &lo, &plan) != SCHEDC_OK) {
    fprintf(stderr, "%s N=%d: %s\n", file, N, schedc_errmsg());
    return -1;
  }
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  CHECK(in.canonical == canonical);
  schedc_comm *comms[16];
  CHECK(schedc_comm_init_threads(N, NULL, comms) == SCHEDC_OK);
  job *jobs = calloc((size_t)N, sizeof *jobs);
  pthread_t th[16];
  for (int r = 0; r < N; r++) {
    jobs[r].comm = comms[r];
    jobs[r].plan = plan;
    jobs[r].m = L / N;
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  int same = 1;
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < N; r++) {
    CHECK(jobs[r].st == SCHEDC_OK);
    same &= memcmp(jobs[r].out, want, sizeof jobs[r].out) == 0;
  }
  for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);
  free(jobs);
  schedc_plan_free(plan);
  return same;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (int L = 16; L <= 20; L += 4) {
    leaves = malloc((size_t)L * sizeof *leaves);
    for (int l = 0; l < L; l++) {
      leaves[l] = malloc(COUNT * sizeof(float));
      for (int i = 0; i < COUNT; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        leaves[l][i] = ((float)(x >> 40) / 16777216.0f - 0.5f) * (float)(1 << (x % 20));
      }
    }
    float *want = malloc(COUNT * sizeof *want);
    canon(0, L, want);
    const char *hd[] = {"order=canonical"}, *bt[] = {"order=canonical", "shape=binomial", "chunks=3"};
    int Ns16[] = {1, 2, 4, 8, 16}, Ns20[] = {1, 5}; /* 20 leaves: 1 rank (the whole tree) or 5 x 4 */
    int *Ns = L == 16 ? Ns16 : Ns20, nN = L == 16 ? 5 : 2;
    for (int k = 0; k < nN; k++) {
      int N = Ns[k];
      int ok = run(argv[1], "tree.lua", bt, 3, N, L, want, 1);
      if (ok != 1) fprintf(stderr, "tree binomial N=%d L=%d: bits differ from the canonical sum\n", N, L);
      CHECK(ok == 1);
      ok = run(argv[1], "direct.lua", hd, 1, N, L, want, 1);
      if (ok != 1) fprintf(stderr, "direct canonical N=%d L=%d: bits differ\n", N, L);
      CHECK(ok == 1);
      if ((N & (N - 1)) == 0) {
        ok = run(argv[1], "halving_doubling.lua", hd, 1, N, L, want, 1);
        if (ok != 1) fprintf(stderr, "halving_doubling N=%d L=%d: bits differ\n", N, L);
        CHECK(ok == 1);
        g_nodes = N == 16 ? 4 : N >= 4 ? 2 : 1; /* 4 -> 2 nodes of 2, 8 -> 2 of 4, 16 -> 4 of 4 */
        ok = run(argv[1], "hierarchical.lua", hd, 1, N, L, want, 1);
        g_nodes = 0;
        if (ok != 1) fprintf(stderr, "hierarchical canonical N=%d L=%d: bits differ\n", N, L);
        CHECK(ok == 1);
      }
    }
    if (L == 16) { /* a ring is valid but not canonical: its bits differ */
      CHECK(run(argv[1], "ring.lua", NULL, 0, 4, L, want, 0) == 0);
    }
    for (int l = 0; l < L; l++) free(leaves[l]);
    free(leaves);
    free(want);
  }
  /* L = 12 over 3 and 6 ranks (blocks of 4 and 2): non-powers of two of ranks */
  leaves = malloc(12 * sizeof *leaves);
  for (int l = 0; l < 12; l++) {
    leaves[l] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; leaves[l][i] = (float)(x >> 40) * 1e-3f * (float)(1 << (x % 16)); }
  }
  float want[COUNT];
  canon(0, 12, want);
  const char *bt[] = {"order=canonical", "shape=binomial"};
  CHECK(run(argv[1], "tree.lua", bt, 2, 3, 12, want, 1) == 1);
  CHECK(run(argv[1], "tree.lua", bt, 2, 6, 12, want, 1) == 1);
  const char *dc[] = {"order=canonical"};
  CHECK(run(argv[1], "direct.lua", dc, 1, 3, 12, want, 1) == 1);
  CHECK(run(argv[1], "direct.lua", dc, 1, 6, 12, want, 1) == 1);
  for (int l = 0; l < 12; l++) free(leaves[l]);
  free(leaves);

  /* accumulator errors */
  schedc_accum *a;
  CHECK(schedc_accum_create(4, SCHEDC_F32, SCHEDC_SUM, 6, 3, &a) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "must be a power of two");
  CHECK(schedc_accum_create(4, SCHEDC_F32, SCHEDC_SUM, 2, 4, &a) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "multiple of the block size");
  CHECK(schedc_accum_create(4, SCHEDC_BF16, SCHEDC_SUM, 0, 4, &a) == SCHEDC_EINVAL);
  CHECK(schedc_accum_create(4, SCHEDC_F32, SCHEDC_SUM, 4, 4, &a) == SCHEDC_OK);
  float d[4] = {1, 2, 3, 4}, o[4];
  CHECK(schedc_accumulate(a, 3, d) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "not in this rank's block [4, 8)");
  CHECK(schedc_accumulate(a, 5, d) == SCHEDC_OK && schedc_accumulate(a, 4, d) == SCHEDC_OK);
  CHECK(schedc_accumulate(a, 5, d) == SCHEDC_EINVAL); /* consumed into node (4,5) already */
  CHECK_CONTAINS(schedc_errmsg(), "already added");
  CHECK(schedc_accum_result(a, o) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "leaf 6 of block [4, 8) was never added");
  schedc_accum_free(a);
  schedc_accum_free(NULL);
  return DONE();
}
