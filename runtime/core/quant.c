/*
 * quant.c — quantized sums (quant.h; docs/compression.md): the grid's words and the grid, the
 * conversions onto it and back, the wire's integer adds and error feedback's residual. A block of
 * up to QB elements at a time goes through f32 (f16/bf16 widen exactly) and int32 (exact: |q| <
 * 2^15), each step a loop the vectoriser or AVX2 takes; every path gives the same integers.
 */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpufeat.h"
#include "err.h"
#include "exact_simd.h"
#include "kernels.h"
#include "names.h"
#include "quant.h"

#define QB 1024 /* elements per block: its f32 and int32 copies stay in L1 */

int sc_quant_type(int wire) { return wire == SCHEDC_WIRE_Q8 ? SC_DT_Q8 : SC_DT_Q16; }

static int ceil_log2(long long n) {
  int h = 0;
  while ((1ll << h) < n) h++;
  return h;
}

int sc_quant_mag_bits(int wire, int nterms) { return wire - 1 - ceil_log2(nterms); }

schedc_status sc_quant_check(const char *cn, int coll, schedc_op op, schedc_dtype dt, int wire, int nranks) {
  const char *wn = sc_wire_name(wire);
  if (!wn || wire == SCHEDC_WIRE_DEFAULT) return sc_err(SCHEDC_EINVAL, "%s: bad wire format %d (q8 or q16)", cn, wire);
  if (coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST)
    return sc_err(SCHEDC_EINVAL, "%s: wire %s quantizes sums; %s moves data only", cn, wn, cn);
  if (op != SCHEDC_SUM && op != SCHEDC_AVG && op != SCHEDC_SUM_EXACT && op != SCHEDC_AVG_EXACT)
    return sc_err(SCHEDC_EINVAL, "%s: wire %s takes op sum or avg, not %s", cn, wn,
                  schedc_op_name(op) ? schedc_op_name(op) : "a custom operator");
  if (dt != SCHEDC_F32 && dt != SCHEDC_F16 && dt != SCHEDC_BF16)
    return sc_err(SCHEDC_EINVAL, "%s: wire %s takes f32, f16 or bf16 data, not %s", cn, wn, schedc_dtype_name(dt));
  int m = sc_quant_mag_bits(wire, nranks);
  if (m < 1)
    return sc_err(SCHEDC_EINVAL, "%s: wire %s cannot sum %d ranks: %d - 1 - ceil(log2 %d) = %d bits of magnitude "
                  "(at least 1; %s takes at most %d ranks%s)", cn, wn, nranks, wire, nranks, m, wn, 1 << (wire - 2),
                  wire == SCHEDC_WIRE_Q8 ? ": use q16" : "");
  return SCHEDC_OK;
}

/* ---- the grid ---- */

/* The formats' magnitude bits: the infinity's, and a finite magnitude's value. */
static uint32_t inf_bits(schedc_dtype dt) { return dt == SCHEDC_F32 ? 0x7f800000u : dt == SCHEDC_F16 ? 0x7c00u : 0x7f80u; }
static double mag_value(schedc_dtype dt, uint32_t a) {
  if (dt == SCHEDC_F32) {
    float f;
    memcpy(&f, &a, 4);
    return f;
  }
  return dt == SCHEDC_F16 ? sc_f16_to_f32((uint16_t)a) : sc_bf16_to_f32((uint16_t)a);
}

void sc_quant_words(schedc_dtype dt, uint32_t amax, uint64_t bad, int kind, int mbits, int rank,
                    int64_t w[SC_EXACT_WORDS]) {
  w[0] = SC_EXACT_NONE;
  w[1] = w[2] = w[3] = 0;
  if (kind) {
    uint64_t e = bad < ((uint64_t)1 << 40) - 1 ? bad : ((uint64_t)1 << 40) - 2;
    w[1] = (int64_t)(((uint64_t)(rank + 1) << 42) | ((uint64_t)kind << 40) | (((uint64_t)1 << 40) - 1 - e));
    return;
  }
  if (!amax) return;
  double A = mag_value(dt, amax);
  int E = ilogb(A); /* floor(log2 A), subnormals included */
  /* round(A / 2^(E + 1 - m)) reaches 2^m when A >= (2^m - 1/2) 2^(E + 1 - m) (the tie rounds to the
   * even 2^m); then this rank needs the next grid up. Both sides exact in double. */
  w[0] = E + (A >= ldexp(1.0, E + 1) - ldexp(1.0, E - mbits));
}

