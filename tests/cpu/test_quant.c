/*
 * test_quant.c — quantized sums, error feedback and top-k (docs/compression.md) against the test's
 * own exact references (tests/quant_ref.h: the grid by search, integer rounding, __int128 sums, the
 * one rounding back by binary search; tests/exact_ref.h for top-k's exact sum), nothing shared with
 * runtime/core/quant.c or topk.c. A sweep of shipped schedules (ring, tree, binomial tree, direct,
 * canonical direct, halving_doubling, hierarchical) and a user schedule x ranks x allreduce /
 * reduce_scatter / reduce x f32 / bf16 / f16 x sum / avg x q8 / q16 x the small-message and plan
 * paths (sampled), on threads and shm processes: every rank's result is the reference's bits, so
 * every plan, backend and rank layout gives one result; the bound is checked exactly per element.
 * Then: the grid's carry and ties; exact leaves on a wire at 1 to 7 ranks (blocks of unequal size too); error feedback's
 * property over many calls; top-k (sparse and dense paths, ties, error feedback); bad input (NaN,
 * Inf, too many ranks, options) with nothing written; ranks disagreeing on the wire.
 * Usage: test_quant SCHEDULES_DIR [threads|shm]
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../plan_load.h"
#include "schedc/schedc.h"

#include "../quant_ref.h"

enum { MAXN = 8 };

/* ---- running a call on n ranks ---- */
typedef struct job {
  schedc_comm *comm;
  const schedc_plan *plan;
  int coll, root, rank, n;
  schedc_dtype dt;
  schedc_op op;
  size_t count;
  schedc_call_opts o;
  const void *in;
  void *out;
  schedc_status st;
  char err[512];
} job;

static void call(job *j) {
  if (j->coll == SCHEDC_ALLREDUCE)
    j->st = schedc_allreduce_v2(j->in, j->out, j->count, j->dt, j->op, j->comm, j->plan, &j->o);
  else if (j->coll == SCHEDC_REDUCE_SCATTER)
    j->st = schedc_reduce_scatter_v2(j->in, j->out, j->count, j->dt, j->op, j->comm, j->plan, &j->o);
  else j->st = schedc_reduce_v2(j->in, j->out, j->count, j->dt, j->op, j->root, j->comm, j->plan, &j->o);
  if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
}
static void *thread_main(void *p) { call(p); return NULL; }

/* n threads over comms, each its job. */
static void run_threads(job *j, int n) {
  pthread_t t[MAXN * 9];
  for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, thread_main, &j[r]);
  for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
}

static int compare(const job *j, const void *want, const char *label) {
  size_t lo = j->coll == SCHEDC_REDUCE_SCATTER ? (size_t)j->rank * j->count : 0;
  if (j->coll == SCHEDC_REDUCE && j->rank != j->root) return 0;
  int bad = 0;
  for (size_t i = 0; i < j->count; i++) {
    uint32_t got = get(j->dt, j->out, i), w = get(j->dt, want, lo + i);
    if (got != w && bad++ < 3)
      fprintf(stderr, "%s: rank %d element %zu: got %08x, want %08x\n", label, j->rank, lo + i, got, w);
  }
  return bad;
}

/* One case on n threads (comms) or shm processes (comms NULL): wrong elements + failed calls. */
static int run_case(schedc_comm **comms, const schedc_plan *plan, int coll, int n, schedc_dtype dt, int avg, int wire,
                    size_t count, int seed, const char *label) {
  size_t K = coll == SCHEDC_REDUCE_SCATTER ? count * (size_t)n : count, es = schedc_dtype_size(dt);
  fmt f = fmt_of(dt);
  void *in[MAXN];
  job j[MAXN];
  char *want = malloc(K * es + 8);
  int root = coll == SCHEDC_REDUCE ? n / 2 : 0, bad = 0;
  for (int r = 0; r < n; r++) {
    in[r] = malloc(K * es + 8);
    for (size_t i = 0; i < K; i++) put(dt, in[r], i, qinput(&f, n, r, i, seed));
  }
  bad += qref_reference(dt, wire, avg, in, n, K, want, NULL);
  schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
  o.wire = wire;
  for (int r = 0; r < n; r++) {
    j[r] = (job){comms ? comms[r] : NULL, plan, coll, root, r, n, dt, avg ? SCHEDC_AVG : SCHEDC_SUM, count, o, in[r],
                 malloc(K * es + 8), 0, ""};
    memset(j[r].out, 0xee, K * es);
  }
  if (comms) {
    run_threads(j, n);
    for (int r = 0; r < n; r++) {
      if (j[r].st) { fprintf(stderr, "%s: rank %d: %s\n", label, r, j[r].err); bad++; }
      else bad += compare(&j[r], want, label);
    }
  } else {
    char name[64];
    snprintf(name, sizeof name, "quant%d_%d", (int)getpid(), seed * 16 + n);
    pid_t pid[MAXN];
    for (int r = 0; r < n; r++)
      if ((pid[r] = fork()) == 0) {
        schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
        co.timeout_s = 60;
        co.slice_bytes = 1024;
        if (schedc_comm_init_shm(r, n, name, &co, &j[r].comm) != SCHEDC_OK) _exit(100);
        call(&j[r]);
        if (j[r].st) { fprintf(stderr, "%s: rank %d: %s\n", label, r, j[r].err); _exit(101); }
        int b = compare(&j[r], want, label);
        schedc_comm_free(j[r].comm);
        _exit(b > 99 ? 99 : b);
      }
    for (int r = 0; r < n; r++) {
      int ws;
      waitpid(pid[r], &ws, 0);
      if (!WIFEXITED(ws) || WEXITSTATUS(ws)) bad++;
    }
  }
  for (int r = 0; r < n; r++) { free(in[r]); free(j[r].out); }
  free(want);
  return bad;
}

