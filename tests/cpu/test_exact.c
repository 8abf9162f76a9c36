/*
 * test_exact.c — exact mode (SCHEDC_SUM_EXACT / SCHEDC_AVG_EXACT, docs/determinism.md "Exact
 * mode") against an independent exact reference (tests/exact_ref.h, shared with the cuda test): the grid from frexp, the rounding
 * onto it with integer shifts, the sum in __int128, and the one rounding back by a binary search
 * over the output format's bit patterns with exact comparisons (no floating point, nothing shared
 * with runtime/core/exact.c). A sweep of shipped schedules (ring, tree, binomial tree, direct,
 * canonical direct, halving_doubling, hierarchical) and a user schedule written here × 1..8 ranks
 * × allreduce / reduce_scatter / reduce × f32 / bf16 / f16 × sum / avg × the small-message and
 * plan paths, on threads and (a subset) shm processes: every rank's result must be the
 * reference's bits, so every plan and backend gives one result per input. Inputs: on-grid values
 * (then the reference is also the exact real sum rounded once, checked), cancellation, wide
 * exponent ranges reaching below the grid (the flush bound checked exactly), subnormals, ±0.
 * Then: the flush bound at its edges, NaN/±Inf, a rank in exact mode against one that is not
 * (SCHEDC_EMISMATCH naming the op), and the argument checks. `quick`: the threads sweep at 2, 3, 5
 * and 8 ranks, the edges and avg up to 5000 leaves (ctest's runs on each forced vector path).
 * Usage: test_exact SCHEDULES_DIR [shm|quick]
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

#include "../exact_ref.h"

enum { MAXN = 8 };
static int g_quick; /* `quick`: a sample of the sweeps (the forced vector paths' runs, SCHEDC_SIMD) */

/* ---- running ---- */
typedef struct job {
  schedc_comm *comm;
  const schedc_plan *plan;
  int coll, root, rank, n;
  schedc_dtype dt;
  schedc_op op;
  size_t count;
  const void *in;
  void *out;
  schedc_status st;
  char err[512];
} job;

static int g_inplace; /* allreduce and reduce in place (send == recv) */
static void call(job *j) {
  if (g_inplace && j->coll != SCHEDC_REDUCE_SCATTER) memcpy(j->out, j->in, j->count * schedc_dtype_size(j->dt));
  const void *in = g_inplace && j->coll != SCHEDC_REDUCE_SCATTER ? j->out : j->in;
  if (j->coll == SCHEDC_ALLREDUCE) j->st = schedc_allreduce(in, j->out, j->count, j->dt, j->op, j->comm, j->plan);
  else if (j->coll == SCHEDC_REDUCE_SCATTER)
    j->st = schedc_reduce_scatter(j->in, j->out, j->count, j->dt, j->op, j->comm, j->plan);
  else j->st = schedc_reduce(in, j->out, j->count, j->dt, j->op, j->root, j->comm, j->plan);
  if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
}
static void *thread_main(void *p) { call(p); return NULL; }

/* Compare rank r's output with the reference; returns the number of wrong elements. */
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

static schedc_plan *load(const char *path, int coll, int n, int nodes, const char *def, int root) {
  return tl_plan(path, coll, n, nodes, def, root); /* NULL: not built for this case */
}

