/*
 * exact_avx2.c — exact mode's conversions four 64-bit lanes at a time with AVX2 and F16C, for
 * every format (exact.c calls them on the AVX2 path, and on the AVX-512 path where exact_simd.c
 * has no wider loop): onto the grid, back out rounded once (sum, and avg's exact quotient), and
 * the exponent pass. Integer steps where the rounding is decided, doubles only where they are exact
 * or only estimate; each gives exact.c's scalar bits (tests/unit/test_exact_simd.c checks every
 * one against references of its own) over a prefix of whole vectors, exact.c's loops the rest.
 */
#include <immintrin.h>

#include "exact_simd.h"

#define SC_AVX2 __attribute__((target("avx2,f16c")))
#define SC_AVX2_INLINE __attribute__((target("avx2,f16c"), always_inline)) static inline

/* The four lanes' wrapping sum (the identity check's, mod 2^64). */
SC_AVX2_INLINE uint64_t hsum4(__m256i v) {
  uint64_t l[4];
  _mm256_storeu_si256((__m256i *)(void *)l, v);
  return l[0] + l[1] + l[2] + l[3];
}

/* 2^k as a double, per lane (k within double's normal exponents). */
SC_AVX2_INLINE __m256d pow2(__m256i k) {
  return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(k, _mm256_set1_epi64x(1023)), 52));
}

/* Unsigned 64-bit lanes below 2^63 as doubles: the two 32-bit halves exact (2^52's bits), their
 * sum the one rounding (exact where the value has at most 53 significant bits). */
SC_AVX2_INLINE __m256d u64_to_pd(__m256i t) {
  const __m256i magic = _mm256_set1_epi64x(0x4330000000000000ll), lo32 = _mm256_set1_epi64x(0xffffffffll);
  const __m256d m52 = _mm256_set1_pd(0x1p52), p32 = _mm256_set1_pd(0x1p32);
  __m256d hi = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(t, 32), magic)), m52);
  __m256d lo = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(t, lo32), magic)), m52);
  return _mm256_add_pd(_mm256_mul_pd(hi, p32), lo);
}

/* The four 64-bit lanes' low 32 bits, in order, as a 128-bit vector. */
SC_AVX2_INLINE __m128i low32(__m256i v) {
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}

/* ---- in: onto the grid ---- */

/* Four elements of dt as their f32 bits in 64-bit lanes: exact (f16 by F16C, bf16 by a shift;
 * only finite values reach here). */
SC_AVX2_INLINE __m256i load4(schedc_dtype dt, const void *src, size_t i) {
  __m128i w;
  if (dt == SCHEDC_F32) {
    w = _mm_loadu_si128((const __m128i *)(const void *)((const uint32_t *)src + i));
  } else {
    __m128i h = _mm_loadl_epi64((const __m128i *)(const void *)((const uint16_t *)src + i));
    w = dt == SCHEDC_F16 ? _mm_castps_si128(_mm_cvtph_ps(h)) : _mm_slli_epi32(_mm_cvtepu16_epi32(h), 16);
  }
  return _mm256_cvtepu32_epi64(w);
}

/* exact.c's in_f32 four lanes at a time: x = ±m 2^k (k its last bit's exponent); sh = k - g >= 0:
 * m << sh (< 2^62); else m shifted right by s = g - k, to nearest, ties to even (adding half - 1,
 * plus the bit that becomes the last); s capped at 40, where m < 2^24 gives 0 as any larger s does.
 * With sum, the q's wrapping sum added to *sum. dt and sum constant where it is inlined. */
