/*
 * kernels.c — CPU reduction kernels (see kernels.h). The add/mul/min/max loops are written for
 * the auto-vectoriser and cloned for AVX2 with target_clones (chosen at run time by the loader's
 * ifunc resolver). Because -ffp-contract=off and no -ffast-math are in force, the vector code
 * performs exactly the scalar IEEE operations, element by element.
 */
#include "kernels.h"
#include "hash.h"
#include "opreg.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SC_CLONES
#endif

#define QNAN_F32 0x7fc00000u
#define QNAN_F64 0x7ff8000000000000ull

schedc_dtype sc_acc_type(schedc_dtype t) { return t == SCHEDC_F16 || t == SCHEDC_BF16 ? SCHEDC_F32 : t; }

static inline float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline double f64_of(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }
static inline uint64_t bits64(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

/* Binary ops on one element. NaN results become the default NaN; min/max order -0 < +0. */
static inline float op_f32(schedc_op op, float a, float b) {
  float r;
  switch (op) {
  case SCHEDC_PROD: r = a * b; break;
  case SCHEDC_MIN:
    if (a != a || b != b) return f32_of(QNAN_F32);
    r = a < b ? a : b < a ? b : f32_of(bits32(a) | bits32(b));
    break;
  case SCHEDC_MAX:
    if (a != a || b != b) return f32_of(QNAN_F32);
    r = a > b ? a : b > a ? b : f32_of(bits32(a) & bits32(b));
    break;
  default: r = a + b; break;
  }
  return r != r ? f32_of(QNAN_F32) : r;
}

static inline double op_f64(schedc_op op, double a, double b) {
  double r;
  switch (op) {
  case SCHEDC_PROD: r = a * b; break;
  case SCHEDC_MIN:
    if (a != a || b != b) return f64_of(QNAN_F64);
    r = a < b ? a : b < a ? b : f64_of(bits64(a) | bits64(b));
    break;
  case SCHEDC_MAX:
    if (a != a || b != b) return f64_of(QNAN_F64);
    r = a > b ? a : b > a ? b : f64_of(bits64(a) & bits64(b));
    break;
  default: r = a + b; break;
  }
  return r != r ? f64_of(QNAN_F64) : r;
}

/* Integers wrap (two's complement) instead of overflowing into undefined behaviour. */
#define INT_OP(T, U)                                                              \
  static inline T op_##T(schedc_op op, T a, T b) {                                \
    switch (op) {                                                                 \
    case SCHEDC_PROD: return (T)((U)a * (U)b);                                    \
    case SCHEDC_MIN: return a < b ? a : b;                                        \
    case SCHEDC_MAX: return a > b ? a : b;                                        \
    default: return (T)((U)a + (U)b);                                             \
    }                                                                             \
  }
INT_OP(int32_t, uint32_t)
INT_OP(int64_t, uint64_t)

/* Hot paths: plain sum of f32 / f64 with one to four sources, vectorised. */
/* The default NaN is a value taken once, outside the loop: written as f32_of(QNAN_F32) inside it
 * (a memcpy of an integer) it kept gcc from vectorising, and these loops ran one element at a
 * time (docs/performance.md). */
SC_CLONES static void sum1_f32_blk(float *d, const float *a, const float *restrict s, size_t n) {
  const float qnan = f32_of(QNAN_F32);
  for (size_t i = 0; i < n; i++) {
    float r = a[i] + s[i];
    d[i] = r != r ? qnan : r;
  }
}
SC_CLONES static void sum1_f64_blk(double *d, const double *a, const double *restrict s, size_t n) {
  const double qnan = f64_of(QNAN_F64);
  for (size_t i = 0; i < n; i++) {
    double r = a[i] + s[i];
    d[i] = r != r ? qnan : r;
  }
}
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

/* A chain step of a float sum, acc[i] += s[i] with the default NaN, as a loop the vectoriser
 * takes (the generic step calls op_f32 per element, whose switch and NaN constant it does not);
 * the same IEEE additions. 1 when done (sum, avg), 0 for other ops. */
#define SUM_STEP(T, NAME, QNAN_OF)                                                          \
  static inline int NAME(schedc_op op, T *acc, const T *s, size_t m) {                      \
    if (op != SCHEDC_SUM && op != SCHEDC_AVG) return 0;                                     \
    const T qnan = QNAN_OF;                                                                  \
    for (size_t i = 0; i < m; i++) {                                                         \
      T r = acc[i] + s[i];                                                                   \
      acc[i] = r != r ? qnan : r;                                                            \
    }                                                                                        \
    return 1;                                                                                \
  }
SUM_STEP(float, sum_step_f32, f32_of(QNAN_F32))
SUM_STEP(double, sum_step_f64, f64_of(QNAN_F64))
static inline int no_sum_step(schedc_op op, const void *acc, const void *s, size_t m) {
  (void)op; (void)acc; (void)s; (void)m;
  return 0; /* integers: the generic step (wrapping adds) */
}