/* One case on n threads (comms given) or n shm processes: returns wrong elements + failed calls. */
static int run_case(schedc_comm **comms, int use_shm, const schedc_plan *plan, int coll, int n, schedc_dtype dt,
                    schedc_op op, size_t count, int seed, const char *label) {
  size_t K = coll == SCHEDC_REDUCE_SCATTER ? count * (size_t)n : count, es = schedc_dtype_size(dt);
  fmt f = fmt_of(dt);
  void *in[MAXN];
  job j[MAXN];
  char *want = malloc(K * es + 8);
  int root = coll == SCHEDC_REDUCE ? n / 2 : 0, bad = 0;
  for (int r = 0; r < n; r++) {
    in[r] = malloc(K * es + 8);
    for (size_t i = 0; i < K; i++) put(dt, in[r], i, input(&f, n, r, i, seed));
  }
  bad += reference(dt, op == SCHEDC_AVG_EXACT, in, n, K, want);
  for (int r = 0; r < n; r++) {
    j[r] = (job){comms ? comms[r] : NULL, plan, coll, root, r, n, dt, op, count, in[r], malloc(K * es + 8), 0, ""};
    memset(j[r].out, 0xee, K * es);
  }
  if (!use_shm) {
    pthread_t t[MAXN];
    for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, thread_main, &j[r]);
    for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
    for (int r = 0; r < n; r++) {
      if (j[r].st) { fprintf(stderr, "%s: rank %d: %s\n", label, r, j[r].err); bad++; }
      else bad += compare(&j[r], want, label);
    }
  } else {
    char jobname[64];
    snprintf(jobname, sizeof jobname, "exact%d_%ld", (int)getpid(), (long)seed * 1000 + n);
    pid_t pid[MAXN];
    for (int r = 0; r < n; r++) {
      if ((pid[r] = fork()) == 0) {
        schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
        co.timeout_s = 60;
        if (schedc_comm_init_shm(r, n, jobname, &co, &j[r].comm) != SCHEDC_OK) {
          fprintf(stderr, "%s: shm init: %s\n", label, schedc_errmsg());
          _exit(100);
        }
        call(&j[r]);
        if (j[r].st) { fprintf(stderr, "%s: rank %d: %s\n", label, r, j[r].err); _exit(101); }
        int b = compare(&j[r], want, label);
        schedc_comm_free(j[r].comm);
        _exit(b > 99 ? 99 : b);
      }
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

/* A user's schedule: a chain into the last rank, then copies out (allreduce only). */
static const char *user_lua =
    "local n = nranks\n"
    "local s = schedule{ collective = 'allreduce', chunks = 1, name = 'chain_star' }\n"
    "for r = 0, n - 2 do local st = s:step(); st:reduce(r, n - 1, 0) end\n"
    "if n > 1 then local st = s:step(); for r = 0, n - 2 do st:copy(n - 1, r, 0) end end\n"
    "return s\n";

static int sweep(const char *dir, int use_shm) {
  enum { AR = 1 << SCHEDC_ALLREDUCE, RS = 1 << SCHEDC_REDUCE_SCATTER, RD = 1 << SCHEDC_REDUCE };
  char userpath[] = "/tmp/schedc_exact_userXXXXXX";
  int fd = mkstemp(userpath);
  if (fd < 0 || write(fd, user_lua, strlen(user_lua)) != (ssize_t)strlen(user_lua)) return 1;
  close(fd);
  struct { const char *file; const char *def; int nodes, colls; } sch[] = {
    {"ring.lua", NULL, 0, AR | RS | RD}, {"tree.lua", NULL, 0, AR | RD}, {"tree.lua", "shape=binomial", 0, AR | RD},
    {"direct.lua", NULL, 0, AR | RS | RD}, {"direct.lua", "order=canonical", 0, AR | RS | RD},
    {"halving_doubling.lua", NULL, 0, AR}, {"hierarchical.lua", NULL, 2, AR | RS}, {NULL, NULL, 0, AR},
  };
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_BF16, SCHEDC_F16};
  const size_t counts[] = {37, 2500}; /* the small-message path (37 * 8 bytes) and the plan path */
  int cases = 0, failed = 0;
  for (int n = 1; n <= MAXN; n++) {
    if ((use_shm || g_quick) && n != 2 && n != 3 && n != 5 && n != 8) continue;
    schedc_comm *comms[MAXN];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 60;
    co.slice_bytes = 4096; /* several slices per chunk on the plan path */
    if (!use_shm && schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) {
      fprintf(stderr, "threads init: %s\n", schedc_errmsg());
      return 1;
    }
    for (size_t si = 0; si < sizeof sch / sizeof sch[0]; si++)
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if (!(sch[si].colls & (1 << coll)) || (sch[si].nodes && n % sch[si].nodes)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, sch[si].file ? sch[si].file : "");
        schedc_plan *plan = load(sch[si].file ? path : userpath, coll, n, sch[si].nodes, sch[si].def,
                                 coll == SCHEDC_REDUCE ? n / 2 : 0);
        if (!plan) continue; /* a layout this schedule does not build */
        for (size_t d = 0; d < 3; d++)
          for (int o = 0; o < 2; o++)
            for (size_t ci = 0; ci < 2; ci++) {
              schedc_op op = o ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT;
              if (use_shm && (d > 0 || o > 0) && ci == 1) continue;
              if (d > 0 && o > 0 && coll != SCHEDC_ALLREDUCE) continue;
              char label[256];
              snprintf(label, sizeof label, "%s %s n=%d %s %s %s count=%zu %s", sch[si].file ? sch[si].file : "user",
                       sch[si].def ? sch[si].def : "", n, schedc_collective_name((schedc_collective)coll),
                       schedc_dtype_name(dts[d]), schedc_op_name(op), counts[ci], use_shm ? "shm" : "threads");
              cases++;
              g_inplace = ci == 1 && d == 0 && (si + (size_t)n) % 2 == 0; /* half the f32 plan-path cases */
              if (g_inplace) strcat(label, " inplace");
              int b = run_case(use_shm ? NULL : comms, use_shm, plan, coll, n, dts[d], op, counts[ci],
                               (int)(si * 7 + d * 3 + ci), label);
              if (b) { failed++; fprintf(stderr, "FAIL %s (%d)\n", label, b); }
            }
        schedc_plan_free(plan);
      }
    if (!use_shm)
      for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
  }
  unlink(userpath);
  printf("sweep (%s): %d cases, %d failed; %ld elements checked against the bound, %ld of them on the grid "
         "and equal to the exact real sum rounded once\n", use_shm ? "shm" : "threads", cases, failed,
         g_checked_bound, g_checked_exact);
  CHECK(failed == 0);
  CHECK(cases > 100);
  CHECK(g_checked_exact > 0 && g_checked_exact < g_checked_bound); /* both kinds of element met */
  return 0;
}

/* ---- edges on n threads with the built-in plan: f32 inputs given per rank ---- */
typedef struct multi { schedc_comm *c; const float *in; float *out; size_t count; schedc_op op; schedc_dtype dt;
                       schedc_status st; char err[512]; } multi;
