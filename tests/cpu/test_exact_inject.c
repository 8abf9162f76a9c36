/*
 * test_exact_inject.c — exact mode's identity check against injected faults (docs/determinism.md
 * "Exact integrity", SCHEDC_VERIFY=exact, SCHEDC_INJECT flip / arith / flipout). Inputs are small
 * integers, so every order of f32 sums is exact and the test's own integer sum is the reference.
 * For every (rank, step) of ring, tree, direct and halving_doubling plans on 2–6 ranks, threads and
 * shm processes: a payload flip (flip:R:S) or a flip in what a reduce computed (arith:R:S) that
 * the plan gives a place to land (the test finds it from the plan's transfers) must fail the call
 * with SCHEDC_ECORRUPT naming the exact-mode check on every rank; one with no place must leave
 * every rank with the reference's bits. Then: with CRCs alone (checksum, not an exact call) an
 * arith flip passes unseen with a wrong result, which the identity check catches in exact mode;
 * flipout under digest; what SCHEDC_VERIFY=exact leaves alone (other calls, the result after it).
 * Usage: test_exact_inject SCHEDULES_DIR [threads|shm|extra]
 */
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

#define MAXN 8
#define COUNT 4099 /* elements per rank (reduce_scatter: per block); above SCHEDC_SMALL: plan path */
static size_t g_count = COUNT; /* the calls' count (small: the small-message path) */
/* wire mode (docs/compression.md): the calls are SUM with this SCHEDC_WIRE_* (0: exact mode's ops),
 * on inputs the wire carries exactly (q8: |x| <= 7 on 2-4 ranks, 5 bits; q16: |x| <= 1000, 12 bits),
 * so the integer reference stands and the identity check is the wire's integers' */
static int g_wire;

/* outcomes of one rank's call */
enum { R_REF = 0, R_CAUGHT = 1, R_WRONG = 2, R_CORRUPT = 3, R_ERROR = 4 };
static const char *oname[] = {"reference bits", "ECORRUPT (exact-mode check)", "OK with wrong bits",
                              "ECORRUPT (another check)", "another error"};

/* rank r's input element i: a small integer, as f32 (sums of up to 8 are exact in any order) */
static float input(int r, size_t i) {
  unsigned span = g_wire == 8 ? 15u : 2001u;
  return (float)((int)((i * 2654435761u + (unsigned)r * 40503u) % span) - (int)(span / 2));
}

typedef struct job {
  schedc_comm *comm;
  const schedc_plan *plan;
  int coll, rank, n, root;
  schedc_op op;
  float *in, *out;
  schedc_status st;
  char err[512];
} job;

static void call(job *j) {
  if (g_wire) {
    schedc_call_opts o = SCHEDC_CALL_OPTS_INIT;
    o.wire = g_wire;
    if (j->coll == SCHEDC_ALLREDUCE) j->st = schedc_allreduce_v2(j->in, j->out, g_count, SCHEDC_F32, SCHEDC_SUM, j->comm, j->plan, &o);
    else if (j->coll == SCHEDC_REDUCE_SCATTER)
      j->st = schedc_reduce_scatter_v2(j->in, j->out, g_count, SCHEDC_F32, SCHEDC_SUM, j->comm, j->plan, &o);
    else j->st = schedc_reduce_v2(j->in, j->out, g_count, SCHEDC_F32, SCHEDC_SUM, j->root, j->comm, j->plan, &o);
    if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
    return;
  }
  if (j->coll == SCHEDC_ALLREDUCE) j->st = schedc_allreduce(j->in, j->out, g_count, SCHEDC_F32, j->op, j->comm, j->plan);
  else if (j->coll == SCHEDC_REDUCE_SCATTER)
    j->st = schedc_reduce_scatter(j->in, j->out, g_count, SCHEDC_F32, j->op, j->comm, j->plan);
  else j->st = schedc_reduce(j->in, j->out, g_count, SCHEDC_F32, j->op, j->root, j->comm, j->plan);
  if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
}
static void *thread_main(void *p) { call(p); return NULL; }

/* This rank's outcome: its result part against the integer reference. */
static int outcome(const job *j) {
  if (j->st == SCHEDC_ECORRUPT) return strstr(j->err, "exact-mode check") ? R_CAUGHT : R_CORRUPT;
  if (j->st != SCHEDC_OK) return R_ERROR;
  if (j->coll == SCHEDC_REDUCE && j->rank != j->root) return R_REF;
  size_t lo = j->coll == SCHEDC_REDUCE_SCATTER ? (size_t)j->rank * g_count : 0;
  for (size_t i = 0; i < g_count; i++) {
    long want = 0;
    for (int q = 0; q < j->n; q++) want += (long)input(q, lo + i);
    float w = (float)want; /* +0 for 0: the exact sum's zero, and x + -x in f32 */
    if (memcmp(&j->out[i], &w, 4)) return R_WRONG;
  }
  return R_REF;
}

