/*
 * kernels.c — the CPU reduction kernels (see kernels.h): reduce chains in the accumulation type,
 * the fused reduce-and-CRC step, the slice copy and avg's division. The add/mul/min/max loops are
 * written for the auto-vectoriser and built twice, for AVX2 and the baseline (SC_SIMD_FN: the
 * path sc_simd() chose, cpufeat.h). Because -ffp-contract=off and no -ffast-math are in force, the
 * vector code performs exactly the scalar IEEE operations, element by element. Conversions are
 * convert.c's, the CPU's features cpufeat.c's, the digest digest.c's.
 */
#include "kernels.h"
#include "cpufeat.h"
#include "names.h"
#include "opreg.h"
#include "quant.h"

#include <math.h>
#include <string.h>

#define QNAN_F32 0x7fc00000u
#define QNAN_F64 0x7ff8000000000000ull

schedc_dtype sc_acc_type(schedc_dtype t) { return t == SCHEDC_F16 || t == SCHEDC_BF16 ? SCHEDC_F32 : t; }

static inline float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline double f64_of(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }

/* Hot paths: plain sum of f32 / f64 with one to four sources, vectorised. */
/* The default NaN is a value taken once, outside the loop: written as f32_of(QNAN_F32) inside it
 * (a memcpy of an integer) it kept gcc from vectorising, and these loops ran one element at a
 * time (docs/performance.md). */
SC_SIMD_FN(sum1_f32_blk, (float *d, const float *a, const float *restrict s, size_t n), (d, a, s, n), {
  const float qnan = f32_of(QNAN_F32);
  for (size_t i = 0; i < n; i++) {
    float r = a[i] + s[i];
    d[i] = r != r ? qnan : r;
  }
})
SC_SIMD_FN(sum1_f64_blk, (double *d, const double *a, const double *restrict s, size_t n), (d, a, s, n), {
  const double qnan = f64_of(QNAN_F64);
  for (size_t i = 0; i < n; i++) {
    double r = a[i] + s[i];
    d[i] = r != r ? qnan : r;
  }
})
/* In blocks of PF_BYTES, the next block of both inputs prefetched first: the source is a peer's
 * slice, in another core's cache or in memory, and the hardware prefetcher alone left the loop
 * waiting (2 ranks, 64 MiB: -5%; 4 ranks: -6%; docs/performance.md). Arithmetic unchanged. */
#define PF_BYTES 2048
#define PREFETCHED_SUM(T, NAME, BLK)                                                           \
  static void NAME(T *d, const T *a, const T *restrict s, size_t n) {                         \
    const size_t B = PF_BYTES / sizeof(T);                                                     \
    for (size_t i = 0; i < n; i += B) {                                                        \
      for (size_t p = 0; p < PF_BYTES; p += 64) {                                              \
        __builtin_prefetch((const char *)(s + i + B) + p);                                     \
        __builtin_prefetch((const char *)(a + i + B) + p);                                     \
      }                                                                                        \
      BLK(d + i, a + i, s + i, n - i < B ? n - i : B);                                         \
    }                                                                                          \
  }
PREFETCHED_SUM(float, sum1_f32, sum1_f32_blk)
PREFETCHED_SUM(double, sum1_f64, sum1_f64_blk)

/* One step of a chain, d[i] = op(a[i], s[i]) (d may be a), as loops the vectoriser takes: the
 * switch on the op outside the element loop (inside, it kept gcc from vectorising: min, max, prod
 * and the integer ops ran one element at a time — docs/performance.md), no branches in it, the
 * default NaN a constant taken before it. Per element the rules of kernels.h (checked against
 * tests/unit/test_kernels.c's scalar reference):
 *  - min: x < y ? x : y (vminps' own rule; for equal non-zero values both have the same bits),
 *    except two zeros: the OR of their bits (-0 < +0); max: x > y ? x : y, two zeros: the AND;
 *  - a NaN input gives the default NaN (NaN wins), as does a NaN result of a sum or product.
 * min and max pick bits with integer selects on the same words (the build has
 * -fno-strict-aliasing): a float select on a signalling comparison is not if-converted while
 * floating-point traps count (-ftrapping-math, the default we keep), so gcc left those loops scalar.
 * -ffp-contract=off and no -ffast-math keep every operation as written. */
