/*
 * integrity.h — verification of a call's result (integrity.c): every rank's record (its result's
 * digest and the first corrupted transfer it received) gathered, one verdict from them, repair
 * from the majority; the flipout injection; the messages every backend reports corruption with.
 * Every backend reaches its verdict through sc_verdict, so every backend says the same words.
 */
#ifndef SC_INTEGRITY_H
#define SC_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

#include "call.h"

/* After a host-memory backend ran call k and filled res: the ranks exchange their records (an
 * internal allgather over c) and, where the result is equal on all ranks, compare digests
 * (res->have_digest: the digest was taken while the result was copied out). The backend applied
 * flipout. SCHEDC_OK, or SCHEDC_ECORRUPT naming the transfer or the ranks. */
schedc_status sc_integrity_check(schedc_comm *c, const sc_call *k, const sc_result *res);

/* One rank's record, as the words ranks exchange: its digest, then its sc_corrupt. */
enum { SC_VREC_WORDS = 5 };
void sc_vrec_pack(uint64_t w[SC_VREC_WORDS], uint64_t digest, const sc_corrupt *bad);
/* The verdict on n ranks' records all[n * SC_VREC_WORDS], the same on every rank (me: this
 * rank, -1: one process speaking for all ranks). A corrupted transfer reported by any rank:
 * SCHEDC_ECORRUPT with the lowest rank's report (file: the plan's source, for the message).
 * Digests (dig) all equal: SCHEDC_OK. Digests that differ: with repair, SCHEDC_OK and *fix = the
 * rank holding the majority (the caller copies its result to the others, checks each with
 * sc_repaired, then reports with sc_digest_outcome(..., repaired = 1)); without, SCHEDC_ECORRUPT
 * naming the ranks that differ. *fix is -1 when nothing is to be repaired. dg[n] receives the
 * digests. */
schedc_status sc_verdict(const char *cn, const char *file, const uint64_t *all, int n, int me, int dig, int repair,
                         uint64_t *dg, int *fix);
/* After a repair of `rank` from the majority's rank: its digest now must be the majority's. */
schedc_status sc_repaired(const char *cn, int rank, uint64_t again, uint64_t want);
/* Lowest rank holding the most common of the n digests; *nbad = ranks that differ from it. */
int sc_digest_majority(const uint64_t *dg, int n, int *nbad);
/* The outcome of the ranks' digests dg[n] (majority held by root): SCHEDC_OK if all agree; else
 * SCHEDC_ECORRUPT naming the ranks that differ, or, when they were repaired, SCHEDC_OK and a
 * warning from rank root (me: this rank; -1: one process speaking for all ranks, which names none
 * as its own and warns itself). */
schedc_status sc_digest_outcome(const char *cn, const uint64_t *dg, int n, int me, int root, int repaired);
/* Broadcast `bytes` of buf from root over c, bit for bit, as an internal call. */
schedc_status sc_rebroadcast(schedc_comm *c, void *buf, size_t bytes, int root);
/* The ECORRUPT message for a corrupted transfer (every rank reports the same one), and the
 * warning when repair deals with it (`action`: what repair does about it). */
schedc_status sc_corrupt_error(const char *cn, const sc_corrupt *b, const char *file);
void sc_corrupt_warn(const char *cn, const sc_corrupt *b, const char *file, const char *action);

/* flipout:RANK injection into call k: flip one bit of this rank's result (of `bytes`);
 * sc_flipout_pos: the offset of the byte it flips, or -1 when it does not apply (another rank,
 * an internal call, nothing to flip). The byte moves with the call's number. */
long sc_flipout_pos(const schedc_comm *c, const sc_call *k, size_t bytes);
void sc_flipout(const schedc_comm *c, const sc_call *k, void *buf, size_t bytes);
/* The sliced digest of buf (s: its slicing). */
uint64_t sc_sliced_digest(const void *buf, const sc_dslice *s);

#endif