void sc_quant_stats(schedc_dtype dt, const void *x, size_t n, int mbits, int rank, int64_t w[SC_EXACT_WORDS]) {
  uint32_t amax = 0, inf = inf_bits(dt);
  /* exact mode's exponent pass over whole vectors (exact_simd.h: the same largest magnitude's bits;
   * NaN > Inf > finite, the bits order them) */
  size_t i0 = sc_cpu_avx512() ? sc_exact_amax_avx512(dt, x, n, &amax) : sc_cpu_avx2() ? sc_exact_amax_avx2(dt, x, n, &amax) : 0;
  if (dt == SCHEDC_F32) {
    const uint32_t *p = x;
    for (size_t i = i0; i < n; i++) { uint32_t a = p[i] & 0x7fffffffu; amax = a > amax ? a : amax; }
  } else {
    const uint16_t *p = x;
    for (size_t i = i0; i < n; i++) { uint32_t a = p[i] & 0x7fffu; amax = a > amax ? a : amax; }
  }
  if (amax >= inf) /* the first NaN or infinity, for the message (rare: the call fails) */
    for (size_t i = 0; i < n; i++) {
      uint32_t a = dt == SCHEDC_F32 ? ((const uint32_t *)x)[i] & 0x7fffffffu : ((const uint16_t *)x)[i] & 0x7fffu;
      if (a >= inf) {
        sc_quant_words(dt, amax, i, a > inf ? 2 : 1, mbits, rank, w);
        return;
      }
    }
  sc_quant_words(dt, amax, 0, 0, mbits, rank, w);
}

schedc_status sc_quant_grid(sc_exact *ex, const int64_t w[SC_EXACT_WORDS], int nterms, const char *cn) {
  const char *wn = sc_wire_name(ex->wire);
  if (w[1]) {
    uint64_t v = (uint64_t)w[1];
    int r = (int)(v >> 42) - 1, kind = (int)(v >> 40) & 3;
    unsigned long long e = (unsigned long long)(((uint64_t)1 << 40) - 1 - (v & (((uint64_t)1 << 40) - 1)));
    return sc_err(SCHEDC_EINVAL, "%s: wire %s: sendbuf of rank %d holds %s at element %llu%s (a quantized sum takes "
                  "finite values only); nothing was reduced", cn, wn, r, kind == 2 ? "NaN" : "an infinity", e,
                  ex->nleaves > 1 ? " of its leaves" : "");
  }
  int m = sc_quant_mag_bits(ex->wire, nterms);
  if (m < 1)
    return sc_err(SCHEDC_EINVAL, "%s: wire %s cannot sum %d terms: %d - 1 - ceil(log2 %d) = %d bits of magnitude (at "
                  "least 1)", cn, wn, nterms, ex->wire, nterms, m);
  ex->nterms = nterms;
  ex->special = SC_EXACT_FINITE;
  ex->g = w[0] == SC_EXACT_NONE ? 0 : (int)w[0] + 1 - m;
  ex->ready = 1;
  return SCHEDC_OK;
}

/* ---- in: f32 onto the grid as int32, then narrowed ---- */

/* q[i] = round(x[i] * s) to nearest, ties to even, s = 2^-g a float: the product is exact wherever
 * it reaches 1/2 (a normal number: |x 2^-g| < 2^15, and a power-of-two factor), and below 1/2 it
 * rounds to 0 however it was rounded. Adding and taking away 1.5 * 2^23 rounds |v| < 2^22 to an
 * integer, to nearest even, in the default rounding mode (exact.c's to_grid in f32). Returns the
 * q's sum. */