#define CHAIN(T, OPF)                                                                        \
  SC_CLONES static void chain_##T(schedc_op op, T *d, const T *a, const void *const *s, int n, \
                                  size_t len) {                                              \
    const size_t B = 512; /* block so the chain stays in L1 */                              \
    for (size_t lo = 0; lo < len; lo += B) {                                                 \
      size_t hi = lo + B < len ? lo + B : len;                                               \
      T acc[512];                                                                            \
      for (size_t i = lo; i < hi; i++) acc[i - lo] = a[i];                                   \
      for (int k = 0; k < n; k++) {                                                          \
        const T *sk = (const T *)s[k];                                                       \
        if (SUMF(op, acc, sk + lo, hi - lo)) continue;                                       \
        for (size_t i = lo; i < hi; i++) acc[i - lo] = OPF(op, acc[i - lo], sk[i]);          \
      }                                                                                      \
      for (size_t i = lo; i < hi; i++) d[i] = acc[i - lo];                                   \
    }                                                                                        \
  }
#define SUMF sum_step_f32
CHAIN(float, op_f32)
#undef SUMF
#define SUMF sum_step_f64
CHAIN(double, op_f64)
#undef SUMF
#define SUMF no_sum_step
CHAIN(int32_t, op_int32_t)
CHAIN(int64_t, op_int64_t)
#undef SUMF

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
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
  if (__builtin_cpu_supports("avx2")) {
    copy_avx2(dst, src, n);
    return;
  }
#endif
  memcpy(dst, src, n);
}

int sc_reduce1_crc_ok(schedc_dtype t, schedc_op op) {
#if defined(__x86_64__) && defined(__GNUC__)
  return t == SCHEDC_F32 && (op == SCHEDC_SUM || op == SCHEDC_AVG) && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("sse4.2");
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
  switch (t) {
  case SCHEDC_F32:
    if (sum && n == 1) sum1_f32(dst, a, s[0], len);
    else chain_float(op, dst, a, s, n, len);
    break;
  case SCHEDC_F64:
    if (sum && n == 1) sum1_f64(dst, a, s[0], len);
    else chain_double(op, dst, a, s, n, len);
    break;
  case SCHEDC_I32: chain_int32_t(op, dst, a, s, n, len); break;
  case SCHEDC_I64: chain_int64_t(op, dst, a, s, n, len); break;
  default: break; /* f16/bf16 never reach here: they accumulate in f32 */
  }
}

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
SC_CLONES static void bf16_to_f32_n(uint32_t *restrict d, const uint16_t *restrict s, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = (uint32_t)s[i] << 16;
}
SC_CLONES static void f32_to_bf16_n(uint16_t *restrict d, const uint32_t *restrict s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u = s[i];
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
    d[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded); /* NaN: quiet, else half to even */
  }
}

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
/* F16C from cpuid (leaf 1, ecx bit 29; clang's __builtin_cpu_supports does not know "f16c"), asked
 * once before any thread runs: cpuid traps to the hypervisor in a VM, too dear for every call. */
static int have_f16c;
__attribute__((constructor)) static void detect_f16c(void) {
  unsigned a, b, c, d;
  __builtin_cpu_init();
  have_f16c = __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* f16 <-> f32 over arrays: F16C where the CPU has it, else the scalar functions. */
static void f16_to_f32_n(float *d, const uint16_t *s, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (have_f16c) {
    f16_to_f32_f16c((uint32_t *)(void *)d, s, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; i++) d[i] = sc_f16_to_f32(s[i]);
}
static void f32_to_f16_n(uint16_t *d, const float *s, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (have_f16c) {
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

void sc_divide(schedc_dtype t, void *x, size_t len, int n) {
  switch (t) {
  case SCHEDC_F32: { float *p = x, q = (float)n; for (size_t i = 0; i < len; i++) p[i] = p[i] / q; break; }
  case SCHEDC_F64: { double *p = x, q = n; for (size_t i = 0; i < len; i++) p[i] = p[i] / q; break; }
  case SCHEDC_I32: { int32_t *p = x; for (size_t i = 0; i < len; i++) p[i] = p[i] / n; break; }
  case SCHEDC_I64: { int64_t *p = x; for (size_t i = 0; i < len; i++) p[i] = p[i] / n; break; }
  default: break;
  }
}

/* Four independent lanes over 32-byte blocks (no multiply chain between words, so the pass runs
 * near memory speed), then the tail, then a final mix of lanes and length. */
uint64_t sc_digest64(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ (uint64_t)n, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                   0x2545f4914f6cdd1dull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w;
      memcpy(&w, b + i + 8 * (size_t)k, 8);
      h[k] ^= w * 0xbf58476d1ce4e5b9ull;
      h[k] = (h[k] << 31 | h[k] >> 33) * 0x94d049bb133111ebull;
    }
  uint64_t x = h[0] ^ (h[1] << 1 | h[1] >> 63) ^ (h[2] << 2 | h[2] >> 62) ^ (h[3] << 3 | h[3] >> 61);
  return sc_mix64(sc_fnv(x, b + i, n - i)); /* the tail (under 32 bytes) byte by byte */
}
