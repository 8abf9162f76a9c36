/*
 * test_call.c — the core's call contract with a recording test-double backend: every call that
 * reaches a backend is numbered by the core (whichever backend: the mpi backend used to see 0 on
 * every call, so flipout flipped byte 0 each time), the result record is the caller's and starts
 * zeroed, the one agreement check names each field, and the one verdict decides alike for every
 * caller (corrupted transfer, digest majority, repair root).
 */
#include <pthread.h>
#include <string.h>

#include "../check.h"
#include "agree.h"
#include "comm.h"
#include "plan.h"
#include "schedc/schedc.h"

/* The double: records what the core handed it; leaves a mark in the result. */
static uint64_t seen_seq[8];
static int seen_calls, seen_res_dirty;
static schedc_status rec_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  (void)c;
  if (seen_calls < 8) seen_seq[seen_calls] = k->seq;
  seen_calls++;
  seen_res_dirty += res->have_digest != 0 || res->digest != 0 || res->bad.found != 0;
  res->digest = 0xdeadbeef; /* the next call's record must not start with it */
  res->have_digest = 1;
  res->bad.found = 1;
  return SCHEDC_OK;
}
static void rec_free(schedc_comm *c) { c->be_data = NULL; }
static const sc_backend recorder = {"recorder", 0, rec_collective, NULL, rec_free, NULL, NULL, NULL};

static void numbering(void) {
  schedc_comm *c = NULL;
  CHECK(sc_comm_new(&recorder, 0, 1, NULL, &c) == SCHEDC_OK);
  if (!c) return;
  float x[4] = {1, 2, 3, 4};
  sc_result res;
  for (int i = 0; i < 3; i++)
    CHECK(sc_coll_verified(c, SCHEDC_ALLREDUCE, x, x, 4, SCHEDC_F32, SCHEDC_SUM, 0, NULL, &res) == SCHEDC_OK);
  /* an internal call is numbered too: every rank makes it, so it keeps the ranks in step */
  CHECK(sc_coll(c, SCHEDC_ALLGATHER, x, x, 4, SCHEDC_F32, SCHEDC_SUM, 0, NULL, SC_CALL_INTERNAL) == SCHEDC_OK);
  CHECK(seen_calls == 4);
  CHECK(seen_seq[0] == 1 && seen_seq[1] == 2 && seen_seq[2] == 3 && seen_seq[3] == 4);
  CHECK(seen_res_dirty == 0);
  /* a call refused by the argument checks never reaches the backend and takes no number */
  CHECK(sc_coll_verified(c, SCHEDC_ALLREDUCE, x, x, 4, (schedc_dtype)99, SCHEDC_SUM, 0, NULL, &res) == SCHEDC_EINVAL);
  CHECK(sc_coll_verified(c, SCHEDC_ALLREDUCE, x, x, 4, SCHEDC_F32, SCHEDC_SUM, 0, NULL, &res) == SCHEDC_OK);
  CHECK(seen_calls == 5 && seen_seq[4] == 5);
  /* flipout moves with the call's number, on any backend */
  CHECK(sc_inject_parse("flipout:0", &c->inj) == SCHEDC_OK);
  sc_call k1, k2;
  CHECK(sc_call_make(c, SCHEDC_ALLREDUCE, x, x, 4, SCHEDC_F32, SCHEDC_SUM, 0, NULL, 0, &k1) == SCHEDC_OK);
  k2 = k1;
  k1.seq = 1;
  k2.seq = 2;
  CHECK(sc_flipout_pos(c, &k1, 1000) == 7919 % 1000 && sc_flipout_pos(c, &k2, 1000) == 2 * 7919 % 1000);
  k2.flags = SC_CALL_NOINJECT;
  CHECK(sc_flipout_pos(c, &k2, 1000) == -1);
  schedc_comm_free(c);
}

