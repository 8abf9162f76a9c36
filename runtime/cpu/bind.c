/*
 * bind.c — SCHEDC_BIND=core: a CPU rank's thread pinned to one CPU, as Open MPI's `--bind-to core`
 * (its default for two ranks or fewer). Unpinned ranks beside a busy process are moved around by
 * the scheduler and end up sharing a core with each other, one context switch per call; pinned,
 * each keeps its CPU (docs/performance.md). The thread that makes a rank's first call is pinned
 * then, to the rank-th of the CPUs it may run on, unless the ranks outnumber those CPUs; its mask
 * is given back when the communicator is freed. Threads and processes it starts afterwards inherit the pin (as under
 * mpirun): that is why it is opt-in.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "fileio.h"
#include "log.h"

/* What the thread's mask was, and which thread (the free may run on another): its id and start
 * time, since an ended thread's id is given to a new thread, of any process, once pid_max wraps
 * (32768 here: 32K thread creations, 2 s). */
struct sc_bind {
  pid_t tid;
  unsigned long long start;
  cpu_set_t saved;
  int cpu;
};

/* The start time (clock ticks after boot, field 22 of stat) of thread tid of this process; 0 when
 * it has no such thread (ended, or /proc unreadable). */
static unsigned long long thread_start(pid_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  return sc_proc_start(path);
}

/* The rank-th of the CPUs allowed in `m`, or -1 when fewer are allowed. */
static int nth_allowed(const cpu_set_t *m, int rank) {
  int k = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, m) && k++ == rank) return cpu;
  return -1;
}

void sc_bind_rank(schedc_comm *c) {
  sc_cpu *x = sc_cpu_of(c);
  if (!x->bind_wanted || x->bound) return;
  x->bind_wanted = 0; /* one try: a refusal is said once, and the call goes on unpinned */
  struct sc_bind *b = calloc(1, sizeof *b);
  if (!b) return;
  b->tid = gettid();
  if (sched_getaffinity(0, sizeof b->saved, &b->saved) != 0) {
    sc_log(SCHEDC_LOG_WARN, "SCHEDC_BIND=core: rank %d could not read its CPU mask (%s); it runs unpinned", c->rank,
           strerror(errno));
    free(b);
    return;
  }
  if (c->nranks > CPU_COUNT(&b->saved)) {
    /* two ranks pinned to one CPU wait on each other's time slices (measured: 4 ranks on 2 CPUs
     * beside a busy process, 2 ms per 64 B call pinned against 20 us not); Open MPI does not bind
     * an oversubscribed job by default either */
    sc_log(SCHEDC_LOG_INFO, "SCHEDC_BIND=core: %d ranks on %d CPUs: rank %d not pinned", c->nranks,
           CPU_COUNT(&b->saved), c->rank);
    free(b);
    return;
  }
  int cpu = nth_allowed(&b->saved, c->rank);
  cpu_set_t one;
  CPU_ZERO(&one);
  if (cpu >= 0) CPU_SET(cpu, &one);
  if (cpu >= 0 && CPU_EQUAL(&one, &b->saved)) {
    /* already on that CPU alone (another communicator's rank on this thread pinned it, or the
     * user did): nothing to pin and nothing to give back. Saving {cpu} here would undo, at this
     * communicator's free, the other's restore when that one is freed first. */
    free(b);
    return;
  }
  if (cpu < 0 || sched_setaffinity(0, sizeof one, &one) != 0) {
    sc_log(SCHEDC_LOG_WARN, "SCHEDC_BIND=core: rank %d could not be pinned to a CPU (%s); it runs unpinned",
           c->rank, cpu < 0 ? "no such CPU" : strerror(errno));
    free(b);
    return;
  }
  b->cpu = cpu;
  b->start = thread_start(b->tid);
  x->bound = b;
  sc_log(SCHEDC_LOG_INFO, "SCHEDC_BIND=core: rank %d (thread %d) pinned to CPU %d", c->rank, (int)b->tid, cpu);
}

void sc_unbind_rank(schedc_comm *c) {
  sc_cpu *x = sc_cpu_of(c);
  struct sc_bind *b = x->bound;
  if (!b) return;
  /* from another thread only while the pinned one lives: not an unrelated thread given its id */
  if (gettid() == b->tid || (b->start && thread_start(b->tid) == b->start))
    (void)sched_setaffinity(b->tid, sizeof b->saved, &b->saved);
  free(b);
  x->bound = NULL;
}