static void *multi_main(void *p) {
  multi *m = p;
  m->st = schedc_allreduce(m->in, m->out, m->count, m->dt, m->op, m->c, NULL);
  if (m->st) snprintf(m->err, sizeof m->err, "%s", schedc_errmsg());
  return NULL;
}
static int allreduce_n(int n, const float *in, float *out, size_t count, const schedc_op *ops, schedc_status *st,
                       char (*err)[512]) {
  schedc_comm *comms[MAXN];
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 20;
  if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) return 1;
  multi m[MAXN];
  pthread_t t[MAXN];
  for (int r = 0; r < n; r++) {
    m[r] = (multi){comms[r], in + (size_t)r * count, out + (size_t)r * count, count, ops[r], SCHEDC_F32, 0, ""};
    pthread_create(&t[r], NULL, multi_main, &m[r]);
  }
  for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < n; r++) {
    st[r] = m[r].st;
    if (err) snprintf(err[r], 512, "%s", m[r].err);
    schedc_comm_free(comms[r]);
  }
  return 0;
}
static uint32_t fb(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void edges(void) {
  schedc_op ops[MAXN];
  schedc_status st[MAXN];
  char err[MAXN][512];
  for (int r = 0; r < MAXN; r++) ops[r] = SCHEDC_SUM_EXACT;
  /* the flush bound, 1 rank: E = 20, g = 20 - 61 = -41; half a unit rounds to even (0), more
   * than half to one unit, 1.5 units to 2, a quarter to 0; -0, and -half a unit (an integer 0),
   * give +0 */
  {
    float in[] = {0x1p20f, 0x1p-42f, 0x1.000002p-42f, 0x1.8p-41f, 0x1p-43f, -0.0f, 0x1.8p-42f, -0x1p-42f};
    float out[8];
    float want[] = {0x1p20f, 0.0f, 0x1p-41f, 0x1p-40f, 0.0f, 0.0f, 0x1p-41f, 0.0f}; /* -half a unit: +0 */
    CHECK(allreduce_n(1, in, out, 8, ops, st, NULL) == 0 && st[0] == SCHEDC_OK);
    for (int i = 0; i < 8; i++) {
      if (fb(out[i]) != fb(want[i])) fprintf(stderr, "flush bound element %d: got %a, want %a\n", i, out[i], want[i]);
      CHECK(fb(out[i]) == fb(want[i]));
    }
  }
  /* 3 ranks: headroom 2 bits, g = 20 - 59 = -39: 2^-40 on each rank (half a unit each) sum to 0,
   * not 1.5 units: each input is rounded on its own, on the way in */
  {
    float in[3 * 2] = {0x1p20f, 0x1p-40f, 0x1p20f, 0x1p-40f, 0x1p20f, 0x1p-40f}, out[6];
    CHECK(allreduce_n(3, in, out, 2, ops, st, NULL) == 0 && st[0] == SCHEDC_OK && st[2] == SCHEDC_OK);
    CHECK(out[0] == 0x1.8p21f && fb(out[1]) == 0 && fb(out[3]) == 0 && fb(out[5]) == 0);
  }
  /* the one rounding out where the integer has more than 53 bits: 2^14 + 2^-10 (a tie at f32's
   * last bit of 2^14) + 2^-39 (3 ranks, g = -45: S = 2^59 + 2^35 + 2^6) rounds up to 2^14 + 2^-9;
   * through a double it would round twice (to the tie, then to even: 2^14), and without the sticky
   * bit below bit 11 too; negated the same */
  {
    float in[3 * 5], out[3 * 5]; /* 5 elements: four in the vector loop, one after it */
    for (int i = 0; i < 5; i++) {
      float sg = i % 2 ? -1.0f : 1.0f;
      in[i] = sg * 0x1p14f, in[5 + i] = sg * 0x1p-10f, in[10 + i] = sg * 0x1p-39f;
    }
    CHECK(allreduce_n(3, in, out, 5, ops, st, NULL) == 0 && st[0] == SCHEDC_OK);
    for (int i = 0; i < 15; i++) CHECK(out[i] == (i % 5 % 2 ? -0x1.000002p14f : 0x1.000002p14f));
  }
  /* subnormals only: E = -127, every input on the grid: the sums are exact */
  {
    float in[2 * 2] = {0x1p-149f, 0x1.fffffcp-127f, 0x1p-149f, 0x1.fffffcp-127f}, out[4];
    CHECK(allreduce_n(2, in, out, 2, ops, st, NULL) == 0 && st[0] == SCHEDC_OK);
    CHECK(out[0] == 0x1p-148f && out[1] == 0x1.fffffcp-126f && out[2] == 0x1p-148f);
  }
  /* specials: NaN anywhere -> NaN; +Inf with -Inf -> NaN; +Inf alone -> +Inf on every element */
  {
    struct { float a, b; uint32_t want; } sp[] = {
      {NAN, 1.0f, 0x7fc00000u}, {INFINITY, -INFINITY, 0x7fc00000u}, {INFINITY, 1.0f, 0x7f800000u},
      {-INFINITY, 5.0f, 0xff800000u}, {-NAN, INFINITY, 0x7fc00000u},
    };
    for (size_t s = 0; s < sizeof sp / sizeof sp[0]; s++) {
      float in[2 * 3] = {sp[s].a, 1.0f, 2.0f, sp[s].b, 3.0f, -0.0f}, out[6];
      CHECK(allreduce_n(2, in, out, 3, ops, st, NULL) == 0 && st[0] == SCHEDC_OK && st[1] == SCHEDC_OK);
      for (int i = 0; i < 6; i++) CHECK(fb(out[i]) == sp[s].want);
    }
  }
  /* overflow of the output type: 2 * FLT_MAX rounds to +Inf, FLT_MAX + (-FLT_MAX) is +0 */
  {
    float in[4] = {0x1.fffffep127f, 0x1.fffffep127f, 0x1.fffffep127f, -0x1.fffffep127f}, out[4];
    CHECK(allreduce_n(2, in, out, 2, ops, st, NULL) == 0 && st[0] == SCHEDC_OK);
    CHECK(fb(out[0]) == 0x7f800000u && fb(out[1]) == 0 && fb(out[2]) == 0x7f800000u);
  }
  /* a rank in exact mode and one not: SCHEDC_EMISMATCH on both, naming the op */
  {
    float in[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    schedc_op mixed[2] = {SCHEDC_SUM_EXACT, SCHEDC_SUM};
    CHECK(allreduce_n(2, in, out, 4, mixed, st, err) == 0);
    CHECK(st[0] == SCHEDC_EMISMATCH && st[1] == SCHEDC_EMISMATCH);
    CHECK_CONTAINS(err[0], "disagree on the op");
    CHECK_CONTAINS(err[0], "sum_exact");
    CHECK_CONTAINS(err[1], "sum_exact");
    schedc_op mixed2[2] = {SCHEDC_AVG_EXACT, SCHEDC_SUM_EXACT};
    CHECK(allreduce_n(2, in, out, 4, mixed2, st, err) == 0);
    CHECK(st[0] == SCHEDC_EMISMATCH && st[1] == SCHEDC_EMISMATCH);
    CHECK_CONTAINS(err[1], "avg_exact");
  }
  /* arguments: integers and f64 are refused, naming the op; names parse both ways */
  {
    schedc_comm *c1[1];
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    CHECK(schedc_comm_init_threads(1, &co, c1) == SCHEDC_OK);
    int32_t a[2] = {1, 2}, b[2];
    CHECK(schedc_allreduce(a, b, 2, SCHEDC_I32, SCHEDC_SUM_EXACT, c1[0], NULL) == SCHEDC_EINVAL);
    CHECK_CONTAINS(schedc_errmsg(), "sum_exact takes f32, f16 or bf16");
    double d[2] = {1, 2}, e[2];
    CHECK(schedc_allreduce(d, e, 2, SCHEDC_F64, SCHEDC_AVG_EXACT, c1[0], NULL) == SCHEDC_EINVAL);
    /* allgather ignores the op as ever: exact ops change nothing there */
    float x[2] = {1.5f, 2.5f}, y[2];
    CHECK(schedc_allgather(x, y, 2, SCHEDC_F32, c1[0], NULL) == SCHEDC_OK && y[0] == 1.5f);
    schedc_comm_free(c1[0]);
    schedc_op op;
    CHECK(schedc_op_parse("avg_exact", &op) == SCHEDC_OK && op == SCHEDC_AVG_EXACT);
    CHECK_EQ_STR(schedc_op_name(SCHEDC_SUM_EXACT), "sum_exact");
  }
}

/* ---- exact leaves: L = 12 leaves over 1, 2, 3, 4 and 6 ranks (schedc_accum_allreduce) ---- */
enum { NL = 12 };
typedef struct lrank { schedc_comm *c; int first, m; schedc_dtype dt; schedc_op op; size_t count;
                       void *const *leaf; void *out; schedc_status st; char err[512]; } lrank;
static void *leaves_main(void *p) {
  lrank *l = p;
  schedc_accum *a = NULL;
  l->st = schedc_accum_create(l->count, l->dt, l->op, l->first, l->m, &a);
  for (int k = l->m - 1; k >= 0 && l->st == SCHEDC_OK; k--) /* in reverse: arrival order must not matter */
    l->st = schedc_accumulate(a, l->first + k, l->leaf[l->first + k]);
  if (l->st == SCHEDC_OK) l->st = schedc_accum_allreduce(a, l->out, l->c, NULL);
  if (l->st) snprintf(l->err, sizeof l->err, "%s", schedc_errmsg());
  schedc_accum_free(a);
  return NULL;
}
static void leaves(void) {
  const int ns[] = {1, 2, 3, 4, 6};
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_BF16};
  int cases = 0, failed = 0;
  for (size_t d = 0; d < 2; d++)
    for (int o = 0; o < 2; o++)
      for (size_t count = 300; count <= 3000; count *= 10) {
        fmt f = fmt_of(dts[d]);
        schedc_op op = o ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT;
        size_t es = schedc_dtype_size(dts[d]);
        void *leaf[NL];
        for (int j = 0; j < NL; j++) {
          leaf[j] = malloc(count * es);
          for (size_t i = 0; i < count; i++) put(dts[d], leaf[j], i, input(&f, NL, j, i, 99 + (int)count));
        }
        char *want = malloc(count * es);
        failed += reference(dts[d], o, leaf, NL, count, want) != 0; /* the 12 leaves as 12 summands */
        uint64_t first_digest = 0;
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
          int n = ns[ni], m = NL / n, bad = 0;
          schedc_comm *comms[6];
          schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
          co.timeout_s = 60;
          if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { failed++; continue; }
          lrank l[6];
          pthread_t t[6];
          for (int r = 0; r < n; r++) {
            l[r] = (lrank){comms[r], r * m, m, dts[d], op, count, leaf, malloc(count * es), 0, ""};
            pthread_create(&t[r], NULL, leaves_main, &l[r]);
          }
          for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
          for (int r = 0; r < n; r++) {
            if (l[r].st) { bad++; fprintf(stderr, "leaves n=%d rank %d: %s\n", n, r, l[r].err); }
            else if (memcmp(l[r].out, want, count * es)) bad++;
            else if (!first_digest) first_digest = schedc_digest(l[r].out, count * es);
            else if (schedc_digest(l[r].out, count * es) != first_digest) bad++;
            free(l[r].out);
            schedc_comm_free(comms[r]);
          }
          cases++;
          if (bad) { failed++; fprintf(stderr, "FAIL leaves %s %s count=%zu n=%d\n", schedc_dtype_name(dts[d]), schedc_op_name(op), count, n); }
        }
        for (int j = 0; j < NL; j++) free(leaf[j]);
        free(want);
      }
  printf("exact leaves: 12 leaves on 1, 2, 3, 4, 6 ranks: %d cases, %d failed\n", cases, failed);
  CHECK(failed == 0 && cases == 40);
  /* refusals: an exact accumulator has no result of its own; ranks with different leaf counts */
  schedc_accum *a = NULL;
  float x[2] = {1, 2}, y[2];
  CHECK(schedc_accum_create(2, SCHEDC_F32, SCHEDC_SUM_EXACT, 3, 3, &a) == SCHEDC_OK); /* 3 leaves from 3: fine */
  CHECK(schedc_accumulate(a, 4, x) == SCHEDC_OK && schedc_accumulate(a, 4, x) == SCHEDC_EINVAL);
  CHECK(schedc_accum_result(a, y) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "schedc_accum_allreduce");
  schedc_accum_free(a);
  CHECK(schedc_accum_create(2, SCHEDC_F64, SCHEDC_SUM_EXACT, 0, 1, &a) == SCHEDC_EINVAL);
  schedc_comm *c2[2];
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 20;
  CHECK(schedc_comm_init_threads(2, &co, c2) == SCHEDC_OK);
  void *lv[4] = {x, x, x, x};
  /* blocks of different sizes that tile the leaves are fine (1 + 3: the sum of 4 leaves); blocks
   * that overlap are refused on every rank, naming both */
  lrank l[2] = {{c2[0], 0, 1, SCHEDC_F32, SCHEDC_SUM_EXACT, 2, lv, y, 0, ""},
                {c2[1], 1, 3, SCHEDC_F32, SCHEDC_SUM_EXACT, 2, lv, malloc(8), 0, ""}};
  pthread_t t[2];
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, leaves_main, &l[r]);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  CHECK(l[0].st == SCHEDC_OK && l[1].st == SCHEDC_OK && y[0] == 4 && y[1] == 8);
  l[1].first = 0, l[1].m = 2;
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, leaves_main, &l[r]);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  CHECK(l[0].st == SCHEDC_EMISMATCH && l[1].st == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(l[1].err, "rank 0 holds [0, 1) and rank 1 [0, 2): they overlap");
  free(l[1].out);
  for (int r = 0; r < 2; r++) schedc_comm_free(c2[r]);
}