static int64_t q_scalar(int32_t *q, const float *x, size_t n, float s) {
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    float v = x[i] * s, r = (v + 0x1.8p23f) - 0x1.8p23f;
    q[i] = (int32_t)r;
    sum += q[i];
  }
  return sum;
}
/* The same eight lanes at a time, the rounding named in the instruction. */
__attribute__((target("avx2"))) static int64_t q_avx2(int32_t *q, const float *x, size_t n, float s) {
  const __m256 sv = _mm256_set1_ps(s);
  __m256i acc = _mm256_setzero_si256(); /* per lane at most QB/8 values below 2^15: no overflow */
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i qi = _mm256_cvtps_epi32(v); /* an integer already: exact */
    acc = _mm256_add_epi32(acc, qi);
    _mm256_storeu_si256((__m256i *)(void *)(q + i), qi);
  }
  int32_t l[8];
  _mm256_storeu_si256((__m256i *)(void *)l, acc);
  int64_t sum = (int64_t)l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
  return sum + q_scalar(q + i, x + i, n - i, s);
}
/* A grid whose 2^-g is no float (the largest input below about 2^-127 or above 2^149... g outside
 * [-127, 149]): x * 2^-g in double, exact, rounded the same way (1.5 * 2^52). */
static int64_t q_double(int32_t *q, const float *x, size_t n, int g) {
  double s = ldexp(1.0, -g);
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    double v = (double)x[i] * s, r = (v + 0x1.8p52) - 0x1.8p52;
    q[i] = (int32_t)r;
    sum += q[i];
  }
  return sum;
}
static int64_t to_ints(int32_t *q, const float *x, size_t n, int g) {
  if (g < -127 || g > 149) return q_double(q, x, n, g);
  float s = ldexpf(1.0f, -g);
  return sc_cpu_avx2() ? q_avx2(q, x, n, s) : q_scalar(q, x, n, s);
}

/* int32 (each fits the wire type) to the wire type. */
__attribute__((target("avx2"))) static size_t narrow8_avx2(int8_t *d, const int32_t *q, size_t n) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(q + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(q + i + 8));
    __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(q + i + 16));
    __m256i e = _mm256_loadu_si256((const __m256i *)(const void *)(q + i + 24));
    /* packs work per 128-bit lane: a0-3 b0-3 c0-3 e0-3 | a4-7 b4-7 c4-7 e4-7, put in order by dwords */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, e));
    _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_permutevar8x32_epi32(p, order));
  }
  return i;
}
__attribute__((target("avx2"))) static size_t narrow16_avx2(int16_t *d, const int32_t *q, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(q + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(q + i + 8));
    __m256i p = _mm256_packs_epi32(a, b); /* a0-3 b0-3 | a4-7 b4-7 */
    _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_permute4x64_epi64(p, 0xd8));
  }
  return i;
}
static void narrow(int t, void *dst, const int32_t *q, size_t n) {
  if (t == SC_DT_Q8) {
    int8_t *d = dst;
    size_t i = sc_cpu_avx2() ? narrow8_avx2(d, q, n) : 0;
    for (; i < n; i++) d[i] = (int8_t)q[i];
  } else {
    int16_t *d = dst;
    size_t i = sc_cpu_avx2() ? narrow16_avx2(d, q, n) : 0;
    for (; i < n; i++) d[i] = (int16_t)q[i];
  }
}

/* A block of up to QB elements of dt as f32 (exact): the source itself for f32, else widened into tmp. */
static const float *as_f32(schedc_dtype dt, const void *src, size_t n, float *tmp) {
  if (dt == SCHEDC_F32) return src;
  sc_to_acc(dt, tmp, src, n);
  return tmp;
}

/* f32 straight to the wire in one pass, for the common call (f32, one leaf, 2^-g a float): q_avx2's
 * rounding and narrow8_avx2's / narrow16_avx2's packing on the same registers, with no int32 block
 * between them (that block's store and reload was a third of the conversion's time: docs/performance.md
 * "Compression"). The same integers; *sum gets theirs. Returns the elements done. */
__attribute__((target("avx2"))) static size_t q_wire_avx2(int t, void *dst, const float *x, size_t n, float s,
                                                          int64_t *sum) {
  const __m256 sv = _mm256_set1_ps(s);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i acc = _mm256_setzero_si256(); /* per lane at most QB/8 values below 2^15: no overflow */
  size_t i = 0;
#define QW(k) _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + (k)), sv), \
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
  if (t == SC_DT_Q8) {
    for (; i + 32 <= n; i += 32) {
      __m256i a = QW(0), b = QW(8), c = QW(16), e = QW(24);
      acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, e)));
      __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, e));
      _mm256_storeu_si256((__m256i *)(void *)((int8_t *)dst + i), _mm256_permutevar8x32_epi32(p, order));
    }
  } else {
    for (; i + 16 <= n; i += 16) {
      __m256i a = QW(0), b = QW(8);
      acc = _mm256_add_epi32(acc, _mm256_add_epi32(a, b));
      _mm256_storeu_si256((__m256i *)(void *)((int16_t *)dst + i), _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8));
    }
  }