/* Run one call on n ranks (threads, or shm processes) with SCHEDC_INJECT=spec (NULL: none) and
 * verification `verify`; out[r]: each rank's outcome; err: rank 0's message. */
static void run(int shm, const schedc_plan *plan, int coll, int n, schedc_op op, int verify, const char *spec,
                int out[MAXN], char *err, size_t errcap) {
  static int serial;
  size_t K = coll == SCHEDC_REDUCE_SCATTER ? g_count * (size_t)n : g_count;
  job j[MAXN];
  int root = coll == SCHEDC_REDUCE ? n - 1 : 0;
  for (int r = 0; r < n; r++) {
    j[r] = (job){NULL, plan, coll, r, n, root, op, malloc(K * 4), malloc(K * 4), 0, ""};
    for (size_t i = 0; i < K; i++) j[r].in[i] = input(r, i);
    memset(j[r].out, 0xee, g_count * 4);
  }
  if (spec) setenv("SCHEDC_INJECT", spec, 1);
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 60;
  co.verify = verify;
  err[0] = 0;
  if (!shm) {
    schedc_comm *comms[MAXN];
    schedc_status st = schedc_comm_init_threads(n, &co, comms);
    unsetenv("SCHEDC_INJECT");
    if (st != SCHEDC_OK) {
      snprintf(err, errcap, "init: %s", schedc_errmsg());
      for (int r = 0; r < n; r++) out[r] = R_ERROR;
    } else {
      pthread_t t[MAXN];
      for (int r = 0; r < n; r++) j[r].comm = comms[r], pthread_create(&t[r], NULL, thread_main, &j[r]);
      for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
      for (int r = 0; r < n; r++) out[r] = outcome(&j[r]);
      snprintf(err, errcap, "%s", j[0].err);
      for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
    }
  } else {
    char name[64];
    snprintf(name, sizeof name, "xinj%d_%d", (int)getpid(), serial++);
    pid_t pid[MAXN];
    for (int r = 0; r < n; r++)
      if ((pid[r] = fork()) == 0) {
        if (schedc_comm_init_shm(r, n, name, &co, &j[r].comm) != SCHEDC_OK) {
          fprintf(stderr, "shm init: %s\n", schedc_errmsg());
          _exit(10 + R_ERROR);
        }
        call(&j[r]);
        int o = outcome(&j[r]);
        if (o == R_ERROR) fprintf(stderr, "rank %d: %s\n", r, j[r].err);
        schedc_comm_free(j[r].comm);
        _exit(10 + o);
      }
    unsetenv("SCHEDC_INJECT");
    for (int r = 0; r < n; r++) {
      int ws;
      waitpid(pid[r], &ws, 0);
      out[r] = WIFEXITED(ws) && WEXITSTATUS(ws) >= 10 && WEXITSTATUS(ws) <= 10 + R_ERROR ? WEXITSTATUS(ws) - 10 : R_ERROR;
    }
  }
  for (int r = 0; r < n; r++) { free(j[r].in); free(j[r].out); }
}

static int all_are(const int o[MAXN], int n, int want) {
  for (int r = 0; r < n; r++) if (o[r] != want) return 0;
  return 1;
}

static schedc_plan *load(const char *dir, const char *file, int coll, int n) {
  return tl_plan_in(dir, file, coll, n, n - 1); /* NULL: not built for this case */
}

/* Does the fault have a place to land in the plan: flip:R:S a transfer out of R at step S to another
 * rank; arith:R:S a reduce into R at step S (the test's own reading of the plan's transfers). */
static int lands(const schedc_plan *p, int arith, int r, int s) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(p, &in);
  for (long i = 0; i < in.ntransfers; i++) {
    schedc_transfer x;
    if (schedc_plan_transfer(p, i, &x) != SCHEDC_OK || x.step != s) continue;
    if (!arith && x.src == r && x.dst != r) return 1;
    if (arith && x.dst == r && x.kind == SCHEDC_XFER_REDUCE) return 1;
  }
  return 0;
}

/* Every (rank, step) flip and arith fault over the schedules x 2..maxn ranks (x allreduce; on
 * threads also reduce_scatter and reduce), under SCHEDC_VERIFY=exact. */
