/*
 * exact_simd.h — exact mode's AVX-512 loops (exact_simd.c), for exact.c only, where
 * sc_cpu_avx512(). Each handles a prefix of whole vectors and returns how many elements it did;
 * exact.c's loops do the rest with the same bits.
 */
#ifndef SC_EXACT_SIMD_H
#define SC_EXACT_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"

/* n finite f32/f16/bf16 onto grid g: dst[i] = round(x[i] * 2^-g), to nearest, ties to even; with
 * sum, the wrapping sum of what it wrote added to *sum. */
size_t sc_exact_in_avx512(schedc_dtype dt, int64_t *dst, const void *src, size_t n, int g, uint64_t *sum);
/* n integer sums to f32, each times `scale` (2^g), rounded once; with sum, theirs added to *sum. */
size_t sc_exact_out_f32_avx512(float *y, const int64_t *src, size_t n, double scale, uint64_t *sum);
/* The largest magnitude's bits (sign cleared) over the prefix it did, into *amax. */
size_t sc_exact_amax_avx512(schedc_dtype dt, const void *x, size_t n, uint32_t *amax);

#endif