#define FSTEP(T, U, NAME, QNAN, ABS, INF)                                                        \
  static inline __attribute__((always_inline)) void NAME(schedc_op op, T *d, const T *a,         \
                                                        const T *restrict s, size_t m) {         \
    const T qnan = QNAN##_of(QNAN);                                                               \
    const U *ua = (const U *)a, *us = (const U *)s;                                               \
    U *ud = (U *)d;                                                                               \
    switch (op) {                                                                                 \
    case SCHEDC_PROD:                                                                             \
      for (size_t i = 0; i < m; i++) {                                                            \
        T r = a[i] * s[i];                                                                        \
        d[i] = r != r ? qnan : r;                                                                 \
      }                                                                                           \
      break;                                                                                      \
    case SCHEDC_MIN:                                                                              \
      for (size_t i = 0; i < m; i++) {                                                            \
        T x = a[i], y = s[i], lo = x < y ? x : y;                                                 \
        U ux = ua[i], uy = us[i], ul;                                                             \
        memcpy(&ul, &lo, sizeof ul);                                                              \
        U r = ((ux | uy) & ABS) == 0 ? (ux | uy) : ul;                                            \
        ud[i] = (((ux & ABS) > INF) | ((uy & ABS) > INF)) ? QNAN : r;                             \
      }                                                                                           \
      break;                                                                                      \
    case SCHEDC_MAX:                                                                              \
      for (size_t i = 0; i < m; i++) {                                                            \
        T x = a[i], y = s[i], hi = x > y ? x : y;                                                 \
        U ux = ua[i], uy = us[i], uh;                                                             \
        memcpy(&uh, &hi, sizeof uh);                                                              \
        U r = ((ux | uy) & ABS) == 0 ? (ux & uy) : uh;                                            \
        ud[i] = (((ux & ABS) > INF) | ((uy & ABS) > INF)) ? QNAN : r;                             \
      }                                                                                           \
      break;                                                                                      \
    default: /* sum, avg */                                                                       \
      for (size_t i = 0; i < m; i++) {                                                            \
        T r = a[i] + s[i];                                                                        \
        d[i] = r != r ? qnan : r;                                                                 \
      }                                                                                           \
      break;                                                                                      \
    }                                                                                             \
  }
#define QNAN_F32_of f32_of
#define QNAN_F64_of f64_of
FSTEP(float, uint32_t, step_f32, QNAN_F32, 0x7fffffffu, 0x7f800000u)
FSTEP(double, uint64_t, step_f64, QNAN_F64, 0x7fffffffffffffffull, 0x7ff0000000000000ull)
/* Integers wrap (two's complement) instead of overflowing into undefined behaviour: the unsigned
 * type's arithmetic. */
#define ISTEP(T, U, NAME)                                                                         \
  static inline __attribute__((always_inline)) void NAME(schedc_op op, T *d, const T *a,               \
                                                        const T *restrict s, size_t m) {             \
    switch (op) {                                                                                 \
    case SCHEDC_PROD: for (size_t i = 0; i < m; i++) d[i] = (T)((U)a[i] * (U)s[i]); break;        \
    case SCHEDC_MIN: for (size_t i = 0; i < m; i++) d[i] = a[i] < s[i] ? a[i] : s[i]; break;      \
    case SCHEDC_MAX: for (size_t i = 0; i < m; i++) d[i] = a[i] > s[i] ? a[i] : s[i]; break;      \
    default: for (size_t i = 0; i < m; i++) d[i] = (T)((U)a[i] + (U)s[i]); break;                 \
    }                                                                                             \
  }
ISTEP(int32_t, uint32_t, step_int32_t)
ISTEP(int64_t, uint64_t, step_int64_t)

#define CHAIN(T, STEP)                                                                       \
  SC_SIMD_FN(chain_##T, (schedc_op op, T *d, const T *a, const void *const *s, int n, size_t len), \
             (op, d, a, s, n, len), {                                                        \
    const size_t B = 512; /* block so the chain stays in L1 */                              \
    for (size_t lo = 0; lo < len; lo += B) {                                                 \
      size_t hi = lo + B < len ? lo + B : len;                                               \
      T acc[512];                                                                            \
      for (size_t i = lo; i < hi; i++) acc[i - lo] = a[i];                                   \
      for (int k = 0; k < n; k++) STEP(op, acc, acc, (const T *)s[k] + lo, hi - lo);         \
      for (size_t i = lo; i < hi; i++) d[i] = acc[i - lo];                                   \
    }                                                                                        \
  })