/* ---- exact avg over many summands: L leaves (up to 10^6) on 1-4 ranks, and ranks x leaves ----
 * avg is the exact quotient S 2^g / L rounded once (docs/determinism.md). Each case is checked
 * against the reference's division (ref_round with n = L: exact comparisons, no floating point).
 * Per leaf, K elements by index: 0 pins the largest exponent (leaf 0 only); 1 one grid unit in
 * leaf 0 (below the format's smallest value: its smallest), the rest 0 (the quotient far below a
 * unit: it needs fraction bits the old 32-bit digit lacked past L = 256); 2 random values over 30
 * binades; 3 the same value on every leaf (an exact quotient); 4, 5 a mean exactly halfway between
 * two values of the format (even and odd lower neighbour: ties to even both ways); 6, 7 that sum
 * plus and minus one unit of its scale (just above and below the tie); 8 a small value in leaf 0
 * (subnormal quotients with the low pin); 9 alternating signs (sums 0 or one value: +0); 10 values
 * 40-90 binades down (rounded onto the grid on the way in); 11 minus one grid unit everywhere. */
enum { AK = 12 };
typedef struct avgcase { schedc_dtype dt; int L, pin_lo; } avgcase;

/* The leaves of a tie element: most leaves c 2^(beta+1), the first few the rest of
 * L (2c + 1) 2^beta (+ extra 2^beta) in pieces of p bits (greedy, high first; what does not fit in
 * them is dropped: a small L makes no tie, the reference decides either way). */
