/*
 * arrive.c — how a CPU rank enters a call: its descriptor, the descriptor's fingerprint, and the
 * arrival lines (cpu.h) that replace an entry barrier; a mismatch between ranks is named field by
 * field on every rank.
 */
#include <string.h>

#include "cpu.h"
#include "err.h"

/* This rank's descriptor of call k, before it arrives. */
void sc_describe(sc_desc *d, const sc_call *k, int path) { sc_agreement_of(&d->a, k, (uint32_t)path); }

/* Rank r entered call seq with another descriptor: name the first field that differs (the core's
 * one message). Every rank compares every peer, so each one reports the mismatch
 * (SCHEDC_EMISMATCH) and none runs it. */
static schedc_status mismatch(schedc_comm *c, const sc_call *k, uint64_t seq, int r) {
  int me = c->rank, parity = (int)(seq & 1);
  const sc_desc *slot = &sc_cpu_of(c)->sh->slots[me].d[parity], *o = &sc_cpu_of(c)->sh->slots[r].d[parity];
  schedc_status st = sc_agreement_check(k->cn, me, &slot->a, r, &o->a);
  if (st == SCHEDC_OK) /* equal fields, different fingerprints: the shared block was written over */
    st = sc_disagree(k->cn, me, r, seq, "call", "its descriptor", "another fingerprint", NULL);
  sc_fail(c, SC_ABORTED, "%s", schedc_errmsg());
  return st;
}

/* A wait for a peer's arrival failed with st, perhaps because another rank found a mismatch in
 * this call: then the mismatch is this rank's error too. The rank that found it compared two
 * arrived lines that differ, so this rank sees at least one of them differ from its own. */
static schedc_status mismatch_seen(schedc_comm *c, const sc_call *k, uint64_t seq, uint64_t fp, schedc_status st) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  uint32_t s31 = (uint32_t)seq & 0x7fffffffu;
  for (int r = 0; r < c->nranks; r++) {
    sc_arrival *o = sc_arr(sh, (int)(seq & 1), (uint32_t)r);
    if (r != c->rank && (atomic_load_explicit(&o->seq, memory_order_acquire) & 0x7fffffffu) == s31 && o->fp != fp)
      return mismatch(c, k, seq, r);
  }
  return st;
}

/* Enter call k (its descriptor d is written): publish this rank's arrival line, then wait until
 * every peer's line of the call's parity holds seq, with the same fingerprint. This is the entry
 * barrier, folded into per-rank lines: each rank writes only its own and reads each peer's once,
 * where a shared counter moved between all of them. Afterwards every peer has finished call
 * seq - 1, so what that call used may be reused. */
schedc_status sc_arrive(schedc_comm *c, const sc_call *k, const sc_desc *d) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  uint64_t seq = k->seq;
  int n = c->nranks, me = c->rank, parity = (int)(seq & 1);
  uint32_t s31 = (uint32_t)seq & 0x7fffffffu;
  uint64_t fp = sc_agreement_fp(&d->a);
  sc_arrival *mine = sc_arr(sh, parity, (uint32_t)me);
  mine->fp = fp;
  sc_publish(&mine->seq, s31); /* release: the descriptor, the line and its data before it */
  sc_waitctx w = {c, k->cn, -1, 0, 0, 0, 0, SC_AT_BARRIER}; /* deadline: from the first slow look */
  for (int i = 1; i < n; i++) {
    int r = (me + i) % n; /* each rank reads its successors first: no two start on the same line */
    sc_arrival *o = sc_arr(sh, parity, (uint32_t)r);
    w.peer = r;
    schedc_status st = sc_wait_seq(&o->seq, s31, &w);
    if (st != SCHEDC_OK) return mismatch_seen(c, k, seq, fp, st);
    if (o->fp != fp) return mismatch(c, k, seq, r);
  }
  /* A peer that gave up on this call published its line before it did: a late rank would find
   * every line in place, and a small call needs nothing more from its peers, so it would succeed
   * where they failed. The failure decides for everyone. */
  if (sc_failure_now(c)) return mismatch_seen(c, k, seq, fp, sc_peer_failure(&w));
  return SCHEDC_OK;
}