CHAIN(float, step_f32)
CHAIN(double, step_f64)
CHAIN(int32_t, step_int32_t)
CHAIN(int64_t, step_int64_t)

/* One source, any op: d = op(a, s) in blocks with the next block prefetched, as the sum's. */
#define ONE(T, STEP)                                                                            \
  SC_SIMD_FN(one_##T##_blk, (schedc_op op, T *d, const T *a, const T *restrict s, size_t n), (op, d, a, s, n), { \
    STEP(op, d, a, s, n);                                                                       \
  })                                                                                            \
  static void one_##T(schedc_op op, T *d, const T *a, const T *restrict s, size_t n) {          \
    const size_t B = PF_BYTES / sizeof(T);                                                      \
    for (size_t i = 0; i < n; i += B) {                                                         \
      for (size_t p = 0; p < PF_BYTES; p += 64) {                                               \
        __builtin_prefetch((const char *)(s + i + B) + p);                                      \
        __builtin_prefetch((const char *)(a + i + B) + p);                                      \
      }                                                                                         \
      one_##T##_blk(op, d + i, a + i, s + i, n - i < B ? n - i : B);                            \
    }                                                                                           \
  }
ONE(float, step_f32)
ONE(double, step_f64)
ONE(int32_t, step_int32_t)
ONE(int64_t, step_int64_t)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The f32 sum of sum1_f32 (the same IEEE additions, NaN made the default NaN) with two CRC32C chains
 * in the loop: over the source words as loaded, and over the results as stored. Each chain waits
 * three cycles per 8 bytes, which hides under a payload that comes from another core's cache or
 * from memory (the case it is for: a checked ring step). */
__attribute__((target("avx2,sse4.2"))) static void sum1_f32_crc(float *d, const float *a, const float *s, size_t n,
                                                                uint32_t *crc_s, uint32_t *crc_d) {
  uint64_t cs = ~0u, cd = ~0u;
  const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32((int)QNAN_F32));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (!(i & 15)) { /* as PREFETCHED_SUM: 2 KiB ahead, a line each */
      __builtin_prefetch(s + i + PF_BYTES / 4);
      __builtin_prefetch(a + i + PF_BYTES / 4);
    }
    __m256 y = _mm256_loadu_ps(s + i);
    __m256 r = _mm256_add_ps(_mm256_loadu_ps(a + i), y);
    r = _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    _mm256_storeu_ps(d + i, r);
    __m256i yi = _mm256_castps_si256(y), ri = _mm256_castps_si256(r);
    cs = __builtin_ia32_crc32di(cs, (uint64_t)_mm256_extract_epi64(yi, 0));
    cs = __builtin_ia32_crc32di(cs, (uint64_t)_mm256_extract_epi64(yi, 1));
    cs = __builtin_ia32_crc32di(cs, (uint64_t)_mm256_extract_epi64(yi, 2));
    cs = __builtin_ia32_crc32di(cs, (uint64_t)_mm256_extract_epi64(yi, 3));
    if (crc_d) {
      cd = __builtin_ia32_crc32di(cd, (uint64_t)_mm256_extract_epi64(ri, 0));
      cd = __builtin_ia32_crc32di(cd, (uint64_t)_mm256_extract_epi64(ri, 1));
      cd = __builtin_ia32_crc32di(cd, (uint64_t)_mm256_extract_epi64(ri, 2));
      cd = __builtin_ia32_crc32di(cd, (uint64_t)_mm256_extract_epi64(ri, 3));
    }
  }
  for (; i < n; i++) {
    float y = s[i], r = a[i] + y;
    r = r != r ? f32_of(QNAN_F32) : r;
    d[i] = r;
    cs = __builtin_ia32_crc32si((uint32_t)cs, bits32(y));
    cd = __builtin_ia32_crc32si((uint32_t)cd, bits32(r));
  }
  *crc_s = ~(uint32_t)cs;
  if (crc_d) *crc_d = ~(uint32_t)cd;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
/* glibc's memcpy of a 256 KiB slice read from a peer ran 5-10% below this loop, which prefetches
 * 2 KiB ahead (docs/performance.md). */
