/*
 * sync.c — waiting on shared counters and arrival lines, and the init barrier. A wake-up from a futex sleep costs
 * 30-150 us on our VMs and, with another busy process on the machine, often a whole scheduler
 * slice; a spin costs 1-8 us. The policy (sc_wait_decide, a pure function of what the waiter
 * knows) spins while the rank it waits for runs on another core (its beat, sc_slot.beat, moves: a
 * rank beats while it spins and once per slice it computes), yields the core when that rank is
 * queued behind the waiter on the waiter's own CPU (sc_slot.cpu: where it last beat), and sleeps
 * on a futex when it has been off its core elsewhere for SC_WAIT_PREEMPT_S (the idle core lets
 * the scheduler pull it over) or waits itself / runs outside schedc for SC_WAIT_STALE_S. Sleeps are
 * short slices so the waiter notices a deadline, a dead process or a failure recorded by another
 * rank; spins are bounded by the same checks every SPIN_S.
 * Counters carry a "sleeper" flag in bit 31 so that publishers call futex_wake only when someone
 * sleeps. With more ranks than cores a waiter yields instead of spinning, then sleeps.
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
#define CHECK_SPINS 64     /* pauses between clock reads (a pause is ~25 ns here, a clock read ~28 ns) */
#define SPIN_S 5e-3        /* spinning on a running peer: liveness and the deadline are checked this often */
#define SLICE_NS 5000000L  /* 5 ms futex slices */
#define CHECK_S 5e-3       /* the liveness probe (a syscall and a /proc read for shm) at most this often */

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

uint32_t sc_cpu_here(void) {
  int c = sched_getcpu(); /* glibc: the rseq area's cpu_id, or the vDSO: a few ns */
  return c < 0 ? 0u : (uint32_t)c + 1u;
}

