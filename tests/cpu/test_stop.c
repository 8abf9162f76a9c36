/*
 * test_stop.c — ranks that stop answering, on forked shm processes (issue 19, item 8):
 * - a rank stopped with SIGSTOP in the middle of a stream of allreduces: the survivors return an
 *   error within the timeout plus a few seconds (not the timeout + 60 s they once spent waiting
 *   for the stopped rank to leave the collective), and the error names the stopped rank;
 * - a rank that finishes early (makes fewer calls, frees its communicator and exits) is reported
 *   as having finished early, not as dead, and at once rather than after the timeout.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

#define N 3
#define TIMEOUT 1.0

typedef struct result { int st; int calls; double t_err; char msg[1024]; } result;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* system-wide: comparable across the forked ranks */
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A rank: allreduces until one fails or `calls` are done (calls < 0: for at most 60 s). */
static void rank_main(int r, int n, const char *job, int calls, result *res) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = TIMEOUT;
  schedc_comm *c;
  if (schedc_comm_init_shm(r, n, job, &o, &c) != SCHEDC_OK) {
    snprintf(res->msg, sizeof res->msg, "init: %s", schedc_errmsg());
    res->st = -1;
    _exit(3);
  }
  static float buf[16384];
  double end = now() + 60;
  for (int i = 0; calls < 0 ? now() < end : i < calls; i++) {
    schedc_status st = schedc_allreduce(buf, buf, 16384, SCHEDC_F32, SCHEDC_SUM, c, NULL);
    res->calls = i + 1;
    if (st != SCHEDC_OK) {
      res->t_err = now();
      res->st = st;
      snprintf(res->msg, sizeof res->msg, "%s", schedc_errmsg());
      break;
    }
  }
  schedc_comm_free(c);
  _exit(0);
}

/* The killed rank cannot unlink its segments (nor drop the last reference to the job's control
 * segment): remove what is left of job (names as in runtime/cpu/shm.c). */
static void unlink_job(const char *job, int n) {
  char name[128];
  snprintf(name, sizeof name, "/schedc-%s-ctl", job);
  shm_unlink(name);
  for (int r = 0; r < n; r++) {
    snprintf(name, sizeof name, "/schedc-%s-r%d", job, r);
    shm_unlink(name);
  }
}

/* Wait for pid until `until` (monotonic seconds); 1 if it exited. */
static int wait_until(pid_t pid, double until) {
  int ws;
  while (now() < until) {
    if (waitpid(pid, &ws, WNOHANG) == pid) return 1;
    usleep(10000);
  }
  return 0;
}

int main(void) {
  result *res = mmap(NULL, N * sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(res != MAP_FAILED);
  if (res == MAP_FAILED) return DONE();
  char job[64];

  /* 1. rank 1 stopped while the three ranks loop */
  memset(res, 0, N * sizeof *res);
  snprintf(job, sizeof job, "stoptest%d", (int)getpid());
  pid_t pid[N];
  for (int r = 0; r < N; r++)
    if ((pid[r] = fork()) == 0) rank_main(r, N, job, -1, &res[r]);
  /* let them get going: some calls done on every rank */
  double t0 = now();
  while (now() < t0 + 10 && (res[0].calls < 20 || res[1].calls < 20 || res[2].calls < 20)) usleep(1000);
  CHECK(res[1].calls >= 20);
  kill(pid[1], SIGSTOP);
  double t_stop = now();
  int exited0 = wait_until(pid[0], t_stop + TIMEOUT + 10), exited2 = wait_until(pid[2], t_stop + TIMEOUT + 10);
  CHECK(exited0 && exited2);
  for (int r = 0; r < N; r += 2) {
    double dt = res[r].t_err - t_stop;
    fprintf(stderr, "stopped rank: rank %d reported after %.2f s (%d calls): %s\n", r, dt, res[r].calls, res[r].msg);
    CHECK(res[r].st == SCHEDC_ETIMEOUT || res[r].st == SCHEDC_EPEER);
    CHECK(res[r].t_err > 0 && dt < TIMEOUT + 3);
    CHECK_CONTAINS(res[r].msg, "rank 1");
  }
  /* at least one survivor timed out itself, naming the stopped rank as what it waited for */
  CHECK(strstr(res[0].msg, "timed out") || strstr(res[2].msg, "timed out"));
  kill(pid[1], SIGKILL);
  kill(pid[1], SIGCONT);
  waitpid(pid[1], NULL, 0);
  if (!exited0) { kill(pid[0], SIGKILL); waitpid(pid[0], NULL, 0); }
  if (!exited2) { kill(pid[2], SIGKILL); waitpid(pid[2], NULL, 0); }
  unlink_job(job, N);

  /* 2. rank 1 finishes early: 5 calls where rank 0 makes 6 */
  memset(res, 0, N * sizeof *res);
  snprintf(job, sizeof job, "stoptest%d-early", (int)getpid());
  for (int r = 0; r < 2; r++)
    if ((pid[r] = fork()) == 0) rank_main(r, 2, job, r == 1 ? 5 : 6, &res[r]);
  double t_start = now();
  CHECK(wait_until(pid[1], t_start + 20));
  double t_left = now();
  int exited = wait_until(pid[0], t_left + 20);
  CHECK(exited);
  if (!exited) { kill(pid[0], SIGKILL); waitpid(pid[0], NULL, 0); }
  unlink_job(job, 2);
  fprintf(stderr, "finished early: rank 0 reported after %d calls, %.2f s after rank 1 exited: %s\n", res[0].calls,
          res[0].t_err - t_left, res[0].msg);
  CHECK(res[1].st == SCHEDC_OK && res[1].calls == 5);
  CHECK(res[0].st == SCHEDC_EPEER && res[0].calls == 6);
  CHECK_CONTAINS(res[0].msg, "rank 1, which finished early");
  CHECK(!strstr(res[0].msg, "died"));
  CHECK(res[0].t_err - t_left < TIMEOUT); /* noticed, not timed out */
  munmap(res, N * sizeof *res);
  return DONE();
}
