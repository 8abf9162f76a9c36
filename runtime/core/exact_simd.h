/*
 * exact_simd.h — exact mode's vector loops, for exact.c only: AVX2 and F16C (exact_avx2.c: every
 * format, sum and avg), and AVX-512 (exact_simd.c: onto the grid, f32 sums out, the exponent pass),
 * each called on its path (sc_simd(), cpufeat.h). Each handles a prefix of whole vectors and
 * returns how many elements it did; exact.c's scalar loops do the rest with the same bits.
 */
#ifndef SC_EXACT_SIMD_H
#define SC_EXACT_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"

/* n finite f32/f16/bf16 onto grid g: dst[i] = round(x[i] * 2^-g), to nearest, ties to even; with
 * sum, the wrapping sum of what it wrote added to *sum. */
size_t sc_exact_in_avx512(schedc_dtype dt, int64_t *dst, const void *src, size_t n, int g, uint64_t *sum);
size_t sc_exact_in_avx2(schedc_dtype dt, int64_t *dst, const void *src, size_t n, int g, uint64_t *sum);
/* n integer sums to f32, each times `scale` (2^g), rounded once; with sum, theirs added to *sum. */
size_t sc_exact_out_f32_avx512(float *y, const int64_t *src, size_t n, double scale, uint64_t *sum);
/* n integer sums (|s| < 2^63) times 2^g to dt (f32, f16, bf16), rounded once to nearest even
 * (avg: the exact quotient s 2^g / nterms, 1 <= nterms < 2^31); with sum, theirs added to *sum. */
size_t sc_exact_out_avx2(schedc_dtype dt, int avg, int nterms, void *dst, const int64_t *src, size_t n, int g,
                         uint64_t *sum);
/* The largest magnitude's bits (sign cleared) over the prefix it did, into *amax. */
size_t sc_exact_amax_avx512(schedc_dtype dt, const void *x, size_t n, uint32_t *amax);
size_t sc_exact_amax_avx2(schedc_dtype dt, const void *x, size_t n, uint32_t *amax);

#endif