int sc_wait_decide(const sc_waitview *v) {
  if (v->oversubscribed) return v->yields < SC_WAIT_YIELDS ? SC_WAIT_YIELD : SC_WAIT_SLEEP;
  /* On this CPU and not beating: runnable behind this waiter; its every spin delays it. */
  if (v->peer_here && v->still_s > SC_WAIT_HERE_S) return SC_WAIT_YIELD;
  if (v->spin_short) return v->still_s > SC_WAIT_SHORT_S ? SC_WAIT_SLEEP : SC_WAIT_SPIN;
  /* Preempted on another CPU: spinning here keeps this core busy, so it stays queued there. */
  if (v->peer_may_run) return v->still_s > SC_WAIT_PREEMPT_S ? SC_WAIT_SLEEP : SC_WAIT_SPIN;
  /* Asleep itself (waiting on a third rank) or outside schedc (running the caller's code): it
   * comes back by itself; sleep only once that is long. */
  return v->still_s > SC_WAIT_STALE_S ? SC_WAIT_SLEEP : SC_WAIT_SPIN;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
  return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Has the wait ended? Counters (GE): the value (sleeper bit aside) reached want; the barrier's
 * generation (NEQ): it moved away from want; a call number's low 31 bits (SERIAL): it reached
 * want in serial-number order, so the count may wrap (a peer is never 2^30 calls apart). */
enum { GE = 0, NEQ = 1, SERIAL = 2 };
static inline int passed(uint32_t v, uint32_t want, int mode) {
  v &= ~SLEEPER;
  return mode == NEQ ? v != want : mode == SERIAL ? ((v - want) & ~SLEEPER) < 0x40000000u : v >= want;
}
static inline int reached(_Atomic uint32_t *ctr, uint32_t want, int mode) {
  return passed(atomic_load_explicit(ctr, memory_order_acquire), want, mode);
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
  sc_shared *sh = sc_cpu_of(c)->sh;
  uint64_t was = atomic_load(&sh->fail_seq);
  while (c->seq < was && !atomic_compare_exchange_weak(&sh->fail_seq, &was, c->seq)) {
  }
  atomic_store(&sh->slots[c->rank].fail_seq, c->seq);
  uint32_t zero = 0;
  if (atomic_compare_exchange_strong(&sc_cpu_of(c)->sh->failed, &zero, 1u)) {
    memcpy(sc_cpu_of(c)->sh->fail_msg, msg, sizeof msg);
    atomic_store(&sc_cpu_of(c)->sh->failed, 2u); /* message complete */
  }
  atomic_store(&sc_cpu_of(c)->sh->slots[c->rank].fault, (uint32_t)state);
  atomic_store(&sc_cpu_of(c)->sh->slots[c->rank].state, (uint32_t)state);
  c->broken = 1;
}

/* Is rank r down, and how? NULL if not. `awaited`: this rank needs r's own action in this call,
 * so r cannot have finished legitimately; otherwise r may have completed the collective and left,
 * which is fine unless it is still marked inside the collective (busy). A rank that freed its
 * communicator, or whose process exited outside a collective, while another still needed it
 * "finished early" (a program that made fewer calls); one that vanished inside a collective "died". */
static const char *peer_down(schedc_comm *c, int r, int awaited) {
  sc_slot *s = &sc_cpu_of(c)->sh->slots[r];
  uint32_t st = atomic_load(&s->state);
  if (st == SC_LEFT && atomic_load(&s->fault)) st = atomic_load(&s->fault); /* it failed, then freed */
  /* failed in a later call: it had finished this one (this rank read all it needed of it) */
  if (st == SC_ABORTED && atomic_load(&s->fail_seq) > c->seq) return NULL;
  if (st == SC_ABORTED) return "failed";
  if (st == SC_DEAD) return "died";
  if (!awaited && (st == SC_LEFT || !atomic_load(&s->busy))) return NULL;
  if (st == SC_LEFT) return "finished early (it freed its communicator while this call still needed it)";
  if (sc_cpu_of(c)->tr->alive && !sc_cpu_of(c)->tr->alive(c, r)) {
    /* It may have finished and exited between the reads above and the probe: read again. */
    if (!awaited && (atomic_load(&s->state) == SC_LEFT || !atomic_load(&s->busy))) return NULL;
    if (atomic_load(&s->state) == SC_LEFT)
      return "finished early (it freed its communicator while this call still needed it)";
    return atomic_load(&s->busy) ? "died" : "finished early (its process exited outside a collective while this "
                                            "call still needed it)";
  }
  return NULL;
}

/* "rank 1, rank 3": the other ranks still inside a collective (missing == 0) or that have not
 * entered this rank's current call (missing == 1), at most 8 named. */
static void list_ranks(schedc_comm *c, int missing, char *out, size_t cap) {
  size_t len = 0;
  int k = 0;
  out[0] = 0;
  for (int r = 0; r < c->nranks && len + 24 < cap; r++) {
    const sc_slot *s = &sc_cpu_of(c)->sh->slots[r];
    if (r == c->rank) continue;
    if (missing ? atomic_load_explicit(&s->entered, memory_order_relaxed) == (uint32_t)c->seq : !atomic_load(&s->busy))
      continue;
    if (++k > 8) { len += (size_t)snprintf(out + len, cap - len, ", ..."); break; }
    len += (size_t)snprintf(out + len, cap - len, "%srank %d", len ? ", " : "", r);
  }
}

/* "; rank 1 has been silent for 1.2 s ...": the other ranks inside a collective (or, at a barrier, not
 * yet in this call) that have not beaten for a quarter of the timeout (at least 0.1 s) while
 * every waiting rank beats at least every ~15 ms: stopped (SIGSTOP), hung, or starved. A rank
 * that times out waiting for a live peer that itself waits names the rank at the end of the
 * chain this way. */
static void list_silent(schedc_comm *c, double now, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  double limit = c->timeout_s / 4 > 0.1 ? c->timeout_s / 4 : 0.1;
  uint32_t now_ms = (uint32_t)(uint64_t)(now * 1e3);
  for (int r = 0; r < c->nranks && len + 48 < cap; r++) {
    const sc_slot *s = &sc_cpu_of(c)->sh->slots[r];
    if (r == c->rank || (!atomic_load(&s->busy) && atomic_load_explicit(&s->entered, memory_order_relaxed) ==
                                                       (uint32_t)c->seq))
      continue; /* outside any collective, done with this one */
    uint32_t last = atomic_load_explicit(&s->beat_ms, memory_order_relaxed);
    double quiet = (double)(uint32_t)(now_ms - last) / 1e3;
    if (last == 0 || quiet < limit) continue; /* never beat (not started), or running */
    len += (size_t)snprintf(out + len, cap - len, "; rank %d has been silent for %.1f s (stopped, hung or outside the "
                            "call)", r, quiet);
  }
}

/* Where a wait is, for messages: the step and chunk of the plan (and the schedule line, when the
 * transfer has one), or the call's start (a peer's arrival), or its end (readers of this rank's cells). */
static const char *wait_where(const sc_waitctx *w, char *buf, size_t cap) {
  if (w->at == SC_AT_BARRIER) snprintf(buf, cap, "at the call's entry barrier (before step 0)");
  else if (w->at == SC_AT_DRAIN)
    snprintf(buf, cap, "at the end of the call (chunk %u: waiting until its readers are done)", w->chunk);
  else if (w->line) snprintf(buf, cap, "in step %u (chunk %u, line %u)", w->step, w->chunk, w->line);
  else snprintf(buf, cap, "in step %u (chunk %u)", w->step, w->chunk);
  return buf;
}

/* Anything that makes waiting pointless? Returns a status with errmsg set, or SCHEDC_OK.
 * w->peer < 0 means "any reader of this rank's cell": every rank is checked. */
static schedc_status check_peers(sc_waitctx *w, double now, _Atomic uint32_t *ctr, uint32_t want, int mode) {
  schedc_comm *c = w->c;
  if (w->deadline <= 0) w->deadline = now + c->timeout_s; /* the first slow look starts the clock */
  int culprit = -1;
  const char *how = NULL;
  if (w->peer >= 0 && (how = peer_down(c, w->peer, 1))) culprit = w->peer;
  /* Any failure anywhere ends the collective for everyone: name the rank that failed. */
  for (int r = 0; r < c->nranks && culprit < 0; r++)
    if (r != c->rank && (w->peer < 0 || sc_failure_now(c)) && (how = peer_down(c, r, 0)))
      culprit = r;
  /* What was awaited may have arrived just before its author left: then all is well. */
  if (ctr && passed(atomic_load(ctr), want, mode)) return SCHEDC_OK;
  if (culprit >= 0) {
    char why[SC_FAILMSG] = "";
    if (atomic_load(&sc_cpu_of(c)->sh->failed) == 2) memcpy(why, sc_cpu_of(c)->sh->fail_msg, sizeof why);
    int died = !strcmp(how, "died");
    sc_fail(c, SC_ABORTED, "rank %d gave up: rank %d %s", c->rank, culprit, died ? "died" : how);
    char at[96];
    return sc_err(SCHEDC_EPEER, "%s failed on rank %d %s: it waited for rank %d, which %s%s%s%s", w->coll, c->rank,
                  wait_where(w, at, sizeof at), culprit, how, why[0] ? " (" : "", why, why[0] ? ")" : "");
  }
  if (now > w->deadline) {
    char who[256], busy[160];
    if (w->peer >= 0) snprintf(who, sizeof who, "rank %d", w->peer);
    else {
      list_ranks(c, 0, busy, sizeof busy);
      snprintf(who, sizeof who, "the readers of its chunk%s%s%s", busy[0] ? " (still inside the call: " : "", busy,
               busy[0] ? ")" : "");
    }
    char silent[400], missing[200] = "", step[48];
    list_silent(c, now, silent, sizeof silent);
    if (w->at == SC_AT_BARRIER) { /* every rank that has not entered this call, not only the first */
      char ranks[160];
      list_ranks(c, 1, ranks, sizeof ranks);
      if (ranks[0]) snprintf(missing, sizeof missing, " (not arrived: %s)", ranks);
      snprintf(step, sizeof step, "at the start of %s", w->coll);
    } else {
      snprintf(step, sizeof step, "in step %u", w->step);
    }
    sc_fail(c, SC_ABORTED, "rank %d timed out %s waiting for %s%s%s", c->rank, step, who, missing, silent);
    char at[96];
    return sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d %s: it waited for %s%s%s", w->coll,
                  c->timeout_s, c->rank, wait_where(w, at, sizeof at), who, missing, silent);
  }
  return SCHEDC_OK;
}

