/*
 * test_ops.c — custom operators run in the proven order, bit for bit: the shipped operators
 * (ops/shipped) on threads or shm ranks against this test's own copy of each function evaluated
 * over the trees schedc_plan_order prints (f32, bf16 through f32, i64), an operator calling C's
 * double fma on floats (tests/ops/c_math.c: CUDA's float overload must not be used), schedc_accumulate's
 * canonical tree, the dtype pairing rules and a source mismatch between ranks.
 * cuda: the same on N virtual ranks of one GPU (the generated kernels with the operator's
 * __device__ function), against the same trees, so GPU bits = CPU bits (skipped without a GPU).
 * Usage: test_ops SCHEDULES_DIR OPS_DIR [threads|shm|cuda]. Skipped (exit 77) without libclang or a C compiler.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

/* ---- this test's own copies of the operators (not the op files), NaN made the default NaN ---- */
static float qnan32(void) { uint32_t u = 0x7fc00000u; float f; memcpy(&f, &u, 4); return f; }
static float my_absmax(float a, float b) { float r = fmaxf(fabsf(a), fabsf(b)); return r != r ? qnan32() : r; }
static float my_l2(float a, float b) { float r = sqrtf(a * a + b * b); return r != r ? qnan32() : r; }
static int64_t my_or(int64_t a, int64_t b) { return a | b; }
/* tests/ops/c_math.c: C's fma is the double one; rounded to double, then to float */
static float my_fma_tiny(float a, float b) {
  float r = (float)fma((double)a, (double)b, 0x1p-100);
  return r != r ? qnan32() : r;
}

enum { K_ABSMAX, K_L2, K_OR, K_FMA };
typedef struct val { float f; int64_t i; } val;
static val apply(int kind, val a, val b) {
  val r = {0, 0};
  if (kind == K_OR) r.i = my_or(a.i, b.i);
  else r.f = kind == K_ABSMAX ? my_absmax(a.f, b.f) : kind == K_FMA ? my_fma_tiny(a.f, b.f) : my_l2(a.f, b.f);
  return r;
}

/* Evaluate a tree "((r0+r1)+r2)" for element i: leaves read in[rank][i]. */
typedef struct ev { const char *p; int kind; const val *const *in; size_t i; int bad; } ev;
static val sum(ev *e);
static val atom(ev *e) {
  if (*e->p == '(') {
    e->p++;
    val v = sum(e);
    if (*e->p++ != ')') e->bad = 1;
    return v;
  }
  if (*e->p != 'r') { e->bad = 1; return (val){0, 0}; }
  int r = (int)strtol(e->p + 1, (char **)&e->p, 10);
  return e->in[r][e->i];
}
static val sum(ev *e) {
  val v = atom(e);
  while (*e->p == '+') { e->p++; v = apply(e->kind, v, atom(e)); }
  return v;
}

static float bf16_to_f32(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

#define N 4
#define COUNT 1003
static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }

typedef struct job {
  schedc_comm *comm;
  const void *send;
  void *recv;
  schedc_dtype dt;
  schedc_op op;
  const schedc_plan *plan;
  schedc_collective coll;
  schedc_status st;
  char msg[400];
} job;
static void *run_job(void *p) {
  job *j = p;
  if (j->coll == SCHEDC_REDUCE) j->st = schedc_reduce(j->send, j->recv, COUNT, j->dt, j->op, 0, j->comm, j->plan);
  else j->st = schedc_allreduce(j->send, j->recv, COUNT, j->dt, j->op, j->comm, j->plan);
  snprintf(j->msg, sizeof j->msg, "%s", j->st == SCHEDC_OK ? "" : schedc_errmsg());
  return NULL;
}

/* cuda mode: N virtual ranks on one GPU, driven by this thread (the same kernels as N GPUs). */
static int run_cuda(schedc_collective coll, const schedc_plan *plan, schedc_dtype dt, schedc_op op,
                    void *const *send, void *const *recv) {
  size_t bytes = COUNT * schedc_dtype_size(dt);
  schedc_comm *comms[N];
  if (schedc_comm_init_cuda(N, NULL, SCHEDC_CUDA_VIRTUAL, NULL, comms) != SCHEDC_OK) {
    fprintf(stderr, "cuda init: %s\n", schedc_errmsg());
    return -1;
  }
  void *ds[N], *dr[N];
  int bad = 0;
  for (int r = 0; r < N; r++) {
    bad |= schedc_cuda_alloc(comms[r], bytes, &ds[r]) != SCHEDC_OK || schedc_cuda_alloc(comms[r], bytes, &dr[r]) != SCHEDC_OK;
    bad |= schedc_cuda_copy(comms[r], ds[r], send[r], bytes) != SCHEDC_OK;
  }
  for (int r = 0; r < N && !bad; r++) {
    schedc_status st = coll == SCHEDC_REDUCE ? schedc_reduce(ds[r], dr[r], COUNT, dt, op, 0, comms[r], plan)
                                             : schedc_allreduce(ds[r], dr[r], COUNT, dt, op, comms[r], plan);
    if (st != SCHEDC_OK) { fprintf(stderr, "cuda rank %d: %s\n", r, schedc_errmsg()); bad = 1; }
  }
  if (!bad && schedc_cuda_sync(comms[0]) != SCHEDC_OK) { fprintf(stderr, "cuda sync: %s\n", schedc_errmsg()); bad = 1; }
  for (int r = 0; r < N; r++) {
    if (!bad) bad |= schedc_cuda_copy(comms[r], recv[r], dr[r], bytes) != SCHEDC_OK;
    schedc_cuda_free(comms[r], ds[r]);
    schedc_cuda_free(comms[r], dr[r]);
  }
  for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);
  return bad ? -1 : 0;
}

