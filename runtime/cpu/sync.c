/*
 * sync.c — waiting on shared counters and the entry barrier. A waiter spins briefly (a wake-up
 * costs 30-150 us on our VMs, a spin 1-8 us), then sleeps on a futex in short slices so it can
 * notice a deadline, a dead process or a failure recorded by another rank. Counters carry a
 * "sleeper" flag in bit 31 so that publishers call futex_wake only when someone sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "err.h"

#define SLEEPER 0x80000000u
#define SPINS 4000
#define SLICE_NS 5000000L /* 5 ms futex slices */

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void sc_publish(_Atomic uint32_t *ctr, uint32_t value) {
  uint32_t old = atomic_exchange_explicit(ctr, value, memory_order_release);
  if (old & SLEEPER) futex(ctr, FUTEX_WAKE, INT_MAX, NULL);
}

void sc_bump(_Atomic uint32_t *ctr) {
  uint32_t old = atomic_fetch_add_explicit(ctr, 1, memory_order_acq_rel);
  if (old & SLEEPER) {
    atomic_fetch_and_explicit(ctr, ~SLEEPER, memory_order_relaxed);
    futex(ctr, FUTEX_WAKE, INT_MAX, NULL);
  }
}

void sc_fail(schedc_comm *c, int state, const char *fmt, ...) {
  char msg[SC_FAILMSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  uint32_t zero = 0;
  if (atomic_compare_exchange_strong(&sc_cpu_of(c)->sh->failed, &zero, 1u)) {
    memcpy(sc_cpu_of(c)->sh->fail_msg, msg, sizeof msg);
    atomic_store(&sc_cpu_of(c)->sh->failed, 2u); /* message complete */
  }
  atomic_store(&sc_cpu_of(c)->sh->slots[c->rank].state, (uint32_t)state);
  c->broken = 1;
}

/* Is rank r down? `awaited`: this rank needs r's own action, so r cannot have finished
 * legitimately; otherwise r may have completed the collective and left, which is fine unless it
 * is still marked inside the collective (busy). */
static int peer_down(schedc_comm *c, int r, int awaited, int *dead) {
  sc_slot *s = &sc_cpu_of(c)->sh->slots[r];
  uint32_t st = atomic_load(&s->state);
  *dead = 0;
  if (st == SC_ABORTED) return 1;
  if (st == SC_DEAD) return *dead = 1;
  if (!awaited && (st == SC_LEFT || !atomic_load(&s->busy))) return 0;
  if (st == SC_LEFT || (sc_cpu_of(c)->tr->alive && !sc_cpu_of(c)->tr->alive(c, r))) {
    /* It may have finished and exited between the reads above and the probe: read again. */
    if (!awaited && (atomic_load(&s->state) == SC_LEFT || !atomic_load(&s->busy))) return 0;
    return *dead = 1;
  }
  return 0;
}

/* Anything that makes waiting pointless? Returns a status with errmsg set, or SCHEDC_OK.
 * w->peer < 0 means "any reader of this rank's cell": every rank is checked. */
static schedc_status check_peers(sc_waitctx *w, double now, _Atomic uint32_t *ctr, uint32_t want) {
  schedc_comm *c = w->c;
  int culprit = -1, dead = 0;
  if (w->peer >= 0 && peer_down(c, w->peer, 1, &dead)) culprit = w->peer;
  /* Any failure anywhere ends the collective for everyone: name the rank that failed. */
  for (int r = 0; r < c->nranks && culprit < 0; r++)
    if (r != c->rank && (w->peer < 0 || atomic_load(&sc_cpu_of(c)->sh->failed)) && peer_down(c, r, 0, &dead)) culprit = r;
  /* What was awaited may have arrived just before its author left: then all is well. */
  if (ctr && (atomic_load(ctr) & ~SLEEPER) >= want) return SCHEDC_OK;
  if (culprit >= 0) {
    char why[SC_FAILMSG] = "";
    if (atomic_load(&sc_cpu_of(c)->sh->failed) == 2) memcpy(why, sc_cpu_of(c)->sh->fail_msg, sizeof why);
    sc_fail(c, SC_ABORTED, "rank %d gave up: rank %d %s", c->rank, culprit, dead ? "died" : "failed");
    return sc_err(SCHEDC_EPEER, "%s failed on rank %d in step %u (chunk %u, line %u): it waited for rank %d, "
                  "which %s%s%s%s", w->coll, c->rank, w->step, w->chunk, w->line, culprit,
                  dead ? "died" : "failed", why[0] ? " (" : "", why, why[0] ? ")" : "");
  }
  if (now > w->deadline) {
    char who[48];
    if (w->peer >= 0) snprintf(who, sizeof who, "rank %d", w->peer);
    else snprintf(who, sizeof who, "the readers of its chunk");
    sc_fail(c, SC_ABORTED, "rank %d timed out in step %u waiting for %s", c->rank, w->step, who);
    return sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d in step %u (chunk %u, line %u): it "
                  "waited for %s", w->coll, c->timeout_s, c->rank, w->step, w->chunk, w->line, who);
  }
  return SCHEDC_OK;
}