SC_AVX2_INLINE size_t in_body(schedc_dtype dt, int64_t *dst, const void *src, size_t n, int g, uint64_t *sum) {
  __m256i acc = _mm256_setzero_si256();
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1), s40 = _mm256_set1_epi64x(40);
  const __m256i absm = _mm256_set1_epi64x(0x7fffffff), fracm = _mm256_set1_epi64x(0x7fffff);
  const __m256i hid = _mm256_set1_epi64x(0x800000), bias = _mm256_set1_epi64x(150 + (int64_t)g);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i x = load4(dt, src, i);
    __m256i a = _mm256_and_si256(x, absm), ef = _mm256_srli_epi64(a, 23);
    __m256i sub = _mm256_cmpeq_epi64(ef, zero); /* subnormal or zero: no hidden bit, exponent 1 */
    __m256i m = _mm256_or_si256(_mm256_and_si256(a, fracm), _mm256_andnot_si256(sub, hid));
    __m256i sh = _mm256_sub_epi64(_mm256_or_si256(ef, _mm256_and_si256(sub, one)), bias);
    __m256i pos = _mm256_cmpgt_epi64(sh, _mm256_set1_epi64x(-1)); /* sh >= 0 */
    __m256i up = _mm256_sllv_epi64(m, _mm256_and_si256(sh, pos));
    __m256i s = _mm256_andnot_si256(pos, _mm256_sub_epi64(zero, sh));
    s = _mm256_blendv_epi8(s, s40, _mm256_cmpgt_epi64(s, s40));
    __m256i spos = _mm256_and_si256(_mm256_cmpgt_epi64(s, zero), one);
    __m256i half = _mm256_srli_epi64(_mm256_sllv_epi64(one, s), 1);
    __m256i odd = _mm256_and_si256(_mm256_srlv_epi64(m, s), spos);
    __m256i dn = _mm256_srlv_epi64(_mm256_add_epi64(_mm256_sub_epi64(_mm256_add_epi64(m, half), spos), odd), s);
    __m256i q = _mm256_blendv_epi8(dn, up, pos);
    __m256i neg = _mm256_cmpeq_epi64(_mm256_srli_epi64(x, 31), one);
    q = _mm256_sub_epi64(_mm256_xor_si256(q, neg), neg);
    if (sum) acc = _mm256_add_epi64(acc, q);
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), q);
  }
  if (sum) *sum += hsum4(acc);
  return i;
}

SC_AVX2 size_t sc_exact_in_avx2(schedc_dtype dt, int64_t *dst, const void *src, size_t n, int g, uint64_t *sum) {
  switch (dt) { /* each format and both kinds a loop of its own */
  case SCHEDC_F16: return sum ? in_body(SCHEDC_F16, dst, src, n, g, sum) : in_body(SCHEDC_F16, dst, src, n, g, NULL);
  case SCHEDC_BF16: return sum ? in_body(SCHEDC_BF16, dst, src, n, g, sum) : in_body(SCHEDC_BF16, dst, src, n, g, NULL);
  default: return sum ? in_body(SCHEDC_F32, dst, src, n, g, sum) : in_body(SCHEDC_F32, dst, src, n, g, NULL);
  }
}

/* ---- out: rounded once ---- */

/* A magnitude below 2^63 as a double that rounds as it does: exact below 2^53; at or above, bits
 * 0..10 folded into bit 11 (rounded to odd there: at most 52 significant bits, which the double
 * holds exactly; rounding to odd two or more bits below a target precision changes no rounding to
 * nearest even there, nor where it overflows). */
SC_AVX2_INLINE __m256d mag_pd(__m256i a) {
  const __m256i low = _mm256_set1_epi64x(0x7ff), bit11 = _mm256_set1_epi64x(0x800), lim = _mm256_set1_epi64x(1ll << 53);
  __m256i sticky = _mm256_andnot_si256(_mm256_cmpeq_epi64(_mm256_and_si256(a, low), _mm256_setzero_si256()), bit11);
  __m256i odd = _mm256_or_si256(_mm256_andnot_si256(low, a), sticky);
  return u64_to_pd(_mm256_blendv_epi8(odd, a, _mm256_cmpgt_epi64(lim, a)));
}

