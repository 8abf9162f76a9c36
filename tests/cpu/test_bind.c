/*
 * test_bind.c — SCHEDC_BIND (runtime/cpu/bind.c), the pinning itself, no timing: with `core`, the
 * thread of each rank's first call runs afterwards on exactly one CPU, the rank-th of those it was
 * allowed (found here from the mask the thread had: all CPUs, one CPU, the last CPU only), or is
 * left alone when the ranks outnumber those CPUs; either way it gets its mask back when its
 * communicator is freed; threads ranks and forked shm ranks; with `none` and unset the mask is
 * left alone; a thread that is a rank of two communicators gets its mask back whichever is freed
 * first; freed from another thread, a live rank thread gets its mask back, and a thread that was
 * given an ended rank thread's id keeps its own (with the argument `reuse`: the release tree).
 * The sums of the calls are checked too (integers). Usage: test_bind [reuse]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

#define MAXR 4
#define COUNT 4099 /* above the small path's 8 KiB: the plan's call; 7 below it: the small path's */

/* The rank-th allowed CPU of m: what `core` must pick (written here from the documented rule, not
 * from bind.c). */
static int want_cpu(const cpu_set_t *m, int rank) {
  int k = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, m) && k++ == rank) return cpu;
  return -1;
}

typedef struct job {
  schedc_comm *c;
  int rank, nranks, pinned; /* pinned: SCHEDC_BIND=core is set */
  size_t count;
  int bad;                  /* failures seen by this rank */
} job;

/* One rank: its mask before, an allreduce, the mask after (one CPU, the right one; or unchanged),
 * then its communicator freed and the mask as before. */
static int rank_body(job *j) {
  cpu_set_t before, after, back;
  int bad = 0;
  if (sched_getaffinity(0, sizeof before, &before)) return 1;
  float *buf = malloc(j->count * sizeof *buf);
  for (size_t e = 0; e < j->count; e++) buf[e] = (float)(j->rank + 1 + (int)(e % 5));
  if (schedc_allreduce(buf, buf, j->count, SCHEDC_F32, SCHEDC_SUM, j->c, NULL) != SCHEDC_OK) {
    fprintf(stderr, "rank %d: %s\n", j->rank, schedc_errmsg());
    free(buf);
    return 1;
  }
  for (size_t e = 0; e < j->count; e++)
    if (buf[e] != (float)(j->nranks * (j->nranks + 1) / 2 + j->nranks * (int)(e % 5)) && bad++ < 1)
      fprintf(stderr, "rank %d element %zu: %g\n", j->rank, e, buf[e]);
  free(buf);
  sched_getaffinity(0, sizeof after, &after);
  if (j->pinned && j->nranks <= CPU_COUNT(&before)) {
    int w = want_cpu(&before, j->rank);
    if (CPU_COUNT(&after) != 1 || !CPU_ISSET(w, &after)) {
      fprintf(stderr, "rank %d of %d: pinned to %d CPUs, want CPU %d only (%d allowed before)\n", j->rank, j->nranks,
              CPU_COUNT(&after), w, CPU_COUNT(&before));
      bad++;
    }
  } else if (!CPU_EQUAL(&before, &after)) {
    fprintf(stderr, "rank %d of %d: mask changed (%d CPUs allowed; SCHEDC_BIND=core: %d)\n", j->rank, j->nranks,
            CPU_COUNT(&before), j->pinned);
    bad++;
  }
  schedc_comm_free(j->c);
  sched_getaffinity(0, sizeof back, &back);
  if (!CPU_EQUAL(&before, &back)) {
    fprintf(stderr, "rank %d: mask not given back when its communicator was freed (%d CPUs, had %d)\n", j->rank,
            CPU_COUNT(&back), CPU_COUNT(&before));
    bad++;
  }
  return bad;
}

static void *thread_main(void *p) {
  job *j = p;
  j->bad = rank_body(j);
  return NULL;
}

static void threads_case(int nranks, int pinned, size_t count) {
  schedc_comm *comms[MAXR];
  job jobs[MAXR];
  pthread_t th[MAXR];
  CHECK(schedc_comm_init_threads(nranks, NULL, comms) == SCHEDC_OK);
  for (int r = 0; r < nranks; r++) {
    jobs[r] = (job){comms[r], r, nranks, pinned, count, 0};
    pthread_create(&th[r], NULL, thread_main, &jobs[r]);
  }
  for (int r = 0; r < nranks; r++) {
    pthread_join(th[r], NULL);
    CHECK(jobs[r].bad == 0);
  }
}

