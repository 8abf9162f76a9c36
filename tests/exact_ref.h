/*
 * exact_ref.h — an independent exact reference for exact mode (docs/determinism.md "Exact mode"),
 * nothing shared with runtime/core/exact.c: the formats decomposed by hand, the grid from frexp,
 * the rounding onto it with integer shifts (ties to even), the sum in __int128, and the one
 * rounding back by a binary search over the output format's bit patterns with exact comparisons
 * (no floating point); plus the tests' inputs (classes by element index: on the grid,
 * cancellation, wide exponent ranges, subnormals, ±0). Used by tests/cpu/test_exact.c (threads,
 * shm) and tests/cuda/test_cuda_exact.c (the cuda backend on the emulated device).
 */
#ifndef SC_TEST_EXACT_REF_H
#define SC_TEST_EXACT_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "schedc/schedc.h"

typedef __int128 i128;

/* ---- the formats, independently of the library ---- */
typedef struct fmt { int p, emin, bytes; uint32_t maxfin, inf, sign, qnan; } fmt;
static inline fmt fmt_of(schedc_dtype dt) {
  if (dt == SCHEDC_F32) return (fmt){24, -126, 4, 0x7f7fffffu, 0x7f800000u, 0x80000000u, 0x7fc00000u};
  if (dt == SCHEDC_F16) return (fmt){11, -14, 2, 0x7bffu, 0x7c00u, 0x8000u, 0x7e00u};
  return (fmt){8, -126, 2, 0x7f7fu, 0x7f80u, 0x8000u, 0x7fc0u};
}
/* a finite magnitude's bits as m * 2^k (m < 2^p) */
static inline void decomp(const fmt *f, uint32_t a, uint64_t *m, int *k) {
  uint32_t ef = a >> (f->p - 1), frac = a & ((1u << (f->p - 1)) - 1);
  *m = ef ? frac | (1u << (f->p - 1)) : frac;
  *k = (ef ? (int)ef : 1) + f->emin - 1 - (f->p - 1);
}
static inline uint32_t get(schedc_dtype dt, const void *x, size_t i) {
  return dt == SCHEDC_F32 ? ((const uint32_t *)x)[i] : ((const uint16_t *)x)[i];
}
static inline void put(schedc_dtype dt, void *x, size_t i, uint32_t v) {
  if (dt == SCHEDC_F32) ((uint32_t *)x)[i] = v;
  else ((uint16_t *)x)[i] = (uint16_t)v;
}
static inline int bitlen(unsigned __int128 v) {
  uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
  return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* sign of m 2^k n - A 2^b (m, n, A >= 0; A < 2^126) */
static inline int cmp(uint64_t m, int k, uint64_t n, unsigned __int128 A, int b) {
  unsigned __int128 L = (unsigned __int128)m * n;
  if (!L) return A ? -1 : 0;
  if (!A) return 1;
  int ll = bitlen(L) + k, lr = bitlen(A) + b;
  if (ll != lr) return ll < lr ? -1 : 1;
  int d = k - b; /* equal lengths: the shift below stays within 128 bits */
  if (d >= 0) L <<= d;
  else A <<= -d;
  return L < A ? -1 : L > A;
}

/* The reference rounding: the dtype value nearest to S 2^b / n, ties to even; exact 0 is +0. */
static inline uint32_t ref_round(const fmt *f, i128 S, int b, uint64_t n) {
  if (!S) return 0;
  unsigned __int128 A = S < 0 ? (unsigned __int128)(-S) : (unsigned __int128)S;
  uint32_t lo = 0, hi = f->maxfin; /* the largest finite bits whose value <= |V| */
  uint64_t m;
  int k;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo + 1) / 2;
    decomp(f, mid, &m, &k);
    if (cmp(m, k, n, A, b) <= 0) lo = mid;
    else hi = mid - 1;
  }
  decomp(f, lo, &m, &k); /* the next value up is lo's plus 2^k; their midpoint: (2m + 1) 2^(k-1) */
  int c = cmp(2 * m + 1, k - 1, n, A, b); /* midpoint vs |V| */
  uint32_t r = c < 0 || (c == 0 && (lo & 1)) ? lo + 1 : lo; /* lo + 1 past maxfin is the infinity */
  return r | (S < 0 ? f->sign : 0);
}