#undef QW
  int32_t l[8];
  _mm256_storeu_si256((__m256i *)(void *)l, acc);
  *sum += (int64_t)l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
  return i;
}

uint64_t sc_quant_in(const sc_exact *ex, schedc_dtype dt, void *dst, const void *src, size_t n) {
  int t = sc_quant_type(ex->wire), leaves = ex->nleaves > 1 ? ex->nleaves : 1;
  size_t esz = schedc_dtype_size(dt), wsz = sc_dtype_size(t);
  float f[QB];
  int32_t q[QB], acc[QB];
  uint64_t sum = 0;
  int fused = dt == SCHEDC_F32 && leaves == 1 && ex->g >= -127 && ex->g <= 149 && sc_cpu_avx2();
  for (size_t lo = 0; lo < n; lo += QB) {
    size_t len = n - lo < QB ? n - lo : QB;
    if (fused) { /* one pass; the tail through the int32 block */
      int64_t s = 0;
      size_t i = q_wire_avx2(t, (char *)dst + lo * wsz, (const float *)src + lo, len, ldexpf(1.0f, -ex->g), &s);
      s += to_ints(q, (const float *)src + lo + i, len - i, ex->g);
      narrow(t, (char *)dst + (lo + i) * wsz, q, len - i);
      sum += (uint64_t)s;
      continue;
    }
    sum += (uint64_t)to_ints(leaves > 1 ? acc : q, as_f32(dt, (const char *)src + lo * esz, len, f), len, ex->g);
    for (int j = 1; j < leaves; j++) { /* each leaf rounded on its own; the headroom counts every leaf */
      sum += (uint64_t)to_ints(q, as_f32(dt, (const char *)src + ((size_t)j * n + lo) * esz, len, f), len, ex->g);
      for (size_t i = 0; i < len; i++) acc[i] += q[i];
    }
    narrow(t, (char *)dst + lo * wsz, leaves > 1 ? acc : q, len);
  }
  return sum;
}

/* ---- out: the wire's sums to f32 or dt, rounded once ---- */

/* Eight of the wire's integers from element i, sign-extended to int32. */
__attribute__((target("avx2"))) static inline __m256i wire8(int t, const void *src, size_t i) {
  return t == SC_DT_Q8 ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)((const int8_t *)src + i)))
                       : _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)((const int16_t *)src + i)));
}

/* int8/int16 to int32, summed. */
__attribute__((target("avx2"))) static size_t widen_avx2(int t, int32_t *q, const void *src, size_t n, int64_t *sum) {
  __m256i acc = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i v = wire8(t, src, i);
    acc = _mm256_add_epi32(acc, v);
    _mm256_storeu_si256((__m256i *)(void *)(q + i), v);
  }
  int32_t l[8];
  _mm256_storeu_si256((__m256i *)(void *)l, acc);
  *sum += (int64_t)l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
  return i;
}
static int64_t widen(int t, int32_t *q, const void *src, size_t n) {
  int64_t sum = 0;
  size_t i = sc_cpu_avx2() ? widen_avx2(t, q, src, n, &sum) : 0;
  for (; i < n; i++) sum += q[i] = t == SC_DT_Q8 ? ((const int8_t *)src)[i] : ((const int16_t *)src)[i];
  return sum;
}

/* sum: S * 2^g as f32 — one IEEE product of exact operands (S < 2^15), so rounded once, subnormals
 * included, when 2^g is a float (g >= -149); below, through double, exact, then rounded once. */
__attribute__((target("avx2"))) static size_t sums_f32_avx2(float *y, const int32_t *q, size_t n, float s) {
  const __m256 sv = _mm256_set1_ps(s);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) /* the int32 to float conversion is exact (|S| < 2^15): one rounding, the product's */
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(const void *)(q + i))), sv));
  return i;
}
static void sums_f32(float *y, const int32_t *q, size_t n, int g) {
  if (g >= -149) {
    float s = ldexpf(1.0f, g);
    size_t i = sc_cpu_avx2() ? sums_f32_avx2(y, q, n, s) : 0;
    for (; i < n; i++) y[i] = (float)q[i] * s;
  } else {
    double s = ldexp(1.0, g);
    for (size_t i = 0; i < n; i++) y[i] = (float)((double)q[i] * s);
  }
}
/* avg to f32: S / nterms in double, times 2^g (exact), rounded to float once. Correctly rounded:
 * the quotient is a rational with denominator nterms <= 2^14, so unless it is a float's midpoint
 * (then double holds it exactly) it lies at least 2^-39 of itself away from every midpoint, far
 * beyond double's error of 2^-53 (docs/compression.md). */