static void tie_leaves(const fmt *f, void *const *leaf, schedc_dtype dt, int L, size_t i, uint64_t c, int beta,
                       int extra, int neg) {
  int k = L < 6 ? L : 6; /* the pieces' leaves */
  i128 rem = (i128)L * (i128)(2 * c + 1) + extra; /* in units of 2^beta */
  for (int j = k; j < L; j++) {
    put(dt, leaf[j], i, ref_encode(f, neg, c, beta + 1));
    rem -= 2 * (i128)c;
  }
  for (int j = 0; j < k; j++) {
    uint64_t a = 0;
    int sh = 0;
    if (rem > 0) {
      sh = bitlen((unsigned __int128)rem) - f->p;
      sh = sh < 0 ? 0 : sh;
      a = (uint64_t)(rem >> sh);
      rem -= (i128)a << sh;
    }
    put(dt, leaf[j], i, ref_encode(f, neg, a, beta + sh));
  }
}

static void avg_inputs(const avgcase *ac, void *const *leaf, int top) {
  fmt f = fmt_of(ac->dt);
  int L = ac->L, h = 0, mb = f.p - 1;
  while ((1 << h) < L) h++;
  int g = top - 61 + h, lsbmin = f.emin - mb, u = g > lsbmin ? g : lsbmin; /* the finest value on the grid */
  for (size_t i = 0; i < AK; i++) {
    uint64_t hs = mix(((uint64_t)L << 20) ^ ((uint64_t)ac->dt << 8) ^ (uint64_t)i ^ ((uint64_t)ac->pin_lo << 40));
    int neg = (int)(hs & 1);
    if (i >= 4 && i <= 7) { /* ties: c of p bits, its parity by i; the mean normal: beta >= emin - p */
      uint64_t c = (1ull << mb) | ((hs >> 8) & ((1ull << mb) - 1));
      c = (c & ~1ull) | (i == 5);
      int beta = u > f.emin - f.p ? u : f.emin - f.p;
      beta += (int)((hs >> 40) % 4);
      tie_leaves(&f, leaf, ac->dt, L, i, c, beta, i == 6 ? 1 : i == 7 ? -1 : 0, neg);
      continue;
    }
    for (int j = 0; j < L; j++) {
      uint64_t hj = mix(hs ^ ((uint64_t)j << 24));
      uint32_t v = 0;
      uint64_t m = (1ull << mb) | (hj >> 20 & ((1ull << mb) - 1)); /* p significant bits */
      switch (i) {
      case 0: v = j ? 0 : ref_encode(&f, 0, 1, top); break;
      case 1: v = j ? 0 : ref_encode(&f, 0, 1, u); break;
      case 2: v = ref_encode(&f, hj & 1, m, top - mb - (int)(hj >> 8 & 31)); break;
      case 3: v = ref_encode(&f, neg, m, top - mb - 3 - (int)(hs >> 8 & 15)); break;
      case 8: v = j ? 0 : ref_encode(&f, neg, m, (top - mb - 20 > lsbmin ? top - mb - 20 : lsbmin)); break;
      case 9: v = ref_encode(&f, j & 1, m, top - mb - 2); break;
      case 10: { int e = top - mb - 40 - (int)(hj >> 8 & 63); v = ref_encode(&f, hj & 1, m, e > lsbmin ? e : lsbmin); break; }
      default: v = ref_encode(&f, 1, 1, u); break;
      }
      if (v == 0xffffffffu) v = 0; /* not representable here (cannot happen with these ranges; counted below) */
      put(ac->dt, leaf[j], i, v);
    }
  }
}