static void shm_case(int nranks, int pinned) {
  char jobname[64];
  snprintf(jobname, sizeof jobname, "bind%d-%d-%d", (int)getpid(), nranks, pinned);
  pid_t pid[MAXR];
  for (int r = 0; r < nranks; r++) {
    if ((pid[r] = fork()) == 0) {
      schedc_comm *c;
      if (schedc_comm_init_shm(r, nranks, jobname, NULL, &c) != SCHEDC_OK) _exit(100);
      job j = {c, r, nranks, pinned, COUNT, 0};
      _exit(rank_body(&j) ? 1 : 0);
    }
  }
  for (int r = 0; r < nranks; r++) {
    int ws = 0;
    waitpid(pid[r], &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
}

/* One thread a rank of two communicators: rank 0 of X (2 ranks, the other on a helper thread) and
 * the only rank of Y, each making its first call (X's pins the thread; Y's rank-th CPU is then the
 * one it is on). Freed in either order, the thread must end with the mask it had. The old bind.c
 * saved Y's "mask before" as X's pin, so freeing X first and Y second left the thread pinned. */
static void *two_comms_peer(void *p) {
  job *j = p;
  float *buf = calloc(COUNT, sizeof *buf);
  j->bad = schedc_allreduce(buf, buf, COUNT, SCHEDC_F32, SCHEDC_SUM, j->c, NULL) != SCHEDC_OK;
  free(buf);
  schedc_comm_free(j->c);
  return NULL;
}

static void two_comms(int x_first) {
  schedc_comm *X[2], *Y[1];
  cpu_set_t before, back;
  CHECK(sched_getaffinity(0, sizeof before, &before) == 0);
  CHECK(schedc_comm_init_threads(2, NULL, X) == SCHEDC_OK);
  CHECK(schedc_comm_init_threads(1, NULL, Y) == SCHEDC_OK);
  job peer = {X[1], 1, 2, 1, COUNT, 0};
  pthread_t th;
  pthread_create(&th, NULL, two_comms_peer, &peer);
  float *buf = calloc(COUNT, sizeof *buf);
  for (size_t e = 0; e < COUNT; e++) buf[e] = (float)(e % 7);
  CHECK(schedc_allreduce(buf, buf, COUNT, SCHEDC_F32, SCHEDC_SUM, X[0], NULL) == SCHEDC_OK);
  pthread_join(th, NULL);
  CHECK(peer.bad == 0);
  CHECK(schedc_allreduce(buf, buf, COUNT, SCHEDC_F32, SCHEDC_SUM, Y[0], NULL) == SCHEDC_OK);
  int sums = 0; /* X: rank 1 added zeros; Y: one rank */
  for (size_t e = 0; e < COUNT; e++) sums += buf[e] == (float)(e % 7);
  CHECK(sums == COUNT);
  free(buf);
  schedc_comm_free(x_first ? X[0] : Y[0]);
  schedc_comm_free(x_first ? Y[0] : X[0]);
  CHECK(sched_getaffinity(0, sizeof back, &back) == 0);
  if (!CPU_EQUAL(&before, &back))
    fprintf(stderr, "two communicators on one thread, %s freed first: %d CPUs allowed after, %d before\n",
            x_first ? "the first made" : "the last made", CPU_COUNT(&back), CPU_COUNT(&before));
  CHECK(CPU_EQUAL(&before, &back));
}

/* Freed from another thread: while the rank threads live, each gets its mask back; once they have
 * ended and a new thread got rank 0's thread id (pid_max wraps), that thread's mask is left alone.
 * The old bind.c set the saved mask on whatever thread held the id then (here: one that had pinned
 * itself to one CPU got every CPU back). */
typedef struct ftjob {
  schedc_comm *c;
  pthread_barrier_t *called, *freed;
  pid_t tid;
  int bad;
} ftjob;

static void *ft_rank(void *p) {
  ftjob *j = p;
  cpu_set_t before, back;
  sched_getaffinity(0, sizeof before, &before);
  j->tid = gettid();
  float *buf = calloc(COUNT, sizeof *buf);
  j->bad = schedc_allreduce(buf, buf, COUNT, SCHEDC_F32, SCHEDC_SUM, j->c, NULL) != SCHEDC_OK;
  free(buf);
  if (j->called) { /* stays alive while main frees the communicator */
    pthread_barrier_wait(j->called);
    pthread_barrier_wait(j->freed);
    sched_getaffinity(0, sizeof back, &back);
    if (!CPU_EQUAL(&before, &back)) {
      fprintf(stderr, "freed from main: the rank thread has %d CPUs, had %d\n", CPU_COUNT(&back), CPU_COUNT(&before));
      j->bad++;
    }
  }
  return NULL;
}

static pid_t reuse_want;
static atomic_int reuse_seen, reuse_hit, reuse_stop;
static void *reuse_probe(void *p) {
  (void)p;
  if (gettid() != reuse_want) {
    atomic_store(&reuse_seen, 1);
    return NULL;
  }
  cpu_set_t one, now;
  sched_getaffinity(0, sizeof now, &now);
  CPU_ZERO(&one);
  CPU_SET(want_cpu(&now, 0), &one); /* pinned to one CPU by itself (as an MPI-bound thread) */
  sched_setaffinity(0, sizeof one, &one);
  atomic_store(&reuse_hit, 1);
  while (!atomic_load(&reuse_stop)) usleep(1000);
  sched_getaffinity(0, sizeof now, &now);
  return (void *)(intptr_t)CPU_EQUAL(&one, &now);
}

static void freed_elsewhere(int reuse) {
  schedc_comm *X[2];
  pthread_t th[2];
  pthread_barrier_t called, freed;
  pthread_barrier_init(&called, NULL, 3);
  pthread_barrier_init(&freed, NULL, 3);
  ftjob jobs[2];
  CHECK(schedc_comm_init_threads(2, NULL, X) == SCHEDC_OK);
  for (int r = 0; r < 2; r++) {
    jobs[r] = (ftjob){X[r], &called, &freed, 0, 0};
    pthread_create(&th[r], NULL, ft_rank, &jobs[r]);
  }
  pthread_barrier_wait(&called);
  schedc_comm_free(X[0]);
  schedc_comm_free(X[1]);
  pthread_barrier_wait(&freed);
  for (int r = 0; r < 2; r++) {
    pthread_join(th[r], NULL);
    CHECK(jobs[r].bad == 0);
  }
  pthread_barrier_destroy(&called);
  pthread_barrier_destroy(&freed);
  /* the ids reused: only where pid_max is small enough to wrap in a few seconds, and not in the
   * ASan tree (`reuse` not given: its thread creations took 74 s there beside other tests) */
  if (!reuse) {
    fprintf(stderr, "-- the reused thread id case is not run (no 'reuse' argument)\n");
    return;
  }
  FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
  long pid_max = 0;
  if (!f || fscanf(f, "%ld", &pid_max) != 1) pid_max = 0;
  if (f) fclose(f);
  if (pid_max <= 0 || pid_max > 65536) {
    fprintf(stderr, "-- pid_max %ld: the reused thread id case is not run\n", pid_max);
    return;
  }
  CHECK(schedc_comm_init_threads(2, NULL, X) == SCHEDC_OK);
  for (int r = 0; r < 2; r++) {
    jobs[r] = (ftjob){X[r], NULL, NULL, 0, 0};
    pthread_create(&th[r], NULL, ft_rank, &jobs[r]);
  }
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  reuse_want = jobs[0].tid;
  pthread_t victim = pthread_self();
  long n = 0;
  for (; n < 4 * pid_max && !atomic_load(&reuse_hit); n++) {
    pthread_t q;
    atomic_store(&reuse_seen, 0);
    if (pthread_create(&q, NULL, reuse_probe, NULL) != 0) break;
    while (!atomic_load(&reuse_seen) && !atomic_load(&reuse_hit)) {
    }
    if (atomic_load(&reuse_hit)) victim = q;
    else pthread_join(q, NULL);
  }
  if (!atomic_load(&reuse_hit)) {
    fprintf(stderr, "-- thread id %d not reused after %ld threads: case not run\n", (int)reuse_want, n);
    schedc_comm_free(X[0]);
    schedc_comm_free(X[1]);
    return;
  }
  schedc_comm_free(X[0]);
  schedc_comm_free(X[1]);
  atomic_store(&reuse_stop, 1);
  void *kept = NULL;
  pthread_join(victim, &kept);
  if (!kept) fprintf(stderr, "the thread given rank 0's old id %d lost its own pin at the free\n", (int)reuse_want);
  CHECK(kept != NULL);
}

/* Every case, with the process (and so every thread it starts) allowed the CPUs of `m`. */
static void all_cases(const cpu_set_t *m, const char *what) {
  CHECK(sched_setaffinity(0, sizeof *m, m) == 0);
  fprintf(stderr, "-- allowed: %s (%d CPUs)\n", what, CPU_COUNT(m));
  setenv("SCHEDC_BIND", "core", 1);
  for (int n = 1; n <= 3; n++) {
    threads_case(n, 1, COUNT);
    threads_case(n, 1, 7);
  }
  shm_case(2, 1);
  shm_case(3, 1);
  two_comms(1);
  two_comms(0);
  setenv("SCHEDC_BIND", "none", 1);
  threads_case(2, 0, COUNT);
  shm_case(2, 0);
  unsetenv("SCHEDC_BIND");
  threads_case(2, 0, COUNT);
}

int main(int argc, char **argv) {
  int reuse = argc > 1 && !strcmp(argv[1], "reuse");
  cpu_set_t all, one, last;
  CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
  all_cases(&all, "as started");
  int first = want_cpu(&all, 0), lastcpu = want_cpu(&all, CPU_COUNT(&all) - 1);
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  all_cases(&one, "the first CPU only");
  if (lastcpu != first) { /* the rule counts allowed CPUs, not CPU numbers */
    CPU_ZERO(&last);
    CPU_SET(lastcpu, &last);
    all_cases(&last, "the last CPU only");
  }
  sched_setaffinity(0, sizeof all, &all);
  setenv("SCHEDC_BIND", "core", 1);
  if (CPU_COUNT(&all) >= 2) freed_elsewhere(reuse); /* pins need a CPU per rank */
  unsetenv("SCHEDC_BIND");
  return DONE();
}
