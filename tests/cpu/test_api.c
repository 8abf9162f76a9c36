/*
 * test_api.c — the runtime's contract at its edges: argument errors name the argument, a call
 * that differs between ranks returns SCHEDC_EMISMATCH on every rank instead of hanging, a rank
 * that never arrives makes the others time out with the step and the rank, the built-in ring
 * is the shipped ring.lua (same plan hash), free(NULL) is a no-op, and the environment init
 * says what is missing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "comm.h" /* to give one rank another slice size */
#include "schedc/schedc.h"

typedef struct arg { schedc_comm *c; size_t count; schedc_status st; char msg[512]; double t; } arg;

static void *call(void *p) {
  arg *a = p;
  float buf[64] = {0};
  a->st = schedc_allreduce(buf, buf, a->count, SCHEDC_F32, SCHEDC_SUM, a->c, NULL);
  snprintf(a->msg, sizeof a->msg, "%s", schedc_errmsg());
  return NULL;
}

typedef struct reptest { schedc_comm *c; int corrupt, agree_before, agree_after_flip, fixed, agree_final; } reptest;
static reptest rep[3];
static void *replicas(void *p) {
  reptest *x = p;
  unsigned char w[333];
  for (int i = 0; i < 333; i++) w[i] = (unsigned char)(i * 7);
  schedc_replicas_agree(x->c, w, sizeof w, &x->agree_before);
  if (x->corrupt) w[332] ^= 1; /* the odd tail byte */
  schedc_replicas_agree(x->c, w, sizeof w, &x->agree_after_flip);
  schedc_replicas_resync(x->c, w, sizeof w, &x->fixed);
  schedc_replicas_agree(x->c, w, sizeof w, &x->agree_final);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  schedc_comm *comms[4];
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 0.5;
  CHECK(schedc_comm_init_threads(3, &o, comms) == SCHEDC_OK);
  CHECK(schedc_comm_rank(comms[2]) == 2 && schedc_comm_nranks(comms[0]) == 3);
  float x[4] = {0};
  /* argument errors, detected before any communication */
  CHECK(schedc_allreduce(x, x, 4, (schedc_dtype)99, SCHEDC_SUM, comms[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "bad dtype 99");
  CHECK(schedc_allreduce(x, NULL, 4, SCHEDC_F32, SCHEDC_SUM, comms[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "recvbuf is NULL");
  CHECK(schedc_broadcast(x, x, 4, SCHEDC_F32, 7, comms[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "root 7 out of range [0, 3)");
  CHECK(schedc_allreduce(x, x, 4, SCHEDC_F32, SCHEDC_SUM, NULL, NULL) == SCHEDC_EINVAL);
  schedc_plan *p4;
  CHECK(schedc_plan_builtin(SCHEDC_ALLREDUCE, 4, 0, &p4) == SCHEDC_OK);
  CHECK(schedc_allreduce(x, x, 4, SCHEDC_F32, SCHEDC_SUM, comms[0], p4) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "is for 4 ranks, the communicator has 3");
  schedc_plan *ag3;
  CHECK(schedc_plan_builtin(SCHEDC_ALLGATHER, 3, 0, &ag3) == SCHEDC_OK);
  CHECK(schedc_allreduce(x, x, 4, SCHEDC_F32, SCHEDC_SUM, comms[0], ag3) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "is a allgather plan");

  /* the built-in ring is transfer for transfer the shipped ring.lua */
  char path[4096];
  snprintf(path, sizeof path, "%s/ring.lua", argv[1]);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = 4;
  schedc_plan *script;
  CHECK(schedc_plan_from_script(path, &lo, &script) == SCHEDC_OK);
  schedc_plan_info a = SCHEDC_PLAN_INFO_INIT, b = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(script, &a);
  schedc_plan_get_info(p4, &b);
  CHECK(a.hash == b.hash);
  schedc_plan_free(script);
  schedc_plan_free(p4);
  schedc_plan_free(ag3);
  /* node_of: ranks round-robin on 2 nodes; the hierarchical schedule's nodes are those (its
   * transfers between nodes are between equal local ranks: 0-1 and 2-3 here, never 0-3); bad
   * layouts are refused naming the field */
  snprintf(path, sizeof path, "%s/hierarchical.lua", argv[1]);
  static const int rr[4] = {0, 1, 0, 1}, off[4] = {0, 1, 2, 1}, host0[4] = {0, 0, 0, 0};
  lo.nnodes = 2;
  lo.node_of = rr;
  schedc_plan *h = NULL;
  CHECK(schedc_plan_from_script(path, &lo, &h) == SCHEDC_OK);
  schedc_plan_info hi = SCHEDC_PLAN_INFO_INIT;
  CHECK(h && schedc_plan_get_info(h, &hi) == SCHEDC_OK && hi.nnodes == 2);
  long across = 0, wrong = 0;
  schedc_transfer t;
  for (long i = 0; h && i < hi.ntransfers; i++) {
    CHECK(schedc_plan_transfer(h, i, &t) == SCHEDC_OK);
    if (rr[t.src] == rr[t.dst]) continue;
    across++;
    if (t.src / 2 != t.dst / 2) wrong++; /* local rank r / 2: 0 and 1 are local 0, 2 and 3 local 1 */
  }
  CHECK(across > 0 && wrong == 0);
  schedc_plan_free(h);
  lo.node_of = off;
  CHECK(schedc_plan_from_script(path, &lo, &h) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "opts->node_of[2] is 2, not a node in [0, 2)");
  lo.node_of = host0;
  CHECK(schedc_plan_from_script(path, &lo, &h) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "leaves 1 of the 2 nodes without a rank");
  lo.node_of = rr;
  lo.topology = "dgx_h100";
  CHECK(schedc_plan_from_script(path, &lo, &h) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "opts->node_of needs nranks and nnodes");
  lo.topology = NULL;
  lo.node_of = NULL;
  lo.nnodes = 0;

  /* a mismatched call: every rank learns it, nobody hangs */
  arg args[3];
  pthread_t th[3];
  for (int r = 0; r < 3; r++) { args[r] = (arg){comms[r], r == 1 ? 8 : 16, 0, "", 0}; pthread_create(&th[r], NULL, call, &args[r]); }
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 3; r++) CHECK(args[r].st == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(args[0].msg, "disagree on the count");
  /* the communicator is broken now, and says so */
  CHECK(schedc_allreduce(x, x, 4, SCHEDC_F32, SCHEDC_SUM, comms[0], NULL) == SCHEDC_EPEER);
  for (int r = 0; r < 3; r++) schedc_comm_free(comms[r]);
  /* ranks configured with different slice sizes would disagree on the counters: refused */
  CHECK(schedc_comm_init_threads(3, &o, comms) == SCHEDC_OK);
  comms[2]->slice_bytes = 4096; /* as if rank 2 had been created with another slice option */
  for (int r = 0; r < 3; r++) { args[r] = (arg){comms[r], 16, 0, "", 0}; pthread_create(&th[r], NULL, call, &args[r]); }
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 3; r++) CHECK(args[r].st == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(args[0].msg, "disagree on the slice size");
  CHECK(schedc_allreduce(x, x, 4, SCHEDC_F32, SCHEDC_SUM, comms[0], NULL) == SCHEDC_EPEER);
  CHECK_CONTAINS(schedc_errmsg(), "broken by an earlier failure");
  for (int r = 0; r < 3; r++) schedc_comm_free(comms[r]);
  /* ranks verifying differently (SCHEDC_VERIFY set per process): a mismatch named as such on
   * every rank, with both settings, not a false corruption report or a timeout */
  CHECK(schedc_comm_init_threads(3, &o, comms) == SCHEDC_OK);
  comms[1]->verify = SC_V_DIGEST; /* as if rank 1 had been started with SCHEDC_VERIFY=digest */
  for (int r = 0; r < 3; r++) { args[r] = (arg){comms[r], 16, 0, "", 0}; pthread_create(&th[r], NULL, call, &args[r]); }
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 3; r++) CHECK(args[r].st == SCHEDC_EMISMATCH);
  for (int r = 0; r < 3; r++) CHECK_CONTAINS(args[r].msg, "disagree on the verification (SCHEDC_VERIFY, SCHEDC_REPAIR)");
  CHECK_CONTAINS(args[0].msg, "rank 0: SCHEDC_VERIFY=none; rank 1: SCHEDC_VERIFY=digest");
  for (int r = 0; r < 3; r++) schedc_comm_free(comms[r]);

  /* a rank that never calls: the others time out naming the collective and the wait */
  CHECK(schedc_comm_init_threads(3, &o, comms) == SCHEDC_OK);
  for (int r = 0; r < 2; r++) { args[r] = (arg){comms[r], 16, 0, "", 0}; pthread_create(&th[r], NULL, call, &args[r]); }
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  CHECK(args[0].st == SCHEDC_ETIMEOUT || args[0].st == SCHEDC_EPEER);
  CHECK(args[0].st == SCHEDC_ETIMEOUT || args[1].st == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(args[args[0].st == SCHEDC_ETIMEOUT ? 0 : 1].msg, "timed out after 0.5 s");
  for (int r = 0; r < 3; r++) schedc_comm_free(comms[r]);
  schedc_comm_free(NULL);

  /* a rank slower than the timeout inside the built-in ring, whose transfers have no schedule
   * line: the wait is named by step and chunk (it once read "(chunk 0, line 0)") */
  CHECK(schedc_comm_init_threads(3, &o, comms) == SCHEDC_OK);
  /* every rank holds the same faults, as from SCHEDC_INJECT (a call with faults runs its plan) */
  for (int r = 0; r < 3; r++) CHECK(sc_inject_parse("delay:2:1500000", &comms[r]->inj) == SCHEDC_OK);
  for (int r = 0; r < 3; r++) { args[r] = (arg){comms[r], 16, 0, "", 0}; pthread_create(&th[r], NULL, call, &args[r]); }
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  int to = args[0].st == SCHEDC_ETIMEOUT ? 0 : 1;
  CHECK(args[to].st == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(args[to].msg, "timed out after 0.5 s on rank");
  CHECK_CONTAINS(args[to].msg, " in step ");
  for (int r = 0; r < 3; r++) CHECK(!strstr(args[r].msg, "line 0"));
  for (int r = 0; r < 3; r++) schedc_comm_free(comms[r]);

  /* replicas: agree, then one rank's copy drifts, then resync from the majority */
  CHECK(schedc_comm_init_threads(3, &o, comms) == SCHEDC_OK);
  for (int r = 0; r < 3; r++) { rep[r].c = comms[r]; rep[r].corrupt = r == 1; pthread_create(&th[r], NULL, replicas, &rep[r]); }
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < 3; r++) {
    CHECK(rep[r].agree_before == 1 && rep[r].agree_after_flip == 0 && rep[r].fixed == 1 && rep[r].agree_final == 1);
  }
  for (int r = 0; r < 3; r++) schedc_comm_free(comms[r]);

  /* environment init */
  unsetenv("SCHEDC_RANK"); unsetenv("RANK"); unsetenv("OMPI_COMM_WORLD_RANK");
  schedc_comm *e;
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_EINVAL && e == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_RANK");
  setenv("SCHEDC_RANK", "0", 1); setenv("SCHEDC_NRANKS", "1", 1); unsetenv("SCHEDC_JOB");
  unsetenv("TORCHELASTIC_RUN_ID"); unsetenv("MASTER_PORT"); unsetenv("OMPI_MCA_orte_hnp_uri");
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_JOB");
  char job[32];
  snprintf(job, sizeof job, "apitest%d", (int)getpid());
  setenv("SCHEDC_JOB", job, 1);
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_OK);
  float one[3] = {1.5f, -2.0f, 0.0f}, out[3];
  CHECK(schedc_allreduce(one, out, 3, SCHEDC_F32, SCHEDC_SUM, e, NULL) == SCHEDC_OK);
  CHECK(memcmp(one, out, sizeof one) == 0); /* one rank: the sum is the value */
  schedc_comm_free(e);
  CHECK(schedc_comm_init_shm(0, 2, "bad job!", NULL, &e) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "job id 'bad job!'");
  /* unique ids: random (two draws differ), and a one-rank shm job bootstrapped from one */
  schedc_uid u1, u2;
  CHECK(schedc_unique_id(&u1) == SCHEDC_OK && schedc_unique_id(&u2) == SCHEDC_OK);
  CHECK(memcmp(&u1, &u2, sizeof u1) != 0);
  CHECK(schedc_unique_id(NULL) == SCHEDC_EINVAL);
  CHECK(schedc_comm_init_shm_uid(0, 1, NULL, NULL, &e) == SCHEDC_EINVAL && e == NULL);
  CHECK(schedc_comm_init_shm_uid(0, 1, &u1, NULL, &e) == SCHEDC_OK);
  CHECK(schedc_allreduce(one, out, 3, SCHEDC_F32, SCHEDC_SUM, e, NULL) == SCHEDC_OK);
  schedc_comm_free(e);
  return DONE();
}
