/*
 * test_waitpolicy.c — the CPU waiters' policy (sc_wait_decide, runtime/cpu/sync.c) decision by
 * decision, without timing: spin while the awaited rank runs elsewhere; yield when it is queued
 * behind the waiter on the waiter's CPU (the busy-neighbour case where both ranks share a core);
 * sleep when it has been off its core elsewhere for long (so the idle core can take it), when it
 * waits itself or runs outside schedc for long; oversubscribed: yield, then sleep.
 */
#include "../check.h"
#include "cpu.h"

static int decide(int over, int shortspin, int may_run, int here, double still, int yields) {
  sc_waitview v = {over, shortspin, may_run, here, still, yields};
  return sc_wait_decide(&v);
}

int main(void) {
  enum { SPIN = SC_WAIT_SPIN, YIELD = SC_WAIT_YIELD, SLEEP = SC_WAIT_SLEEP };
  /* Busy neighbour, 2 ranks on 2 cores: the peer runs on the other core and beats. */
  CHECK(decide(0, 0, 1, 0, 0, 0) == SPIN);
  CHECK(decide(0, 0, 1, 0, 5e-6, 0) == SPIN);
  /* The peer is queued on this waiter's core (beat stood still past SC_WAIT_HERE_S): yield, at
   * once and for as long as that holds — spinning kept it off the core for the rest of the
   * waiter's slice (the policy before issue 30 spun here for good). */
  CHECK(decide(0, 0, 1, 1, SC_WAIT_HERE_S * 2, 0) == YIELD);
  CHECK(decide(0, 0, 1, 1, 0.5, 1000) == YIELD);
  CHECK(decide(0, 1, 1, 1, SC_WAIT_HERE_S * 2, 0) == YIELD); /* SCHEDC_SPIN=short too */
  /* ... but a peer on this CPU that has just beaten is not queued behind anything yet. */
  CHECK(decide(0, 0, 1, 1, SC_WAIT_HERE_S / 2, 0) == SPIN);
  /* Preempted on the other core (the busy process has it): spin through a short preemption,
   * sleep once it lasts (the old policy spun until the scheduler slice ended: 65-120 ms stalls). */
  CHECK(decide(0, 0, 1, 0, SC_WAIT_PREEMPT_S / 2, 0) == SPIN);
  CHECK(decide(0, 0, 1, 0, SC_WAIT_PREEMPT_S * 1.5, 0) == SLEEP);
  CHECK(decide(0, 0, 1, 0, 0.2, 0) == SLEEP);
  /* The peer sleeps itself (waits on a third rank) or runs the caller's code outside schedc: spin
   * until SC_WAIT_STALE_S, then sleep. */
  CHECK(decide(0, 0, 0, 0, SC_WAIT_PREEMPT_S * 2, 0) == SPIN);
  CHECK(decide(0, 0, 0, 0, SC_WAIT_STALE_S * 1.5, 0) == SLEEP);
  CHECK(decide(0, 0, 0, 1, SC_WAIT_STALE_S * 1.5, 0) == YIELD); /* still on this CPU: give it the core */
  /* SCHEDC_SPIN=short: sleep after SC_WAIT_SHORT_S whatever the peer does, spin before. */
  CHECK(decide(0, 1, 1, 0, SC_WAIT_SHORT_S / 2, 0) == SPIN);
  CHECK(decide(0, 1, 1, 0, SC_WAIT_SHORT_S * 2, 0) == SLEEP);
  CHECK(decide(0, 1, 0, 0, SC_WAIT_SHORT_S * 2, 0) == SLEEP);
  /* Oversubscribed (more ranks than CPUs at init): never spin; yield SC_WAIT_YIELDS times, then
   * sleep — whether the peer beats or not, and on whichever CPU. */
  for (int here = 0; here < 2; here++)
    for (int may = 0; may < 2; may++) {
      CHECK(decide(1, 0, may, here, 0, 0) == YIELD);
      CHECK(decide(1, 0, may, here, 1.0, SC_WAIT_YIELDS - 1) == YIELD);
      CHECK(decide(1, 0, may, here, 0, SC_WAIT_YIELDS) == SLEEP);
      CHECK(decide(1, 1, may, here, 0, SC_WAIT_YIELDS) == SLEEP);
    }
  /* The thresholds keep their order: a queued peer is yielded to before anything sleeps, and a
   * preempted one sleeps sooner than one that is merely outside schedc. */
  CHECK(SC_WAIT_HERE_S < SC_WAIT_SHORT_S && SC_WAIT_SHORT_S < SC_WAIT_PREEMPT_S &&
        SC_WAIT_PREEMPT_S < SC_WAIT_STALE_S);
  return DONE();
}