__attribute__((target("avx2"))) static size_t avgs_f32_avx2(float *y, const int32_t *q, size_t n, double s, double d) {
  const __m256d sv = _mm256_set1_pd(s), dv = _mm256_set1_pd(d);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) { /* the same IEEE double operations, four lanes */
    __m256d v = _mm256_mul_pd(_mm256_div_pd(_mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(const void *)(q + i))), dv), sv);
    _mm_storeu_ps(y + i, _mm256_cvtpd_ps(v));
  }
  return i;
}
static void avgs_f32(float *y, const int32_t *q, size_t n, int g, int nterms) {
  double s = ldexp(1.0, g), d = nterms;
  size_t i = sc_cpu_avx2() ? avgs_f32_avx2(y, q, n, s, d) : 0;
  for (; i < n; i++) y[i] = (float)((double)q[i] / d * s);
}
/* avg for f16/bf16: the quotient as avgs_f32 takes it (on the same side of every float and every
 * midpoint as the exact one, or equal to it), rounded to f32 to odd — toward zero, the last bit set
 * when inexact — so that rounding that float to f16 or bf16 (at least two bits shorter) is the one
 * rounding of the exact quotient; the caller narrows it. */
static void avgs_odd(float *y, const int32_t *q, size_t n, int g, int nterms) {
  double s = ldexp(1.0, g), d = nterms;
  for (size_t i = 0; i < n; i++) {
    double v = (double)q[i] / d * s;
    float t = (float)v;
    if ((double)t != v) {
      uint32_t b;
      memcpy(&b, &t, 4);
      if (fabs((double)t) > fabs(v)) b--; /* rounded away from zero (or to the infinity): one step back */
      b |= 1;
      memcpy(&t, &b, 4);
    }
    y[i] = t;
  }
}

/* The wire's sums straight to f32 in one pass (sum of f32, 2^g a float): widen_avx2's widening and
 * sums_f32_avx2's product on the same registers, no int32 block between. The same floats; *sum gets
 * the integers'. Returns the elements done. */
__attribute__((target("avx2"))) static size_t sums_wire_avx2(int t, float *y, const void *src, size_t n, float s,
                                                             int64_t *sum) {
  const __m256 sv = _mm256_set1_ps(s);
  __m256i acc = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i v = wire8(t, src, i);
    acc = _mm256_add_epi32(acc, v);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(v), sv)); /* exact conversion, one rounding */
  }
  int32_t l[8];
  _mm256_storeu_si256((__m256i *)(void *)l, acc);
  *sum += (int64_t)l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
  return i;
}

uint64_t sc_quant_out(const sc_exact *ex, schedc_dtype dt, void *dst, const void *src, size_t n) {
  int t = sc_quant_type(ex->wire), avg = ex->op == SCHEDC_AVG || ex->op == SCHEDC_AVG_EXACT;
  size_t esz = schedc_dtype_size(dt), wsz = sc_dtype_size(t);
  float f[QB];
  int32_t q[QB];
  uint64_t sum = 0;
  int fused = dt == SCHEDC_F32 && !avg && ex->g >= -149 && sc_cpu_avx2();
  for (size_t lo = 0; lo < n; lo += QB) {
    size_t len = n - lo < QB ? n - lo : QB;
    char *out = (char *)dst + lo * esz;
    if (fused) { /* one pass; the tail through the int32 block */
      int64_t s = 0;
      size_t i = sums_wire_avx2(t, (float *)(void *)out, (const char *)src + lo * wsz, len, ldexpf(1.0f, ex->g), &s);
      s += widen(t, q, (const char *)src + (lo + i) * wsz, len - i);
      sums_f32((float *)(void *)out + i, q, len - i, ex->g);
      sum += (uint64_t)s;
      continue;
    }
    sum += (uint64_t)widen(t, q, (const char *)src + lo * wsz, len);
    float *y = dt == SCHEDC_F32 ? (float *)(void *)out : f;
    if (avg && dt != SCHEDC_F32) avgs_odd(y, q, len, ex->g, ex->nterms);
    else if (avg) avgs_f32(y, q, len, ex->g, ex->nterms);
    else sums_f32(y, q, len, ex->g); /* exact for g >= -149, where f16/bf16 then round once below */
    if (dt != SCHEDC_F32) sc_from_acc(dt, out, f, len);
  }
  return sum;
}

