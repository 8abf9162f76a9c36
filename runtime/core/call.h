/*
 * call.h — one collective call as the core hands it to a backend (sc_call, checked and numbered
 * by the core) and what the backend hands back (sc_result, owned by the caller). Nothing of a
 * call lives on the long-lived communicator: a call's state is these two, on the caller's stack.
 */
#ifndef SC_CALL_H
#define SC_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "exact.h"
#include "prog.h"
#include "schedc/schedc.h"

/* verification bits (schedc_comm.verify, sc_call.checks): EXACT, exact mode's identity check
 * (dispatch.c), is set by digest and checksum too, and kept in sc_call.checks for exact calls only */
enum { SC_V_DIGEST = 1, SC_V_CHECKSUM = 2, SC_V_EXACT = 8 };
enum { SC_V_REPAIR = 4 };                    /* sc_call.checks: repair on */

/* Flags of a call. A call the library makes for itself (verification's digest exchange, a
 * repair's re-broadcast, a backend's bootstrap exchange over a host communicator) is internal:
 * it is never verified, never injected into, and never re-enters verification. */
enum {
  SC_CALL_NOVERIFY = 1,      /* no checksums, digests or repair */
  SC_CALL_NOINJECT = 2,      /* no SCHEDC_INJECT faults */
  SC_CALL_INTERNAL = SC_CALL_NOVERIFY | SC_CALL_NOINJECT,
  /* an internal call made for a user's call that injects (exact mode's grid exchange): no faults
   * at its steps, but a rank SCHEDC_INJECT names to be killed dies when it fails, as it would in
   * the user's call — "a rank named always dies", whichever part of the call fails first */
  SC_CALL_FAILDIES = 4
};

/* One collective call, checked by the core (dispatch.c) before a backend sees it. */
typedef struct sc_call {
  int coll;                  /* schedc_collective */
  const char *cn;            /* its name, for messages */
  const void *send;
  void *recv;
  size_t count;              /* the user's count argument */
  size_t K;                  /* elements of the whole working buffer (count, or count * nranks) */
  schedc_dtype dtype, acc;   /* the data type, and the type partial sums are carried in */
  schedc_op op;
  int root;
  const schedc_plan *plan;
  const sc_prog *prog;       /* the plan's lowered program (owned by the plan) */
  size_t slice;              /* pipelining slice bytes for this call (a tuning entry's or the comm's) */
  unsigned flags;            /* SC_CALL_* */
  uint64_t op_hash;          /* a custom op's source hash (0: built-in): ranks compare it, since the
                              * op's value is only this process's name for it */
  uint32_t checks;           /* this call's integrity settings, which every rank must share (ranks
                              * compare it with the call): SC_V_* bits, SC_V_REPAIR; 0 when internal */
  uint64_t seq;              /* the call's number on its communicator (1, 2, ...), given by the core
                              * to every call that reaches a backend, internal ones too: every rank
                              * makes the same calls, so the same call has the same number everywhere */
  const char *file;          /* the plan's first source file, for messages ("?" when it has none) */
  sc_exact ex;               /* exact mode (exact.h): off, an exact call (acc i64, op SUM, its grid
                              * set by sc_call_run before the backend sees it), or its grid exchange */
} sc_call;

/* The first corrupted transfer a rank received in a call (checksum mode). */
typedef struct sc_corrupt {
  uint32_t found;            /* 0: none; 1: a CRC32C mismatch; 2: the cuda kernels' 64-bit sum */
  uint32_t step, chunk, src, dst, line;
  uint32_t got, want;        /* CRC32C of what arrived, and the sender's */
} sc_corrupt;

/* A sliced digest (the CPU backends under SCHEDC_VERIFY=digest): the result's K elements of esz
 * bytes cut as their executor cuts them (C chunks, each in slices of se elements, at most nsl per
 * chunk), each slice's CRC32C folded in order by sc_dslice_step from sc_dslice_init. Any single
 * flipped bit changes it (the CRC changes, and every step is a bijection of the running value),
 * and it is the same however the slices were hashed: by the executor as it wrote a slice into
 * the receive buffer, by the copy out, or by a read afterwards. */
typedef struct sc_dslice { size_t K, se, nsl, esz; uint32_t C; } sc_dslice;
static inline uint64_t sc_dslice_init(size_t K) { return 0x5343444947455354ull ^ (uint64_t)K; }
static inline uint64_t sc_dslice_step(uint64_t h, uint32_t crc) {
  h = (h ^ crc) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

/* What one call found on this rank, for the integrity checks after it. The caller owns it and
 * zeroes it; the backend fills it. */
typedef struct sc_result {
  sc_corrupt bad;            /* checksum mode: the first corrupted transfer this rank received */
  int have_digest;           /* the result's digest taken while it was copied out: 1 sc_verify_digest's,
                              * 2 sliced (dsl); 0 none (the core takes sc_verify_digest's) */
  sc_dslice dsl;             /* have_digest 2: how the result was sliced */
  uint64_t digest;
  uint64_t exact_out;        /* exact mode under the identity check (SC_V_EXACT): the wrapping sum of
                              * the integers of this rank's result part before they were rounded out
                              * (dispatch.c checks it against every rank's inputs' sum, which the
                              * conversion in reports through sc_call.ex.tally) */
} sc_result;

/* Does this call check transfers / compare result digests / take injected faults? */
static inline int sc_call_checks(const sc_call *k) { return (k->checks & SC_V_CHECKSUM) != 0; }
static inline int sc_call_repairs(const sc_call *k) { return (k->checks & SC_V_REPAIR) != 0; }
static inline int sc_call_injects(const sc_call *k) { return !(k->flags & SC_CALL_NOINJECT); }
/* Does a rank SCHEDC_INJECT names for a kill die when this call fails before its kill step? */
static inline int sc_call_fail_dies(const sc_call *k) { return sc_call_injects(k) || (k->flags & SC_CALL_FAILDIES); }

/* Does the collective combine values (allreduce, reduce_scatter, reduce), or only move them? */
static inline int sc_reduces(int coll) { return coll != SCHEDC_ALLGATHER && coll != SCHEDC_BROADCAST; }

/* allreduce, allgather and broadcast leave the same bits on every rank (digest-checkable); the
 * elements of that result: count, or count per rank for allgather. */
static inline int sc_same_bits(int coll) { return coll != SCHEDC_REDUCE_SCATTER && coll != SCHEDC_REDUCE; }
static inline size_t sc_same_bits_elems(int coll, size_t count, int nranks) {
  return coll == SCHEDC_ALLGATHER ? count * (size_t)nranks : count;
}
static inline int sc_call_digests(const sc_call *k) { return sc_same_bits(k->coll) && (k->checks & SC_V_DIGEST); }

/* The part [*lo, *lo + *len) of the K-element working buffer that is `rank`'s result: its block
 * for reduce_scatter (count elements each), nothing on a reduce's other ranks, else all of it. */
static inline void sc_result_part(int coll, int rank, int root, size_t count, size_t K, size_t *lo, size_t *len) {
  *lo = coll == SCHEDC_REDUCE_SCATTER ? (size_t)rank * count : 0;
  *len = coll == SCHEDC_REDUCE_SCATTER ? count : coll == SCHEDC_REDUCE && rank != root ? 0 : K;
}

/* Chunk c of K elements split into C chunks: [lo, hi). */
static inline void sc_chunk_range(size_t K, uint32_t C, uint32_t c, size_t *lo, size_t *hi) {
  *lo = (size_t)((unsigned __int128)K * c / C);
  *hi = (size_t)((unsigned __int128)K * (c + 1) / C);
}

#endif