/* avg: a / n for a magnitude a < 2^63 and 1 <= n < 2^31 (nv: n in every lane, rn: 1/n rounded), as
 * a double rounded to odd at 30 or more significant bits (so it rounds to any format as the exact
 * quotient does; a = 0 gives 0). The integer quotient is exact: a is shifted to A in [2^60, 2^62)
 * (the bits a shift right drops are kept as sticky), and T = floor(A / (n 2^j)), for the j that
 * gives T 30 bits, is estimated in doubles (A rounded, times 1/n rounded: relative error below
 * 2^-51, so the estimate is T or one off), then settled with the exact remainder r = A - T n 2^j
 * (products below 2^62). The result is (2T + (r or the dropped bits nonzero)) 2^(j - 1 - z),
 * exact in a double. (exact.c's avg_bits does it by long division, one lane at a time.) */
SC_AVX2_INLINE __m256d avg_pd(__m256i a, __m256i nv, __m256d rn) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1);
  __m256i isz = _mm256_cmpeq_epi64(a, zero);
  __m256d ad = u64_to_pd(a); /* a rounded: its exponent is floor(log2 a) or one more */
  __m256i z = _mm256_sub_epi64(_mm256_set1_epi64x(1084), _mm256_srli_epi64(_mm256_castpd_si256(ad), 52));
  z = _mm256_andnot_si256(isz, z); /* 61 - that exponent, in [-2, 61]; 0 for a = 0 (no overflow below) */
  __m256i zp = _mm256_andnot_si256(_mm256_cmpgt_epi64(zero, z), z), zn = _mm256_sub_epi64(zp, z);
  __m256i A = _mm256_srlv_epi64(_mm256_sllv_epi64(a, zp), zn);
  __m256i dropped = _mm256_and_si256(a, _mm256_sub_epi64(_mm256_sllv_epi64(one, zn), one));
  __m256d q = _mm256_mul_pd(_mm256_mul_pd(ad, pow2(z)), rn); /* A / n, estimated: >= 2^29 */
  __m256i j = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(q), 52), _mm256_set1_epi64x(1023 + 29));
  j = _mm256_andnot_si256(_mm256_or_si256(_mm256_cmpgt_epi64(zero, j), isz), j); /* >= 0 */
  __m256d tq = _mm256_mul_pd(q, pow2(_mm256_sub_epi64(zero, j))); /* below 2^30 + 1 */
  __m256i T = _mm256_cvtepu32_epi64(_mm256_cvttpd_epi32(_mm256_andnot_pd(_mm256_castsi256_pd(isz), tq)));
  __m256i Nj = _mm256_sllv_epi64(nv, j); /* n 2^j: about A / T, below 2^34 */
  __m256i r = _mm256_sub_epi64(A, _mm256_sllv_epi64(_mm256_mul_epu32(T, nv), j));
  __m256i lt = _mm256_cmpgt_epi64(zero, r); /* T one too large */
  T = _mm256_add_epi64(T, lt), r = _mm256_add_epi64(r, _mm256_and_si256(lt, Nj));
  __m256i ge = _mm256_xor_si256(_mm256_cmpgt_epi64(Nj, r), _mm256_set1_epi64x(-1)); /* one too small */
  T = _mm256_sub_epi64(T, ge), r = _mm256_sub_epi64(r, _mm256_and_si256(ge, Nj));
  __m256i sticky = _mm256_andnot_si256(_mm256_cmpeq_epi64(_mm256_or_si256(r, dropped), zero), one);
  __m256d rep = _mm256_mul_pd(u64_to_pd(_mm256_add_epi64(_mm256_add_epi64(T, T), sticky)),
                              pow2(_mm256_sub_epi64(_mm256_sub_epi64(j, one), z)));
  return _mm256_andnot_pd(_mm256_castsi256_pd(isz), rep);
}

/* A double x >= 0 that rounds as the exact value does (exact, or rounded to odd at 26 or more
 * significant bits), rounded to odd at f32's last bit (a normal's 24th significant bit, else
 * 2^-149: the dropped bits' OR in the last bit), as f32 bits in 64-bit lanes; 2^128 and above: the
 * infinity. Rounding that to nearest even at f16's or bf16's precision (13 or more bits above) is
 * rounding x's exact value once. In integers: no dependence on the thread's rounding mode or
 * flush-to-zero. The general case, for vectors with a lane outside f32's normals (f32_odd below). */