schedc_status sc_peer_failure(sc_waitctx *w) {
  schedc_status st = check_peers(w, sc_now(), NULL, 0);
  if (st != SCHEDC_OK) return st;
  sc_fail(w->c, SC_ABORTED, "rank %d stopped: another rank failed", w->c->rank);
  return sc_err(SCHEDC_EPEER, "%s stopped on rank %d in step %u: another rank failed (%s)", w->coll, w->c->rank,
                w->step, sc_cpu_of(w->c)->sh->fail_msg);
}

/* With more ranks than cores on this host a spinning waiter would take the core from the rank it
 * waits for, so it yields instead of pausing. */
static void spin_wait(const schedc_comm *c, _Atomic uint32_t *ctr, uint32_t want) {
  if (sc_cpu_of(c)->oversubscribed) {
    for (int i = 0; i < 64; i++) {
      if ((atomic_load_explicit(ctr, memory_order_acquire) & 0x7fffffffu) >= want) return;
      sched_yield();
    }
    return;
  }
  for (int i = 0; i < SPINS; i++) {
    if ((atomic_load_explicit(ctr, memory_order_acquire) & 0x7fffffffu) >= want) return;
    cpu_relax();
  }
}

schedc_status sc_wait_ge(_Atomic uint32_t *ctr, uint32_t want, sc_waitctx *w) {
  spin_wait(w->c, ctr, want);
  for (;;) {
    uint32_t v = atomic_load_explicit(ctr, memory_order_acquire);
    if ((v & ~SLEEPER) >= want) return SCHEDC_OK;
    schedc_status st = check_peers(w, sc_now(), ctr, want);
    if (st != SCHEDC_OK) return st;
    if (!(v & SLEEPER) && !atomic_compare_exchange_weak(ctr, &v, v | SLEEPER)) continue;
    struct timespec ts = {0, SLICE_NS};
    futex(ctr, FUTEX_WAIT, v | SLEEPER, &ts);
  }
}

schedc_status sc_barrier(schedc_comm *c, const char *what, double deadline) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  uint32_t gen = atomic_load(&sh->bar_gen);
  if (atomic_fetch_add(&sh->bar_count, 1) == (uint32_t)c->nranks - 1) {
    atomic_store(&sh->bar_count, 0);
    atomic_fetch_add(&sh->bar_gen, 1);
    futex(&sh->bar_gen, FUTEX_WAKE, INT_MAX, NULL);
    return SCHEDC_OK;
  }
  sc_waitctx w = {c, what, -1, 0, 0, 0, deadline};
  for (int i = 0; i < SPINS; i++) {
    if (atomic_load(&sh->bar_gen) != gen) return SCHEDC_OK;
    if (sc_cpu_of(c)->oversubscribed) sched_yield();
    else cpu_relax();
  }
  for (;;) {
    if (atomic_load(&sh->bar_gen) != gen) return SCHEDC_OK;
    /* Who is missing? Blame the lowest rank that has not arrived and is dead or failed. */
    for (int r = 0; r < c->nranks; r++) {
      int dead;
      if (r != c->rank && peer_down(c, r, 1, &dead)) { /* everyone must arrive at a barrier */
        if (atomic_load(&sh->bar_gen) != gen) return SCHEDC_OK; /* it arrived, and left since */
        w.peer = r;
        return check_peers(&w, sc_now(), &sh->bar_gen, gen + 1);
      }
    }
    double now = sc_now();
    if (now > deadline) {
      sc_fail(c, SC_ABORTED, "rank %d timed out at the start of %s", c->rank, what);
      return sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d waiting for all %d ranks to start it",
                    what, c->timeout_s, c->rank, c->nranks);
    }
    struct timespec ts = {0, SLICE_NS};
    futex(&sh->bar_gen, FUTEX_WAIT, gen, &ts);
  }
}

void sc_quiesce(schedc_comm *c) {
  /* A live peer inside the collective notices the failure within one kernel or one 5 ms wait
   * slice; the bound only guards against a peer stuck outside our control. */
  double deadline = sc_now() + c->timeout_s + 60;
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->rank) continue;
    while (atomic_load(&sc_cpu_of(c)->sh->slots[r].busy) && atomic_load(&sc_cpu_of(c)->sh->slots[r].state) != SC_DEAD &&
           (!sc_cpu_of(c)->tr->alive || sc_cpu_of(c)->tr->alive(c, r)) && sc_now() < deadline) {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
  }
}
