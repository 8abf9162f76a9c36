/*
 * test_small.c — the CPU backends' call protocol around the small-message path (cpu_coll.c):
 *  - calls alternate between the small-message path and the plan across the 31-bit wrap of the
 *    call number the arrival lines carry, with exact results (integer-valued sums) on every rank;
 *  - ranks that would take different paths for one call (SCHEDC_SMALL differs) all return
 *    SCHEDC_EMISMATCH naming the path and the setting, none hangs;
 *  - a rank that arrives after its peers timed out waiting for it fails too (its peers' lines are
 *    all in place, and a small call needs nothing more from them: it once returned SCHEDC_OK), on
 *    the small path and for a count of 0; the peers' timeout names every rank not arrived;
 *  - ranks that finished a call and fail the next one among themselves (a count mismatch between
 *    ranks 2 and 3) do not fail the call the others are still finishing (4 ranks, a 4 MiB plan
 *    call then a mismatched small one, repeated: the first call succeeds on every rank; it once
 *    failed on a slow rank with the later call's mismatch), 150 rounds, or the rounds the argument
 *    gives (the TSan tree: 50; 42 s there with 150, alone at the end of its run).
 * Usage: test_small [ROUNDS]
 * The bits of the small path against each rank's proven order: the bitwise sweeps (cpu.bitwise.*,
 * by default and again with SCHEDC_SMALL=0, so that every count runs on each path).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "cpu.h" /* the arrival lines and the threshold, to set up the wrap and a disagreement */

#define N 3

typedef struct job {
  schedc_comm *c;
  int calls;                 /* wrap: how many alternating calls */
  const schedc_plan *plan;
  schedc_dtype dt;
  schedc_op op;
  size_t count;
  const void *in;
  void *out;
  schedc_status st;
  char msg[512];
  int bad;
} job;

/* Alternate a small call (count 16) and a plan call (count 3000) of allreduce, with values whose
 * sums are exact in f32 whatever the order: rank r, call i, element e holds r * 1000 + i * 10 + e % 7. */
static void *wrap_main(void *p) {
  job *j = p;
  int me = schedc_comm_rank(j->c);
  float *buf = malloc(3000 * sizeof(float));
  for (int i = 0; i < j->calls && j->st == SCHEDC_OK; i++) {
    size_t cnt = i % 2 ? 3000 : 16;
    for (size_t e = 0; e < cnt; e++) buf[e] = (float)(me * 1000 + i * 10 + (int)(e % 7));
    j->st = schedc_allreduce(buf, buf, cnt, SCHEDC_F32, SCHEDC_SUM, j->c, NULL);
    if (j->st != SCHEDC_OK) snprintf(j->msg, sizeof j->msg, "%s", schedc_errmsg());
    for (size_t e = 0; e < cnt && j->st == SCHEDC_OK; e++) {
      float want = (float)((0 + 1 + 2) * 1000 + N * (i * 10 + (int)(e % 7)));
      if (buf[e] != want && j->bad++ < 3)
        fprintf(stderr, "rank %d call %d (count %zu) element %zu: %g, want %g\n", me, i, cnt, e, buf[e], want);
    }
  }
  free(buf);
  return NULL;
}

static void *one_call(void *p) {
  job *j = p;
  j->st = schedc_allreduce(j->in, j->out, j->count, j->dt, j->op, j->c, j->plan);
  if (j->st != SCHEDC_OK) snprintf(j->msg, sizeof j->msg, "%s", schedc_errmsg());
  return NULL;
}

/* a big plan call, then a small one whose count differs on rank 3 */
typedef struct race { schedc_comm *c; float *buf; schedc_status st1, st2; } race;
static void *race_main(void *p) {
  race *j = p;
  j->st1 = schedc_allreduce(j->buf, j->buf, 1 << 20, SCHEDC_F32, SCHEDC_SUM, j->c, NULL);
  j->st2 = schedc_allreduce(j->buf, j->buf, schedc_comm_rank(j->c) == 3 ? 17 : 16, SCHEDC_F32, SCHEDC_SUM, j->c, NULL);
  return NULL;
}

/* one_call after a nap longer than the timeout */
static void *late_call(void *p) {
  struct timespec ts = {1, 200000000};
  nanosleep(&ts, NULL);
  return one_call(p);
}