static const char *user_lua =
    "local n = nranks\n"
    "local s = schedule{ collective = 'allreduce', chunks = 1, name = 'chain_star' }\n"
    "for r = 0, n - 2 do local st = s:step(); st:reduce(r, n - 1, 0) end\n"
    "if n > 1 then local st = s:step(); for r = 0, n - 2 do st:copy(n - 1, r, 0) end end\n"
    "return s\n";

/* The sweep, sampled: each (schedule, ranks, collective) takes a rotating subset of the (dtype, op,
 * wire, count) combinations, so every combination runs somewhere and the test stays quick. */
static void sweep(const char *dir, int use_shm) {
  enum { AR = 1 << SCHEDC_ALLREDUCE, RS = 1 << SCHEDC_REDUCE_SCATTER, RD = 1 << SCHEDC_REDUCE };
  char userpath[] = "/tmp/schedc_quant_userXXXXXX";
  int fd = mkstemp(userpath);
  if (fd < 0 || write(fd, user_lua, strlen(user_lua)) != (ssize_t)strlen(user_lua)) { CHECK(0); return; }
  close(fd);
  struct { const char *file; const char *def; int nodes, colls; } sch[] = {
    {"ring.lua", NULL, 0, AR | RS | RD}, {"tree.lua", NULL, 0, AR | RD}, {"tree.lua", "shape=binomial", 0, AR | RD},
    {"direct.lua", NULL, 0, AR | RS | RD}, {"direct.lua", "order=canonical", 0, AR | RS | RD},
    {"halving_doubling.lua", NULL, 0, AR}, {"hierarchical.lua", NULL, 2, AR | RS}, {NULL, NULL, 0, AR},
  };
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_BF16, SCHEDC_F16};
  const size_t counts[] = {37, 9000}; /* the small-message path, and the plan's (9000 bytes at one per element) */
  int cases = 0, failed = 0, rot = 0;
  for (int n = 1; n <= MAXN; n++) {
    if (use_shm && n != 2 && n != 3 && n != 5 && n != 8) continue;
    schedc_comm *comms[MAXN];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 60;
    co.slice_bytes = 1024; /* several slices per chunk on the plan path */
    if (!use_shm && schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { CHECK(0); return; }
    for (size_t si = 0; si < sizeof sch / sizeof sch[0]; si++)
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if (!(sch[si].colls & (1 << coll)) || (sch[si].nodes && n % sch[si].nodes)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, sch[si].file ? sch[si].file : "");
        schedc_plan *plan = tl_plan(sch[si].file ? path : userpath, coll, n, sch[si].nodes, sch[si].def,
                                    coll == SCHEDC_REDUCE ? n / 2 : 0);
        if (!plan) continue;
        for (int combo = 0; combo < 24; combo++) { /* dtype x op x wire x count */
          int d = combo % 3, avg = combo / 3 % 2, wire = combo / 6 % 2 ? 16 : 8, ci = combo / 12;
          if ((combo + rot) % (use_shm ? 8 : 4)) continue; /* a quarter (shm: an eighth), rotating */
          char label[256];
          snprintf(label, sizeof label, "%s %s n=%d %s %s %s q%d count=%zu %s", sch[si].file ? sch[si].file : "user",
                   sch[si].def ? sch[si].def : "", n, schedc_collective_name((schedc_collective)coll),
                   schedc_dtype_name(dts[d]), avg ? "avg" : "sum", wire, counts[ci], use_shm ? "shm" : "threads");
          cases++;
          int b = run_case(use_shm ? NULL : comms, plan, coll, n, dts[d], avg, wire, counts[ci],
                           (int)(si * 7 + (size_t)combo), label);
          if (b) { failed++; fprintf(stderr, "FAIL %s (%d)\n", label, b); }
        }
        rot++;
        schedc_plan_free(plan);
      }
    if (!use_shm)
      for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
  }
  unlink(userpath);
  printf("sweep (%s): %d cases, %d failed; %ld elements checked against the bound, %ld on the grid and equal to the "
         "exact sum rounded once\n", use_shm ? "shm" : "threads", cases, failed, g_qchecked_bound, g_qchecked_exact);
  CHECK(failed == 0);
  CHECK(cases > (use_shm ? 30 : 200));
  CHECK(g_qchecked_exact > 0 && g_qchecked_exact < g_qchecked_bound);
}