static void avg_counts(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const int sanitized = 1;
#else
  const int sanitized = 0;
#endif
  const int Ls[] = {1, 2, 3, 7, 255, 256, 257, 300, 1000, 4099, 5000, 65537, 100000, 100003, 1000000};
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_F16, SCHEDC_BF16};
  int cases = 0, failed = 0;
  long ties = 0, elems = 0;
  for (size_t li = 0; li < sizeof Ls / sizeof Ls[0]; li++)
    for (size_t d = 0; d < 3; d++)
      for (int lo = 0; lo < 2; lo++) {
        avgcase ac = {dts[d], Ls[li], lo};
        if (g_quick && (Ls[li] > 5000 || lo)) continue;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        if (Ls[li] > 100003) continue; /* the same branches as 10^5 leaves, at a tenth of the instrumented time */
#endif
        fmt f = fmt_of(ac.dt);
        int L = ac.L, top = dts[d] == SCHEDC_F16 ? (lo ? -8 : 14) : (lo ? -100 : 20);
        size_t es = schedc_dtype_size(ac.dt);
        char *buf = malloc((size_t)L * AK * es);
        void **leaf = malloc((size_t)L * sizeof *leaf);
        for (int j = 0; j < L; j++) leaf[j] = buf + (size_t)j * AK * es;
        avg_inputs(&ac, leaf, top);
        /* the reference: the grid over every leaf, each rounded onto it, summed, divided by L once */
        int g = ref_grid(ac.dt, leaf, L, AK);
        uint32_t want[AK];
        for (size_t i = 0; i < AK; i++) {
          i128 S = 0;
          for (int j = 0; j < L; j++) S += ref_q(&f, get(ac.dt, leaf[j], i), g);
          want[i] = ref_round(&f, S, g, (uint64_t)L);
          ties += ref_off_tie(&f, S, g, (uint64_t)L) == 0;
          elems++;
        }
        /* on n ranks for every n of 1..4 dividing L (leaves in blocks; 2 ranks only below 10^5 leaves):
         * 300 leaves are also 3 ranks x 100 */
        for (int n = 1; n <= 4; n++) {
          if (L % n || (n > 1 && L < 4 && L != n) || (n == 2 && L >= 100000)) continue;
          int m = L / n, bad = 0;
          schedc_comm *comms[4];
          schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
          co.timeout_s = 120;
          if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { failed++; continue; }
          lrank l[4];
          pthread_t t[4];
          for (int r = 0; r < n; r++) {
            l[r] = (lrank){comms[r], r * m, m, ac.dt, SCHEDC_AVG_EXACT, AK, leaf, malloc(AK * es), 0, ""};
            pthread_create(&t[r], NULL, leaves_main, &l[r]);
          }
          for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
          for (int r = 0; r < n; r++) {
            if (l[r].st) { bad++; fprintf(stderr, "avg L=%d n=%d rank %d: %s\n", L, n, r, l[r].err); }
            else
              for (size_t i = 0; i < AK; i++)
                if (get(ac.dt, l[r].out, i) != want[i] && bad++ < 4)
                  fprintf(stderr, "avg %s L=%d n=%d pin %d rank %d element %zu: got %04x, want %04x\n",
                          schedc_dtype_name(ac.dt), L, n, top, r, i, get(ac.dt, l[r].out, i), want[i]);
            free(l[r].out);
            schedc_comm_free(comms[r]);
          }
          cases++;
          failed += bad != 0;
        }
        free(leaf);
        free(buf);
      }
  printf("exact avg: L in 1..%s leaves on 1-4 ranks, f32/f16/bf16: %d cases, %d failed; %ld of %ld elements "
         "exact ties\n", g_quick ? "5000" : sanitized ? "100003" : "10^6", cases, failed, ties, elems);
  CHECK(failed == 0 && cases >= (g_quick ? 30 : 120));
  CHECK(ties >= (g_quick ? 20 : 100)); /* the tie elements are ties where L leaves room for them */
}

