/*
 * test_cuda_exact.c — exact mode (SCHEDC_SUM_EXACT / SCHEDC_AVG_EXACT) on the cuda backend, on the
 * emulated device (or a GPU): every rank's result must be bit for bit the independent exact
 * reference of tests/exact_ref.h AND the threads backend's result for the same plan and inputs.
 * Modes: `virtual` (one process, virtual ranks), `devices` (one process, a device per rank),
 * `procs` (a forked process per device); `-` or a part name picks part of the virtual sweep, so
 * ctest can run it in pieces side by side. Usage: test_cuda_exact SCHEDULES_DIR MODE [PART]
 *   virtual: ring, tree, direct, halving_doubling × 1..8 ranks × allreduce / reduce_scatter /
 *     reduce (those the schedule builds) × f32 / f16 / bf16 × sum / avg, counts 37 (the largest
 *     input on the last rank only) and 1031 (several tiles; f32 sum, or everything at 3 ranks),
 *     half the f32 allreduces in place; then every bf16/f16 pattern (and 65536 f32 ones) onto a
 *     grid that rounds many of them, NaN / ±Inf, avg's sticky bit, count 0, exact leaves
 *     refused, and a rank in exact mode against one that is not (SCHEDC_EMISMATCH naming the op);
 *   devices, procs: ring and direct at 3 and 4 ranks, every collective, dtype and op.
 * Every dtype and op of a plan share one compiled source (the format is a kernel parameter), so
 * the emulator compiles once per plan and mode.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../plan_load.h"
#include "../exact_ref.h"
#include "schedc/schedc.h"

enum { MAXN = 8 };
enum { M_VIRTUAL, M_DEVICES, M_PROCS };
static int g_mode;

typedef struct job {
  schedc_comm *comm;
  const schedc_plan *plan;
  int coll, root, rank, inplace;
  schedc_dtype dt;
  schedc_op op;
  size_t count, K;
  const void *in;
  void *out;
  schedc_status st;
  char err[512];
} job;

static schedc_status call(const job *j, const void *send, void *recv) {
  if (j->coll == SCHEDC_ALLREDUCE) return schedc_allreduce(send, recv, j->count, j->dt, j->op, j->comm, j->plan);
  if (j->coll == SCHEDC_REDUCE_SCATTER) return schedc_reduce_scatter(send, recv, j->count, j->dt, j->op, j->comm, j->plan);
  return schedc_reduce(send, recv, j->count, j->dt, j->op, j->root, j->comm, j->plan);
}
static size_t in_bytes(const job *j) { return j->K * schedc_dtype_size(j->dt); }
static size_t out_bytes(const job *j) { return (j->coll == SCHEDC_REDUCE_SCATTER ? j->count : j->K) * schedc_dtype_size(j->dt); }

/* threads: a thread per rank, host buffers */
static void *thread_main(void *p) {
  job *j = p;
  const void *send = j->in;
  if (j->inplace) { memcpy(j->out, j->in, in_bytes(j)); send = j->out; }
  j->st = call(j, send, j->out);
  if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
  return NULL;
}

/* cuda: device buffers, every rank's call issued from this thread (n = 1: one rank of a process
 * per device), one sync, the results copied back. */