/* ---- small calls on n threads with the built-in plan: f32 given per rank ---- */
static uint32_t fb(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
/* n ranks, rank r's count inputs at in + r * count; opts per rank (o[r]); statuses and messages. */
static void calln(int n, const float *in, float *out, size_t count, schedc_op op, const schedc_call_opts *o,
                  schedc_status *st, char (*err)[512]) {
  schedc_comm *comms[MAXN * 9];
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 20;
  if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { CHECK(0); return; }
  job j[MAXN * 9];
  for (int r = 0; r < n; r++)
    j[r] = (job){comms[r], NULL, SCHEDC_ALLREDUCE, 0, r, n, SCHEDC_F32, op, count, o[r], in + (size_t)r * count,
                 out + (size_t)r * count, 0, ""};
  run_threads(j, n);
  for (int r = 0; r < n; r++) {
    st[r] = j[r].st;
    if (err) snprintf(err[r], 512, "%s", j[r].err);
    schedc_comm_free(comms[r]);
  }
}
static schedc_call_opts wire_opts(int wire) {
  schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
  o.wire = wire;
  return o;
}

static void edges(void) {
  schedc_call_opts o8[MAXN], o16[MAXN];
  for (int r = 0; r < MAXN; r++) o8[r] = wire_opts(SCHEDC_WIRE_Q8), o16[r] = wire_opts(SCHEDC_WIRE_Q16);
  schedc_status st[MAXN];
  /* 1 rank, q8: 7 bits of magnitude; the largest input 1.0 (E = 0): g = 0 + 1 - 7 = -6. Ties round
   * to even: 0.5 and 2.5 units to 0 and 2, 1.5 to 2; -half a unit is the integer 0, so +0 */
  {
    float in[] = {1.0f, 0x1p-7f, 0x1.8p-6f, 0x1.4p-5f, -0x1p-7f, 0x1.f8p-1f, -1.0f, 0x1.fcp-1f};
    float want[] = {1.0f, 0.0f, 0x1p-5f, 0x1p-5f, 0.0f, 0x1.f8p-1f, -1.0f, 1.0f}, out[8]; /* 63.5 units: 64 */
    calln(1, in, out, 8, SCHEDC_SUM, o8, st, NULL);
    CHECK(st[0] == SCHEDC_OK);
    for (int i = 0; i < 8; i++) {
      if (fb(out[i]) != fb(want[i])) fprintf(stderr, "q8 ties element %d: got %a, want %a\n", i, out[i], want[i]);
      CHECK(fb(out[i]) == fb(want[i]));
    }
  }
  /* the carry: 2 - 2^-7 would round to 128 units on 2^-6 (one past 127), so the grid is 2^-5 (63.75
   * -> 64 units: 2.0); 2 - 2^-6 is 127 units of 2^-6 exactly and keeps the finer grid */
  {
    float in1[] = {0x1.fep0f, 0x1p-6f}, out1[2];
    calln(1, in1, out1, 2, SCHEDC_SUM, o8, st, NULL);
    CHECK(st[0] == SCHEDC_OK && out1[0] == 2.0f && out1[1] == 0.0f); /* 2^-6 is half a unit of 2^-5: to 0 */
    float in2[] = {0x1.fcp0f, 0x1p-6f}, out2[2];
    calln(1, in2, out2, 2, SCHEDC_SUM, o8, st, NULL);
    CHECK(st[0] == SCHEDC_OK && out2[0] == 0x1.fcp0f && out2[1] == 0x1p-6f);
  }
  /* 3 ranks, q8: ceil(log2 3) = 2, 5 bits: each rank's 31 units sum to 93 (< 127), and half a unit
   * on each rank rounds to 0 on each (not 1.5 units): rounding is per input, on the way in */
  {
    float in[3 * 2] = {31.0f, 0.5f, 31.0f, 0.5f, 31.0f, 0.5f}, out[6];
    calln(3, in, out, 2, SCHEDC_SUM, o8, st, NULL);
    CHECK(st[0] == SCHEDC_OK && st[2] == SCHEDC_OK && out[0] == 93.0f && fb(out[1]) == 0 && fb(out[5]) == 0);
  }
  /* every input zero: the grid is immaterial, the result +0 (-0 in: +0 out) */
  {
    float in[2 * 2] = {-0.0f, 0.0f, -0.0f, -0.0f}, out[4];
    calln(2, in, out, 2, SCHEDC_SUM, o16, st, NULL);
    CHECK(st[0] == SCHEDC_OK && fb(out[0]) == 0 && fb(out[1]) == 0 && fb(out[3]) == 0);
  }
  /* tiny inputs, whose 2^-g is no float (g below -127): the double path, the same rounding */
  {
    float in[] = {0x1p-140f, 0x1.8p-149f, 0x1p-149f, -0x1.4p-141f}, out[4];
    calln(1, in, out, 4, SCHEDC_SUM, o16, st, NULL); /* 15 bits: g = -140 + 1 - 15 = -154: all on the grid */
    CHECK(st[0] == SCHEDC_OK && memcmp(in, out, sizeof in) == 0);
  }
  /* avg: the exact quotient rounded once: 3 ranks of 1, 1, 0 units at q16 -> 2/3 of a unit */
  {
    float in[3] = {1.0f, 1.0f, 0.0f}, out[3];
    calln(3, in, out, 1, SCHEDC_AVG, o16, st, NULL);
    CHECK(st[0] == SCHEDC_OK && out[0] == (float)(2.0 / 3.0) && out[2] == out[0]);
  }
}

/* ---- bad input: clear errors on every rank, nothing written ---- */
static int untouched(const float *out, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (fb(out[i]) != 0xeeeeeeeeu) return 0;
  return 1;
}
static void bad_input(void) {
  schedc_call_opts o[MAXN];
  schedc_status st[MAXN];
  char err[MAXN][512];
  float in[4 * 5], out[4 * 5];
  for (int i = 0; i < 20; i++) in[i] = (float)i;
  const float specials[] = {NAN, INFINITY, -INFINITY};
  for (int s = 0; s < 3; s++) { /* rank 2's element 3: named on every rank */
    for (int r = 0; r < 4; r++) o[r] = wire_opts(r % 2 ? SCHEDC_WIRE_Q16 : SCHEDC_WIRE_Q16);
    in[2 * 5 + 3] = specials[s];
    memset(out, 0xee, sizeof out);
    calln(4, in, out, 5, SCHEDC_SUM, o, st, err);
    for (int r = 0; r < 4; r++) {
      CHECK(st[r] == SCHEDC_EINVAL);
      CHECK_CONTAINS(err[r], s ? "sendbuf of rank 2 holds an infinity at element 3" : "sendbuf of rank 2 holds NaN at element 3");
    }
    CHECK(untouched(out, 20));
    for (int r = 0; r < 4; r++) o[r].wire = 0, o[r].topk = 0.4; /* top-k: the same, named */
    calln(4, in, out, 5, SCHEDC_SUM, o, st, err);
    for (int r = 0; r < 4; r++) CHECK(st[r] == SCHEDC_EINVAL);
    CHECK_CONTAINS(err[0], "topk: sendbuf of rank 2 holds");
    CHECK(untouched(out, 20));
    for (int r = 0; r < 4; r++) o[r].topk = 1.0; /* dense fallback */
    calln(4, in, out, 5, SCHEDC_SUM, o, st, err);
    for (int r = 0; r < 4; r++) CHECK(st[r] == SCHEDC_EINVAL);
    CHECK_CONTAINS(err[3], "rank 2 holds");
    CHECK_CONTAINS(err[3], "element 3");
    CHECK(untouched(out, 20));
    in[2 * 5 + 3] = 1.0f;
  }
  /* q8 on 65 ranks: 8 - 1 - 7 = 0 bits; q16 takes them */
  {
    enum { N = 65 };
    static float big_in[N], big_out[N];
    static schedc_call_opts ob[N];
    static schedc_status sb[N];
    schedc_comm *comms[N];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 30;
    CHECK(schedc_comm_init_threads(N, &co, comms) == SCHEDC_OK);
    job j[N];
    for (int w = 0; w < 2; w++) {
      for (int r = 0; r < N; r++) {
        big_in[r] = 1.0f, big_out[r] = -1.0f, ob[r] = wire_opts(w ? SCHEDC_WIRE_Q16 : SCHEDC_WIRE_Q8);
        j[r] = (job){comms[r], NULL, SCHEDC_ALLREDUCE, 0, r, N, SCHEDC_F32, SCHEDC_SUM, 1, ob[r], &big_in[r], &big_out[r], 0, ""};
      }
      run_threads(j, N);
      for (int r = 0; r < N; r++) sb[r] = j[r].st;
      if (!w) {
        CHECK(sb[0] == SCHEDC_EINVAL && sb[N - 1] == SCHEDC_EINVAL && big_out[0] == -1.0f);
        CHECK_CONTAINS(j[0].err, "wire q8 cannot sum 65 ranks");
        CHECK_CONTAINS(j[0].err, "use q16");
      } else {
        CHECK(sb[0] == SCHEDC_OK && big_out[0] == 65.0f && big_out[N - 1] == 65.0f);
      }
    }
    for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);
  }
  /* the options alone, on one rank: each refused naming the field */
  schedc_comm *c1;
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  CHECK(schedc_comm_init_threads(1, &co, &c1) == SCHEDC_OK);
  float x[4] = {1, 2, 3, 4}, y[4], e[4] = {0};
  struct { schedc_call_opts o; schedc_dtype dt; schedc_op op; const char *msg; } cases[] = {
    {{sizeof(schedc_call_opts), 7, 0, NULL}, SCHEDC_F32, SCHEDC_SUM, "opts->wire is 7"},
    {{sizeof(schedc_call_opts), 0, 1.5, NULL}, SCHEDC_F32, SCHEDC_SUM, "opts->topk is 1.5"},
    {{sizeof(schedc_call_opts), 0, -0.1, NULL}, SCHEDC_F32, SCHEDC_SUM, "opts->topk is -0.1"},
    {{sizeof(schedc_call_opts), 0, NAN, NULL}, SCHEDC_F32, SCHEDC_SUM, "opts->topk is nan"},
    {{sizeof(schedc_call_opts), 8, 0.5, NULL}, SCHEDC_F32, SCHEDC_SUM, "choose one"},
    {{sizeof(schedc_call_opts), 0, 0, e}, SCHEDC_F32, SCHEDC_SUM, "needs opts->wire or opts->topk"},
    {{sizeof(schedc_call_opts), 8, 0, NULL}, SCHEDC_F64, SCHEDC_SUM, "wire q8 takes f32, f16 or bf16 data, not f64"},
    {{sizeof(schedc_call_opts), 8, 0, NULL}, SCHEDC_F32, SCHEDC_MAX, "q8 takes op sum or avg, not max"},
    {{sizeof(schedc_call_opts), 16, 0, NULL}, SCHEDC_F32, SCHEDC_SUM_EXACT, "q16 takes op sum or avg, not sum_exact"},
    {{sizeof(schedc_call_opts), 0, 0.5, NULL}, SCHEDC_I32, SCHEDC_SUM, "topk takes f32, f16 or bf16 data, not i32"},
    {{sizeof(schedc_call_opts), 8, 0, x}, SCHEDC_F32, SCHEDC_SUM, "opts->residual overlaps sendbuf"},
    {{sizeof(schedc_call_opts), 8, 0, y + 2}, SCHEDC_F32, SCHEDC_SUM, "opts->residual overlaps recvbuf"},
    {{3, 8, 0, NULL}, SCHEDC_F32, SCHEDC_SUM, "opts->size is 3"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(y, 0xee, sizeof y);
    CHECK(schedc_allreduce_v2(x, y, 4, cases[i].dt, cases[i].op, c1, NULL, &cases[i].o) == SCHEDC_EINVAL);
    CHECK_CONTAINS(schedc_errmsg(), cases[i].msg);
    CHECK(untouched(y, 4));
  }
  schedc_call_opts ot = wire_opts(SCHEDC_WIRE_Q8);
  ot.topk = 0;
  CHECK(schedc_reduce_scatter_v2(x, y, 4, SCHEDC_F32, SCHEDC_SUM, c1, NULL, &ot) == SCHEDC_OK && y[0] == 1.0f);
  ot.wire = 0, ot.topk = 0.5;
  CHECK(schedc_reduce_v2(x, y, 4, SCHEDC_F32, SCHEDC_SUM, 0, c1, NULL, &ot) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "topk is for allreduce only");
  CHECK(schedc_allreduce_v2(x, y, 4, SCHEDC_F32, SCHEDC_SUM, c1, NULL, NULL) == SCHEDC_OK && y[3] == 4.0f); /* NULL: plain */
  schedc_wire w;
  CHECK(schedc_wire_parse("q16", &w) == SCHEDC_OK && w == SCHEDC_WIRE_Q16);
  CHECK(schedc_wire_parse("q4", &w) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "choose default, q8 or q16");
  CHECK_EQ_STR(schedc_wire_name(SCHEDC_WIRE_Q8), "q8");
  CHECK(schedc_wire_name((schedc_wire)3) == NULL);
  CHECK(schedc_dtype_name((schedc_dtype)64) == NULL); /* the wire's integers are no dtype of the API */
  schedc_comm_free(c1);
  /* ranks that disagree on the wire: SCHEDC_EMISMATCH on both, naming it (the grid's exchange) */
  for (int r = 0; r < 2; r++) o[r] = wire_opts(r ? SCHEDC_WIRE_Q16 : SCHEDC_WIRE_Q8);
  calln(2, in, out, 5, SCHEDC_SUM, o, st, err);
  CHECK(st[0] == SCHEDC_EMISMATCH && st[1] == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(err[0], "disagree on the wire format");
  CHECK_CONTAINS(err[0], "rank 0: q8; rank 1: q16");
  o[1] = wire_opts(0); /* a wire against a plain sum */
  calln(2, in, out, 5, SCHEDC_SUM, o, st, err);
  CHECK(st[0] == SCHEDC_EMISMATCH && st[1] == SCHEDC_EMISMATCH);
}

/* ---- exact leaves on a wire: 12 leaves at 1 to 7 ranks, one result (the 12 as 12 summands); at 5 and 7
 * ranks the blocks differ in size (7: 2, 2, 1, 2, 2, 1, 2), so a rank's own guess of the summands
 * (its leaves times the ranks: 7 or 14) is not L, and the words are made again for L ---- */
enum { NL = 12 };
typedef struct lrank { schedc_comm *c; int first, m, wire; schedc_dtype dt; schedc_op op; size_t count;
                       void *const *leaf; void *out; schedc_status st; char err[512]; } lrank;
static void *leaves_main(void *p) {
  lrank *l = p;
  schedc_accum *a = NULL;
  schedc_call_opts o = wire_opts(l->wire);
  l->st = schedc_accum_create(l->count, l->dt, l->op, l->first, l->m, &a);
  for (int k = l->m - 1; k >= 0 && l->st == SCHEDC_OK; k--) l->st = schedc_accumulate(a, l->first + k, l->leaf[l->first + k]);
  if (l->st == SCHEDC_OK) l->st = schedc_accum_allreduce_v2(a, l->out, l->c, NULL, &o);
  if (l->st) snprintf(l->err, sizeof l->err, "%s", schedc_errmsg());
  schedc_accum_free(a);
  return NULL;
}
static void leaves(void) {
  const int ns[] = {1, 2, 3, 4, 5, 6, 7};
  int cases = 0, failed = 0;
  for (int wi = 0; wi < 2; wi++)
    for (int d = 0; d < 2; d++) {
      schedc_dtype dt = d ? SCHEDC_BF16 : SCHEDC_F32;
      int wire = wi ? 16 : 8, avg = (wi + d) % 2;
      size_t count = 700, es = schedc_dtype_size(dt);
      fmt f = fmt_of(dt);
      void *leaf[NL];
      for (int j = 0; j < NL; j++) {
        leaf[j] = malloc(count * es);
        for (size_t i = 0; i < count; i++) put(dt, leaf[j], i, qinput(&f, NL, j, i, 5 + wi));
      }
      /* q8: the largest, 15.25 = 2^4 * 61/64 in leaf 0 (above every other input), rounds up to 2^m on
       * L = 12's grid (m = 3: at or above 2^4 * 15/16) but not on a 7-summand one (m = 4: 31/32),
       * which 7 ranks' rank 0 (one leaf) would assume: its words must be made for L. */
      if (wire == 8) put(dt, leaf[0], 0, (uint32_t)(3 - f.emin + 1) << (f.p - 1) | 29u << (f.p - 6));
      char *want = malloc(count * es);
      failed += qref_reference(dt, wire, avg, leaf, NL, count, want, NULL) != 0; /* 12 summands: 4 bits of headroom */
      for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        int n = ns[ni], bad = 0;
        schedc_comm *comms[7];
        schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
        co.timeout_s = 60;
        if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { failed++; continue; }
        lrank l[7];
        pthread_t t[7];
        for (int r = 0; r < n; r++) {
          int first = r * NL / n, m = (r + 1) * NL / n - first;
          l[r] = (lrank){comms[r], first, m, wire, dt, avg ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, count, leaf,
                         malloc(count * es), 0, ""};
          pthread_create(&t[r], NULL, leaves_main, &l[r]);
        }
        for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
        for (int r = 0; r < n; r++) {
          if (l[r].st) { bad++; fprintf(stderr, "leaves q%d n=%d rank %d: %s\n", wire, n, r, l[r].err); }
          else bad += memcmp(l[r].out, want, count * es) != 0;
          free(l[r].out);
          schedc_comm_free(comms[r]);
        }
        cases++;
        if (bad) { failed++; fprintf(stderr, "FAIL leaves q%d %s n=%d\n", wire, schedc_dtype_name(dt), n); }
      }
      for (int j = 0; j < NL; j++) free(leaf[j]);
      free(want);
    }
  printf("leaves on a wire: 12 leaves on 1 to 7 ranks: %d cases, %d failed\n", cases, failed);
  CHECK(failed == 0 && cases == 28);
}

/* ---- error feedback: per rank, what it contributed plus its last residual is the sum of its
 * inputs, exactly (up to the feedback additions' roundings, which the test computes too), over
 * many calls; and the outputs' sum differs from the inputs' by the ranks' last residuals ---- */
static i128 scaled(float v) { /* v as an integer multiple of 2^-XS (the test's values: |v| < 2^6, lsb >= 2^-60) */
  i128 x = 0;
  fmt f = fmt_of(SCHEDC_F32);
  CHECK(ref_exact(&f, fb(v), &x));
  return x;
}
static void feedback(void) {
  enum { N = 3, C = 500, CALLS = 40 };
  for (int wi = 0; wi < 2; wi++)
    for (int dyadic = 0; dyadic < 2; dyadic++) {
      int wire = wi ? 16 : 8;
      schedc_comm *comms[N];
      schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
      co.timeout_s = 30;
      CHECK(schedc_comm_init_threads(N, &co, comms) == SCHEDC_OK);
      static float x[N][C], e[N][C], eprev[N][C], y[N][C], v[N][C];
      static i128 in_sum[N][C], sent[N][C], add_err[N][C], out_sum[C];
      memset(e, 0, sizeof e), memset(in_sum, 0, sizeof in_sum), memset(sent, 0, sizeof sent);
      memset(add_err, 0, sizeof add_err), memset(out_sum, 0, sizeof out_sum);
      int bad = 0, nonzero_residual = 0;
      for (int t = 0; t < CALLS; t++) {
        job j[N];
        void *vin[N];
        for (int r = 0; r < N; r++) {
          for (int i = 0; i < C; i++) {
            uint64_t h = mix((uint64_t)t << 40 ^ (uint64_t)r << 20 ^ (uint64_t)i ^ (uint64_t)dyadic << 60);
            /* dyadic: multiples of 2^-20 below 2^3, where every feedback addition is exact; else any
             * f32 below 2^3 down to 2^-30 */
            x[r][i] = dyadic ? (float)((int64_t)(h >> 40) % (1 << 23)) * 0x1p-20f
                             : ldexpf((float)(h >> 40 & 0xffffff) * 0x1p-24f, 3 - (int)(h % 33)) * ((h >> 20) & 1 ? -1 : 1);
            memcpy(&eprev[r][i], &e[r][i], 4);
            v[r][i] = x[r][i] + e[r][i]; /* the feedback addition, as documented: one f32 addition */
            in_sum[r][i] += scaled(x[r][i]);
            add_err[r][i] += scaled(v[r][i]) - scaled(x[r][i]) - scaled(e[r][i]);
          }
          vin[r] = v[r];
          schedc_call_opts o = wire_opts(wire);
          o.residual = e[r];
          j[r] = (job){comms[r], NULL, SCHEDC_ALLREDUCE, 0, r, N, SCHEDC_F32, SCHEDC_SUM, C, o, x[r], y[r], 0, ""};
        }
        /* the reference: the grid of the ranks' v, each v rounded onto it */
        int g;
        float want[C];
        bad += qref_reference(SCHEDC_F32, wire, 0, vin, N, C, want, &g) != 0;
        run_threads(j, N);
        fmt f = fmt_of(SCHEDC_F32);
        for (int r = 0; r < N; r++) {
          if (j[r].st) { bad++; fprintf(stderr, "feedback: %s\n", j[r].err); continue; }
          bad += memcmp(y[r], want, sizeof want) != 0;
          for (int i = 0; i < C; i++) {
            int64_t q = ref_q(&f, fb(v[r][i]), g);
            /* the residual is v - q 2^g exactly */
            i128 c = (i128)q * ((i128)1 << (g + XS));
            if (scaled(e[r][i]) != scaled(v[r][i]) - c) { if (bad++ < 3) fprintf(stderr, "residual %d,%d wrong\n", r, i); }
            sent[r][i] += c;
            nonzero_residual += e[r][i] != 0;
          }
        }
        for (int i = 0; i < C; i++) out_sum[i] += scaled(y[0][i]); /* sums below 2^15 units: exact in f32 */
      }
      /* the property, per rank and element: contributed + last residual = inputs + the additions' roundings */
      int prop_bad = 0, cleanly = 0;
      for (int i = 0; i < C; i++) {
        i128 all_e = 0, all_in = 0, all_add = 0;
        for (int r = 0; r < N; r++) {
          prop_bad += sent[r][i] + scaled(e[r][i]) != in_sum[r][i] + add_err[r][i];
          all_e += scaled(e[r][i]), all_in += in_sum[r][i], all_add += add_err[r][i];
        }
        /* outputs: the sum of what was sent (exact sums); so Σ y - Σ x = -Σ e + Σ additions' roundings */
        prop_bad += out_sum[i] - all_in != -all_e + all_add;
        if (dyadic) { /* exact additions: the outputs and the inputs differ by the last residuals exactly */
          prop_bad += all_add != 0;
          i128 d = out_sum[i] - all_in, bound = 0;
          for (int r = 0; r < N; r++) bound += scaled(e[r][i]) < 0 ? -scaled(e[r][i]) : scaled(e[r][i]);
          cleanly += (d < 0 ? -d : d) <= bound;
        }
      }
      printf("error feedback q%d (%s inputs): %d calls x %d ranks x %d elements: %d property failures, %d wrong "
             "results or residuals, %d nonzero residuals\n", wire, dyadic ? "dyadic" : "any", CALLS, N, C, prop_bad,
             bad, nonzero_residual);
      CHECK(bad == 0 && prop_bad == 0 && nonzero_residual > 0);
      if (dyadic) CHECK(cleanly == C);
      for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);
    }
  /* a failed call leaves the residual as it was */
  {
    schedc_comm *c1;
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    CHECK(schedc_comm_init_threads(1, &co, &c1) == SCHEDC_OK);
    float x[3] = {1, NAN, 3}, y[3], e[3] = {0.25f, 0.5f, 0.75f};
    schedc_call_opts o = wire_opts(SCHEDC_WIRE_Q8);
    o.residual = e;
    CHECK(schedc_allreduce_v2(x, y, 3, SCHEDC_F32, SCHEDC_SUM, c1, NULL, &o) == SCHEDC_EINVAL);
    CHECK(e[0] == 0.25f && e[1] == 0.5f && e[2] == 0.75f);
    schedc_comm_free(c1);
  }
}