/* One sc_agreement per field changed: the message names that field and both values. */
static void agreement(void) {
  schedc_plan *p = NULL;
  CHECK(schedc_plan_builtin(SCHEDC_ALLREDUCE, 2, 0, &p) == SCHEDC_OK);
  if (!p) return;
  sc_call k = {0};
  k.coll = SCHEDC_ALLREDUCE;
  k.cn = "allreduce";
  k.count = 100;
  k.dtype = SCHEDC_F32;
  k.op = SCHEDC_SUM;
  k.plan = p;
  k.slice = 4096;
  k.seq = 7;
  sc_agreement a, b;
  sc_agreement_of(&a, &k, SC_PATH_PLAN);
  b = a;
  CHECK(sc_agreement_check("allreduce", 0, &a, 1, &b) == SCHEDC_OK);
  CHECK(sc_agreement_fp(&a) == sc_agreement_fp(&b));
  b.count = 101;
  CHECK(sc_agreement_fp(&a) != sc_agreement_fp(&b));
  CHECK(sc_agreement_check("allreduce", 0, &a, 1, &b) == SCHEDC_EMISMATCH);
  CHECK_EQ_STR(schedc_errmsg(), "allreduce: rank 0 and rank 1 disagree on the count of call 7 (rank 0: 100; rank 1: 101)");
  b = a;
  b.dtype = SCHEDC_BF16;
  CHECK(sc_agreement_check("allreduce", 1, &a, 0, &b) == SCHEDC_EMISMATCH);
  CHECK_EQ_STR(schedc_errmsg(), "allreduce: rank 1 and rank 0 disagree on the dtype of call 7 (rank 1: f32; rank 0: bf16)");
  b = a;
  b.wire = SCHEDC_WIRE_Q8; /* a quantized call against a plain one (compression, issue 37) */
  CHECK(sc_agreement_fp(&a) != sc_agreement_fp(&b));
  CHECK(sc_agreement_check("allreduce", 0, &a, 1, &b) == SCHEDC_EMISMATCH);
  CHECK_EQ_STR(schedc_errmsg(), "allreduce: rank 0 and rank 1 disagree on the wire format of call 7 (rank 0: default; "
                                "rank 1: q8)");
  b = a;
  b.checks = SC_V_DIGEST | SC_V_REPAIR;
  CHECK(sc_agreement_check("allreduce", 0, &a, 1, &b) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), "disagree on the verification (SCHEDC_VERIFY, SCHEDC_REPAIR) of call 7 (rank 0: "
                                  "SCHEDC_VERIFY=none; rank 1: SCHEDC_VERIFY=digest with repair)");
  b = a;
  b.path = SC_PATH_SMALL;
  CHECK(sc_agreement_check("allreduce", 0, &a, 1, &b) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), "disagree on the path of call 7 (rank 0: plan; rank 1: small-message): set SCHEDC_SMALL");
  b = a;
  b.seq = 8;
  b.count = 5; /* the sequence is named first: the other fields describe another call */
  CHECK(sc_agreement_check("allreduce", 0, &a, 1, &b) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), "disagree on the call sequence of call 7 (rank 0: 7; rank 1: 8)");
  schedc_plan_free(p);
}