__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n) {
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __builtin_prefetch(s + i + 2048);
    __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
    __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 32));
    __m256i w2 = _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 64));
    __m256i w3 = _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 96));
    _mm256_storeu_si256((__m256i *)(void *)(d + i), w0);
    _mm256_storeu_si256((__m256i *)(void *)(d + i + 32), w1);
    _mm256_storeu_si256((__m256i *)(void *)(d + i + 64), w2);
    _mm256_storeu_si256((__m256i *)(void *)(d + i + 96), w3);
  }
  memcpy(d + i, s + i, n - i);
}
#endif

void sc_copy(void *dst, const void *src, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (sc_cpu_avx2()) {
    copy_avx2(dst, src, n);
    return;
  }
#endif
  memcpy(dst, src, n);
}

int sc_reduce1_crc_ok(schedc_dtype t, schedc_op op) {
#if defined(__x86_64__) && defined(__GNUC__)
  return t == SCHEDC_F32 && (op == SCHEDC_SUM || op == SCHEDC_AVG) && sc_cpu_avx2() && sc_cpu_sse42();
#else
  (void)t; (void)op;
  return 0;
#endif
}

void sc_reduce1_crc(schedc_dtype t, schedc_op op, void *dst, const void *a, const void *s, size_t len, uint32_t *crc_s,
                    uint32_t *crc_d) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (sc_reduce1_crc_ok(t, op)) {
    sum1_f32_crc(dst, a, s, len, crc_s, crc_d);
    return;
  }
#endif
  /* not reached by the runtime (it asks sc_reduce1_crc_ok first): the two passes it replaces */
  sc_reduce_chain(t, op, dst, a, &s, 1, len);
  *crc_s = sc_crc32c(s, len * schedc_dtype_size(t));
  if (crc_d) *crc_d = sc_crc32c(dst, len * schedc_dtype_size(t));
}

void sc_reduce_chain(schedc_dtype t, schedc_op op, void *dst, const void *a, const void *const *s, int n,
                     size_t len) {
  if (n <= 0 || len == 0) {
    if (dst != a && len) memmove(dst, a, len * schedc_dtype_size(t));
    return;
  }
  if (op >= SCHEDC_OP_CUSTOM_BASE) { /* a custom op: its compiled element loop, one call per chain */
    const sc_opdef *d = sc_opreg_get(op);
    if (d) d->chain(dst, a, s, n, len); /* the call's checks made sure it lives and serves t */
    return;
  }
  int sum = op == SCHEDC_SUM || op == SCHEDC_AVG;
  switch ((int)t) { /* int: the wire types are outside the enum */
  case SCHEDC_F32:
    if (sum && n == 1) sum1_f32(dst, a, s[0], len);
    else if (n == 1) one_float(op, dst, a, s[0], len);
    else chain_float(op, dst, a, s, n, len);
    break;
  case SCHEDC_F64:
    if (sum && n == 1) sum1_f64(dst, a, s[0], len);
    else if (n == 1) one_double(op, dst, a, s[0], len);
    else chain_double(op, dst, a, s, n, len);
    break;
  case SCHEDC_I32:
    if (n == 1) one_int32_t(op, dst, a, s[0], len);
    else chain_int32_t(op, dst, a, s, n, len);
    break;
  case SCHEDC_I64:
    if (n == 1) one_int64_t(op, dst, a, s[0], len);
    else chain_int64_t(op, dst, a, s, n, len);
    break;
  case SC_DT_Q8: case SC_DT_Q16: sc_quant_chain((int)t, dst, a, s, n, len); break; /* a wire's integers (sums) */
  default: break; /* f16/bf16 never reach here: they accumulate in f32 */
  }
}

void sc_divide(schedc_dtype t, void *x, size_t len, int n) {
  switch (t) {
  case SCHEDC_F32: { float *p = x, q = (float)n; for (size_t i = 0; i < len; i++) p[i] = p[i] / q; break; }
  case SCHEDC_F64: { double *p = x, q = n; for (size_t i = 0; i < len; i++) p[i] = p[i] / q; break; }
  case SCHEDC_I32: { int32_t *p = x; for (size_t i = 0; i < len; i++) p[i] = p[i] / n; break; }
  case SCHEDC_I64: { int64_t *p = x; for (size_t i = 0; i < len; i++) p[i] = p[i] / n; break; }
  default: break;
  }
}