SC_AVX2_INLINE __m256i f32_odd_any(__m256i b) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1);
  __m256i E = _mm256_srli_epi64(b, 52); /* biased exponent; 0: x = 0 */
  __m256i mant = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi64x((1ll << 52) - 1)),
                                 _mm256_andnot_si256(_mm256_cmpeq_epi64(E, zero), _mm256_set1_epi64x(1ll << 52)));
  /* bits dropped: 29 for f32's normals, more below them (to 2^-149's units; a count of 64 or
   * more drops all of mant: the smallest subnormal, odd) */
  const __m256i s29 = _mm256_set1_epi64x(29);
  __m256i sh = _mm256_sub_epi64(_mm256_set1_epi64x(926), E);
  sh = _mm256_blendv_epi8(sh, s29, _mm256_cmpgt_epi64(s29, sh));
  __m256i kept = _mm256_srlv_epi64(mant, sh);
  __m256i lost = _mm256_and_si256(mant, _mm256_sub_epi64(_mm256_sllv_epi64(one, sh), one));
  __m256i ex = _mm256_sub_epi64(E, _mm256_set1_epi64x(897)); /* exponent field - 1 for normals */
  ex = _mm256_andnot_si256(_mm256_cmpgt_epi64(zero, ex), ex);
  __m256i f = _mm256_add_epi64(_mm256_slli_epi64(ex, 23), kept); /* the hidden bit adds the 1 */
  f = _mm256_or_si256(f, _mm256_andnot_si256(_mm256_cmpeq_epi64(lost, zero), one));
  return _mm256_blendv_epi8(f, _mm256_set1_epi64x(0x7f800000), _mm256_cmpgt_epi64(E, _mm256_set1_epi64x(1150)));
}
/* The same; when every lane is 0 or an f32 normal (2^-126 <= x < 2^128: the common case) by a
 * fixed shift of the double's bits: its exponent rebiased, 23 fraction bits kept, 29 ORed into the
 * last (a zero lane masked to 0). */
SC_AVX2_INLINE __m256i f32_odd(__m256d x) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i b = _mm256_castpd_si256(x), E = _mm256_srli_epi64(b, 52), isz = _mm256_cmpeq_epi64(E, zero);
  __m256i out = _mm256_or_si256(_mm256_andnot_si256(isz, _mm256_cmpgt_epi64(_mm256_set1_epi64x(897), E)),
                                _mm256_cmpgt_epi64(E, _mm256_set1_epi64x(1150)));
  if (!_mm256_testz_si256(out, out)) return f32_odd_any(b);
  __m256i f = _mm256_sub_epi64(_mm256_srli_epi64(b, 29), _mm256_set1_epi64x(896ll << 23));
  __m256i lost = _mm256_and_si256(b, _mm256_set1_epi64x((1 << 29) - 1));
  f = _mm256_or_si256(f, _mm256_andnot_si256(_mm256_cmpeq_epi64(lost, zero), _mm256_set1_epi64x(1)));
  return _mm256_andnot_si256(isz, f);
}

/* Four results rounded once, stored (dt and avg constant where it is inlined). The sums' sign
 * apart, |s| (below 2^63: the headroom) becomes a double that rounds as it does (mag_pd), or avg's
 * quotient (avg_pd); times 2^g (exact); then f32: one conversion to nearest even (vcvtpd2ps); f16,
 * bf16: rounded to odd at f32's last bit, then to nearest even (F16C; bf16's integer rule). */