/* The verdict from records, as every backend reaches it. */
static void verdict(void) {
  enum { N = 4 };
  uint64_t all[N * SC_VREC_WORDS], dg[N];
  sc_corrupt none = {0}, bad = {1, 3, 2, 1, 2, 17, 0xaaaa, 0xbbbb};
  int fix;
  for (int r = 0; r < N; r++) sc_vrec_pack(all + r * SC_VREC_WORDS, 42, &none);
  CHECK(sc_verdict("allreduce", "x.lua", all, N, 0, 1, 0, dg, &fix) == SCHEDC_OK && fix == -1 && dg[3] == 42);
  /* rank 2 differs: named without repair, the majority's rank to repair from with it */
  sc_vrec_pack(all + 2 * SC_VREC_WORDS, 43, &none);
  CHECK(sc_verdict("allreduce", "x.lua", all, N, 1, 1, 0, dg, &fix) == SCHEDC_ECORRUPT && fix == -1);
  CHECK_CONTAINS(schedc_errmsg(), "rank(s) 2 hold a result that differs from the majority (3 of 4 ranks agree");
  CHECK(sc_verdict("allreduce", "x.lua", all, N, 1, 1, 1, dg, &fix) == SCHEDC_OK && fix == 0);
  CHECK(sc_repaired("allreduce", 2, 42, dg[fix]) == SCHEDC_OK);
  CHECK(sc_repaired("allreduce", 2, 43, dg[fix]) == SCHEDC_ECORRUPT);
  /* digests not compared (reduce_scatter): a differing digest is no verdict */
  CHECK(sc_verdict("reduce_scatter", "x.lua", all, N, 1, 0, 1, dg, &fix) == SCHEDC_OK && fix == -1);
  /* a corrupted transfer reported by rank 3 (and rank 1, later in the list): the lowest one's, everywhere */
  sc_vrec_pack(all + 3 * SC_VREC_WORDS, 42, &bad);
  sc_corrupt bad1 = bad;
  bad1.step = 9;
  sc_vrec_pack(all + 1 * SC_VREC_WORDS, 42, &bad1);
  CHECK(sc_verdict("allreduce", "x.lua", all, N, 0, 1, 1, dg, &fix) == SCHEDC_ECORRUPT);
  CHECK_CONTAINS(schedc_errmsg(), "the payload rank 1 sent to rank 2 at step 9 (x.lua:17, chunk 2) failed its CRC32C "
                                  "check (0x0000aaaa, sent 0x0000bbbb)");
}

/* A repaired digest mismatch warns through the log hook (schedc_set_log), not straight to stderr:
 * 2 thread ranks, digest verification with repair, rank 1's result flipped after the call. */
static int nwarn, nother;
static char lastwarn[512];
static void hook(void *ctx, schedc_log_level level, const char *msg) {
  (void)ctx;
  if (level == SCHEDC_LOG_WARN) {
    nwarn++;
    snprintf(lastwarn, sizeof lastwarn, "%s", msg);
  } else {
    nother++;
  }
}
typedef struct job { schedc_comm *c; float x[64]; schedc_status st; } job;
static void *rank_main(void *arg) {
  job *j = arg;
  j->st = schedc_allreduce(j->x, j->x, 64, SCHEDC_F32, SCHEDC_SUM, j->c, NULL);
  return NULL;
}
static void warning_through_hook(void) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = SCHEDC_VERIFY_DIGEST;
  o.repair = 1;
  o.timeout_s = 30;
  schedc_comm *c[2];
  CHECK(schedc_comm_init_threads(2, &o, c) == SCHEDC_OK);
  job j[2];
  pthread_t t[2];
  for (int r = 0; r < 2; r++) {
    CHECK(sc_inject_parse("flipout:1", &c[r]->inj) == SCHEDC_OK);
    j[r].c = c[r];
    for (int i = 0; i < 64; i++) j[r].x[i] = (float)(i + r);
  }
  schedc_set_log(hook, NULL);
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, rank_main, &j[r]);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  schedc_set_log(NULL, NULL);
  CHECK(j[0].st == SCHEDC_OK && j[1].st == SCHEDC_OK);
  CHECK(nwarn == 1 && nother == 0); /* told once, by the rank that repaired from (rank 0) */
  CHECK_CONTAINS(lastwarn, "allreduce: rank(s) 1 held a result differing from the majority");
  CHECK_CONTAINS(lastwarn, "repaired from rank 0");
  CHECK(memcmp(j[0].x, j[1].x, sizeof j[0].x) == 0);
  for (int r = 0; r < 2; r++) schedc_comm_free(c[r]);
}

int main(void) {
  numbering();
  warning_through_hook();
  agreement();
  verdict();
  return DONE();
}