/* ---- the identity check (exact mode under SCHEDC_VERIFY digest or checksum) ---- */
static void identity(const char *dir) {
  int cases = 0, failed = 0;
  /* no false alarm: clean calls under digest, checksum and exact verification, bits as the
   * reference (exact: the check alone, taken in the executor's slice-by-slice conversions — small
   * slices, so that a cell spans several; f32, f16 and bf16) */
  for (int v = 0; v < 3; v++)
    for (int n = v == 2 ? 1 : 2; n <= 4; n++) {
      schedc_comm *comms[MAXN];
      schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
      co.timeout_s = 60;
      co.verify = v == 2 ? SCHEDC_VERIFY_EXACT : v ? SCHEDC_VERIFY_CHECKSUM : SCHEDC_VERIFY_DIGEST;
      if (v == 2) co.slice_bytes = 4096;
      if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { failed++; continue; }
      const char *files[] = {"ring.lua", "direct.lua", "tree.lua"};
      for (int fi = 0; fi < 3; fi++)
        for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
          if (coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST) continue;
          char path[4096], label[128];
          snprintf(path, sizeof path, "%s/%s", dir, files[fi]);
          schedc_plan *plan = load(path, coll, n, 0, NULL, coll == SCHEDC_REDUCE ? n / 2 : 0);
          if (!plan) continue;
          snprintf(label, sizeof label, "identity clean %s n=%d %s %s", files[fi], n,
                   schedc_collective_name((schedc_collective)coll), v == 2 ? "exact" : v ? "checksum" : "digest");
          schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_BF16, SCHEDC_F16};
          for (int d = 0; d < (v == 2 ? 3 : 1); d++)
            for (int o = 0; o < 2; o++, cases++)
              if (run_case(comms, 0, plan, coll, n, dts[d], o ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, 3000, 7 + o, label))
                failed++;
          schedc_plan_free(plan);
        }
      for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
    }
  printf("identity check: %d clean calls under digest/checksum/exact verification, %d failed\n", cases, failed);
  CHECK(failed == 0 && cases > 20);
  /* every single-bit flip of a ring's payload, at every (rank, step), under digest verification:
   * a flip in the reduce-scatter half leaves every rank with the same wrong bits (the digests
   * agree), yet the integers no longer sum to the inputs' — every rank fails, naming the check.
   * A flip must be caught on every rank, or change nothing (a reduce's payload that never reaches
   * the root's result): never a wrong result returned as a success. */
  char path[4096];
  snprintf(path, sizeof path, "%s/ring.lua", dir);
  int n = 4, flips = 0, caught = 0, harmless = 0;
  for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
    if (coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST) continue;
    schedc_plan *plan = load(path, coll, n, 0, NULL, coll == SCHEDC_REDUCE ? 1 : 0);
    schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
    if (!plan || schedc_plan_get_info(plan, &in) != SCHEDC_OK) { failed++; continue; }
    for (int r = 0; r < n; r++)
      for (int s = 0; s < in.nsteps; s++) {
        char spec[64];
        snprintf(spec, sizeof spec, "flip:%d:%d", r, s);
        setenv("SCHEDC_INJECT", spec, 1);
        schedc_comm *comms[MAXN];
        schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
        co.timeout_s = 60;
        co.verify = SCHEDC_VERIFY_DIGEST;
        int ok = schedc_comm_init_threads(n, &co, comms) == SCHEDC_OK;
        unsetenv("SCHEDC_INJECT");
        if (!ok) { failed++; continue; }
        fmt f = fmt_of(SCHEDC_F32);
        size_t count = 3000, K = coll == SCHEDC_REDUCE_SCATTER ? count * (size_t)n : count;
        job j[MAXN];
        pthread_t t[MAXN];
        void *in_[MAXN];
        char *want = malloc(K * 4);
        for (int q = 0; q < n; q++) {
          in_[q] = malloc(K * 4);
          for (size_t i = 0; i < K; i++) put(SCHEDC_F32, in_[q], i, input(&f, n, q, i, 3));
        }
        reference(SCHEDC_F32, 0, in_, n, K, want);
        for (int q = 0; q < n; q++) {
          j[q] = (job){comms[q], plan, coll, 1, q, n, SCHEDC_F32, SCHEDC_SUM_EXACT, count, in_[q], malloc(K * 4), 0, ""};
          pthread_create(&t[q], NULL, thread_main, &j[q]);
        }
        int all = 1, none = 1;
        for (int q = 0; q < n; q++) pthread_join(t[q], NULL);
        for (int q = 0; q < n; q++) {
          all &= j[q].st == SCHEDC_ECORRUPT && strstr(j[q].err, "exact-mode check") != NULL;
          none &= j[q].st == SCHEDC_OK && compare(&j[q], want, spec) == 0;
        }
        for (int q = 0; q < n; q++) {
          free(in_[q]);
          free(j[q].out);
          schedc_comm_free(comms[q]);
        }
        free(want);
        flips++;
        caught += all;
        harmless += none;
        if (!all && !none)
          fprintf(stderr, "identity: %s %s neither caught on every rank nor harmless (rank 0: %s)\n",
                  schedc_collective_name((schedc_collective)coll), spec, j[0].st ? j[0].err : "ok");
      }
    schedc_plan_free(plan);
  }
  printf("identity check: of %d injected payload flips under digest verification, %d caught on every rank, %d left "
         "the results as the reference's\n", flips, caught, harmless);
  CHECK(flips >= 40 && caught >= 40 && caught + harmless == flips);
}

