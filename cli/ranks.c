/*
 * ranks.c — what `schedc run` and `schedc bench` share: start N ranks as threads of this
 * process or as forked processes (shm, or cuda with a process per GPU; reaped in any order, a
 * death reported, the job's shared segments removed afterwards), and parse counts with K/M/G
 * suffixes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_parse_count(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || v < 0) return -1;
  if (*end == 'K' || *end == 'k') { v <<= 10; end++; }
  else if (*end == 'M' || *end == 'm') { v <<= 20; end++; }
  else if (*end == 'G' || *end == 'g') { v <<= 30; end++; }
  if (*end == 'B' && end != s) end++;
  if (*end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static void cleanup_job(const char *job) {
  char pat[128];
  snprintf(pat, sizeof pat, "/dev/shm/schedc-%s-*", job);
  glob_t g;
  if (glob(pat, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
    globfree(&g);
  }
}

typedef struct thr { const cli_ranks *cb; schedc_comm *comm; int rank; } thr;
static void *thr_main(void *p) { thr *t = p; t->cb->rank(t->cb->ctx, t->comm, t->rank); return NULL; }

static int spawn_threads(int n, const schedc_comm_opts *co, const cli_ranks *cb) {
  schedc_comm **comms = calloc((size_t)n, sizeof *comms);
  thr *t = calloc((size_t)n, sizeof *t);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  int rc = -1;
  if (comms && t && th && schedc_comm_init_threads(n, co, comms) == SCHEDC_OK) {
    for (int r = 0; r < n; r++) {
      t[r] = (thr){cb, comms[r], r};
      pthread_create(&th[r], NULL, thr_main, &t[r]);
    }
    for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
    rc = 0;
  } else {
    fprintf(stderr, "schedc: %s\n", schedc_errmsg());
  }
  free(comms); free(t); free(th);
  return rc;
}

/* Forked processes: shm ranks, or cuda ranks with a process per GPU (rank r on GPU r). */
static int spawn_procs(int backend, int n, const schedc_comm_opts *co, const cli_ranks *cb, const char *prefix) {
  char job[64];
  snprintf(job, sizeof job, "%s%ld-%ld", prefix, (long)getpid(), (long)time(NULL));
  pid_t *pids = calloc((size_t)n, sizeof *pids);
  if (!pids) return -1;
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n; r++) {
    pid_t p = fork();
    if (p < 0) { perror("schedc: fork"); n = r; break; }
    if (p == 0) {
      schedc_comm *comm;
      schedc_status st = backend == SCHEDC_BACKEND_CUDA ? schedc_comm_init_cuda_rank(r, n, r, job, co, &comm)
                                                        : schedc_comm_init_shm(r, n, job, co, &comm);
      if (st != SCHEDC_OK) {
        cb->failed(cb->ctx, r, schedc_errmsg());
        _exit(1);
      }
      cb->rank(cb->ctx, comm, r);
      schedc_comm_free(comm);
      _exit(0);
    }
    pids[r] = p;
  }
  for (int left = n; left > 0;) { /* reap in any order: a dead rank must not linger as a zombie */
    int ws;
    pid_t p = waitpid(-1, &ws, 0);
    if (p < 0) { if (errno == EINTR) continue; break; }
    int r = 0;
    while (r < n && pids[r] != p) r++;
    if (r == n) continue;
    left--;
    if (WIFSIGNALED(ws)) {
      char why[64];
      snprintf(why, sizeof why, "process died (signal %d)", WTERMSIG(ws));
      cb->failed(cb->ctx, r, why);
    }
  }
  cleanup_job(job);
  free(pids);
  return 0;
}

int cli_spawn(int backend, int n, const schedc_comm_opts *co, const cli_ranks *cb, const char *job_prefix) {
  return backend == SCHEDC_BACKEND_THREADS ? spawn_threads(n, co, cb) : spawn_procs(backend, n, co, cb, job_prefix);
}

void cli_cleanup_job(const char *job) { cleanup_job(job); }
