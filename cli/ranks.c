/*
 * ranks.c — what the subcommands share: start N ranks as threads of this process or as forked
 * processes (shm, or cuda with a process per GPU; reaped in any order, a death reported, a rank
 * that never finishes killed, the job's shared segments removed afterwards); the strict parsers
 * of numbers (counts with K/M/G suffixes, seconds); the checks of the paths a command writes or
 * reads before it starts (cli.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_parse_count(const char *s, long long lo, long long hi, long long *out) {
  /* digits first: strtoll alone would take blanks, a sign and an empty number */
  if (!s || !(*s >= '0' && *s <= '9')) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno) return -1;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  else if (*end == 'M' || *end == 'm') shift = 20;
  else if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) {
    if (v > LLONG_MAX >> shift) return -1; /* 2^63 and up: the shift would overflow */
    v <<= shift;
    end++;
  }
  if (*end == 'B') end++;
  if (*end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int cli_parse_seconds(const char *s, double hi, double *out) {
  /* decimal only: no sign, blank, nan, inf or hexadecimal (strtod takes them all) */
  if (!s || !*s || !((*s >= '0' && *s <= '9') || *s == '.') || strpbrk(s, "xXpP")) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v) || !(v > 0) || v > hi) return -1;
  *out = v;
  return 0;
}

static const char *kind_of(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISREG(m) ? "a regular file" : "a special file";
}

int cli_check_output(const char *cmd, const char *opt, const char *out, const char *const *inputs, int ninputs) {
  if (!out || !*out) {
    fprintf(stderr, "schedc %s: %s '': an empty path names no file (give a file name)\n", cmd, opt);
    return -1;
  }
  struct stat so;
  if (stat(out, &so) != 0) return 0; /* absent (or unreachable: the write will say why) */
  if (!S_ISREG(so.st_mode)) {
    fprintf(stderr, "schedc %s: %s '%s' is %s; it must be a regular file or a new name (nothing was written)\n",
            cmd, opt, out, kind_of(so.st_mode));
    return -1;
  }
  for (int i = 0; i < ninputs; i++) {
    struct stat si;
    if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
      fprintf(stderr, "schedc %s: %s '%s' is the input '%s'%s; writing it would replace it (nothing was written)\n",
              cmd, opt, out, inputs[i], strcmp(out, inputs[i]) ? " (the same file under another name)" : "");
      return -1;
    }
  }
  return 0;
}

int cli_output_dir(const char *cmd, const char *opt, const char *dir) {
  if (!dir || !*dir) {
    fprintf(stderr, "schedc %s: %s '': an empty path names no folder (give a folder; it is created if missing)\n",
            cmd, opt);
    return -1;
  }
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
    fprintf(stderr, "schedc %s: %s: the path is longer than %zu bytes\n", cmd, opt, sizeof buf - 1);
    return -1;
  }
  /* mkdir -p: each missing parent, then the folder itself */
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "schedc %s: %s '%s': cannot create %s: %s\n", cmd, opt, dir, buf, strerror(errno));
      return -1;
    }
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "schedc %s: %s '%s': cannot create it: %s\n", cmd, opt, dir, strerror(errno));
    return -1;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "schedc %s: %s '%s' is %s, not a folder\n", cmd, opt, dir,
            stat(dir, &st) == 0 ? kind_of(st.st_mode) : "unreachable");
    return -1;
  }
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

/* PREFIXpid-<32 hex digits of schedc_unique_id>: the job id is the secret its ranks share
 * (docs/reliability.md), so it must not be predictable; the pid keeps it traceable. */
int cli_job_id(char *buf, size_t cap, const char *prefix) {
  schedc_uid u;
  if (schedc_unique_id(&u) != SCHEDC_OK) { fprintf(stderr, "schedc: %s\n", schedc_errmsg()); return -1; }
  int k = snprintf(buf, cap, "%s%ld-", prefix, (long)getpid());
  for (size_t i = 0; i < sizeof u.bytes && k > 0 && (size_t)k + 2 < cap; i++) k += snprintf(buf + k, cap - (size_t)k, "%02x", u.bytes[i]);
  return 0;
}

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

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
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
    pid_t p = fork();
    if (p < 0) { perror("schedc: fork"); n = r; break; }
    if (p == 0) {
      /* die with this process: a killed `schedc run` must not leave ranks behind (parent pid 1);
       * if it died before the prctl, getppid() is no longer it */
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
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
  /* Reap in any order (a dead rank must not linger as a zombie), so that this process always
   * returns: a rank stopped (SIGSTOP, a debugger) for longer than the timeout plus a margin has
   * made its peers give up anyway and is killed; and once one rank has exited, the others
   * finish within their own timeout (they complete or give up waiting), so one that does not
   * (hung outside schedc) is killed after that. */
  double limit = rank_timeout(co) + 10, deadline = 0;
  double *stopped = calloc((size_t)n, sizeof *stopped); /* when rank r was seen stopped; 0: running */
  for (int left = n; left > 0;) {
    int ws;
    pid_t p = waitpid(-1, &ws, WNOHANG | WUNTRACED | WCONTINUED);
    if (p < 0) { if (errno == EINTR) continue; break; }
    double now = mono_s();
    if (p == 0) {
      for (int r = 0; r < n; r++) {
        if (pids[r] <= 0) continue;
        int late = deadline && now > deadline, stuck = stopped && stopped[r] && now > stopped[r] + limit;
        if (!late && !stuck) continue;
        char why[160];
        if (stuck) snprintf(why, sizeof why, "process was stopped for longer than %.3g s (the timeout + 10 s); killed", limit);
        else snprintf(why, sizeof why, "process did not finish within %.3g s after another rank did (hung); killed", limit);
        cb->failed(cb->ctx, r, why);
        kill(pids[r], SIGKILL);
        pids[r] = -pids[r]; /* reaped later without a second report */
      }
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
      continue;
    }
    int r = 0;
    while (r < n && pids[r] != p && pids[r] != -p) r++;
    if (r == n) continue;
    if (WIFSTOPPED(ws) || WIFCONTINUED(ws)) {
      if (stopped) stopped[r] = WIFSTOPPED(ws) ? now : 0;
      continue;
    }
    int killed_here = pids[r] < 0;
    pids[r] = 0;
    left--;
    if (!deadline) deadline = now + limit;
    if (WIFSIGNALED(ws) && !killed_here) {
      char why[64];
      snprintf(why, sizeof why, "process died (signal %d)", WTERMSIG(ws));
      cb->failed(cb->ctx, r, why);
    }
  }
  free(stopped);
  cleanup_job(job);
  free(pids);
  return 0;
}

int cli_spawn(int backend, int n, const schedc_comm_opts *co, const cli_ranks *cb, const char *job_prefix) {
  return backend == SCHEDC_BACKEND_THREADS ? spawn_threads(n, co, cb) : spawn_procs(backend, n, co, cb, job_prefix);
}

void cli_cleanup_job(const char *job) { cleanup_job(job); }