schedc_status sc_peer_failure(sc_waitctx *w) {
  schedc_status st = check_peers(w, sc_now(), NULL, 0, GE);
  if (st != SCHEDC_OK) return st;
  sc_fail(w->c, SC_ABORTED, "rank %d stopped: another rank failed", w->c->rank);
  return sc_err(SCHEDC_EPEER, "%s stopped on rank %d in step %u: another rank failed (%s)", w->coll, w->c->rank,
                w->step, sc_cpu_of(w->c)->sh->fail_msg);
}

/* Is rank r itself waiting at the init barrier? Then it is not what a barrier waits for: its
 * beats and its being inside the call say nothing about when the missing ranks arrive (counting
 * them kept every early rank spinning while a late one compiled kernels for seconds). */
static int at_barrier(const sc_shared *sh, int r) {
  return atomic_load_explicit(&sh->slots[r].at_barrier, memory_order_relaxed) != 0;
}

/* The beats of the rank(s) a waiter depends on: `peer`, or every other rank not itself waiting at
 * the barrier (peer < 0). */
static uint32_t beats(const schedc_comm *c, int peer) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  if (peer >= 0) return atomic_load_explicit(&sh->slots[peer].beat, memory_order_relaxed);
  uint32_t sum = 0;
  for (int r = 0; r < c->nranks; r++)
    if (r != c->rank && !at_barrier(sh, r))
      sum += atomic_load_explicit(&sh->slots[r].beat, memory_order_relaxed) * (2u * (uint32_t)r + 1);
  return sum;
}

