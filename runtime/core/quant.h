/*
 * quant.h — quantized sums (SCHEDC_WIRE_Q8, _Q16; docs/compression.md): exact mode's grid made
 * coarse enough that each rank's value is a b-bit integer with b - 1 - ceil(log2 n) bits of
 * magnitude, so that n of them sum in b bits in any order, and the plan moves b-bit integers.
 * An exact call (sc_exact, exact.h) whose `wire` is set: the same max exchange (dispatch.c), these
 * words and grid, these conversions (exact.c's entries hand them here), these integer adds.
 */
#ifndef SC_QUANT_H
#define SC_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "exact.h"
#include "schedc/schedc.h"

/* The working type of a wire (names.h: SC_DT_Q8, SC_DT_Q16). */
int sc_quant_type(int wire);
/* Bits of magnitude a wire leaves for nterms summands: wire - 1 - ceil(log2 nterms) (< 1: too few). */
int sc_quant_mag_bits(int wire, int nterms);
/* Can a call of this collective, op and dtype on `nranks` ranks go on `wire`? SCHEDC_OK, or
 * SCHEDC_EINVAL naming what cannot (cn: the collective's name for the message). The backend's
 * part (its caps) is dispatch.c's. */
schedc_status sc_quant_check(const char *cn, int coll, schedc_op op, schedc_dtype dt, int wire, int nranks);

/* The words a rank contributes to the grid's max exchange (exact.h's SC_EXACT_WORDS, w[4] and w[5]
 * the caller's): w[0] the exponent floor(log2 A) of this rank's largest magnitude A, plus 1 when
 * A would round up to 2^mbits on the grid that exponent gives (SC_EXACT_NONE if every input is
 * zero); w[1] where the first NaN or infinity is ((rank + 1) << 42 | kind << 40 | (2^40 - 1 -
 * element)): the max names the highest such rank and its first element; w[2], w[3] zero. */
void sc_quant_stats(schedc_dtype dt, const void *x, size_t n, int mbits, int rank, int64_t w[SC_EXACT_WORDS]);
/* The same words from what a pass over the input found (the cuda backend's schedc_qstats): the
 * largest magnitude's bits amax, and, when kind is 1 (an infinity) or 2 (NaN), the first such
 * element's index `bad`. */
void sc_quant_words(schedc_dtype dt, uint32_t amax, uint64_t bad, int kind, int mbits, int rank,
                    int64_t w[SC_EXACT_WORDS]);
/* The grid from the exchanged words for nterms summands: g = w[0] + 1 - mbits, so that every
 * rank's |q| <= 2^mbits - 1. SCHEDC_EINVAL (nothing moved yet) when some input is not finite or
 * the bits are too few; cn and the wire for the message. */
schedc_status sc_quant_grid(sc_exact *ex, const int64_t w[SC_EXACT_WORDS], int nterms, const char *cn);

/* In: n elements of dt (ex->nleaves > 1: that many inputs of n elements back to back, each rounded
 * on its own, their integers summed) onto the grid as the wire's integers, q = round(x / 2^g), to
 * nearest, ties to even. Out: n integer sums to dt, times 2^g (avg: divided by ex->nterms), rounded
 * once. Each returns the wrapping sum of the integers it wrote or read (the identity check's). */
uint64_t sc_quant_in(const sc_exact *ex, schedc_dtype dt, void *dst, const void *src, size_t n);
uint64_t sc_quant_out(const sc_exact *ex, schedc_dtype dt, void *dst, const void *src, size_t n);

/* dst[i] = a[i] + s[0][i] + ... + s[n-1][i] in the wire type t (SC_DT_Q8, SC_DT_Q16), wrapping
 * (the headroom means it never has to). kernels.c's sc_reduce_chain hands the wire types here. */
void sc_quant_chain(int t, void *dst, const void *a, const void *const *s, int n, size_t len);

/* Error feedback's residual after a call on grid ex: e[i] = v[i] - q[i] * 2^g, with q[i] what
 * sc_quant_in made of v[i]; exact (the difference is a value of dt: docs/compression.md). */
void sc_quant_residual(const sc_exact *ex, schedc_dtype dt, void *e, const void *v, size_t n);

#endif