static void run(job *jobs, void *(*fn)(void *)) {
  pthread_t th[N];
  for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, fn, &jobs[r]);
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 150;
  if (rounds < 1) {
    fprintf(stderr, "test_small: bad ROUNDS '%s' (a positive count)\n", argv[1]);
    return 2;
  }
  schedc_comm *comms[N];
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 5;
  job jobs[N];

  /* across the wrap: every rank at call number 2^31 - 6, the arrival lines as the two calls
   * before it left them (a fresh block holds 0 in every line, which serial order reads as later
   * than 2^31 - 6) */
  CHECK(schedc_comm_init_threads(N, &o, comms) == SCHEDC_OK);
  uint64_t start = ((uint64_t)1 << 31) - 6;
  sc_shared *sh = sc_cpu_of(comms[0])->sh;
  for (int r = 0; r < N; r++) {
    comms[r]->seq = start;
    for (int p = 0; p < 2; p++) {
      uint64_t last = (start & 1) == (uint64_t)p ? start : start - 1;
      atomic_store(&sc_arr(sh, p, (uint32_t)r)->seq, (uint32_t)last & 0x7fffffffu);
    }
  }
  for (int r = 0; r < N; r++) jobs[r] = (job){comms[r], 14, NULL, SCHEDC_F32, SCHEDC_SUM, 0, NULL, NULL, SCHEDC_OK, "", 0};
  run(jobs, wrap_main);
  for (int r = 0; r < N; r++) {
    CHECK(jobs[r].st == SCHEDC_OK);
    if (jobs[r].st != SCHEDC_OK) fprintf(stderr, "rank %d: %s\n", r, jobs[r].msg);
    CHECK(jobs[r].bad == 0);
    CHECK(comms[r]->seq == start + 14);
  }
  for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);

  float in[N][64], out[N][64];
  /* a late rank: its peers time out waiting for it, and it must not succeed alone */
  for (size_t count = 0; count <= 16; count += 16) {
    o.timeout_s = 0.5;
    CHECK(schedc_comm_init_threads(N, &o, comms) == SCHEDC_OK);
    pthread_t th[N];
    for (int r = 0; r < N; r++) {
      for (int e = 0; e < 16; e++) in[r][e] = (float)(r + e);
      jobs[r] = (job){comms[r], 0, NULL, SCHEDC_F32, SCHEDC_SUM, count, in[r], out[r], SCHEDC_OK, "", 0};
      pthread_create(&th[r], NULL, r == 2 ? late_call : one_call, &jobs[r]);
    }
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < N; r++) {
      if (jobs[r].st == SCHEDC_OK) fprintf(stderr, "count %zu: rank %d succeeded where its peers failed\n", count, r);
      CHECK(jobs[r].st == SCHEDC_ETIMEOUT || jobs[r].st == SCHEDC_EPEER);
    }
    int to = jobs[0].st == SCHEDC_ETIMEOUT ? 0 : 1;
    CHECK(jobs[to].st == SCHEDC_ETIMEOUT);
    CHECK_CONTAINS(jobs[to].msg, "(not arrived: rank 2)");
    for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);
    o.timeout_s = 5;
  }

  /* a failure in the next call is not this call's */
  {
    enum { R = 4 };
    schedc_comm *rc[R];
    race jobs4[R];
    pthread_t th[R];
    int failed_first = 0;
    float *bufs[R];
    for (int r = 0; r < R; r++) bufs[r] = calloc((size_t)1 << 20, sizeof(float));
    for (int it = 0; it < rounds; it++) {
      CHECK(schedc_comm_init_threads(R, &o, rc) == SCHEDC_OK);
      for (int r = 0; r < R; r++) {
        jobs4[r] = (race){rc[r], bufs[r], SCHEDC_OK, SCHEDC_OK};
        pthread_create(&th[r], NULL, race_main, &jobs4[r]);
      }
      for (int r = 0; r < R; r++) pthread_join(th[r], NULL);
      for (int r = 0; r < R; r++) {
        if (jobs4[r].st1 != SCHEDC_OK && failed_first++ < 3)
          fprintf(stderr, "round %d: rank %d failed the first call (status %d) with the second call's mismatch\n", it, r,
                  (int)jobs4[r].st1);
        CHECK(jobs4[r].st2 == SCHEDC_EMISMATCH || jobs4[r].st2 == SCHEDC_EPEER);
      }
      for (int r = 0; r < R; r++) schedc_comm_free(rc[r]);
    }
    CHECK(failed_first == 0);
    for (int r = 0; r < R; r++) free(bufs[r]);
  }

  /* one rank with another SCHEDC_SMALL: the path is part of the call every rank checks */
  CHECK(schedc_comm_init_threads(N, &o, comms) == SCHEDC_OK);
  sc_cpu_of(comms[2])->small = 0;

  for (int r = 0; r < N; r++) {
    for (int e = 0; e < 64; e++) in[r][e] = (float)(r + e);
    jobs[r] = (job){comms[r], 0, NULL, SCHEDC_F32, SCHEDC_SUM, 64, in[r], out[r], SCHEDC_OK, "", 0};
  }
  run(jobs, one_call);
  for (int r = 0; r < N; r++) {
    CHECK(jobs[r].st == SCHEDC_EMISMATCH);
    CHECK_CONTAINS(jobs[r].msg, "disagree on the path of call 1");
    CHECK_CONTAINS(jobs[r].msg, "set SCHEDC_SMALL and SCHEDC_INJECT alike on every rank");
  }
  for (int r = 0; r < N; r++) schedc_comm_free(comms[r]);

  return DONE();
}
