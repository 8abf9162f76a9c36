/*
 * convert.c — f16 and bf16 to and from their accumulation type f32 (kernels.h): the scalar
 * functions, the arrays as loops the vectoriser takes (bf16, built for AVX2 and the baseline), and
 * F16C for f16 on the AVX2 path (the path sc_simd() chose, cpufeat.h), bit for bit the scalar
 * functions, NaNs included. Rounding is to nearest even, once.
 */
#include "kernels.h"
#include "cpufeat.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

static inline float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

float sc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
  if (exp == 0x1f) u = sign | 0x7f800000u | (man << 13);        /* inf / NaN */
  else if (exp) u = sign | ((exp + 112) << 23) | (man << 13);   /* normal */
  else if (!man) u = sign;                                      /* zero */
  else {                                                        /* subnormal: normalise */
    int e = -1;
    do { man <<= 1; e++; } while (!(man & 0x400));
    u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  return f32_of(u);
}

uint16_t sc_f32_to_f16(float f) {
  uint32_t u = bits32(f), sign = (u >> 16) & 0x8000;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00);       /* NaN -> quiet NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);      /* rounds to inf (>= 65520) */
  if (a >= 0x38800000u) {                                      /* normal half */
    uint32_t r = a - 0x38000000u;                              /* rebias exponent 127 -> 15 */
    uint32_t h = r >> 13, rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;       /* round half to even */
    return (uint16_t)(sign | h);
  }
  if (a < 0x33000000u) return (uint16_t)sign;                  /* < half the smallest subnormal */
  /* subnormal half: value = man * 2^-24 */
  uint32_t e = a >> 23, man = (a & 0x7fffff) | 0x800000;
  uint32_t shift = 126 - e;                                    /* 14 + (113 - e) - 1 */
  uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

float sc_bf16_to_f32(uint16_t h) { return f32_of((uint32_t)h << 16); }

uint16_t sc_f32_to_bf16(float f) {
  uint32_t u = bits32(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fff + ((u >> 16) & 1);                                            /* round half to even */
  return (uint16_t)(u >> 16);
}

/* bf16 <-> f32 over arrays: sc_bf16_to_f32 / sc_f32_to_bf16's integer formulas, element by
 * element, on the bits (f32 words as uint32_t: the build has -fno-strict-aliasing), written so the
 * vectoriser takes them (a call per element, as before, ran one element at a time: bf16 64 MiB
 * allreduce at 2 ranks spent most of its time converting; docs/performance.md). */
SC_SIMD_FN(bf16_to_f32_n, (uint32_t *restrict d, const uint16_t *restrict s, size_t n), (d, s, n), {
  for (size_t i = 0; i < n; i++) d[i] = (uint32_t)s[i] << 16;
})
SC_SIMD_FN(f32_to_bf16_n, (uint16_t *restrict d, const uint32_t *restrict s, size_t n), (d, s, n), {
  for (size_t i = 0; i < n; i++) {
    uint32_t u = s[i];
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
    d[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded); /* NaN: quiet, else half to even */
  }
})

#if defined(__x86_64__) && defined(__GNUC__)
/* f16 <-> f32 with F16C, eight at a time, bit for bit sc_f16_to_f32 / sc_f32_to_f16: the hardware
 * converts exactly with round-half-to-even (subnormals and overflow to infinity included); only
 * NaNs differ, so their lanes are set as the scalar code sets them: an f16 NaN or infinity widens
 * to sign | 0x7f800000 | man << 13 (a signalling NaN stays signalling), and an f32 NaN narrows to
 * sign | 0x7e00. The tails go through the scalar functions. */
__attribute__((target("avx2,f16c"))) static void f16_to_f32_f16c(uint32_t *d, const uint16_t *s, size_t n) {
  size_t i = 0;
  const __m256i e_mask = _mm256_set1_epi32(0x7c00), sign_m = _mm256_set1_epi32(0x8000), man_m = _mm256_set1_epi32(0x3ff);
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    __m256i r = _mm256_castps_si256(_mm256_cvtph_ps(h)), w = _mm256_cvtepu16_epi32(h);
    __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(w, e_mask), e_mask); /* exponent all ones */
    __m256i bits = _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, sign_m), 16),
                                                   _mm256_set1_epi32(0x7f800000)),
                                   _mm256_slli_epi32(_mm256_and_si256(w, man_m), 13));
    _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_blendv_epi8(r, bits, special));
  }
  for (; i < n; i++) d[i] = bits32(sc_f16_to_f32(s[i]));
}
__attribute__((target("avx2,f16c"))) static void f32_to_f16_f16c(uint16_t *d, const uint32_t *s, size_t n) {
  size_t i = 0;
  const __m256i abs_m = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
    __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_m), inf); /* |u| > inf: a NaN (signed compare is fine: |u| < 2^31) */
    __m256i q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
                                _mm256_set1_epi32(0x7e00));
    /* narrow the 32-bit NaN replacements to 16 bits, lanes in order */
    __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    __m128i m16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    _mm_storeu_si128((__m128i *)(void *)(d + i), _mm_blendv_epi8(h, q16, m16));
  }
  for (; i < n; i++) d[i] = sc_f32_to_f16(f32_of(s[i]));
}
#endif

/* f16 <-> f32 over arrays: F16C on the AVX2 path, else the scalar functions. */
static void f16_to_f32_n(float *d, const uint16_t *s, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (sc_cpu_avx2()) {
    f16_to_f32_f16c((uint32_t *)(void *)d, s, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++) d[i] = sc_f16_to_f32(s[i]);
}
static void f32_to_f16_n(uint16_t *d, const float *s, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (sc_cpu_avx2()) {
    f32_to_f16_f16c(d, (const uint32_t *)(const void *)s, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++) d[i] = sc_f32_to_f16(s[i]);
}

void sc_to_acc(schedc_dtype from, void *dst, const void *src, size_t len) {
  if (from == SCHEDC_BF16) bf16_to_f32_n(dst, src, len);
  else if (from == SCHEDC_F16) f16_to_f32_n(dst, src, len);
  else if (dst != src && len) {
    memmove(dst, src, len * schedc_dtype_size(from));
  }
}

void sc_from_acc(schedc_dtype to, void *dst, const void *src, size_t len) {
  if (to == SCHEDC_BF16) f32_to_bf16_n(dst, src, len);
  else if (to == SCHEDC_F16) f32_to_f16_n(dst, src, len);
  else if (dst != src && len) {
    memmove(dst, src, len * schedc_dtype_size(to));
  }
}
