/*
 * ranks.c — start N ranks for `run`, `bench` and `tune`: threads of this process behind a gate
 * (none runs unless all were created), or forked processes (shm, or cuda with a process per GPU)
 * supervised by procs.c, a death or a hang reported as the rank's failure, the job's shared
 * segments removed afterwards (cli.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* Threads start behind a gate: if any cannot be created, none runs its rank (a rank without its
 * peers would only wait for them until the timeout), and only the created ones are joined. */
typedef struct gate { pthread_mutex_t mu; pthread_cond_t cv; int state; /* 0 wait, 1 go, -1 abort */ } gate;
typedef struct thr { const cli_ranks *cb; schedc_comm *comm; int rank; gate *g; } thr;
static void *thr_main(void *p) {
  thr *t = p;
  pthread_mutex_lock(&t->g->mu);
  while (t->g->state == 0) pthread_cond_wait(&t->g->cv, &t->g->mu);
  int go = t->g->state > 0;
  pthread_mutex_unlock(&t->g->mu);
  if (go) t->cb->rank(t->cb->ctx, t->comm, t->rank);
  return NULL;
}

static void open_gate(gate *g, int state) {
  pthread_mutex_lock(&g->mu);
  g->state = state;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static int spawn_threads(int n, const schedc_comm_opts *co, const cli_ranks *cb) {
  schedc_comm **comms = calloc((size_t)n, sizeof *comms);
  thr *t = calloc((size_t)n, sizeof *t);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  int rc = -1;
  if (!comms || !t || !th) {
    fprintf(stderr, "schedc: out of memory for %d ranks\n", n);
  } else if (schedc_comm_init_threads(n, co, comms) == SCHEDC_OK) {
    int made = 0, err = 0;
    for (; made < n; made++) {
      t[made] = (thr){cb, comms[made], made, &g};
      if ((err = pthread_create(&th[made], NULL, thr_main, &t[made])) != 0) break;
    }
    open_gate(&g, made == n ? 1 : -1);
    for (int r = 0; r < made; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
    if (made == n) rc = 0;
    else
      fprintf(stderr, "schedc: cannot start the thread of rank %d of %d: %s; no rank ran (fewer ranks, or a higher "
              "limit: ulimit -u, -v)\n", made, n, strerror(err));
  } else {
    fprintf(stderr, "schedc: %s\n", schedc_errmsg());
  }
  free(comms); free(t); free(th);
  return rc;
}

/* The timeout every rank's waits use: the option's, else SCHEDC_TIMEOUT's, else its default
 * (the communicators refuse a malformed one themselves). */
static double rank_timeout(const schedc_comm_opts *co) {
  if (co->timeout_s > 0) return co->timeout_s;
  const char *v = NULL;
  double t;
  if (schedc_param_get("SCHEDC_TIMEOUT", &v) == SCHEDC_OK && v && !cli_parse_seconds(v, 1e9, &t)) return t;
  return 300;
}

/* A forked rank's end, for cli_supervise: a death by a signal it did not send is the rank's failure. */
typedef struct procwatch { const cli_ranks *cb; } procwatch;
static void proc_ended(void *ctx, int rank, int ws, int killed_here) {
  const procwatch *pw = ctx;
  if (WIFSIGNALED(ws) && !killed_here) {
    char why[64];
    snprintf(why, sizeof why, "process died (signal %d)", WTERMSIG(ws));
    pw->cb->failed(pw->cb->ctx, rank, why);
  }
}
static void proc_killed(void *ctx, int rank, const char *why) {
  const procwatch *pw = ctx;
  pw->cb->failed(pw->cb->ctx, rank, why);
}

/* Forked processes: shm ranks, or cuda ranks with a process per GPU (rank r on GPU r). */
static int spawn_procs(int backend, int n, const schedc_comm_opts *co, const cli_ranks *cb, const char *prefix) {
  char job[64];
  if (cli_job_id(job, sizeof job, prefix) != 0) return -1;
  pid_t *pids = calloc((size_t)n, sizeof *pids);
  if (!pids) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid();
  for (int r = 0; r < n; r++) {
    pid_t p = cli_fork_child(parent, 1);
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
  /* So that this process always returns: a rank stopped (SIGSTOP, a debugger) for longer than
   * the timeout plus a margin has made its peers give up anyway and is killed; and once one rank
   * has exited, the others finish within their own timeout (they complete or give up waiting),
   * so one that does not (hung outside schedc) is killed after that. A failed rank does not stop
   * the others: they give up waiting for it and say so. */
  procwatch pw = {cb};
  cli_supervisor w = {.hung_s = rank_timeout(co) + 10, .ctx = &pw, .ended = proc_ended, .killed = proc_killed};
  cli_supervise(pids, n, &w);
  cli_cleanup_job(job);
  free(pids);
  return 0;
}

int cli_spawn(int backend, int n, const schedc_comm_opts *co, const cli_ranks *cb, const char *job_prefix) {
  return backend == SCHEDC_BACKEND_THREADS ? spawn_threads(n, co, cb) : spawn_procs(backend, n, co, cb, job_prefix);
}

schedc_status cli_comm_launched(int backend, const schedc_comm_opts *co, schedc_comm **out) {
  if (backend == SCHEDC_BACKEND_MPI) return schedc_comm_init_mpi(NULL, co, out);
  setenv("SCHEDC_BACKEND", "net", 1); /* --backend net: the environment's ranks, over net */
  return schedc_comm_init_env(co, out);
}
