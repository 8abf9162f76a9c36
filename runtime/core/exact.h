/*
 * exact.h — exact mode (SCHEDC_SUM_EXACT, SCHEDC_AVG_EXACT; docs/determinism.md "Exact mode"):
 * an f32/f16/bf16 sum carried as 64-bit integers on one fixed-point grid shared by every rank, so
 * that the sum is associative and every plan, rank count and backend gives the same bits. The grid
 * comes from an order-free max exchange (dispatch.c runs it before the call, from sc_exact_stats'
 * words; sc_exact_grid reads the result); the widening into the grid and the one rounding out are
 * here, used by workbuf.c.
 */
#ifndef SC_EXACT_H
#define SC_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"


/* sc_exact.mode */
enum { SC_EXACT_OFF = 0, SC_EXACT_CALL = 1, SC_EXACT_GRID = 2 };
/* sc_exact.special: every result element is this value (from the exchange's flags) */
enum { SC_EXACT_FINITE = 0, SC_EXACT_NAN = 1, SC_EXACT_PINF = 2, SC_EXACT_NINF = 3 };

/* The identity check's tally of this rank's inputs (dispatch.c owns it, on its stack, for one
 * call): the wrapping sum of the integers the conversion onto the grid wrote, and whether the
 * conversion ran. */
typedef struct sc_exact_tally { uint64_t in; int done; } sc_exact_tally;

/* An exact call's grid, or its grid exchange's tag. Plain words (part of sc_call). */
typedef struct sc_exact {
  int mode;                  /* SC_EXACT_*: CALL: this call sums integers on the grid (sc_call.acc is
                              * i64, sc_call.op SUM); GRID: this is such a call's max exchange */
  int coll, dtype, op;       /* the call as the caller made it (op: SCHEDC_SUM_EXACT or AVG_EXACT):
                              * what the call agreement compares, for both (agree.c) */
  int ready;                 /* CALL: the grid below is set (sc_exact_prepare ran) */
  int special;               /* SC_EXACT_FINITE, or the value of every result element */
  int g;                     /* the grid: integer q stands for q * 2^g */
  int nterms;                /* summands (ranks x leaves): the headroom is ceil(log2 nterms) bits;
                              * avg divides by it */
  int nleaves;               /* CALL: leaves per rank (0 or 1: the send buffer is one input; m: m
                              * inputs of K elements each, back to back, each rounded onto the
                              * grid on its own and summed: schedc_accum_allreduce) */
  sc_exact_tally *tally;     /* CALL under the identity check (SC_V_EXACT): where the conversion of
                              * this rank's inputs into its working buffer (workbuf.c) stores their
                              * integers' sum (sc_exact_in_summed), set once per run of the inputs in
                              * (a rerun stores it again); NULL: no check */
  int leaf0;                 /* CALL with nleaves >= 1: this rank's first leaf; the ranks' blocks
                              * [leaf0, leaf0 + nleaves) must tile 0..L-1 (any sizes), and nterms
                              * is L (dispatch.c) */
  int wire;                  /* 0: exact mode's i64; SCHEDC_WIRE_Q8 or _Q16: a quantized call (quant.h), whose
                              * conversions the ones below hand to quant.c */
} sc_exact;

/* Is op an exact op, and the plain op it computes (SUM or AVG)? */
static inline int sc_exact_op(int op) { return op == SCHEDC_SUM_EXACT || op == SCHEDC_AVG_EXACT; }

/* The words a rank contributes to the max exchange for its n input elements of dtype:
 * w[0] the largest exponent floor(log2|x|) of a finite nonzero input (SC_EXACT_NONE if none),
 * w[1], w[2], w[3]: 1 if some input is NaN, +Inf, -Inf; w[4], w[5]: its leaves and their negation
 * (set by the caller: ranks must hold as many). */
#define SC_EXACT_NONE (-100000)
#define SC_EXACT_WORDS 6
void sc_exact_stats(schedc_dtype dt, const void *x, size_t n, int64_t w[SC_EXACT_WORDS]);
/* The grid from the exchanged maxima, for nterms summands: g = E - 61 + ceil(log2 nterms). */
void sc_exact_grid(sc_exact *ex, const int64_t w[SC_EXACT_WORDS], int nterms);


/* A quantized call's grid (ex->wire set, quant.h) takes the same entries below: its integers are
 * the wire's (dst/src then point to int8 or int16, not int64). */
/* In: n elements of dtype on the grid as int64 (round to nearest, ties to even; zeros when the
 * result is special); with leaves, the sum of every leaf's (leaf j at src + j * n elements). Out:
 * n sums (int64) to dtype, avg divided by ex->nterms first, rounded once. */
void sc_exact_in(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n);
void sc_exact_out(const sc_exact *ex, schedc_dtype dt, void *dst, const int64_t *src, size_t n);

/* The same conversions, also returning the identity check's sum (mod 2^64) of the integers they
 * wrote (in) or read (out), taken in the same pass: the check then costs no pass of its own. */
uint64_t sc_exact_in_summed(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n);
uint64_t sc_exact_out_summed(const sc_exact *ex, schedc_dtype dt, void *dst, const int64_t *src, size_t n);

/* The wrapping sum of n integers (a pass of its own: the summed conversions above take it in
 * passing). */
uint64_t sc_exact_isum(const int64_t *x, size_t n);

/* The nearest value of dtype dt (f32, f16, bf16) to (-1)^neg (m + sticky·ε) 2^e, ties to even
 * (sticky: the value lies strictly above m·2^e, by less than 2^e), as its bits. Exposed for tests. */
uint32_t sc_exact_round(schedc_dtype dt, int neg, uint64_t m, int e, int sticky);

#endif