/* ---- top-k: the reference picks each rank's k by sorting (magnitude down, index up), zeroes the
 * rest, and takes exact mode's reference sum of those (tests/exact_ref.h) ---- */
typedef struct { uint32_t mag, idx; } keyed;
static int keyed_cmp(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->mag != y->mag) return x->mag > y->mag ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}
/* in: n ranks' count elements; sparse[r]: rank r's input with all but its k largest zeroed */
static void sparsify(schedc_dtype dt, void *const in[], void *sparse[], int n, size_t count, size_t k) {
  fmt f = fmt_of(dt);
  keyed *ks = malloc(count * sizeof *ks);
  for (int r = 0; r < n; r++) {
    for (size_t i = 0; i < count; i++) ks[i] = (keyed){get(dt, in[r], i) & ~f.sign, (uint32_t)i};
    qsort(ks, count, sizeof *ks, keyed_cmp);
    memset(sparse[r], 0, count * schedc_dtype_size(dt));
    for (size_t j = 0; j < k; j++) put(dt, sparse[r], ks[j].idx, get(dt, in[r], ks[j].idx));
  }
  free(ks);
}
static void topk(const char *dir) {
  int cases = 0, failed = 0;
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_BF16, SCHEDC_F16};
  for (int n = 1; n <= 6; n++) {
    schedc_comm *comms[MAXN];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 60;
    if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { CHECK(0); return; }
    schedc_plan *tree = tl_plan_in(dir, "tree.lua", SCHEDC_ALLREDUCE, n, 0);
    for (int c = 0; c < 6; c++) {
      schedc_dtype dt = dts[c % 3];
      double frac = c < 3 ? 0.01 : 0.45; /* sparse; dense fallback (n k > 2 count) at n >= 5 */
      size_t count = 3001, es = schedc_dtype_size(dt), k = (size_t)ceil(frac * (double)count);
      int avg = c % 2;
      fmt f = fmt_of(dt);
      void *in[MAXN], *sp[MAXN];
      for (int r = 0; r < n; r++) {
        in[r] = malloc(count * es), sp[r] = malloc(count * es);
        for (size_t i = 0; i < count; i++) put(dt, in[r], i, input(&f, n, r, i, 40 + c));
        /* ties: the 10 elements of equal magnitude at 100.. on every rank, some chosen, the lower first */
        for (size_t i = 100; i < 110; i++) put(dt, in[r], i, get(dt, in[r], 0) ^ (i % 2 ? f.sign : 0));
      }
      sparsify(dt, in, sp, n, count, k);
      char *want = malloc(count * es);
      int bad = reference(dt, avg, sp, n, count, want) != 0;
      for (int p = 0; p < 2; p++) { /* the default plan and a tree: the same bits */
        job j[MAXN];
        schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
        o.topk = frac;
        for (int r = 0; r < n; r++) {
          j[r] = (job){comms[r], p ? tree : NULL, SCHEDC_ALLREDUCE, 0, r, n, dt, avg ? SCHEDC_AVG : SCHEDC_SUM, count, o,
                       in[r], malloc(count * es), 0, ""};
          memset(j[r].out, 0xee, count * es);
        }
        run_threads(j, n);
        for (int r = 0; r < n; r++) {
          if (j[r].st) { bad++; fprintf(stderr, "topk n=%d: %s\n", n, j[r].err); }
          else bad += compare(&j[r], want, "topk");
          free(j[r].out);
        }
      }
      cases++;
      if (bad) { failed++; fprintf(stderr, "FAIL topk n=%d %s frac=%g\n", n, schedc_dtype_name(dt), frac); }
      for (int r = 0; r < n; r++) free(in[r]), free(sp[r]);
      free(want);
    }
    schedc_plan_free(tree);
    for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
  }
  printf("top-k: %d cases (sparse and dense, 1-6 ranks, two plans each), %d failed\n", cases, failed);
  CHECK(failed == 0 && cases == 36);
  /* error feedback: the residual is v with the sent elements +0; over two calls an element not sent
   * the first time is sent the second (its residual added) */
  schedc_comm *c2[2];
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  CHECK(schedc_comm_init_threads(2, &co, c2) == SCHEDC_OK);
  float x[2][4] = {{1, 5, -3, 0.5f}, {2, -1, 4, 0.25f}}, e[2][4] = {{0}}, y[2][4];
  for (int t = 0; t < 2; t++) {
    job j[2];
    for (int r = 0; r < 2; r++) {
      schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
      o.topk = 0.5; /* k = 2 of 4; 2 * 2 > 2 * 4 is false: sparse */
      o.residual = e[r];
      j[r] = (job){c2[r], NULL, SCHEDC_ALLREDUCE, 0, r, 2, SCHEDC_F32, SCHEDC_SUM, 4, o, x[r], y[r], 0, ""};
    }
    run_threads(j, 2);
    CHECK(j[0].st == SCHEDC_OK && j[1].st == SCHEDC_OK);
    if (t == 0) { /* rank 0 sends 5, -3; rank 1 sends 4, 2 */
      CHECK(y[0][0] == 2 && y[0][1] == 5 && y[0][2] == 1 && fb(y[0][3]) == 0 && memcmp(y[0], y[1], 16) == 0);
      CHECK(e[0][0] == 1 && fb(e[0][1]) == 0 && fb(e[0][2]) == 0 && e[0][3] == 0.5f);
      CHECK(fb(e[1][0]) == 0 && e[1][1] == -1 && fb(e[1][2]) == 0 && e[1][3] == 0.25f);
    } else { /* v: rank 0 {2, 5, -3, 1}: 5, -3; rank 1 {2, -1, 4, 0.5}: 4, 2 (2 ties -1? no: |2| > |-1|) */
      CHECK(e[0][0] == 2 && e[0][3] == 1.0f && e[1][1] == -2 && e[1][3] == 0.5f);
    }
  }
  for (int r = 0; r < 2; r++) schedc_comm_free(c2[r]);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_quant SCHEDULES_DIR [threads|shm]\n"); return 2; }
  int use_shm = argc > 2 && strcmp(argv[2], "shm") == 0;
  if (!use_shm) {
    edges();
    bad_input();
    leaves();
    feedback();
    topk(argv[1]);
  }
  sweep(argv[1], use_shm);
  return DONE();
}
