/*
 * test_cuda_quant.c — quantized wires (q8, q16; docs/compression.md) on the cuda backend, on the
 * emulated device (or a GPU): every rank's result must be bit for bit tests/quant_ref.h's reference
 * AND the threads backend's result for the same plan and inputs, so the generated kernels (the
 * wire's integers summed by the plan, schedc_qstats/qin/qout around them) give the CPU's bits.
 * Modes: `virtual` (one process, virtual ranks): ring, tree, direct, halving_doubling × 1..8 ranks
 * × allreduce / reduce_scatter / reduce × f32 / f16 / bf16 × sum / avg × q8 / q16, sampled, counts
 * 37 and 1031, the largest input on the last rank only in half of them; then NaN refused on every
 * rank with nothing written, and a wire mismatch. `procs` (a forked process per device): ring and
 * direct at 3 ranks. `nvrtc`: the wires' sources of five shipped schedules compile for sm_80 and
 * sm_90 with no floating-point instruction in their PTX. Usage: test_cuda_quant SCHEDULES_DIR MODE
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
#include "../quant_ref.h"
#include "cuda_emit.h"
#include "names.h"
#include "plan.h"
#include "schedc/schedc.h"

enum { MAXN = 8 };
static int g_procs;

typedef struct job {
  schedc_comm *comm;
  const schedc_plan *plan;
  int coll, root, rank, wire;
  schedc_dtype dt;
  schedc_op op;
  size_t count, K;
  const void *in;
  void *out;
  schedc_status st;
  char err[512];
} job;

static schedc_status call(const job *j, const void *send, void *recv) {
  schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
  o.wire = j->wire;
  if (j->coll == SCHEDC_ALLREDUCE) return schedc_allreduce_v2(send, recv, j->count, j->dt, j->op, j->comm, j->plan, &o);
  if (j->coll == SCHEDC_REDUCE_SCATTER)
    return schedc_reduce_scatter_v2(send, recv, j->count, j->dt, j->op, j->comm, j->plan, &o);
  return schedc_reduce_v2(send, recv, j->count, j->dt, j->op, j->root, j->comm, j->plan, &o);
}
static size_t in_bytes(const job *j) { return j->K * schedc_dtype_size(j->dt); }
static size_t out_bytes(const job *j) { return (j->coll == SCHEDC_REDUCE_SCATTER ? j->count : j->K) * schedc_dtype_size(j->dt); }

static void *thread_main(void *p) {
  job *j = p;
  j->st = call(j, j->in, j->out);
  if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
  return NULL;
}

/* cuda: device buffers, every rank's call from this thread, one sync, the results copied back. */
static void run_cuda(job *js, int n) {
  void *din[MAXN], *dout[MAXN];
  for (int r = 0; r < n; r++) {
    CHECK(schedc_cuda_alloc(js[r].comm, in_bytes(&js[r]) + 16, &din[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_alloc(js[r].comm, in_bytes(&js[r]) + 16, &dout[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(js[r].comm, din[r], js[r].in, in_bytes(&js[r])) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(js[r].comm, dout[r], js[r].out, out_bytes(&js[r])) == SCHEDC_OK); /* the 0xee */
  }
  for (int r = 0; r < n; r++) {
    js[r].st = call(&js[r], din[r], dout[r]);
    if (js[r].st) snprintf(js[r].err, sizeof js[r].err, "%s", schedc_errmsg());
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
  snprintf(name, sizeof name, "cq%d-%d", (int)getpid(), g_job++);
  pid_t pid[MAXN];
  for (int r = 0; r < n; r++)
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
  for (int r = 0; r < n; r++) waitpid(pid[r], NULL, 0);
  for (int r = 0; r < n; r++) {
    char *mine = shared + (size_t)r * slot;
    memcpy(&js[r].st, mine, sizeof js[r].st);
    snprintf(js[r].err, sizeof js[r].err, "%s", mine + 8);
    memcpy(js[r].out, mine + 8 + 512, out_bytes(&js[r]));
  }
  munmap(shared, (size_t)n * slot);
}

static int compare(const job *j, const void *got, const void *want, const char *who, const char *label) {
  if (j->coll == SCHEDC_REDUCE && j->rank != j->root) return 0;
  size_t lo = j->coll == SCHEDC_REDUCE_SCATTER ? (size_t)j->rank * j->count : 0, len = out_bytes(j) / schedc_dtype_size(j->dt);
  int bad = 0;
  for (size_t i = 0; i < len; i++) {
    uint32_t g = get(j->dt, got, i), w = get(j->dt, want, lo + i);
    if (g != w && bad++ < 3) fprintf(stderr, "%s: %s rank %d element %zu: got %08x, want %08x\n", label, who, j->rank, lo + i, g, w);
  }
  return bad;
}

/* One case: the reference, threads, cuda. Wrong elements + failed calls. */
static int run_case(schedc_comm **tcomms, schedc_comm **ccomms, const schedc_plan *plan, int coll, int n,
                    schedc_dtype dt, int avg, int wire, size_t count, int seed, const char *label) {
  size_t K = coll == SCHEDC_REDUCE_SCATTER ? count * (size_t)n : count, es = schedc_dtype_size(dt);
  fmt f = fmt_of(dt);
  void *in[MAXN];
  char *want = malloc(K * es + 8);
  job tj[MAXN], cj[MAXN];
  int bad = 0;
  for (int r = 0; r < n; r++) {
    in[r] = malloc(K * es + 8);
    for (size_t i = 0; i < K; i++) put(dt, in[r], i, qinput(&f, n, r, i, seed));
  }
  bad += qref_reference(dt, wire, avg, in, n, K, want, NULL);
  for (int r = 0; r < n; r++) {
    job j = {NULL, plan, coll, coll == SCHEDC_REDUCE ? n / 2 : 0, r, wire, dt, avg ? SCHEDC_AVG : SCHEDC_SUM, count, K,
             in[r], NULL, SCHEDC_OK, ""};
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
  if (g_procs) run_procs(cj, n);
  else run_cuda(cj, n);
  for (int r = 0; r < n; r++) {
    if (tj[r].st) { fprintf(stderr, "%s: threads rank %d: %s\n", label, r, tj[r].err); bad++; }
    else bad += compare(&tj[r], tj[r].out, want, "threads", label);
    if (cj[r].st) { fprintf(stderr, "%s: cuda rank %d: %s\n", label, r, cj[r].err); bad++; }
    else bad += compare(&cj[r], cj[r].out, want, "cuda", label);
  }
  for (int r = 0; r < n; r++) { free(in[r]); free(tj[r].out); free(cj[r].out); }
  free(want);
  return bad;
}

static void sweep(const char *dir) {
  enum { AR = 1 << SCHEDC_ALLREDUCE, RS = 1 << SCHEDC_REDUCE_SCATTER, RD = 1 << SCHEDC_REDUCE };
  static const char *files[] = {"ring.lua", "tree.lua", "direct.lua", "halving_doubling.lua"};
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_F16, SCHEDC_BF16};
  const size_t counts[] = {37, 1031};
  int cases = 0, failed = 0, rot = 0;
  for (int n = 1; n <= MAXN; n++) {
    if (g_procs && n != 3) continue;
    schedc_comm *tcomms[MAXN], *ccomms[MAXN];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 60;
    co.slice_bytes = 1024;
    CHECK(schedc_comm_init_threads(n, &co, tcomms) == SCHEDC_OK);
    int cuda_ok = g_procs || schedc_comm_init_cuda(n, NULL, SCHEDC_CUDA_VIRTUAL, &co, ccomms) == SCHEDC_OK;
    if (!cuda_ok) fprintf(stderr, "cuda init (%d ranks): %s\n", n, schedc_errmsg());
    CHECK(cuda_ok);
    for (size_t fi = 0; fi < 4 && cuda_ok; fi++) {
      if (g_procs && fi != 0 && fi != 2) continue;
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if (coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST) continue;
        schedc_plan *plan = tl_plan_in(dir, files[fi], coll, n, coll == SCHEDC_REDUCE ? n / 2 : 0);
        if (!plan) continue;
        for (int combo = 0; combo < 24; combo++) { /* dtype x op x wire x count, a tenth of them (procs: a quarter), rotating */
          int d = combo % 3, avg = combo / 3 % 2, wire = combo / 6 % 2 ? 16 : 8, ci = combo / 12;
          if ((combo + rot) % (g_procs ? 4 : 10)) continue;
          char label[256];
          snprintf(label, sizeof label, "%s n=%d %s %s %s q%d count=%zu", files[fi], n,
                   schedc_collective_name((schedc_collective)coll), schedc_dtype_name(dts[d]), avg ? "avg" : "sum",
                   wire, counts[ci]);
          cases++;
          int b = run_case(tcomms, g_procs ? NULL : ccomms, plan, coll, n, dts[d], avg, wire, counts[ci],
                           (int)(fi * 5 + (size_t)combo), label);
          if (b) { failed++; fprintf(stderr, "FAIL %s (%d)\n", label, b); }
        }
        rot++;
        schedc_plan_free(plan);
      }
    }
    for (int r = 0; r < n; r++) schedc_comm_free(tcomms[r]);
    for (int r = 0; cuda_ok && !g_procs && r < n; r++) schedc_comm_free(ccomms[r]);
  }
  printf("sweep (%s): %d cases, %d failed\n", g_procs ? "procs" : "virtual", cases, failed);
  CHECK(failed == 0);
  CHECK(cases >= (g_procs ? 12 : 50));
}

/* NaN on one rank: SCHEDC_EINVAL on every rank naming it, the output untouched; a wire mismatch. */
static void refusals(void) {
  enum { N = 3, C = 9 };
  schedc_comm *cc[N];
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 30;
  if (schedc_comm_init_cuda(N, NULL, SCHEDC_CUDA_VIRTUAL, &co, cc) != SCHEDC_OK) { CHECK(0); return; }
  float in[N][C];
  job j[N];
  for (int r = 0; r < N; r++) {
    for (int i = 0; i < C; i++) in[r][i] = (float)(i + r);
    j[r] = (job){cc[r], NULL, SCHEDC_ALLREDUCE, 0, r, 8, SCHEDC_F32, SCHEDC_SUM, C, C, in[r], malloc(C * 4), 0, ""};
    memset(j[r].out, 0xee, C * 4);
  }
  in[1][5] = 0.0f / 0.0f;
  run_cuda(j, N);
  /* one process drives every rank: the last rank's call (which launches) is refused; the others'
   * calls had returned, so their sync reports it, as any failure of this mode */
  CHECK(j[N - 1].st == SCHEDC_EINVAL);
  for (int r = 0; r < N; r++) {
    CHECK(j[r].st != SCHEDC_OK);
    CHECK_CONTAINS(j[r].err, "sendbuf of rank 1 holds NaN at element 5");
    CHECK(((uint32_t *)j[r].out)[0] == 0xeeeeeeeeu && ((uint32_t *)j[r].out)[C - 1] == 0xeeeeeeeeu);
  }
  for (int r = 0; r < N; r++) schedc_comm_free(cc[r]);
  CHECK(schedc_comm_init_cuda(N, NULL, SCHEDC_CUDA_VIRTUAL, &co, cc) == SCHEDC_OK);
  in[1][5] = 1.0f;
  for (int r = 0; r < N; r++) j[r].comm = cc[r], j[r].wire = r == 2 ? 16 : 8;
  run_cuda(j, N);
  CHECK(j[2].st == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(j[2].err, "wire format");
  for (int r = 0; r < N; r++) { schedc_comm_free(cc[r]); free(j[r].out); }
  /* top-k and error feedback read and write host memory: refused on device buffers */
  CHECK(schedc_comm_init_cuda(1, NULL, SCHEDC_CUDA_VIRTUAL, &co, cc) == SCHEDC_OK);
  float x[4] = {1, 2, 3, 4}, e[4] = {0};
  schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
  o.topk = 0.5;
  CHECK(schedc_allreduce_v2(x, x, 4, SCHEDC_F32, SCHEDC_SUM, cc[0], NULL, &o) == SCHEDC_EUNAVAIL);
  CHECK_CONTAINS(schedc_errmsg(), "opts->topk works on host memory");
  o.topk = 0, o.wire = 8, o.residual = e;
  CHECK(schedc_allreduce_v2(x, x, 4, SCHEDC_F32, SCHEDC_SUM, cc[0], NULL, &o) == SCHEDC_EUNAVAIL);
  CHECK_CONTAINS(schedc_errmsg(), "opts->residual works on host memory");
  schedc_comm_free(cc[0]);
}

/* NVRTC (no GPU needed): the wires' sources compile, integers end to end. */
static int nvrtc(const char *dir) {
  void *img;
  size_t len;
  if (schedc_cuda_compile("extern \"C\" __global__ void k(float *x) { x[0] = x[1] + x[2]; }", "sm_90", 1, &img, &len, NULL) ==
      SCHEDC_EUNAVAIL)
    SKIP_TOOL("NVRTC", schedc_errmsg());
  schedc_free(img);
  const char *files[] = {"ring.lua", "tree.lua", "direct.lua", "halving_doubling.lua", "hierarchical.lua"};
  int compiled = 0;
  for (size_t fi = 0; fi < 5; fi++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, files[fi]);
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = 4;
    lo.nnodes = fi == 4 ? 2 : 0;
    schedc_plan *plan = NULL;
    CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
    if (!plan) continue;
    for (int w = 0; w < 2; w++) {
      int op = w ? SC_OP_Q16 : SC_OP_Q8;
      char *src = sc_cuda_emit(&plan->ir, &plan->prog, -1, SCHEDC_F32, op);
      CHECK(src != NULL);
      if (!src) continue;
      CHECK(strstr(src, w ? "typedef short sc_acc;" : "typedef signed char sc_acc;") != NULL);
      CHECK(strstr(src, "void schedc_qstats(sc_xargs x)") && strstr(src, "void schedc_qin(sc_xargs x)") &&
            strstr(src, "void schedc_qout(sc_xargs x)") && !strstr(src, "void schedc_xin("));
      schedc_status st = schedc_cuda_compile(src, w ? "sm_90" : "sm_80", 1, &img, &len, NULL);
      if (st != SCHEDC_OK) fprintf(stderr, "%s q%d: %s\n", files[fi], w ? 16 : 8, schedc_errmsg());
      CHECK(st == SCHEDC_OK);
      if (st == SCHEDC_OK) {
        const char *t = img;
        compiled++;
        CHECK(strstr(t, ".entry schedc_qin") && strstr(t, ".entry schedc_qout") && strstr(t, ".entry schedc_qstats"));
        CHECK(!strstr(t, ".f32") && !strstr(t, ".f64") && !strstr(t, ".f16") && !strstr(t, ".bf16"));
        schedc_free(img);
      }
      free(src);
    }
    schedc_plan_free(plan);
  }
  printf("nvrtc: %d wire compilations\n", compiled);
  CHECK(compiled == 10);
  return DONE();
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: test_cuda_quant SCHEDULES_DIR virtual|procs|nvrtc\n"); return 2; }
  (void)reference, (void)input; /* exact_ref.h's, which quant_ref.h builds on; not used here */
  if (!strcmp(argv[2], "nvrtc")) return nvrtc(argv[1]);
  g_procs = !strcmp(argv[2], "procs");
  if (schedc_cuda_device_count() < (g_procs ? 3 : 1)) SKIP_NO_CUDA("not enough CUDA devices");
  sweep(argv[1]);
  if (!g_procs) refusals();
  return DONE();
}