/* Could the awaited rank(s) be runnable — inside a collective and not asleep in a futex wait —
 * and merely preempted? Then sleeping would only cost this rank its core and a wake-up later. */
static int may_run(const schedc_comm *c, int peer) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  for (int r = peer >= 0 ? peer : 0; r < (peer >= 0 ? peer + 1 : c->nranks); r++)
    if (r != c->rank && !at_barrier(sh, r) && atomic_load_explicit(&sh->slots[r].busy, memory_order_relaxed) &&
        !atomic_load_explicit(&sh->slots[r].asleep, memory_order_relaxed) &&
        atomic_load_explicit(&sh->slots[r].state, memory_order_relaxed) == SC_ALIVE)
      return 1;
  return 0;
}

/* Did the awaited rank(s) last beat on CPU `here` (1 + index), inside a collective? */
static int on_cpu(const schedc_comm *c, int peer, uint32_t here) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  if (!here) return 0;
  for (int r = peer >= 0 ? peer : 0; r < (peer >= 0 ? peer + 1 : c->nranks); r++)
    if (r != c->rank && !at_barrier(sh, r) && atomic_load_explicit(&sh->slots[r].busy, memory_order_relaxed) &&
        atomic_load_explicit(&sh->slots[r].cpu, memory_order_relaxed) == here)
      return 1;
  return 0;
}

/* Sleep on ctr while it holds v (5 ms at most), marked asleep so waiters on this rank sleep too. */
static void nap(schedc_comm *c, _Atomic uint32_t *ctr, uint32_t v) {
  _Atomic uint32_t *me = &sc_cpu_of(c)->sh->slots[c->rank].asleep;
  atomic_store_explicit(me, 1u, memory_order_relaxed);
  struct timespec ts = {0, SLICE_NS};
  futex(ctr, FUTEX_WAIT, v, &ts);
  atomic_store_explicit(me, 0u, memory_order_relaxed);
}


enum { DONE, STALE, LONG };

/* What a waiter last saw of the ranks it waits on: their beats, and when they last moved. */
typedef struct spinstate { uint32_t b; double seen; int init; } spinstate;