SC_AVX2_INLINE size_t out_body(schedc_dtype dt, int avg, void *dst, const int64_t *src, size_t n, int g, int nterms,
                               uint64_t *sum) {
  __m256i acc = _mm256_setzero_si256();
  const __m256i zero = _mm256_setzero_si256(), nv = _mm256_set1_epi64x(nterms);
  const __m256i signb = _mm256_set1_epi64x(INT64_MIN), sign32 = _mm256_set1_epi64x(0x80000000ll);
  const __m256d rn = _mm256_set1_pd(1.0 / nterms); /* rounded: avg_pd's estimate allows it */
  const __m256d sc = _mm256_castsi256_pd(_mm256_set1_epi64x((int64_t)(g + 1023) << 52)); /* 2^g */
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i s = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
    if (sum) acc = _mm256_add_epi64(acc, s);
    __m256i neg = _mm256_cmpgt_epi64(zero, s);
    __m256i a = _mm256_sub_epi64(_mm256_xor_si256(s, neg), neg);
    __m256d d = _mm256_mul_pd(avg ? avg_pd(a, nv, rn) : mag_pd(a), sc);
    if (dt == SCHEDC_F32) { /* the one rounding: vcvtpd2ps, to nearest even (subnormals kept) */
      d = _mm256_or_pd(d, _mm256_castsi256_pd(_mm256_and_si256(neg, signb)));
      _mm_storeu_ps((float *)dst + i, _mm256_cvtpd_ps(d));
      continue;
    }
    __m128i f = low32(_mm256_or_si256(f32_odd(d), _mm256_and_si256(neg, sign32))); /* signed f32 bits */
    __m128i h;
    if (dt == SCHEDC_F16) {
      h = _mm_cvtps_ph(_mm_castsi128_ps(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else { /* to nearest even at bit 16: the carry moves the exponent, and reaches the infinity */
      __m128i r = _mm_add_epi32(_mm_add_epi32(f, _mm_set1_epi32(0x7fff)), _mm_and_si128(_mm_srli_epi32(f, 16), _mm_set1_epi32(1)));
      r = _mm_srli_epi32(r, 16);
      h = _mm_packus_epi32(r, r);
    }
    _mm_storel_epi64((__m128i *)(void *)((uint16_t *)dst + i), h);
  }
  if (sum) *sum += hsum4(acc);
  return i;
}

/* Every (format, op, summed) a loop of its own. */
#define OUT_CASES(DT)                                                                                      \
  if (avg) return sum ? out_body(DT, 1, dst, src, n, g, nterms, sum) : out_body(DT, 1, dst, src, n, g, nterms, NULL); \
  return sum ? out_body(DT, 0, dst, src, n, g, nterms, sum) : out_body(DT, 0, dst, src, n, g, nterms, NULL)
SC_AVX2 size_t sc_exact_out_avx2(schedc_dtype dt, int avg, int nterms, void *dst, const int64_t *src, size_t n, int g,
                                 uint64_t *sum) {
  if (dt == SCHEDC_F16) { OUT_CASES(SCHEDC_F16); }
  if (dt == SCHEDC_BF16) { OUT_CASES(SCHEDC_BF16); }
  OUT_CASES(SCHEDC_F32);
}

/* ---- the exponent pass ---- */

SC_AVX2 size_t sc_exact_amax_avx2(schedc_dtype dt, const void *x, size_t n, uint32_t *amax) {
  size_t i = 0;
  uint32_t l[8], m = 0;
  if (dt == SCHEDC_F32) {
    const __m256i mag = _mm256_set1_epi32(0x7fffffff);
    __m256i v = _mm256_setzero_si256();
    for (; i + 8 <= n; i += 8)
      v = _mm256_max_epu32(v, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)((const uint32_t *)x + i)), mag));
    _mm256_storeu_si256((__m256i *)(void *)l, v);
  } else {
    const __m256i mag = _mm256_set1_epi16(0x7fff);
    __m256i v = _mm256_setzero_si256();
    for (; i + 16 <= n; i += 16)
      v = _mm256_max_epu16(v, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)x + i)), mag));
    v = _mm256_max_epu32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_srli_epi32(v, 16));
    _mm256_storeu_si256((__m256i *)(void *)l, v);
  }
  for (int k = 0; k < 8; k++) m = l[k] > m ? l[k] : m;
  *amax = m;
  return i;
}
