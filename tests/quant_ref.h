/*
 * quant_ref.h — an independent exact reference for quantized sums (docs/compression.md), nothing
 * shared with runtime/core/quant.c: the grid found by search (the finest power of two on which
 * every rank's every input rounds, ties to even, to an integer of at most wire - 1 - ceil(log2 n)
 * bits), the rounding onto it and the one rounding back by exact_ref.h's integer tools (shifts,
 * __int128 sums, a binary search over the output format's bit patterns), and the bound against
 * the exact real sum. Used by tests/cpu/test_quant.c.
 */
#ifndef SC_TEST_QUANT_REF_H
#define SC_TEST_QUANT_REF_H

#include "exact_ref.h"

static inline int qref_mbits(int wire, int nterms) {
  int h = 0;
  while ((1 << h) < nterms) h++;
  return wire - 1 - h;
}

/* The largest exponent floor(log2 |x|) over every input (-100000: all zero). */
static inline int qref_top(schedc_dtype dt, void *const in[], int n, size_t K) {
  fmt f = fmt_of(dt);
  int E = -100000;
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < K; i++) {
      uint64_t m;
      int k;
      decomp(&f, get(dt, in[r], i) & ~f.sign, &m, &k);
      if (m && bitlen(m) - 1 + k > E) E = bitlen(m) - 1 + k;
    }
  return E;
}

/* The finest grid 2^g where every input's |round(x / 2^g)| <= 2^mb - 1: searched upwards from one
 * step too fine (2^(E - mb), where the largest input alone reaches 2^mb). */
static inline int qref_grid(schedc_dtype dt, void *const in[], int n, size_t K, int mb) {
  fmt f = fmt_of(dt);
  int E = qref_top(dt, in, n, K);
  if (E == -100000) return 0;
  for (int g = E - mb;; g++) {
    int fits = 1;
    for (int r = 0; r < n && fits; r++)
      for (size_t i = 0; i < K && fits; i++) {
        int64_t q = ref_q(&f, get(dt, in[r], i), g);
        if (q > (1ll << mb) - 1 || q < -((1ll << mb) - 1)) fits = 0;
      }
    if (fits) return g;
  }
}

static long g_qchecked_bound, g_qchecked_exact;
/* Every rank's result (K elements) into want; checks the bound |S 2^g - X| <= n 2^(g-1) exactly
 * where the real sum X is representable at scale 2^-XS. *g_out: the grid. Returns failures. */
static inline int qref_reference(schedc_dtype dt, int wire, int avg, void *const in[], int n, size_t K, void *want,
                                 int *g_out) {
  fmt f = fmt_of(dt);
  int mb = qref_mbits(wire, n), g = qref_grid(dt, in, n, K, mb), bad = 0;
  if (g_out) *g_out = g;
  for (size_t i = 0; i < K; i++) {
    i128 S = 0, X = 0, v;
    int exact = 1;
    for (int r = 0; r < n; r++) {
      S += ref_q(&f, get(dt, in[r], i), g);
      if (ref_exact(&f, get(dt, in[r], i), &v)) X += v;
      else exact = 0;
    }
    if (S > (1 << (wire - 1)) - 1 || S < -((1 << (wire - 1)) - 1)) { bad++; fprintf(stderr, "element %zu: S overflows\n", i); }
    uint32_t w = ref_round(&f, S, g, avg ? (uint64_t)n : 1);
    put(dt, want, i, w);
    if (!exact || g + XS < 1 || g + XS > 110) continue; /* S * 2^(g+XS) < 2^125 */
    i128 unit = (i128)1 << (g + XS), err = S * unit - X;
    if (err < 0) err = -err;
    if (err > ((i128)n << (g - 1 + XS))) { bad++; fprintf(stderr, "element %zu: the bound fails\n", i); }
    g_qchecked_bound++;
    if (S * unit == X) { /* every input on the grid: the exact sum rounded once */
      if (ref_round(&f, X, -XS, avg ? (uint64_t)n : 1) != w) { bad++; fprintf(stderr, "element %zu: not exact\n", i); }
      g_qchecked_exact++;
    }
  }
  return bad;
}

/* Element i of rank r of n (seed s) for quantized sums: small magnitudes (the largest 2^2 or just
 * below 2^3), so that the exact real sum fits exact_ref.h's scale; classes by i % 6: near the top,
 * few significant bits (often on the grid), cancellation between ranks r and n-1-r, a wide range
 * far below the grid, all-ones significands (the grid's carry), ±0 and subnormals. Element 0 pins
 * the largest: 2^2 everywhere, or with an odd seed (2 - ulp) 2^2 on the last rank (a carry). */
static inline uint32_t qinput(const fmt *f, int n, int r, size_t i, int s) {
  uint64_t h = mix(((uint64_t)s << 48) ^ ((uint64_t)n << 40) ^ ((uint64_t)r << 32) ^ i ^ 0x5151);
  int mb = f->p - 1, bias = -f->emin + 1, top = 2;
  uint32_t ones = (1u << mb) - 1, frac = (uint32_t)(h >> 8) & ones, sign = (h & 1) ? f->sign : 0;
  int e;
  if (i == 0) return (uint32_t)(top + bias) << mb | (s % 2 && r == n - 1 ? ones : 0);
  switch (i % 6) {
  case 0: e = top - (int)(h >> 40) % 3; break;
  case 1: e = top - (int)(h >> 40) % 8; frac &= ~(ones >> 3); break; /* 4 significant bits */
  case 2: { /* rank r and rank n-1-r hold opposite values */
    uint64_t h2 = mix(((uint64_t)s << 48) ^ ((uint64_t)n << 40) ^ ((uint64_t)(r < n - 1 - r ? r : n - 1 - r) << 32) ^ i);
    frac = (uint32_t)(h2 >> 8) & ones;
    e = top - (int)(h2 >> 40) % 10;
    sign = (r < n - 1 - r) ? 0 : (r == n - 1 - r ? sign : f->sign);
    break;
  }
  case 3: e = top - (int)(h >> 40) % 40; break;
  case 4: e = top - (int)(h >> 40) % 4; frac = ones; break;
  default:
    if ((h >> 40) % 2) return sign; /* ±0 */
    e = f->emin - 1 - (int)(h >> 41) % 3; break; /* a subnormal */
  }
  if (e >= f->emin) return sign | (uint32_t)(e + bias) << mb | frac;
  uint32_t sub = (frac | (1u << mb)) >> (f->emin - e);
  return sign | (sub ? sub : 1);
}

#endif