/* Spin until the wait ends (DONE), the policy says sleep (STALE) or SPIN_S passed (LONG: check
 * liveness and the deadline, then spin on). Every CHECK_SPINS pauses this rank beats (so a rank
 * waiting on it keeps spinning too) and asks sc_wait_decide, which may also have it yield. */
static int spin(schedc_comm *c, _Atomic uint32_t *ctr, uint32_t want, int mode, int peer, spinstate *ss) {
  if (reached(ctr, want, mode)) return DONE; /* no clock read when nothing to wait for */
  sc_cpu *x = sc_cpu_of(c);
  sc_waitview v = {x->oversubscribed, x->spin_short, 0, 0, 0, 0};
  if (v.oversubscribed) {
    sc_beat(c, sc_now()); /* between sleeps too: a waiting rank shows it is alive */
    for (;; v.yields++) {
      if (reached(ctr, want, mode)) return DONE;
      if (sc_wait_decide(&v) != SC_WAIT_YIELD) break;
      sched_yield();
    }
    return reached(ctr, want, mode) ? DONE : STALE;
  }
  double t0 = 0; /* read at the first check: a wait shorter than CHECK_SPINS pauses reads no clock */
  for (uint32_t i = 1;; i++) {
    if (reached(ctr, want, mode)) return DONE;
    cpu_relax();
    if (i % CHECK_SPINS) continue;
    double t = sc_now();
    sc_beat(c, t);
    if (i == CHECK_SPINS) t0 = t;
    uint32_t nb = beats(c, peer);
    if (!ss->init || nb != ss->b) {
      ss->init = 1;
      ss->b = nb;
      ss->seen = t;
    } else if (t - ss->seen > SC_WAIT_HERE_S) { /* not beating: ask the policy */
      v.still_s = t - ss->seen;
      v.peer_may_run = may_run(c, peer);
      v.peer_here = on_cpu(c, peer, atomic_load_explicit(&x->sh->slots[c->rank].cpu, memory_order_relaxed));
      int d = sc_wait_decide(&v);
      if (d == SC_WAIT_YIELD) sched_yield();
      else if (d == SC_WAIT_SLEEP) {
        ss->seen = t; /* after the sleep, give it its time again */
        return reached(ctr, want, mode) ? DONE : STALE;
      }
    }
    if (t - t0 > SPIN_S || sc_failure_now(c))
      return reached(ctr, want, mode) ? DONE : LONG;
  }
}

static schedc_status wait_for(_Atomic uint32_t *ctr, uint32_t want, int mode, sc_waitctx *w) {
  double next_check = 0;
  spinstate ss = {0, 0, 0};
  for (;;) {
    int how = spin(w->c, ctr, want, mode, w->peer, &ss);
    if (how == DONE) return SCHEDC_OK;
    uint32_t v = atomic_load_explicit(ctr, memory_order_acquire);
    if (passed(v, want, mode)) return SCHEDC_OK;
    double now = sc_now();
    if (now >= next_check || now > w->deadline || sc_failure_now(w->c)) {
      schedc_status st = check_peers(w, now, ctr, want, mode);
      if (st != SCHEDC_OK) return st;
      next_check = now + CHECK_S;
    }
    if (how == LONG) continue; /* the awaited rank is running: no sleep */
    if (!(v & SLEEPER) && !atomic_compare_exchange_weak(ctr, &v, v | SLEEPER)) continue;
    nap(w->c, ctr, v | SLEEPER);
  }
}

schedc_status sc_wait_ge(_Atomic uint32_t *ctr, uint32_t want, sc_waitctx *w) { return wait_for(ctr, want, GE, w); }
schedc_status sc_wait_seq(_Atomic uint32_t *ctr, uint32_t want, sc_waitctx *w) { return wait_for(ctr, want, SERIAL, w); }

static schedc_status barrier_wait(schedc_comm *c, const char *what, double deadline, uint32_t gen);