/* Where S 2^b / n lies against the midpoint of its two nearest values of the format: 0 exactly
 * on it (a tie, which ref_round breaks to even), else 1 (S = 0 gives 1). For the tests that build
 * ties on purpose: they count how many they made. */
static inline int ref_off_tie(const fmt *f, i128 S, int b, uint64_t n) {
  if (!S) return 1;
  unsigned __int128 A = S < 0 ? (unsigned __int128)(-S) : (unsigned __int128)S;
  uint32_t r = ref_round(f, (i128)A, b, n) & ~f->sign; /* the nearest; the midpoint is beside it */
  uint64_t m;
  int k;
  if (r >= f->inf) return 1;
  decomp(f, r, &m, &k);
  if (cmp(2 * m + 1, k - 1, n, A, b) == 0) return 0; /* the midpoint above r */
  if (r && m) { /* the midpoint below r: r's predecessor's value + half its unit */
    decomp(f, r - 1, &m, &k);
    if (cmp(2 * m + 1, k - 1, n, A, b) == 0) return 0;
  }
  return 1;
}

/* The format's bits of (-1)^neg a 2^e, which must be exact (a < 2^p after removing trailing
 * zeros, the value within the format's finite range and on its subnormal grid); 0xffffffff if not. */
static inline uint32_t ref_encode(const fmt *f, int neg, uint64_t a, int e) {
  if (!a) return neg ? f->sign : 0;
  while (!(a & 1)) a >>= 1, e++;
  int top = e + bitlen(a) - 1, mb = f->p - 1, bias = -f->emin + 1;
  if (bitlen(a) > f->p || top > -f->emin + 1 || e < f->emin - mb) return 0xffffffffu;
  uint32_t bits;
  if (top >= f->emin) bits = (uint32_t)(top + bias) << mb | (uint32_t)((a << (mb - (top - e))) & ((1ull << mb) - 1));
  else bits = (uint32_t)(a << (e - (f->emin - mb))); /* subnormal: a multiple of 2^(emin - mb) */
  return bits | (neg ? f->sign : 0);
}

/* ---- inputs ---- */
static inline uint64_t mix(uint64_t x) {
  x ^= x >> 31; x *= 0x9e3779b97f4a7c15ull; x ^= x >> 29; x *= 0xbf58476d1ce4e5b9ull; return x ^ (x >> 32);
}
/* Element i of rank r of n (seed s): classes by i % 8, element 0 pins the largest exponent. */
static inline uint32_t input(const fmt *f, int n, int r, size_t i, int s) {
  uint64_t h = mix(((uint64_t)s << 48) ^ ((uint64_t)n << 40) ^ ((uint64_t)r << 32) ^ i);
  int mb = f->p - 1, bias = -f->emin + 1, top = f->p == 11 ? 14 : 20; /* the largest exponent */
  uint32_t frac = (uint32_t)(h >> 8) & ((1u << mb) - 1), sign = (h & 1) ? f->sign : 0;
  int e; /* unbiased exponent; below emin: a subnormal */
  switch (i % 8) {
  case 0: if (i == 0) return (uint32_t)(top + bias) << mb; /* 2^top on every rank */
          e = top - (int)(h >> 40) % 8; break;                 /* near the top */
  case 1: e = top - (int)(h >> 40) % 30; break;               /* on the grid */
  case 2: { /* cancellation: rank r and rank n-1-r hold opposite values */
    uint64_t h2 = mix(((uint64_t)s << 48) ^ ((uint64_t)n << 40) ^ ((uint64_t)(r < n - 1 - r ? r : n - 1 - r) << 32) ^ i);
    frac = (uint32_t)(h2 >> 8) & ((1u << mb) - 1);
    e = top - (int)(h2 >> 40) % 20;
    sign = (r < n - 1 - r) ? 0 : (r == n - 1 - r ? sign : f->sign);
    break;
  }
  case 3: e = top - (int)(h >> 40) % (f->p == 11 ? 40 : 100); break; /* wide: far below the grid too */
  case 4: e = f->emin - 1 - (int)(h >> 40) % (mb + 1); break;         /* subnormal (or below) */
  case 5: return sign; /* ±0 */
  case 6: e = top - 40 - (int)(h >> 40) % 40; break;                  /* around the grid's edge */
  default: e = top - (int)(h >> 40) % 12; break;
  }
  if (e < f->emin - mb) e = f->emin - mb;
  if (e >= f->emin) return sign | (uint32_t)(e + bias) << mb | frac;
  uint32_t sub = (frac | (1u << mb)) >> (f->emin - e); /* a subnormal's bits */
  return sign | (sub ? sub : 1);
}