/* Run the collective on N ranks (threads or shm processes); results into recv[r]. */
static int run_all(int shm, schedc_collective coll, const schedc_plan *plan, schedc_dtype dt, schedc_op op,
                   void *const *send, void *const *recv) {
  size_t bytes = COUNT * schedc_dtype_size(dt);
  if (shm == 2) return run_cuda(coll, plan, dt, op, send, recv);
  if (!shm) {
    schedc_comm *comms[N];
    if (schedc_comm_init_threads(N, NULL, comms) != SCHEDC_OK) return -1;
    pthread_t t[N];
    job j[N];
    for (int r = 0; r < N; r++) {
      j[r] = (job){comms[r], send[r], recv[r], dt, op, plan, coll, SCHEDC_OK, ""};
      pthread_create(&t[r], NULL, run_job, &j[r]);
    }
    int bad = 0;
    for (int r = 0; r < N; r++) {
      pthread_join(t[r], NULL);
      if (j[r].st != SCHEDC_OK) { fprintf(stderr, "rank %d: %s\n", r, j[r].msg); bad = 1; }
      schedc_comm_free(comms[r]);
    }
    return bad ? -1 : 0;
  }
  char jobname[64];
  static int seq;
  snprintf(jobname, sizeof jobname, "test_ops_%d_%d", (int)getpid(), seq++);
  char *out = mmap(NULL, N * bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t pid[N];
  for (int r = 0; r < N; r++) {
    if ((pid[r] = fork()) == 0) {
      schedc_comm *c;
      if (schedc_comm_init_shm(r, N, jobname, NULL, &c) != SCHEDC_OK) _exit(3);
      job j = {c, send[r], out + r * bytes, dt, op, plan, coll, SCHEDC_OK, ""};
      run_job(&j);
      if (j.st != SCHEDC_OK) fprintf(stderr, "rank %d: %s\n", r, schedc_errmsg());
      schedc_comm_free(c);
      _exit(j.st == SCHEDC_OK ? 0 : 4);
    }
  }
  int bad = 0;
  for (int r = 0; r < N; r++) {
    int ws;
    waitpid(pid[r], &ws, 0);
    bad |= !WIFEXITED(ws) || WEXITSTATUS(ws);
  }
  for (int r = 0; r < N; r++) memcpy(recv[r], out + r * bytes, bytes);
  munmap(out, N * bytes);
  return bad ? -1 : 0;
}

/* One collective with one operator: every rank's result against the evaluated trees. */
static void check_one(int shm, schedc_collective coll, const schedc_plan *plan, const char *what, int kind,
                      schedc_dtype dt, schedc_op op) {
  size_t esz = schedc_dtype_size(dt);
  void *send[N], *recv[N];
  val *in[N];
  for (int r = 0; r < N; r++) {
    send[r] = malloc(COUNT * esz);
    recv[r] = calloc(COUNT, esz);
    in[r] = malloc(COUNT * sizeof(val));
    for (size_t i = 0; i < COUNT; i++) {
      uint64_t x = rnd();
      val v = {0, 0};
      if (dt == SCHEDC_I64) { v.i = (int64_t)(x & (x >> 7)); memcpy((char *)send[r] + i * 8, &v.i, 8); }
      else {
        float f = (float)((int64_t)(x % 2001) - 1000) / 64.0f;
        if (i % 97 == 5) f = -0.0f;
        if (i % 101 == 7) f = r == 1 ? INFINITY : f;
        if (i % 103 == 9 && r == 2) f = NAN;
        if (i % 7 == 3) { uint32_t u = (uint32_t)(x >> 20) & 0x807fffffu; memcpy(&f, &u, 4); } /* subnormals */
        /* (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is a float midpoint: fma(a, b, 2^-100) in double rounds
         * it to even (1 + 2^-11); fmaf rounds it up. Every rank holds it: the first op decides. */
        if (kind == K_FMA && i % 5 == 1) f = 1.0f + 0x1p-12f;
        if (dt == SCHEDC_BF16) {
          uint16_t h = f32_to_bf16(f);
          memcpy((char *)send[r] + i * 2, &h, 2);
          f = bf16_to_f32(h);
        } else memcpy((char *)send[r] + i * 4, &f, 4);
        v.f = f;
      }
      in[r][i] = v;
    }
  }
  int ok = run_all(shm, coll, plan, dt, op, send, recv) == 0;
  CHECK(ok);
  schedc_plan_info pi = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &pi);
  long mism = 0, compared = 0;
  char tree[4096];
  for (int c = 0; ok && c < pi.nchunks; c++) {
    size_t lo = (size_t)COUNT * (size_t)c / (size_t)pi.nchunks, hi = (size_t)COUNT * (size_t)(c + 1) / (size_t)pi.nchunks;
    for (int r = 0; r < N; r++) {
      if (coll == SCHEDC_REDUCE && r != 0) continue;
      if (schedc_plan_order(plan, c, r, tree, sizeof tree) < 0 || !strcmp(tree, "-")) continue;
      for (size_t i = lo; i < hi; i++) {
        ev e = {tree, kind, (const val *const *)in, i, 0};
        val want = sum(&e);
        CHECK(!e.bad);
        uint64_t wb = 0, gb = 0;
        if (dt == SCHEDC_I64) { wb = (uint64_t)want.i; memcpy(&gb, (char *)recv[r] + i * 8, 8); }
        else if (dt == SCHEDC_BF16) { wb = f32_to_bf16(want.f); memcpy(&gb, (char *)recv[r] + i * 2, 2); }
        else { uint32_t u; memcpy(&u, &want.f, 4); wb = u; memcpy(&gb, (char *)recv[r] + i * 4, 4); }
        compared++;
        if (wb != gb && mism++ < 3)
          fprintf(stderr, "%s %s: chunk %d rank %d element %zu: got 0x%llx, the tree %s gives 0x%llx\n", what,
                  schedc_dtype_name(dt), c, r, i, (unsigned long long)gb, tree, (unsigned long long)wb);
      }
    }
  }
  CHECK(mism == 0);
  CHECK(!ok || compared > 0);
  printf("%s %s %s: %ld elements compared, %ld differ\n", what, schedc_dtype_name(dt), schedc_op_name(op), compared, mism);
  for (int r = 0; r < N; r++) { free(send[r]); free(recv[r]); free(in[r]); }
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int shm = argc > 3 && !strcmp(argv[3], "shm") ? 1 : argc > 3 && !strcmp(argv[3], "cuda") ? 2 : 0;
  if (shm == 2 && schedc_cuda_device_count() < 1) SKIP_NO_CUDA("no CUDA device");
  char path[4096];
  schedc_op absmax, l2, or64;
  snprintf(path, sizeof path, "%s/shipped/absmax.c", argv[2]);
  schedc_status st = schedc_op_create(path, "absmax", NULL, &absmax);
  /* the first operator: nothing ran before it, so a missing libclang or C compiler may skip */
  if (st == SCHEDC_EUNAVAIL) SKIP_TOOL(strstr(schedc_errmsg(), "libclang") ? "libclang" : "C compiler", schedc_errmsg());
  CHECK(st == SCHEDC_OK);
  snprintf(path, sizeof path, "%s/shipped/l2combine.c", argv[2]);
  CHECK(schedc_op_create(path, "l2combine", NULL, &l2) == SCHEDC_OK);
  snprintf(path, sizeof path, "%s/shipped/or64.c", argv[2]);
  CHECK(schedc_op_create(path, "or64", NULL, &or64) == SCHEDC_OK);
  schedc_op fma_tiny;
  CHECK(schedc_op_create(SC_TEST_OPS_DIR "/c_math.c", "fma_tiny", NULL, &fma_tiny) == SCHEDC_OK);
  if (tc_fail) { fprintf(stderr, "%s\n", schedc_errmsg()); return DONE(); }
  /* the test's own fma reading discriminates: C's double fma, not fmaf */
  CHECK(my_fma_tiny(1.0f + 0x1p-12f, 1.0f + 0x1p-12f) == 1.0f + 0x1p-11f &&
        fmaf(1.0f + 0x1p-12f, 1.0f + 0x1p-12f, 0x1p-100f) == 1.0f + 0x1p-11f + 0x1p-23f);
  CHECK((int)absmax >= SCHEDC_OP_CUSTOM_BASE);
  CHECK_CONTAINS(schedc_op_name(absmax), "absmax.c:absmax");
  schedc_op_info in = SCHEDC_OP_INFO_INIT;
  CHECK(schedc_op_get_info(absmax, &in) == SCHEDC_OK && in.type == SCHEDC_F32 && in.pairs_tested >= 100000);

  const char *files[] = {"ring.lua", "tree.lua", "direct.lua", "halving_doubling.lua"};
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    snprintf(path, sizeof path, "%s/%s", argv[1], files[f]);
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = N;
    schedc_plan *plan = NULL;
    CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
    if (!plan) continue;
    check_one(shm, SCHEDC_ALLREDUCE, plan, files[f], K_ABSMAX, SCHEDC_F32, absmax);
    check_one(shm, SCHEDC_ALLREDUCE, plan, files[f], K_L2, SCHEDC_F32, l2);
    check_one(shm, SCHEDC_ALLREDUCE, plan, files[f], K_OR, SCHEDC_I64, or64);
    if (f == 0) check_one(shm, SCHEDC_ALLREDUCE, plan, files[f], K_ABSMAX, SCHEDC_BF16, absmax);
    if (f == 0) check_one(shm, SCHEDC_ALLREDUCE, plan, files[f], K_FMA, SCHEDC_F32, fma_tiny);
    schedc_plan_free(plan);
  }
  schedc_plan *red = NULL;
  CHECK(schedc_plan_builtin(SCHEDC_REDUCE, N, 0, &red) == SCHEDC_OK);
  if (red) check_one(shm, SCHEDC_REDUCE, red, "builtin reduce", K_L2, SCHEDC_F32, l2);
  schedc_plan_free(red);

  /* the dtype pairing: float serves f32/f16/bf16, int64_t only i64 */
  if (!shm) {
    schedc_comm *comms[1];
    CHECK(schedc_comm_init_threads(1, NULL, comms) == SCHEDC_OK);
    float x = 1, y;
    CHECK(schedc_allreduce(&x, &y, 1, SCHEDC_F64, absmax, comms[0], NULL) == SCHEDC_EINVAL);
    CHECK_CONTAINS(schedc_errmsg(), "takes float, which serves f32, f16 and bf16, not f64");
    CHECK(schedc_allreduce(&x, &y, 1, SCHEDC_I32, or64, comms[0], NULL) == SCHEDC_EINVAL);
    CHECK_CONTAINS(schedc_errmsg(), "takes int64_t");
    schedc_comm_free(comms[0]);

    /* schedc_accumulate: ((l0 op l1) op (l2 op l3)) */
    schedc_accum *acc;
    CHECK(schedc_accum_create(3, SCHEDC_F32, l2, 0, 4, &acc) == SCHEDC_OK);
    float leaf[4][3] = {{3, 1, -2}, {4, 1, 0.5f}, {12, 1, 7}, {0, 1e-20f, 1e30f}}, res[3];
    for (int l = 0; l < 4; l++) CHECK(schedc_accumulate(acc, l, leaf[l]) == SCHEDC_OK);
    CHECK(schedc_accum_result(acc, res) == SCHEDC_OK);
    for (int i = 0; i < 3; i++) {
      float w = my_l2(my_l2(leaf[0][i], leaf[1][i]), my_l2(leaf[2][i], leaf[3][i]));
      CHECK(memcmp(&w, &res[i], 4) == 0);
    }
    schedc_accum_free(acc);
    CHECK(schedc_accum_create(3, SCHEDC_F64, l2, 0, 4, &acc) == SCHEDC_EINVAL);

    /* ranks that made different operators disagree on the call (the source hash travels with
     * it, since the op value is only this process's name for its operator) */
    schedc_comm *mc[N];
    CHECK(schedc_comm_init_threads(N, NULL, mc) == SCHEDC_OK);
    float xs[N][COUNT], ys[N][COUNT];
    memset(xs, 0, sizeof xs);
    pthread_t t[N];
    job j[N];
    for (int r = 0; r < N; r++) {
      j[r] = (job){mc[r], xs[r], ys[r], SCHEDC_F32, r == 0 ? absmax : l2, NULL, SCHEDC_ALLREDUCE, SCHEDC_OK, ""};
      pthread_create(&t[r], NULL, run_job, &j[r]);
    }
    for (int r = 0; r < N; r++) {
      pthread_join(t[r], NULL);
      CHECK(j[r].st == SCHEDC_EMISMATCH);
      CHECK_CONTAINS(j[r].msg, "custom operator's source");
      schedc_comm_free(mc[r]);
    }
  }

  schedc_op_free(absmax);
  CHECK(schedc_op_name(absmax) == NULL); /* freed: the value is dead, never reused */
  schedc_op_free(l2);
  schedc_op_free(or64);
  schedc_op_free(fma_tiny);
  return DONE();
}