/* ---- the wire's adds ---- */

#define ADD_LOOP(T, U)                                                                              \
  for (size_t i = 0; i < len; i++) {                                                                \
    U v = (U)a[i];                                                                                  \
    for (int k = 0; k < n; k++) v = (U)(v + (U)((const T *)s[k])[i]);                              \
    d[i] = (T)v;                                                                                    \
  }
static void add8(int8_t *d, const int8_t *a, const void *const *s, int n, size_t len) { ADD_LOOP(int8_t, uint8_t) }
static void add16(int16_t *d, const int16_t *a, const void *const *s, int n, size_t len) { ADD_LOOP(int16_t, uint16_t) }
__attribute__((target("avx2"))) static void add8_avx2(int8_t *d, const int8_t *a, const void *const *s, int n, size_t len) {
  ADD_LOOP(int8_t, uint8_t)
}
__attribute__((target("avx2"))) static void add16_avx2(int16_t *d, const int16_t *a, const void *const *s, int n,
                                                       size_t len) {
  ADD_LOOP(int16_t, uint16_t)
}

/* The common step, one source, 32 bytes at a time (the vectoriser does not take ADD_LOOP's inner
 * loop over the sources); the rest through ADD_LOOP. Returns the bytes done. */
__attribute__((target("avx2"))) static size_t add1_avx2(int t, char *d, const char *a, const char *s, size_t bytes) {
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + i));
    __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
    _mm256_storeu_si256((__m256i *)(void *)(d + i), t == SC_DT_Q8 ? _mm256_add_epi8(x, y) : _mm256_add_epi16(x, y));
  }
  return i;
}

void sc_quant_chain(int t, void *dst, const void *a, const void *const *s, int n, size_t len) {
  size_t w = sc_dtype_size(t), done = 0;
  if (n == 1 && sc_cpu_avx2()) done = add1_avx2(t, dst, a, s[0], len * w) / w;
  const void *rest[64]; /* the sources past what the vector loop did (a chain has at most nranks) */
  int k = n < 64 ? n : 64;
  for (int j = 0; j < k; j++) rest[j] = (const char *)s[j] + done * w;
  if (n > 64) { /* not met (a cell has fewer writers than ranks in one step), but correct */
    if (t == SC_DT_Q8) add8(dst, a, s, n, len);
    else add16(dst, a, s, n, len);
    return;
  }
  char *d = (char *)dst + done * w;
  const char *a0 = (const char *)a + done * w;
  if (t == SC_DT_Q8) (sc_cpu_avx2() ? add8_avx2 : add8)((int8_t *)d, (const int8_t *)a0, rest, k, len - done);
  else (sc_cpu_avx2() ? add16_avx2 : add16)((int16_t *)(void *)d, (const int16_t *)(const void *)a0, rest, k, len - done);
}

/* ---- error feedback ---- */

void sc_quant_residual(const sc_exact *ex, schedc_dtype dt, void *e, const void *v, size_t n) {
  size_t esz = schedc_dtype_size(dt);
  float f[QB], r[QB];
  int32_t q[QB];
  double s = ldexp(1.0, ex->g);
  for (size_t lo = 0; lo < n; lo += QB) {
    size_t len = n - lo < QB ? n - lo : QB;
    const float *x = as_f32(dt, (const char *)v + lo * esz, len, f);
    to_ints(q, x, len, ex->g); /* the integers this rank sent (sc_quant_in's, bit for bit) */
    /* v - q 2^g is a value of dt (docs/compression.md): exact in double, and so in the float */
    float *y = dt == SCHEDC_F32 ? (float *)(void *)((char *)e + lo * esz) : r;
    for (size_t i = 0; i < len; i++) y[i] = (float)((double)x[i] - (double)q[i] * s);
    if (dt != SCHEDC_F32) sc_from_acc(dt, (char *)e + lo * esz, r, len);
  }
}