static void sweep(const char *dir, int shm, int maxn) {
  static const char *files[] = {"ring.lua", "tree.lua", "direct.lua", "halving_doubling.lua"};
  int landed = 0, caught = 0, missed = 0, clean = 0, bad = 0, plans = 0;
  for (int fi = 0; fi < 4; fi++)
    for (int n = 2; n <= maxn; n++)
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if (coll != SCHEDC_ALLREDUCE && (shm || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST)) continue;
        schedc_plan *plan = load(dir, files[fi], coll, n);
        if (!plan) continue;
        plans++;
        schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
        schedc_plan_get_info(plan, &in);
        for (int kind = 0; kind < 2; kind++)
          for (int r = 0; r < n; r++)
            for (int s = 0; s < in.nsteps; s++) {
              char spec[64], err[512];
              int o[MAXN];
              snprintf(spec, sizeof spec, "%s:%d:%d", kind ? "arith" : "flip", r, s);
              run(shm, plan, coll, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_EXACT, spec, o, err, sizeof err);
              int l = lands(plan, kind, r, s), ok = l ? all_are(o, n, R_CAUGHT) : all_are(o, n, R_REF);
              landed += l;
              caught += l && ok;
              clean += !l && ok;
              if (!ok) {
                if (l && !all_are(o, n, R_ERROR)) missed++;
                else bad++;
                fprintf(stderr, "FAIL %s %s n=%d %s: lands=%d; rank 0: %s (%s)\n", shm ? "shm" : "threads", files[fi], n,
                        schedc_collective_name((schedc_collective)coll), l, oname[o[0]], err);
                for (int q = 1; q < n; q++) if (o[q] != o[0]) fprintf(stderr, "  rank %d: %s\n", q, oname[o[q]]);
              }
            }
        schedc_plan_free(plan);
      }
  printf("%s: %d plans; %d injected faults landed, %d caught on every rank, %d missed; %d with no place to land "
         "left the reference's bits; %d other failures\n", shm ? "shm" : "threads", plans, landed, caught, missed, clean,
         bad);
  CHECK(plans >= (maxn == 6 ? 45 : 12));
  CHECK(landed >= (maxn == 6 ? 600 : g_wire ? 150 : 200));
  CHECK(caught == landed && missed == 0 && bad == 0);
  CHECK(clean > 0);
}