/* The reference for element i: the grid g from every rank's inputs (frexp), each input rounded
 * onto it with integer shifts (ties to even), summed exactly, rounded once. Also the exact real
 * sum at scale 2^-100 where every input is a multiple of it (|x| < 2^21: it fits), for the bound. */
static inline int ref_grid(schedc_dtype dt, void *const in[], int n, size_t K) {
  int E = -100000;
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < K; i++) {
      float v;
      if (dt == SCHEDC_F32) memcpy(&v, (const char *)in[r] + 4 * i, 4);
      else { /* the 16-bit value exactly as a float: its magnitude decomposed */
        fmt f = fmt_of(dt);
        uint64_t m; int k;
        decomp(&f, get(dt, in[r], i) & ~f.sign, &m, &k);
        v = ldexpf((float)m, k);
      }
      if (v == 0) continue;
      int e;
      frexpf(v, &e);
      if (e - 1 > E) E = e - 1;
    }
  int h = 0;
  while ((1 << h) < n) h++;
  return E == -100000 ? 0 : E - 61 + h;
}
/* x (bits) rounded onto the grid 2^g: ties to even */
static inline int64_t ref_q(const fmt *f, uint32_t x, int g) {
  uint64_t m; int k;
  decomp(f, x & ~f->sign, &m, &k);
  uint64_t q;
  if (k >= g) q = m << (k - g);
  else {
    int s = g - k;
    if (s >= 64) q = 0;
    else {
      uint64_t rem = m & ((1ull << s) - 1), half = 1ull << (s - 1);
      q = m >> s;
      if (rem > half || (rem == half && (q & 1))) q++;
    }
  }
  return (x & f->sign) ? -(int64_t)q : (int64_t)q;
}
/* x exactly as an integer multiple of 2^-XS (0 where it is not one: a last bit below 2^-XS, or a
 * value too large for these __int128 sums: m < 2^24 shifted by at most 96, so sums of up to 64
 * stay below 2^126) */
enum { XS = 100 };
static inline int ref_exact(const fmt *f, uint32_t x, i128 *v) {
  uint64_t m; int k;
  decomp(f, x & ~f->sign, &m, &k);
  if (!m) { *v = 0; return 1; } /* ±0: k is no exponent then (a shift by it would be undefined) */
  if (k < -XS || k + XS > 96) return 0;
  *v = (i128)m << (k + XS);
  if (x & f->sign) *v = -*v;
  return 1;
}

static long g_checked_exact, g_checked_bound;
/* The expected result buffer (K elements of every rank's sum) into want; checks the bound. */
static inline int reference(schedc_dtype dt, int avg, void *const in[], int n, size_t K, void *want) {
  fmt f = fmt_of(dt);
  int g = ref_grid(dt, in, n, K), bad = 0;
  for (size_t i = 0; i < K; i++) {
    i128 S = 0, X = 0, v;
    int exact = 1;
    for (int r = 0; r < n; r++) {
      S += ref_q(&f, get(dt, in[r], i), g);
      if (ref_exact(&f, get(dt, in[r], i), &v)) X += v;
      else exact = 0;
    }
    uint32_t w = ref_round(&f, S, g, avg ? (uint64_t)n : 1);
    put(dt, want, i, w);
    if (!exact || g + XS < 1 || g + XS > 62) continue; /* S * 2^(g+XS) must fit: |S| < 2^63 */
    /* the error on the way in: |S 2^g - X| <= n 2^(g-1) (each input moves at most half a unit);
     * scaled by multiplying: a left shift of a negative S is undefined in C */
    i128 unit = (i128)1 << (g + XS);
    i128 err = S * unit - X;
    if (err < 0) err = -err;
    if (err > ((i128)n << (g - 1 + XS))) { bad++; fprintf(stderr, "element %zu: the bound fails\n", i); }
    g_checked_bound++;
    /* on the grid: nothing rounded in, so the result is the exact real sum rounded once */
    if (S * unit == X) {
      if (ref_round(&f, X, -XS, avg ? (uint64_t)n : 1) != w) { bad++; fprintf(stderr, "element %zu: not exact\n", i); }
      g_checked_exact++;
    }
  }
  return bad;
}

#endif
