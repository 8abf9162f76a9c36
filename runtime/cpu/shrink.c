/*
 * shrink.c — schedc_comm_shrink on the CPU backends: the ranks still alive agree on who is still
 * there, then their transport makes the communicator of them (sc_transport.regroup).
 *
 * The agreement is one word per rank in the shared block (sc_slot.shrink), changed only by a
 * compare-and-swap from UNDECIDED, so each word changes once: a rank marks itself JOINED; any
 * rank marks a peer LEFT_OUT that is dead (its process gone, or killed by fault injection), that
 * freed its communicator, or that did not join within the timeout. A rank's members are read once
 * no word is UNDECIDED, and by then every word is final — so every rank that reads them reads the
 * same set: the agreement cannot split. A rank marked LEFT_OUT before it joined learns it from its
 * own failed swap, and gets an error, never a communicator of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "err.h"
#include "log.h"

/* Is rank r gone for good: dead, killed, or its communicator freed? */
static int gone(schedc_comm *c, int r) {
  sc_cpu *x = sc_cpu_of(c);
  uint32_t st = atomic_load(&x->sh->slots[r].state);
  if (st == SC_DEAD || st == SC_LEFT) return 1;
  return x->tr->alive && !x->tr->alive(c, r);
}

/* "1, 3" into buf: the ranks whose word is `want`. */
static void ranks_with(const sc_shared *sh, int n, uint32_t want, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int r = 0; r < n && len + 16 < cap; r++)
    if (atomic_load(&sh->slots[r].shrink) == want) len += (size_t)snprintf(buf + len, cap - len, "%s%d", len ? ", " : "", r);
}

/* Mark every undecided peer that is gone (or every undecided one, past the deadline) LEFT_OUT.
 * Returns how many are still undecided. */
static int settle(schedc_comm *c, int past_deadline) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  int undecided = 0;
  for (int r = 0; r < c->nranks; r++) {
    _Atomic uint32_t *w = &sh->slots[r].shrink;
    if (atomic_load(w) != SC_SHRINK_UNDECIDED) continue;
    uint32_t v = SC_SHRINK_UNDECIDED;
    if ((past_deadline || gone(c, r)) && atomic_compare_exchange_strong(w, &v, SC_SHRINK_LEFT_OUT)) continue;
    if (atomic_load(w) == SC_SHRINK_UNDECIDED) undecided++; /* (or it joined meanwhile) */
  }
  return undecided;
}

schedc_status sc_cpu_shrink(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out) {
  sc_cpu *x = sc_cpu_of(c);
  sc_shared *sh = x->sh;
  int n = c->nranks, me = c->rank;
  if (atomic_load(&sh->slots[me].state) == SC_DEAD || atomic_load(&sh->slots[me].fault) == SC_DEAD)
    return sc_err(SCHEDC_EPEER, "schedc_comm_shrink: rank %d is the rank that died (killed by fault injection): it "
                  "cannot join the survivors", me);
  uint32_t v = SC_SHRINK_UNDECIDED;
  if (!atomic_compare_exchange_strong(&sh->slots[me].shrink, &v, SC_SHRINK_JOINED))
    return sc_err(SCHEDC_EPEER, "schedc_comm_shrink: rank %d was left out: the other ranks shrank the communicator "
                  "without it (it did not call schedc_comm_shrink within the timeout of %.3g s)", me, c->timeout_s);
  /* Wait until every word is final: each live peer joins (it notices the failure at its next wait
   * or call) or is found gone; one that does neither within the timeout is left out. */
  double deadline = sc_now() + c->timeout_s;
  for (;;) {
    if (!settle(c, sc_now() > deadline)) break;
    struct timespec ts = {0, 100000}; /* 0.1 ms: a peer joins as soon as its own wait notices */
    nanosleep(&ts, NULL);
  }
  int *members = malloc((size_t)n * sizeof *members), *newrank = malloc((size_t)n * sizeof *newrank), k = 0;
  if (!members || !newrank) {
    free(members);
    free(newrank);
    return sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  }
  for (int r = 0; r < n; r++) {
    newrank[r] = atomic_load(&sh->slots[r].shrink) == SC_SHRINK_JOINED ? k : -1;
    if (newrank[r] >= 0) members[k++] = r;
  }
  char left[256];
  ranks_with(sh, n, SC_SHRINK_LEFT_OUT, left, sizeof left);
  if (me == members[0])
    sc_log(SCHEDC_LOG_INFO, "shrink: %d of %d ranks go on; left out: %s", k, n, left[0] ? left : "none");
  sc_inject inj;
  sc_inject_remap(&c->inj, newrank, n, &inj);
  schedc_status st = x->tr->regroup(c, members, k, newrank[me], opts, &inj, out);
  free(newrank);
  if (st != SCHEDC_OK) {
    free(members);
    return st;
  }
  (*out)->parent = members; /* owned by the new head */
  return SCHEDC_OK;
}
