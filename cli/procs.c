/*
 * procs.c — child processes for `run`/`bench`/`tune` (forked ranks, ranks.c) and `launch` (N
 * processes of any program, launch.c): the job id they share, forking a child that dies with
 * this process, the one supervision loop that reaps them (in any order, stopping or killing the
 * rest by the caller's policy, so it always returns), and the job's leftover segments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* PREFIXpid-<32 hex digits of schedc_unique_id>: the job id is the secret its ranks share
 * (docs/reliability.md), so it must not be predictable; the pid keeps it traceable. */
int cli_job_id(char *buf, size_t cap, const char *prefix) {
  schedc_uid u;
  if (schedc_unique_id(&u) != SCHEDC_OK) { fprintf(stderr, "schedc: %s\n", schedc_errmsg()); return -1; }
  cli_sbuf b = {0};
  cli_sb_printf(&b, "%s%ld-", prefix, (long)getpid());
  for (size_t i = 0; i < sizeof u.bytes; i++) cli_sb_printf(&b, "%02x", u.bytes[i]);
  int rc = 0;
  if (b.oom || b.len >= cap) {
    fprintf(stderr, "schedc: the job id %s does not fit in %zu bytes\n", cli_sb_str(&b), cap);
    rc = -1;
  } else {
    memcpy(buf, b.p, b.len + 1);
  }
  cli_sb_free(&b);
  return rc;
}

void cli_cleanup_job(const char *job) {
  cli_sbuf pat = {0};
  cli_sb_printf(&pat, "/dev/shm/schedc-%s-*", job);
  glob_t g;
  if (!pat.oom && glob(pat.p, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
    globfree(&g);
  }
  cli_sb_free(&pat);
}

pid_t cli_fork_child(pid_t parent, int code) {
  pid_t p = fork();
  /* die with this process (kept across exec): a killed `schedc run` or `schedc launch` must
   * not leave ranks behind (parent pid 1); if it died before the prctl, getppid() is no longer
   * it */
  if (p == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)) _exit(code);
  return p;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int exit_code(int ws) { return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws); }

/* pids[r] > 0: running; -pid: killed here for w->hung_s (reaped later, not reported again); 0:
 * reaped. */
int cli_supervise(pid_t *pids, int n, const cli_supervisor *w) {
  double deadline = 0, term_at = 0;
  int first = 0; /* the first failure's exit code */
  double *stopped = w->hung_s > 0 ? calloc((size_t)n, sizeof *stopped) : NULL; /* when r was seen stopped */
  int left = 0;
  for (int r = 0; r < n; r++) left += pids[r] != 0;
  while (left > 0) {
    int ws;
    pid_t p = waitpid(-1, &ws, WNOHANG | WUNTRACED | WCONTINUED);
    if (p < 0) { if (errno == EINTR) continue; break; } /* ECHILD: none left to wait for */
    double now = mono_s();
    if (p == 0) {
      for (int r = 0; w->hung_s > 0 && r < n; r++) {
        if (pids[r] <= 0) continue;
        int late = deadline && now > deadline, stuck = stopped && stopped[r] && now > stopped[r] + w->hung_s;
        if (!late && !stuck) continue;
        char why[160];
        if (stuck) snprintf(why, sizeof why, "process was stopped for longer than %.3g s (the timeout + 10 s); killed", w->hung_s);
        else snprintf(why, sizeof why, "process did not finish within %.3g s after another rank did (hung); killed", w->hung_s);
        if (w->killed) w->killed(w->ctx, r, why);
        kill(pids[r], SIGKILL);
        pids[r] = -pids[r];
      }
      if (w->stop && *w->stop && !term_at) term_at = now;
      if (term_at && now >= term_at) {
        for (int r = 0; r < n; r++) if (pids[r] > 0) kill(pids[r], SIGTERM);
        term_at = 1e300; /* once */
      }
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
      continue;
    }
    int r = 0;
    while (r < n && pids[r] != p && pids[r] != -p) r++;
    if (r == n) continue; /* not ours */
    if (WIFSTOPPED(ws) || WIFCONTINUED(ws)) {
      if (stopped) stopped[r] = WIFSTOPPED(ws) ? now : 0;
      continue;
    }
    int killed_here = pids[r] < 0;
    pids[r] = 0;
    left--;
    if (w->hung_s > 0 && !deadline) deadline = now + w->hung_s;
    int code = exit_code(ws);
    if (code && !first) {
      first = code;
      if (w->grace_s > 0) term_at = now + w->grace_s; /* (again, if a stop already sent SIGTERM) */
    }
    if (w->ended) w->ended(w->ctx, r, ws, killed_here);
  }
  free(stopped);
  return first;
}
