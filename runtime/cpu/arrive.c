/*
 * arrive.c — how a CPU rank enters a call: its descriptor, the descriptor's fingerprint, and the
 * arrival lines (cpu.h) that replace an entry barrier; a mismatch between ranks is named field by
 * field on every rank.
 */
#include <string.h>

#include "cpu.h"
#include "err.h"
#include "plan.h"

/* This rank's descriptor of call seq, before it arrives. */
void sc_describe(sc_desc *d, const sc_call *k, uint64_t seq, int path) {
  d->coll = (uint32_t)k->coll;
  d->dtype = (uint32_t)k->dtype;
  /* a custom op's value is this process's name for it: ranks compare its source hash instead */
  d->op = k->op_hash ? (uint32_t)SCHEDC_OP_CUSTOM_BASE : (uint32_t)k->op;
  d->op_hash = k->op_hash;
  d->root = (uint32_t)k->root;
  d->count = k->count;
  d->plan_hash = k->plan->hash;
  d->slice = k->slice;
  d->checks = k->checks;
  d->path = (uint32_t)path;
  d->seq = seq;
}

/* The descriptor's fingerprint: every field the ranks must agree on, mixed (a peer compares it
 * in the arrival line it reads anyway, and the whole descriptor only when it differs). */
static uint64_t desc_fp(const sc_desc *d) {
  const uint64_t f[] = {d->seq, d->coll, d->dtype, d->op, d->op_hash, d->root, d->count, d->plan_hash, d->slice,
                        d->checks, d->path};
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    h = (h ^ f[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

/* Rank r entered call seq with another descriptor: name the first field that differs. Every rank
 * compares every peer, so each one reports the mismatch (SCHEDC_EMISMATCH) and none runs it. */
static schedc_status mismatch(schedc_comm *c, const sc_call *k, uint64_t seq, int r) {
  int me = c->rank, parity = (int)(seq & 1);
  const sc_desc *slot = &sc_cpu_of(c)->sh->slots[me].d[parity], *o = &sc_cpu_of(c)->sh->slots[r].d[parity];
  const char *what = o->coll != slot->coll ? "collective" : o->dtype != slot->dtype ? "dtype" : o->op != slot->op ? "op"
                     : o->op_hash != slot->op_hash ? "custom operator's source"
                     : o->root != slot->root ? "root" : o->count != slot->count ? "count"
                     : o->plan_hash != slot->plan_hash ? "plan" : o->slice != slot->slice ? "slice size" : NULL;
  if (o->seq != seq) what = "call sequence";
  if (!what && o->checks != slot->checks) {
    /* ranks that verify differently would hash or check what their peers never sent (a false
     * corruption report) or wait in an exchange the others skip */
    char mine[64], theirs[64];
    what = "verification (SCHEDC_VERIFY, SCHEDC_REPAIR)";
    sc_fail(c, SC_ABORTED, "rank %d and rank %d disagree on the %s of call %llu", me, r, what, (unsigned long long)seq);
    return sc_err(SCHEDC_EMISMATCH, "%s: rank %d and rank %d disagree on the %s of call %llu (rank %d: %s; rank %d: %s)",
                  k->cn, me, r, what, (unsigned long long)seq, me, sc_checks_name(slot->checks, mine, sizeof mine),
                  r, sc_checks_name(o->checks, theirs, sizeof theirs));
  }
  if (!what && o->path != slot->path) {
    /* the same call, but one rank runs it on the small-message path: their SCHEDC_SMALL or
     * SCHEDC_INJECT differ (only a call without injected faults takes that path) */
    sc_fail(c, SC_ABORTED, "rank %d and rank %d disagree on the path of call %llu", me, r, (unsigned long long)seq);
    return sc_err(SCHEDC_EMISMATCH, "%s: rank %d and rank %d disagree on the path of call %llu (rank %d: %s; rank %d: %s): "
                  "set SCHEDC_SMALL and SCHEDC_INJECT alike on every rank", k->cn, me, r, (unsigned long long)seq, me,
                  slot->path == SC_PATH_SMALL ? "small-message" : "plan", r, o->path == SC_PATH_SMALL ? "small-message" : "plan");
  }
  if (!what) what = "call"; /* equal fields, different fingerprints: the shared block was written over */
  sc_fail(c, SC_ABORTED, "rank %d and rank %d disagree on the %s of call %llu", me, r, what, (unsigned long long)seq);
  const char *d1 = schedc_dtype_name((schedc_dtype)slot->dtype), *d2 = schedc_dtype_name((schedc_dtype)o->dtype);
  const char *c2 = schedc_collective_name((schedc_collective)o->coll);
  return sc_err(SCHEDC_EMISMATCH, "%s: rank %d and rank %d disagree on the %s of call %llu (rank %d: %s %s "
                "count %llu plan %016llx; rank %d: %s %s count %llu plan %016llx)", k->cn, me, r, what,
                (unsigned long long)seq, me, k->cn, d1, (unsigned long long)slot->count,
                (unsigned long long)slot->plan_hash, r, c2 ? c2 : "?", d2 ? d2 : "?",
                (unsigned long long)o->count, (unsigned long long)o->plan_hash);
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

/* Enter call seq (its descriptor d is written): publish this rank's arrival line, then wait until
 * every peer's line of the call's parity holds seq, with the same fingerprint. This is the entry
 * barrier, folded into per-rank lines: each rank writes only its own and reads each peer's once,
 * where a shared counter moved between all of them. Afterwards every peer has finished call
 * seq - 1, so what that call used may be reused. */
schedc_status sc_arrive(schedc_comm *c, const sc_call *k, uint64_t seq, const sc_desc *d) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  int n = c->nranks, me = c->rank, parity = (int)(seq & 1);
  uint32_t s31 = (uint32_t)seq & 0x7fffffffu;
  uint64_t fp = desc_fp(d);
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