static void run_cuda(job *js, int n) {
  void *din[MAXN], *dout[MAXN];
  for (int r = 0; r < n; r++) {
    job *j = &js[r];
    CHECK(schedc_cuda_alloc(j->comm, in_bytes(j) + 16, &din[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_alloc(j->comm, in_bytes(j) + 16, &dout[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(j->comm, j->inplace ? dout[r] : din[r], j->in, in_bytes(j)) == SCHEDC_OK);
  }
  for (int r = 0; r < n; r++) {
    job *j = &js[r];
    j->st = call(j, j->inplace ? dout[r] : din[r], dout[r]);
    if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
  }
  schedc_status st = schedc_cuda_sync(js[0].comm);
  for (int r = 0; r < n; r++) {
    if (st && !js[r].st) { js[r].st = st; snprintf(js[r].err, sizeof js[r].err, "sync: %s", schedc_errmsg()); }
    CHECK(schedc_cuda_copy(js[r].comm, js[r].out, dout[r], out_bytes(&js[r])) == SCHEDC_OK);
    schedc_cuda_free(js[r].comm, din[r]);
    schedc_cuda_free(js[r].comm, dout[r]);
  }
}

/* A process per device: each rank forked with its own communicator; results through a mapping. */
static int g_job;
static void run_procs(job *js, int n) {
  size_t slot = 8 + 512 + out_bytes(&js[0]) + 64;
  char *shared = mmap(NULL, (size_t)n * slot, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  char name[64];
  snprintf(name, sizeof name, "cx%d-%d", (int)getpid(), g_job++);
  pid_t pid[MAXN];
  for (int r = 0; r < n; r++) {
    if ((pid[r] = fork()) == 0) {
      schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
      co.timeout_s = 60;
      char *mine = shared + (size_t)r * slot;
      schedc_status st = schedc_comm_init_cuda_rank(r, n, r, name, &co, &js[r].comm);
      if (st == SCHEDC_OK) {
        run_cuda(&js[r], 1);
        st = js[r].st ? js[r].st : tc_fail ? SCHEDC_EINTERNAL : SCHEDC_OK;
        memcpy(mine + 8 + 512, js[r].out, out_bytes(&js[r]));
        schedc_comm_free(js[r].comm);
      }
      memcpy(mine, &st, sizeof st);
      snprintf(mine + 8, 512, "%s", js[r].err[0] ? js[r].err : schedc_errmsg());
      _exit(0);
    }
  }
  for (int r = 0; r < n; r++) waitpid(pid[r], NULL, 0);
  for (int r = 0; r < n; r++) {
    char *mine = shared + (size_t)r * slot;
    memcpy(&js[r].st, mine, sizeof js[r].st);
    snprintf(js[r].err, sizeof js[r].err, "%s", mine + 8);
    memcpy(js[r].out, mine + 8 + 512, out_bytes(&js[r]));
  }
  munmap(shared, (size_t)n * slot);
}

/* Rank r's result part against want (the whole K-element result): wrong elements. */
static int compare(const job *j, const void *got, const void *want, const char *who, const char *label) {
  if (j->coll == SCHEDC_REDUCE && j->rank != j->root) return 0;
  size_t lo = j->coll == SCHEDC_REDUCE_SCATTER ? (size_t)j->rank * j->count : 0, len = out_bytes(j) / schedc_dtype_size(j->dt);
  int bad = 0;
  for (size_t i = 0; i < len; i++) {
    uint32_t g = get(j->dt, got, i), w = get(j->dt, want, lo + i);
    if (g != w && bad++ < 3)
      fprintf(stderr, "%s: %s rank %d element %zu: got %08x, want %08x\n", label, who, j->rank, lo + i, g, w);
  }
  return bad;
}

/* One case: the reference, threads, cuda (comms given for one process; procs fork their own).
 * Returns wrong elements + failed calls. */
static int run_case(schedc_comm **tcomms, schedc_comm **ccomms, const schedc_plan *plan, int coll, int n,
                    schedc_dtype dt, schedc_op op, size_t count, int seed, int inplace, int skew, const uint32_t *given,
                    const char *label) {
  size_t K = coll == SCHEDC_REDUCE_SCATTER ? count * (size_t)n : count, es = schedc_dtype_size(dt);
  fmt f = fmt_of(dt);
  void *in[MAXN];
  char *want = malloc(K * es + 8);
  job tj[MAXN], cj[MAXN];
  int bad = 0;
  for (int r = 0; r < n; r++) {
    in[r] = malloc(K * es + 8);
    for (size_t i = 0; i < K; i++) put(dt, in[r], i, given ? given[(size_t)r * K + i] : input(&f, n, r, i, seed));
    /* skew: every normal input of the rank k ranks before the last divided by 2^(3k) (where it stays
     * normal), so the largest is on the last rank only: a grid taken from any other rank, or from
     * one process's slots, is wrong */
    uint32_t d = 3u * (uint32_t)(n - 1 - r), mb = (uint32_t)f.p - 1;
    for (size_t i = 0; skew && i < K; i++) {
      uint32_t b = get(dt, in[r], i), ef = (b & ~f.sign) >> mb;
      if (ef > d + 1) put(dt, in[r], i, b - (d << mb));
    }
  }
  bad += reference(dt, op == SCHEDC_AVG_EXACT, in, n, K, want);
  for (int r = 0; r < n; r++) {
    job j = {NULL, plan, coll, coll == SCHEDC_REDUCE ? n / 2 : 0, r, inplace && coll != SCHEDC_REDUCE_SCATTER, dt, op,
             count, K, in[r], NULL, SCHEDC_OK, ""};
    tj[r] = cj[r] = j;
    tj[r].comm = tcomms[r];
    cj[r].comm = ccomms ? ccomms[r] : NULL;
    tj[r].out = malloc(K * es + 8);
    cj[r].out = malloc(K * es + 8);
    memset(tj[r].out, 0xee, K * es);
    memset(cj[r].out, 0xee, K * es);
  }
  pthread_t t[MAXN];
  for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, thread_main, &tj[r]);
  for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
  if (g_mode == M_PROCS) run_procs(cj, n);
  else run_cuda(cj, n);
  for (int r = 0; r < n; r++) {
    if (tj[r].st) { fprintf(stderr, "%s: threads rank %d: %s\n", label, r, tj[r].err); bad++; }
    else bad += compare(&tj[r], tj[r].out, want, "threads", label);
    if (cj[r].st) { fprintf(stderr, "%s: cuda rank %d: %s\n", label, r, cj[r].err); bad++; }
    else {
      bad += compare(&cj[r], cj[r].out, want, "cuda", label);
      if (!tj[r].st && memcmp(cj[r].out, tj[r].out, out_bytes(&cj[r])) && (!(cj[r].coll == SCHEDC_REDUCE) || r == cj[r].root)) {
        fprintf(stderr, "%s: rank %d: cuda and threads differ\n", label, r);
        bad++;
      }
    }
  }
  for (int r = 0; r < n; r++) { free(in[r]); free(tj[r].out); free(cj[r].out); }
  free(want);
  return bad;
}

static schedc_plan *load(const char *dir, const char *file, int coll, int n, int root) {
  return tl_plan_in(dir, file, coll, n, root); /* NULL: a layout it does not build */
}

static int init_cuda(int n, schedc_comm **comms) {
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 60;
  if (g_mode == M_PROCS) return 0;
  if (schedc_comm_init_cuda(n, NULL, g_mode == M_VIRTUAL ? SCHEDC_CUDA_VIRTUAL : 0, &co, comms) == SCHEDC_OK) return 0;
  fprintf(stderr, "cuda init (%d ranks): %s\n", n, schedc_errmsg());
  return 1;
}

static void sweep(const char *dir, const char *part) {
  enum { AR = 1 << SCHEDC_ALLREDUCE, RS = 1 << SCHEDC_REDUCE_SCATTER, RD = 1 << SCHEDC_REDUCE };
  static const struct { const char *file; int colls; } sch[] = {
      {"ring.lua", AR | RS | RD}, {"tree.lua", AR | RS | RD}, {"direct.lua", AR | RS | RD}, {"halving_doubling.lua", AR | RS | RD}};
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_F16, SCHEDC_BF16};
  const size_t counts[] = {37, 1031};
  int cases = 0, failed = 0, plans = 0;
  for (int n = 1; n <= MAXN; n++) {
    if (g_mode != M_VIRTUAL && n != 3 && n != 4) continue;
    schedc_comm *tcomms[MAXN], *ccomms[MAXN];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 60;
    co.slice_bytes = 4096; /* several slices per chunk on the threads' plan path */
    CHECK(schedc_comm_init_threads(n, &co, tcomms) == SCHEDC_OK);
    int cuda_ok = init_cuda(n, ccomms) == 0;
    CHECK(cuda_ok);
    for (size_t si = 0; si < sizeof sch / sizeof sch[0] && cuda_ok; si++) {
      if (part && strncmp(sch[si].file, part, strlen(part))) continue;
      if (g_mode != M_VIRTUAL && si != 0 && si != 2) continue;
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if (!(sch[si].colls & (1 << coll))) continue;
        schedc_plan *plan = load(dir, sch[si].file, coll, n, coll == SCHEDC_REDUCE ? n / 2 : 0);
        if (!plan) continue;
        plans++;
        for (size_t d = 0; d < 3; d++)
          for (int o = 0; o < 2; o++)
            for (size_t ci = 0; ci < 2; ci++) {
              if (ci == 1 && (d > 0 || o > 0) && g_mode == M_VIRTUAL && n != 3) continue; /* the long count: f32 sum, or at 3 ranks */
              schedc_op op = o ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT;
              int inplace = d == 0 && coll == SCHEDC_ALLREDUCE && (n + (int)ci) % 2 == 0;
              char label[256];
              snprintf(label, sizeof label, "%s n=%d %s %s %s count=%zu%s%s", sch[si].file, n,
                       schedc_collective_name((schedc_collective)coll), schedc_dtype_name(dts[d]), schedc_op_name(op),
                       counts[ci], inplace ? " inplace" : "", ci == 0 ? " skewed" : "");
              cases++;
              int b = run_case(tcomms, g_mode == M_PROCS ? NULL : ccomms, plan, coll, n, dts[d], op, counts[ci],
                               (int)(si * 7 + d * 3 + ci + 11 * o), inplace, ci == 0, NULL, label);
              if (b) { failed++; fprintf(stderr, "FAIL %s (%d)\n", label, b); }
            }
        schedc_plan_free(plan);
      }
    }
    for (int r = 0; r < n; r++) schedc_comm_free(tcomms[r]);
    for (int r = 0; cuda_ok && g_mode != M_PROCS && r < n; r++) schedc_comm_free(ccomms[r]);
  }
  printf("sweep (%s%s%s): %d plans, %d cases, %d failed; %ld elements checked against the bound, %ld of them on "
         "the grid and equal to the exact real sum rounded once\n", g_mode == M_VIRTUAL ? "virtual" : g_mode == M_DEVICES ?
         "devices" : "procs", part ? " " : "", part ? part : "", plans, cases, failed, g_checked_bound, g_checked_exact);
  CHECK(failed == 0);
  CHECK(cases >= (g_mode == M_VIRTUAL ? (part ? 60 : 400) : 50));
  CHECK(g_checked_exact > 0 && g_checked_exact < g_checked_bound);
}

/* NaN and infinities (the flags, out of band): on 3 virtual ranks, one element of one rank's
 * input special, every result element must be the special value (threads agree). */
static void specials(const char *dir) {
  schedc_plan *plan = load(dir, "ring.lua", SCHEDC_ALLREDUCE, 3, 0);
  CHECK(plan != NULL);
  if (!plan) return;
  schedc_comm *tcomms[3], *ccomms[3];
  CHECK(schedc_comm_init_threads(3, NULL, tcomms) == SCHEDC_OK);
  if (init_cuda(3, ccomms)) { CHECK(0); return; }
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_F16, SCHEDC_BF16};
  for (size_t d = 0; d < 3; d++) {
    fmt f = fmt_of(dts[d]);
    /* which specials (bits: 1 NaN at rank 0, 2 +Inf at rank 1, 4 -Inf at rank 2) -> the result */
    static const struct { int which; int want; } cs[] = {{1, 0}, {2, 1}, {4, 2}, {6, 0}, {3, 0}, {7, 0}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
      size_t K = 20, es = schedc_dtype_size(dts[d]);
      void *in[3];
      job tj[3], cj[3];
      for (int r = 0; r < 3; r++) {
        in[r] = malloc(K * es);
        for (size_t i = 0; i < K; i++) put(dts[d], in[r], i, input(&f, 3, r, i, 5));
        if (cs[c].which & (1 << r)) put(dts[d], in[r], 7 + r, r == 0 ? f.qnan | 1 : r == 1 ? f.inf : f.inf | f.sign);
        job j = {NULL, plan, SCHEDC_ALLREDUCE, 0, r, 0, dts[d], c % 2 ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, K, K, in[r],
                 NULL, SCHEDC_OK, ""};
        tj[r] = cj[r] = j;
        tj[r].comm = tcomms[r];
        cj[r].comm = ccomms[r];
        tj[r].out = malloc(K * es);
        cj[r].out = malloc(K * es);
      }
      pthread_t t[3];
      for (int r = 0; r < 3; r++) pthread_create(&t[r], NULL, thread_main, &tj[r]);
      for (int r = 0; r < 3; r++) pthread_join(t[r], NULL);
      run_cuda(cj, 3);
      uint32_t want = cs[c].want == 0 ? f.qnan : cs[c].want == 1 ? f.inf : f.inf | f.sign;
      int bad = 0;
      for (int r = 0; r < 3; r++) {
        CHECK(tj[r].st == SCHEDC_OK && cj[r].st == SCHEDC_OK);
        for (size_t i = 0; i < K; i++) {
          bad += get(dts[d], cj[r].out, i) != want;
          bad += get(dts[d], tj[r].out, i) != want;
        }
        free(in[r]); free(tj[r].out); free(cj[r].out);
      }
      if (bad) fprintf(stderr, "specials %s case %zu: %d elements not %08x\n", schedc_dtype_name(dts[d]), c, bad, want);
      CHECK(bad == 0);
    }
  }
  for (int r = 0; r < 3; r++) { schedc_comm_free(tcomms[r]); schedc_comm_free(ccomms[r]); }
  schedc_plan_free(plan);
}

/* avg's sticky bit: 3 ranks of f32 on the grid 2^0 (2^59 pins E = 59; h = 2) whose sum is
 * S = 3q + 1, q = 2^57 + 2^33: the quotient's bits below the float's last (2^34) are exactly half
 * of it, and the remainder 1 puts the exact quotient above that tie: it rounds up (to even would
 * round down). Only the sticky bit tells; random inputs at n <= 8 never need it. */
static void avg_sticky(const char *dir) {
  schedc_plan *plan = load(dir, "ring.lua", SCHEDC_ALLREDUCE, 3, 0);
  schedc_comm *tcomms[3], *ccomms[3];
  CHECK(plan != NULL && schedc_comm_init_threads(3, NULL, tcomms) == SCHEDC_OK);
  if (!plan || init_cuda(3, ccomms)) { CHECK(0); return; }
  float v[3] = {0x1p59f, -(0x1p57f - 0x3p33f), 1.0f};
  uint32_t given[3];
  memcpy(given, v, sizeof given);
  CHECK(run_case(tcomms, ccomms, plan, SCHEDC_ALLREDUCE, 3, SCHEDC_F32, SCHEDC_AVG_EXACT, 1, 0, 0, 0, given,
                 "avg sticky") == 0);
  /* the case is the edge: the reference gives 2^57 + 2^34 (up), not 2^57 (the tie to even) */
  void *in[3] = {&given[0], &given[1], &given[2]};
  uint32_t ref = 0;
  CHECK(reference(SCHEDC_F32, 1, in, 3, 1, &ref) == 0);
  float w, up = 0x1p57f + 0x1p34f;
  memcpy(&w, &ref, 4);
  CHECK(w == up);
  for (int r = 0; r < 3; r++) { schedc_comm_free(tcomms[r]); schedc_comm_free(ccomms[r]); }
  schedc_plan_free(plan);
}

/* Every bf16 and f16 bit pattern below 2^21 in magnitude (the reference's exact sums hold that;
 * NaN, Inf and larger patterns as 0), and 65536 random f32 ones of exponents -126..20, on rank 0
 * of 2; rank 1 zeros but one value that sets the grid (bf16 and f32: 1.5 * 2^20, so g = -40 and
 * every value below 2^-33 (bf16) or 2^-17 (f32) is rounded onto it, ties and flushes included;
 * f16: 2^15, every value on it), sum and avg: every element against the reference and threads. */
static void every_pattern(const char *dir) {
  schedc_plan *plan = load(dir, "ring.lua", SCHEDC_ALLREDUCE, 2, 0);
  schedc_comm *tcomms[2], *ccomms[2];
  CHECK(plan != NULL && schedc_comm_init_threads(2, NULL, tcomms) == SCHEDC_OK);
  if (!plan || init_cuda(2, ccomms)) { CHECK(0); return; }
  enum { K = 65536 };
  uint32_t *given = malloc(2 * K * sizeof *given);
  const schedc_dtype dts[] = {SCHEDC_BF16, SCHEDC_F16, SCHEDC_F32};
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int d = 0; d < 3; d++) {
    fmt f = fmt_of(dts[d]);
    for (uint32_t i = 0; i < K; i++) {
      uint32_t b = i;
      if (dts[d] == SCHEDC_F32) { /* random significand and sign, exponent field 1..254 */
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        b = (uint32_t)(x & 0x807fffffu) | (uint32_t)(1 + (x >> 40) % 147) << 23;
      }
      uint64_t m;
      int k;
      decomp(&f, b & ~f.sign, &m, &k);
      given[i] = (b & ~f.sign) >= f.inf || (m && k + 64 - __builtin_clzll(m) > 21) ? 0 : b;
      given[K + i] = 0;
    }
    given[K] = dts[d] == SCHEDC_BF16 ? 0x49c0u : dts[d] == SCHEDC_F16 ? (15u + 15u) << 10 : 0x49c00000u;
    for (int o = 0; o < 2; o++) {
      char label[64];
      snprintf(label, sizeof label, "every pattern %s %s", schedc_dtype_name(dts[d]), o ? "avg" : "sum");
      int bad = run_case(tcomms, ccomms, plan, SCHEDC_ALLREDUCE, 2, dts[d], o ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, K,
                         0, 0, 0, given, label);
      if (bad) fprintf(stderr, "FAIL %s (%d)\n", label, bad);
      CHECK(bad == 0);
    }
  }
  free(given);
  for (int r = 0; r < 2; r++) { schedc_comm_free(tcomms[r]); schedc_comm_free(ccomms[r]); }
  schedc_plan_free(plan);
}