schedc_status sc_barrier(schedc_comm *c, const char *what, double deadline) { /* <= 0: timeout from now */
  sc_shared *sh = sc_cpu_of(c)->sh;
  /* The generation carries the sleeper flag too: the last rank to arrive wakes only sleepers. */
  uint32_t gen = atomic_load(&sh->bar_gen) & ~SLEEPER;
  _Atomic uint32_t *mark = &sh->slots[c->rank].at_barrier;
  atomic_store_explicit(mark, 1u, memory_order_relaxed); /* before arriving: a waiter never counts it */
  if (atomic_fetch_add(&sh->bar_count, 1) == (uint32_t)c->nranks - 1) {
    atomic_store(&sh->bar_count, 0);
    atomic_store_explicit(mark, 0u, memory_order_relaxed);
    if (atomic_exchange(&sh->bar_gen, (gen + 1) & ~SLEEPER) & SLEEPER) futex(&sh->bar_gen, FUTEX_WAKE, INT_MAX, NULL);
    return SCHEDC_OK;
  }
  schedc_status st = barrier_wait(c, what, deadline, gen);
  atomic_store_explicit(mark, 0u, memory_order_relaxed);
  return st;
}

/* The wait of a rank that arrived at the barrier of generation gen before the last one. */
static schedc_status barrier_wait(schedc_comm *c, const char *what, double deadline, uint32_t gen) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  sc_waitctx w = {c, what, -1, 0, 0, 0, deadline, SC_AT_BARRIER};
  double next_check = 0;
  spinstate ss = {0, 0, 0};
  for (;;) {
    int how = spin(c, &sh->bar_gen, gen, NEQ, -1, &ss);
    if (how == DONE) return SCHEDC_OK;
    double now = sc_now();
    if (deadline <= 0) w.deadline = deadline = now + c->timeout_s; /* no clock read unless it waits */
    if (now >= next_check || now > deadline || atomic_load(&sh->failed)) {
      next_check = now + CHECK_S;
      /* Who is missing? Blame the lowest rank that has not arrived and is dead or failed. */
      for (int r = 0; r < c->nranks; r++) {
        if (r != c->rank && peer_down(c, r, 1)) { /* everyone must arrive at a barrier */
          if ((atomic_load(&sh->bar_gen) & ~SLEEPER) != gen) return SCHEDC_OK; /* it arrived, and left since */
          w.peer = r;
          return check_peers(&w, now, &sh->bar_gen, gen, NEQ);
        }
      }
      if ((atomic_load(&sh->bar_gen) & ~SLEEPER) != gen) return SCHEDC_OK;
      if (now > deadline) {
        /* In a collective the ranks that arrived are marked busy: name the others. */
        char missing[160] = "";
        if (atomic_load(&sh->slots[c->rank].busy)) list_ranks(c, 1, missing, sizeof missing);
        sc_fail(c, SC_ABORTED, "rank %d timed out at the start of %s%s%s%s", c->rank, what,
                missing[0] ? " (not arrived: " : "", missing, missing[0] ? ")" : "");
        return sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d waiting for all %d ranks to start it%s%s%s",
                      what, c->timeout_s, c->rank, c->nranks, missing[0] ? " (not arrived: " : "", missing,
                      missing[0] ? ")" : "");
      }
    }
    if (how == LONG) continue;
    uint32_t v = gen;
    if (!atomic_compare_exchange_strong(&sh->bar_gen, &v, gen | SLEEPER) && v != (gen | SLEEPER)) continue;
    nap(c, &sh->bar_gen, gen | SLEEPER);
  }
}

void sc_quiesce(schedc_comm *c) {
  /* Processes (shm) read only their peers' shared arenas, which stay mapped in every reader until
   * it frees its own communicator: the caller's buffers are never read by a peer, so there is
   * nothing to wait for — in particular not for a stopped (SIGSTOP) or hung peer, which would
   * otherwise delay this rank's report by the whole bound. */
  if (!sc_cpu_of(c)->tr->in_process) return;
  /* Threads share memory: a live peer inside the collective notices the failure within one
   * spin period or one 5 ms wait slice; the bound only guards against a peer stuck outside our
   * control (a thread cannot be stopped alone). */
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