/* What the CRCs cannot see and the identity check can; flipout; what SCHEDC_VERIFY=exact leaves. */
static void extra(const char *dir) {
  int n = 4, arith_landed = 0, unseen = 0, caught = 0, caught_checksum = 0;
  schedc_plan *plan = load(dir, "ring.lua", SCHEDC_ALLREDUCE, n);
  CHECK(plan != NULL);
  if (!plan) return;
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  char spec[64], err[512];
  int o[MAXN];
  for (int r = 0; r < n; r++)
    for (int s = 0; s < in.nsteps; s++) {
      if (!lands(plan, 1, r, s)) continue;
      arith_landed++;
      /* bit 30 of the slice's first f32: its exponent's top bit, so the partial sum is far off */
      snprintf(spec, sizeof spec, "arith:%d:%d:30", r, s);
      /* a plain f32 sum under checksums: every transfer's CRC matches what was sent, the result is wrong */
      run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM, SCHEDC_VERIFY_CHECKSUM, spec, o, err, sizeof err);
      int ok_everywhere = 1, wrong = 0;
      for (int q = 0; q < n; q++) ok_everywhere &= o[q] == R_REF || o[q] == R_WRONG, wrong += o[q] == R_WRONG;
      unseen += ok_everywhere && wrong > 0;
      if (!(ok_everywhere && wrong > 0)) fprintf(stderr, "FAIL checksum %s: rank 0 %s (%s)\n", spec, oname[o[0]], err);
      /* the same fault in exact mode: caught by the identity check alone, and under checksum (which includes it) */
      run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_EXACT, spec, o, err, sizeof err);
      caught += all_are(o, n, R_CAUGHT);
      run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_CHECKSUM, spec, o, err, sizeof err);
      caught_checksum += all_are(o, n, R_CAUGHT);
    }
  printf("arith faults on a ring of 4: %d landed; with CRCs alone %d passed unseen with a wrong result; in exact mode "
         "%d caught under exact, %d under checksum\n", arith_landed, unseen, caught, caught_checksum);
  CHECK(arith_landed >= 8 && unseen == arith_landed && caught == arith_landed && caught_checksum == arith_landed);
  /* avg_exact too (the identity is of the integers, before the division) */
  snprintf(spec, sizeof spec, "arith:1:1");
  run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_AVG_EXACT, SCHEDC_VERIFY_EXACT, spec, o, err, sizeof err);
  CHECK(all_are(o, n, R_CAUGHT));
  CHECK_CONTAINS(err, "the reduction's arithmetic");
  /* flipout: a fault in the result after the collective. Under digest (which includes the identity
   * check) every rank fails; the identity alone covers the integers up to their rounding out, not
   * the caller's buffer afterwards (docs: that is the digest's), so rank r alone holds wrong bits */
  for (int r = 0; r < n; r++) {
    snprintf(spec, sizeof spec, "flipout:%d", r);
    run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_DIGEST, spec, o, err, sizeof err);
    CHECK(all_are(o, n, R_CORRUPT));
    CHECK_CONTAINS(err, "digest");
    run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_EXACT, spec, o, err, sizeof err);
    for (int q = 0; q < n; q++) CHECK(o[q] == (q == r ? R_WRONG : R_REF));
  }
  /* SCHEDC_VERIFY=exact leaves calls that are not exact unverified (documented): a plain sum with
   * an arith fault returns OK with its wrong bits; no false alarm on clean exact calls, the
   * small-message path (a small count) and reduce_scatter / reduce included */
  run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM, SCHEDC_VERIFY_EXACT, "arith:0:1:30", o, err, sizeof err);
  int wrong = 0, ok = 1;
  for (int q = 0; q < n; q++) ok &= o[q] == R_REF || o[q] == R_WRONG, wrong += o[q] == R_WRONG;
  CHECK(ok && wrong > 0);
  run(0, plan, SCHEDC_ALLREDUCE, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_EXACT, NULL, o, err, sizeof err);
  CHECK(all_are(o, n, R_REF));
  schedc_plan_free(plan);
  for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
    if (coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST) continue;
    for (int small = 0; small < 2; small++) {
      g_count = small ? 37 : COUNT; /* 37 x 8 bytes (x 4 blocks): the small-message path */
      schedc_plan *p = load(dir, "ring.lua", coll, n);
      run(0, p, coll, n, SCHEDC_SUM_EXACT, SCHEDC_VERIFY_EXACT, NULL, o, err, sizeof err);
      CHECK(p && all_are(o, n, R_REF));
      schedc_plan_free(p);
    }
  }
  g_count = COUNT;
  /* the grammar and its checks at init */
  schedc_comm *comms[MAXN];
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.verify = SCHEDC_VERIFY_EXACT;
  setenv("SCHEDC_INJECT", "arith:4:0", 1);
  CHECK(schedc_comm_init_threads(4, &co, comms) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "arith: rank 4 out of range");
  setenv("SCHEDC_INJECT", "arith:1", 1);
  CHECK(schedc_comm_init_threads(4, &co, comms) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "arith:RANK:STEP[:BIT]");
  setenv("SCHEDC_INJECT", "arith:1:2:77", 1);
  CHECK(schedc_comm_init_threads(4, &co, comms) == SCHEDC_OK);
  for (int r = 0; r < 4; r++) schedc_comm_free(comms[r]);
  unsetenv("SCHEDC_INJECT");
  co.verify = 12;
  CHECK(schedc_comm_init_threads(4, &co, comms) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "_EXACT");
  co.verify = 0;
  setenv("SCHEDC_VERIFY", "exact", 1);
  CHECK(schedc_comm_init_threads(2, &co, comms) == SCHEDC_OK);
  for (int r = 0; r < 2; r++) schedc_comm_free(comms[r]);
  unsetenv("SCHEDC_VERIFY");
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_exact_inject SCHEDULES_DIR [threads|threads4|shm|extra|wire8|wire16]\n"); return 2; }
  const char *what = argc > 2 ? argv[2] : "threads";
  setenv("SCHEDC_DEBUG", "error", 1); /* the injections' warnings: hundreds of lines */
  if (!strcmp(what, "extra")) extra(argv[1]);
  else if (!strncmp(what, "wire", 4)) { /* wire8, wire16: the same sweep on a quantized wire, threads, 2-4 ranks */
    g_wire = atoi(what + 4);
    sweep(argv[1], 0, 4);
  }
  /* shm (forked ranks, the same executor and checks) and threads4 (the ASan tree's): 2-4 ranks */
  else sweep(argv[1], !strcmp(what, "shm"), !strcmp(what, "threads") ? 6 : 4);
  return DONE();
}