/* A rank in exact mode and one that is not: SCHEDC_EMISMATCH naming the op (the collection's
 * agreement compares the op as the caller gave it). */
static void mismatch(void) {
  schedc_comm *c[2];
  if (init_cuda(2, c)) { CHECK(0); return; }
  void *d[2];
  float host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int r = 0; r < 2; r++) {
    CHECK(schedc_cuda_alloc(c[r], sizeof host, &d[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(c[r], d[r], host, sizeof host) == SCHEDC_OK);
  }
  /* count 0: nothing to convert, nothing to sum, no failure */
  for (int r = 0; r < 2; r++) CHECK(schedc_allreduce(d[r], d[r], 0, SCHEDC_BF16, SCHEDC_AVG_EXACT, c[r], NULL) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(c[0]) == SCHEDC_OK);
  /* exact leaves live in host memory: refused on cuda, even one leaf, before anything runs */
  schedc_accum *acc = NULL;
  CHECK(schedc_accum_create(8, SCHEDC_F32, SCHEDC_SUM_EXACT, 0, 1, &acc) == SCHEDC_OK);
  if (acc) {
    CHECK(schedc_accumulate(acc, 0, host) == SCHEDC_OK);
    CHECK(schedc_accum_allreduce(acc, d[0], c[0], NULL) == SCHEDC_EUNAVAIL);
    CHECK_CONTAINS(schedc_errmsg(), "exact leaves (schedc_accum_allreduce) are not available on the cuda backend");
    schedc_accum_free(acc);
  }
  CHECK(schedc_allreduce(d[0], d[0], 8, SCHEDC_F32, SCHEDC_SUM_EXACT, c[0], NULL) == SCHEDC_OK);
  CHECK(schedc_allreduce(d[1], d[1], 8, SCHEDC_F32, SCHEDC_SUM, c[1], NULL) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), "op");
  CHECK_CONTAINS(schedc_errmsg(), "sum_exact");
  for (int r = 0; r < 2; r++) { schedc_cuda_free(c[r], d[r]); schedc_comm_free(c[r]); }
}