/* The reference's own rounding against the hardware's where both apply (a self-check of the
 * oracle: double -> float conversion rounds once, ties to even). */
static void oracle(void) {
  fmt f = fmt_of(SCHEDC_F32);
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    uint64_t h = mix((uint64_t)i * 77 + 5);
    int64_t S = (int64_t)(h >> (11 + i % 40)) * ((h & 1) ? -1 : 1);
    int b = (int)(mix(h) % 300) - 200;
    float want = (float)ldexp((double)S, b); /* exact in double when |S| < 2^53, then one rounding */
    if (fb(want) != ref_round(&f, S, b, 1)) bad++;
  }
  CHECK(bad == 0);
  /* its division: S / n in long double (S exact in its 64-bit significand, the quotient rounded
   * once), then to float: the same as the reference's one rounding unless the long double landed
   * exactly on a midpoint of floats (then the double rounding may differ: skipped, counted) */
  int skipped = 0;
  bad = 0;
  for (int i = 0; i < 200000; i++) {
    uint64_t h = mix((uint64_t)i * 131 + 9);
    int64_t S = (int64_t)(h >> (1 + i % 60)) * ((h & 1) ? -1 : 1);
    uint64_t n = i % 3 ? 1 + mix(h) % (i % 3 == 1 ? 1100000 : 0x7fffffffu) : 255 + (uint64_t)(i % 5);
    int b = (int)(mix(h ^ 77) % 200) - 150;
    long double q = ldexpl((long double)S / (long double)n, b);
    float want = (float)q, up = nextafterf(want, INFINITY), dn = nextafterf(want, -INFINITY);
    uint64_t aS = S < 0 ? 0 - (uint64_t)S : (uint64_t)S, odd = n >> __builtin_ctzll(n);
    int exact = aS % odd == 0; /* the quotient a binary fraction: long double holds it, a midpoint is real */
    if (!exact && (q == ((long double)want + up) / 2 || q == ((long double)want + dn) / 2)) { skipped++; continue; }
    if (fb(want) != ref_round(&f, S, b, n) && bad++ < 3)
      fprintf(stderr, "oracle: %lld 2^%d / %llu: long double %a, reference %08x\n", (long long)S, b,
              (unsigned long long)n, (double)want, ref_round(&f, S, b, n));
  }
  if (bad || skipped >= 20) fprintf(stderr, "oracle division: %d wrong, %d skipped\n", bad, skipped);
  CHECK(bad == 0 && skipped < 20);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_exact SCHEDULES_DIR [shm|quick]\n"); return 2; }
  int use_shm = argc > 2 && strcmp(argv[2], "shm") == 0;
  g_quick = argc > 2 && strcmp(argv[2], "quick") == 0;
  SKIP_NO_SIMD();
  if (!g_quick) oracle();
  if (!use_shm) edges();
  if (!use_shm && !g_quick) leaves();
  if (!use_shm) avg_counts();
  if (!use_shm && !g_quick) identity(argv[1]);
  sweep(argv[1], use_shm);
  return DONE();
}
