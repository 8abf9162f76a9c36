/*
 * exact_simd.c — exact mode's conversions eight lanes at a time with AVX-512 (exact.c calls them
 * where the CPU has it, sc_cpu_avx512). Each gives the bits of exact.c's scalar loop: a float is
 * exact in double and so is its product with 2^-g; a double rounds to an int64 to nearest, ties to
 * even, with the rounding named in the instruction (not the thread's mode); an integer sum folded
 * to odd below bit 11 is exact in double, and its conversion to float the one rounding.
 */
#include <immintrin.h>
#include <math.h>

#include "exact_simd.h"

#define SC_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,f16c")))
#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* The eight lanes' wrapping sum (the identity check's arithmetic is mod 2^64: unsigned, where
 * _mm512_reduce_add_epi64 adds signed in C and overflows, undefined). */
SC_AVX512 static inline uint64_t hsum8(__m512i v) {
  uint64_t l[8], s = 0;
  _mm512_storeu_si512((void *)l, v);
  for (int i = 0; i < 8; i++) s += l[i];
  return s;
}

/* Eight elements of dt widened to f32, exactly (f16 by F16C, bf16 by a shift). */
SC_AVX512 static inline __m256 load8(schedc_dtype dt, const void *src, size_t i) {
  if (dt == SCHEDC_F32) return _mm256_loadu_ps((const float *)src + i);
  __m128i h = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)src + i));
  if (dt == SCHEDC_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

SC_AVX512 size_t sc_exact_in_avx512(schedc_dtype dt, int64_t *dst, const void *src, size_t n, int g, uint64_t *sum) {
  const __m512d scale = _mm512_set1_pd(ldexp(1.0, -g)); /* -g in [-67, 210]: a double */
  __m512i acc = _mm512_setzero_si512(); /* the identity check's sum: an add per vector, in a register */
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m512d v = _mm512_mul_pd(_mm512_cvtps_pd(load8(dt, src, i)), scale); /* exact */
    __m512i q = _mm512_cvt_roundpd_epi64(v, RNE);
    acc = _mm512_add_epi64(acc, q);
    _mm512_storeu_si512((void *)(dst + i), q);
  }
  if (sum) *sum += hsum8(acc);
  return i;
}

SC_AVX512 size_t sc_exact_out_f32_avx512(float *y, const int64_t *src, size_t n, double scale, uint64_t *sum) {
  const __m512i low = _mm512_set1_epi64(0x7ff), bit11 = _mm512_set1_epi64(0x800), lim = _mm512_set1_epi64(1ll << 53);
  const __m512d sc = _mm512_set1_pd(scale), zero = _mm512_setzero_pd();
  __m512i acc = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m512i s = _mm512_loadu_si512((const void *)(src + i));
    acc = _mm512_add_epi64(acc, s);
    __mmask8 neg = _mm512_cmplt_epi64_mask(s, _mm512_setzero_si512());
    __m512i a = _mm512_abs_epi64(s); /* |s| < 2^63 */
    /* at or above 2^53: bits 0..10 folded into bit 11 (to odd), so the double holds it exactly */
    __mmask8 big = _mm512_cmpge_epi64_mask(a, lim), sticky = _mm512_test_epi64_mask(a, low);
    __m512i odd = _mm512_mask_or_epi64(_mm512_andnot_si512(low, a), sticky, _mm512_andnot_si512(low, a), bit11);
    __m512i t = _mm512_mask_mov_epi64(a, big, odd);
    __m512d d = _mm512_mul_pd(_mm512_cvt_roundepi64_pd(t, RNE), sc); /* both exact */
    d = _mm512_mask_sub_pd(d, neg, zero, d);
    _mm256_storeu_ps(y + i, _mm512_cvt_roundpd_ps(d, RNE));
  }
  if (sum) *sum += hsum8(acc);
  return i;
}

SC_AVX512 size_t sc_exact_amax_avx512(schedc_dtype dt, const void *x, size_t n, uint32_t *amax) {
  size_t i = 0;
  if (dt == SCHEDC_F32) {
    const __m512i mag = _mm512_set1_epi32(0x7fffffff);
    __m512i m = _mm512_setzero_si512();
    for (; i + 16 <= n; i += 16)
      m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_loadu_si512((const uint32_t *)x + i), mag));
    *amax = _mm512_reduce_max_epu32(m);
  } else {
    const __m512i mag = _mm512_set1_epi16(0x7fff);
    __m512i m = _mm512_setzero_si512();
    for (; i + 32 <= n; i += 32)
      m = _mm512_max_epu16(m, _mm512_and_si512(_mm512_loadu_si512((const uint16_t *)x + i), mag));
    __m512i w = _mm512_max_epu32(_mm512_and_si512(m, _mm512_set1_epi32(0xffff)), _mm512_srli_epi32(m, 16));
    *amax = _mm512_reduce_max_epu32(w);
  }
  return i;
}