/* NVRTC (no GPU needed): the exact source of every shipped schedule at 4 ranks (hierarchical on 2
 * nodes) compiles for sm_80 and sm_90 (PTX; a cubin through ptxas for the ring), also with
 * checksums and split across 2 nodes; it is the same text for f32, f16, bf16, sum and avg; it has
 * the three exact kernels and the plan's; and its PTX holds no floating-point instruction at all:
 * exact mode is integers end to end, so no rounding mode, contraction or flush-to-zero of the GPU
 * can touch it. */
static int nvrtc(const char *dir) {
  void *img;
  size_t len;
  if (schedc_cuda_compile("extern \"C\" __global__ void k(float *x) { x[0] = x[1] + x[2]; }", "sm_90", 1, &img, &len, NULL) ==
      SCHEDC_EUNAVAIL)
    SKIP_TOOL("NVRTC", schedc_errmsg());
  schedc_free(img);
  const char *files[] = {"ring.lua", "tree.lua", "direct.lua", "halving_doubling.lua", "hierarchical.lua"};
  int compiled = 0;
  for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, files[fi]);
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = 4;
    lo.nnodes = fi == 4 ? 2 : 0;
    schedc_plan *plan = NULL;
    CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
    if (!plan) continue;
    const int flags[] = {0, SCHEDC_CUDA_SRC_CHECKSUMS, SCHEDC_CUDA_SRC_NODES(2) | SCHEDC_CUDA_SRC_CHECKSUMS};
    for (int v = 0; v < 3; v++) {
      if (v > 0 && fi != 0 && fi != 2) continue; /* the variants on ring and direct */
      char *src = NULL, *other = NULL;
      CHECK(schedc_cuda_source_v2(plan, -1, SCHEDC_F32, SCHEDC_SUM_EXACT, flags[v], &src) == SCHEDC_OK);
      if (!src) continue;
      CHECK(schedc_cuda_source_v2(plan, -1, SCHEDC_BF16, SCHEDC_AVG_EXACT, flags[v], &other) == SCHEDC_OK);
      CHECK(other && !strcmp(src, other)); /* one source for every format and both ops */
      schedc_free(other);
      CHECK(!strstr(src, "#include"));
      CHECK(strstr(src, "typedef long long sc_acc;") != NULL);
      CHECK(strstr(src, "void schedc_xstats(sc_xargs x)") && strstr(src, "void schedc_xin(sc_xargs x)") &&
            strstr(src, "void schedc_xout(sc_xargs x)") && strstr(src, "schedc_all(sc_args a, int first, int count)"));
      for (int a = 0; a < 2; a++) {
        int ptx = !(a == 1 && fi == 0 && v == 0);
        schedc_status st = schedc_cuda_compile(src, a ? "sm_90" : "sm_80", ptx, &img, &len, NULL);
        if (st != SCHEDC_OK) fprintf(stderr, "%s variant %d sm_%s: %s\n", files[fi], v, a ? "90" : "80", schedc_errmsg());
        CHECK(st == SCHEDC_OK);
        if (st != SCHEDC_OK) continue;
        compiled++;
        if (ptx) {
          const char *t = img;
          CHECK(strstr(t, ".entry schedc_xin") && strstr(t, ".entry schedc_xout") && strstr(t, ".entry schedc_xstats"));
          CHECK(!strstr(t, ".f32") && !strstr(t, ".f64") && !strstr(t, ".f16") && !strstr(t, ".bf16"));
          CHECK(strstr(t, "add.s64") || strstr(t, "add.u64")); /* the plan's integer sum */
        }
        schedc_free(img);
      }
      schedc_free(src);
    }
    schedc_plan_free(plan);
  }
  printf("nvrtc: %d exact-mode compilations\n", compiled);
  CHECK(compiled == 2 * 5 + 2 * 2 * 2);
  return DONE();
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: test_cuda_exact SCHEDULES_DIR virtual|devices|procs|nvrtc [PART]\n"); return 2; }
  if (!strcmp(argv[2], "nvrtc")) return nvrtc(argv[1]);
  g_mode = !strcmp(argv[2], "procs") ? M_PROCS : !strcmp(argv[2], "devices") ? M_DEVICES : M_VIRTUAL;
  const char *part = argc > 3 ? argv[3] : NULL;
  int ndev = schedc_cuda_device_count();
  if (ndev < (g_mode == M_VIRTUAL ? 1 : 4)) SKIP_NO_CUDA("not enough CUDA devices");
  sweep(argv[1], part);
  if (g_mode == M_VIRTUAL && (!part || !strcmp(part, "ring"))) {
    specials(argv[1]);
    avg_sticky(argv[1]);
    every_pattern(argv[1]);
    mismatch();
  }
  return DONE();
}
