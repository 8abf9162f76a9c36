/*
 * test_exact_simd.c — exact mode's conversions on one vector path (runtime/core/exact.c and its
 * loops: exact_avx2.c, exact_simd.c), bit for bit against references written here and in
 * tests/exact_ref.h (nothing shared with the library): onto the grid against exact_ref.h's integer
 * shifts and libm's nearbyint of the exact x 2^-g; the sums out (sum, and avg's quotient for
 * counts 1 to 2^31 - 1) against its exact binary-search rounding; the exponent pass and the
 * NaN/Inf flags against a classification here. Inputs: every f16 and bf16 pattern, random and
 * edge f32 (±0, subnormals, the largest finite, half-unit ties onto the grid), sums at and beside
 * ties at the format's precision, past 2^53 (the fold to odd), near 2^62, overflowing the format,
 * rounding to -0; lengths and offsets that leave tails to the scalar loops. The vector functions
 * are also called on their own (the prefix they claim, the identity check's sums).
 * Usage: test_exact_simd avx512|avx2|scalar, with SCHEDC_SIMD set to the same (ctest does);
 * skips (77) where the CPU lacks the path.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../exact_ref.h"
#include "cpufeat.h"
#include "exact.h"
#include "exact_simd.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static const schedc_dtype DTS[3] = {SCHEDC_F32, SCHEDC_F16, SCHEDC_BF16};
static sc_simd_level g_level;

/* A finite value of dt's format as bits: every pattern (i below its count), else random ones
 * with exponents spread over the whole range, subnormals and ±0 among them. */
static uint32_t finite_bits(const fmt *f, uint32_t i) {
  uint32_t mag = f->sign - 1, b;
  if (f->bytes == 2) b = i & 0xffffu; /* every pattern in turn */
  else {
    uint64_t h = next();
    switch (h % 8) {
    case 0: b = (uint32_t)(h >> 32) & 0x007fffffu; break;                /* subnormal */
    case 1: b = 0; break;
    case 2: b = f->maxfin; break;
    default: b = (uint32_t)(h >> 32) & mag; break;
    }
    b |= (h & 16) ? f->sign : 0;
  }
  return (b & mag) >= f->inf ? (b & f->sign) | (uint32_t)(i % 97) : b; /* NaN, Inf: a small finite one */
}

/* ---- in: onto the grid ---- */
static int check_in(schedc_dtype dt) {
  enum { N = 4099 };
  fmt f = fmt_of(dt);
  static uint32_t bits[N];
  static unsigned char buf[N * 4 + 64];
  static int64_t got[N + 8];
  int bad = 0;
  for (int round = 0; round < (f.bytes == 2 ? 64 : 200); round++) {
    size_t off = (size_t)round % 5, n = N - (size_t)round % 7; /* unaligned starts, tails */
    uint32_t mx = 0;
    for (size_t i = 0; i < n; i++) {
      bits[i] = finite_bits(&f, (uint32_t)(round * 1024 + (int)i));
      if (round % 3 == 1 && i % 5 == 0) bits[i] &= f.sign | 0xff; /* small ones: rounded far below the grid */
      mx = (bits[i] & (f.sign - 1)) > mx ? bits[i] & (f.sign - 1) : mx;
    }
    /* the grid: the largest exponent, and a headroom of 0..31 bits; some rounds a coarser grid
     * still (as a large value on another rank would set), so that many values round */
    uint64_t m;
    int k, E = -200;
    decomp(&f, mx, &m, &k);
    if (m) E = k + bitlen(m) - 1;
    int g = (E == -200 ? 0 : E - 61) + (int)(next() % 32) + (round % 4 == 3 ? (int)(next() % 40) : 0);
    for (size_t i = 0; i < n; i++) put(dt, buf + off * f.bytes, i, bits[i]);
    const void *src = buf + off * f.bytes;
    sc_exact ex = {0};
    ex.mode = SC_EXACT_CALL, ex.op = SCHEDC_SUM_EXACT, ex.g = g, ex.ready = 1, ex.nterms = 1;
    uint64_t s = sc_exact_in_summed(&ex, dt, got, src, n), want_s = 0;
    for (size_t i = 0; i < n; i++) {
      int64_t want = ref_q(&f, bits[i], g);
      want_s += (uint64_t)want;
      /* and libm's rounding of the exact product, where the double holds it */
      uint64_t mm;
      int kk;
      decomp(&f, bits[i] & (f.sign - 1), &mm, &kk);
      double x = ldexp((double)mm, kk - g);
      int64_t want2 = (int64_t)nearbyint(bits[i] & f.sign ? -x : x);
      if ((got[i] != want || got[i] != want2) && bad++ < 5)
        fprintf(stderr, "in %s: bits %08x g=%d got %lld want %lld (libm %lld)\n", schedc_dtype_name(dt), bits[i], g,
                (long long)got[i], (long long)want, (long long)want2);
    }
    if (s != want_s && bad++ < 5) fprintf(stderr, "in %s: the identity sum differs\n", schedc_dtype_name(dt));
    /* the vector loop on its own: the whole vectors it claims, its sum added to what was there */
    if (g_level >= SC_SIMD_AVX2) {
      static int64_t v[N + 8];
      uint64_t vs = 7, w = 7;
      size_t d = g_level == SC_SIMD_AVX512 ? sc_exact_in_avx512(dt, v, src, n, g, &vs) : sc_exact_in_avx2(dt, v, src, n, g, &vs);
      size_t lanes = g_level == SC_SIMD_AVX512 ? 8 : 4;
      CHECK(d == n / lanes * lanes);
      for (size_t i = 0; i < d; i++) w += (uint64_t)v[i], bad += v[i] != got[i];
      CHECK(vs == w);
    }
  }
  return bad;
}

/* ---- out: the sums rounded once ---- */

/* A sum for the out tests (|S| < 2^63; the headroom keeps sums within 2^62): ties at p bits (times n for avg),
 * one beside them, past 2^53, small ones (below n: avg's quotient all fraction), random. */
static int64_t a_sum(const fmt *f, uint64_t n, int i) {
  uint64_t h = next();
  unsigned __int128 a;
  switch (i % 9) {
  case 0: a = h >> (2 + h % 62); break;                                   /* random, 1..62 bits */
  case 1: a = (h >> 8) % (n + 1); break;                                  /* 0..n */
  case 2: case 3: case 4: { /* a tie at p bits (of the quotient, for n > 1), exact, and +-1 */
    uint64_t c = (1ull << (f->p - 1)) | ((h >> 8) & ((1ull << (f->p - 1)) - 1));
    a = (unsigned __int128)n * (2 * c + 1);
    int room = 63 - bitlen(a); /* up to 2^63: past 2^62 avg's vector path drops a bit into the sticky */
    if (room < 0) { a = h >> 3; break; }
    a <<= (h >> 40) % (unsigned)(room + 1);
    if (i % 9 == 3) a += 1;
    if (i % 9 == 4) a -= 1;
    break;
  }
  case 5: a = ((1ull << 53) + (h >> 11)) | (h & 0x7ff); break;          /* past 2^53: the fold */
  case 6: a = h & 2 ? (1ull << 62) - 1 - (h >> 40) : (1ull << 62) + (h >> 2); break; /* near the headroom's
                                                                        * bound and past it, below 2^63 */
  case 7: a = (h >> 40) << (h % 20); break;                             /* few significant bits */
  default: a = 0; break;
  }
  if (a >= 1ull << 63) a = (1ull << 63) - 1;
  return (h & 1) ? -(int64_t)(uint64_t)a : (int64_t)(uint64_t)a;
}

static int check_out(schedc_dtype dt, int avg) {
  enum { N = 2051 };
  fmt f = fmt_of(dt);
  static int64_t s[N];
  static uint32_t got[N + 8];
  static const uint64_t ns[] = {1, 2, 3, 7, 255, 256, 257, 1000, 65537, 1000000, (1u << 24) + 1, 2147483647u};
  int bad = 0;
  for (int round = 0; round < 96; round++) {
    uint64_t n = avg ? ns[round % 12] : 1;
    /* the grid: results normal, near the top (overflow to inf), or subnormal in the format */
    int g = round % 4 == 0 ? (int)(next() % 60) - 100 : round % 4 == 1 ? (f.p == 11 ? -50 + (int)(next() % 7) : 63 + (int)(next() % 5))
            : round % 4 == 2 ? (f.p == 11 ? -100 : -210) + (int)(next() % 20) : (int)(next() % 278) - 210;
    size_t n_el = N - (size_t)round % 5;
    for (size_t i = 0; i < n_el; i++) s[i] = a_sum(&f, n, (int)i);
    sc_exact ex = {0};
    ex.mode = SC_EXACT_CALL, ex.op = avg ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, ex.g = g, ex.ready = 1;
    ex.nterms = (int)n;
    uint64_t sum = sc_exact_out_summed(&ex, dt, got, s, n_el), want_sum = 0;
    for (size_t i = 0; i < n_el; i++) {
      uint32_t want = ref_round(&f, s[i], g, n), b = get(dt, got, i);
      want_sum += (uint64_t)s[i];
      if (b != want && bad++ < 6)
        fprintf(stderr, "out %s %s: S=%lld g=%d n=%llu got %08x want %08x\n", schedc_dtype_name(dt), avg ? "avg" : "sum",
                (long long)s[i], g, (unsigned long long)n, b, want);
    }
    if (sum != want_sum && bad++ < 6) fprintf(stderr, "out: the identity sum differs\n");
    if (g_level >= SC_SIMD_AVX2) { /* the AVX2 loop on its own (the AVX-512 path uses it for these too) */
      static uint32_t v[N + 8];
      uint64_t vs = 3, w = 3;
      size_t d = sc_exact_out_avx2(dt, avg, (int)n, v, s, n_el, g, &vs);
      CHECK(d == n_el / 4 * 4);
      for (size_t i = 0; i < d; i++) w += (uint64_t)s[i], bad += get(dt, v, i) != get(dt, got, i);
      CHECK(vs == w);
    }
    if (g_level == SC_SIMD_AVX512 && dt == SCHEDC_F32 && !avg) {
      static float v[N + 8];
      uint64_t vs = 3, w = 3;
      size_t d = sc_exact_out_f32_avx512(v, s, n_el, ldexp(1.0, g), &vs);
      CHECK(d == n_el / 8 * 8);
      for (size_t i = 0; i < d; i++) w += (uint64_t)s[i], bad += get(dt, v, i) != get(dt, got, i);
      CHECK(vs == w);
    }
  }
  return bad;
}

/* ---- the exponent pass and the flags ---- */
static int check_stats(schedc_dtype dt) {
  enum { N = 1037 };
  fmt f = fmt_of(dt);
  static uint32_t bits[N];
  static unsigned char buf[N * 4];
  int bad = 0;
  for (int round = 0; round < 400; round++) {
    size_t n = N - (size_t)round % 9;
    int special = round % 5; /* 0: finite only; 1 NaN; 2 +Inf; 3 -Inf; 4 both infinities */
    for (size_t i = 0; i < n; i++) {
      bits[i] = finite_bits(&f, (uint32_t)next());
      if (round % 7 == 0) bits[i] &= f.sign | 0x3f; /* tiny ones only: subnormals, zeros */
    }
    if (round % 11 == 0)
      for (size_t i = 0; i < n; i++) bits[i] &= f.sign; /* every element ±0: no exponent */
    size_t at = (size_t)next() % n;
    if (special == 1) bits[at] = f.inf | 1 | (next() & 1 ? f.sign : 0);
    if (special == 2 || special == 4) bits[at] = f.inf;
    if (special == 3 || special == 4) bits[(at + 1) % n] = f.inf | f.sign;
    int E = SC_EXACT_NONE, nan = 0, pinf = 0, ninf = 0;
    for (size_t i = 0; i < n; i++) {
      uint32_t a = bits[i] & (f.sign - 1);
      put(dt, buf, i, bits[i]);
      if (a > f.inf) nan = 1;
      else if (a == f.inf) *(bits[i] & f.sign ? &ninf : &pinf) = 1;
      else if (a) {
        uint64_t m;
        int k;
        decomp(&f, a, &m, &k);
        if (k + bitlen(m) - 1 > E) E = k + bitlen(m) - 1;
      }
    }
    int64_t w[SC_EXACT_WORDS];
    sc_exact_stats(dt, buf, n, w);
    if ((w[0] != E || w[1] != nan || w[2] != pinf || w[3] != ninf) && bad++ < 5)
      fprintf(stderr, "stats %s round %d: got %lld %lld %lld %lld, want %d %d %d %d\n", schedc_dtype_name(dt), round,
              (long long)w[0], (long long)w[1], (long long)w[2], (long long)w[3], E, nan, pinf, ninf);
    if (g_level >= SC_SIMD_AVX2 && !special) { /* the vector pass on its own: the largest magnitude's bits */
      uint32_t amax = 0, want = 0;
      size_t d = g_level == SC_SIMD_AVX512 ? sc_exact_amax_avx512(dt, buf, n, &amax) : sc_exact_amax_avx2(dt, buf, n, &amax);
      size_t lanes = (g_level == SC_SIMD_AVX512 ? 64 : 32) / (size_t)f.bytes;
      CHECK(d == n / lanes * lanes);
      for (size_t i = 0; i < d; i++) want = (bits[i] & (f.sign - 1)) > want ? bits[i] & (f.sign - 1) : want;
      bad += amax != want;
    }
  }
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_exact_simd avx512|avx2|scalar (with SCHEDC_SIMD the same)\n"); return 2; }
  g_level = !strcmp(argv[1], "avx512") ? SC_SIMD_AVX512 : !strcmp(argv[1], "avx2") ? SC_SIMD_AVX2 : SC_SIMD_SCALAR;
  if (sc_simd_cpu() < g_level) {
    printf("[SKIP] this CPU has no %s path (it has %s)\n", argv[1], sc_simd_name(sc_simd_cpu()));
    return SC_SKIP_CODE;
  }
  if (sc_simd() != g_level) { /* the library's choice must be the path under test */
    fprintf(stderr, "FAIL: sc_simd() is %s; run with SCHEDC_SIMD=%s\n", sc_simd_name(sc_simd()), argv[1]);
    return 1;
  }
  for (int d = 0; d < 3; d++) {
    CHECK(check_in(DTS[d]) == 0);
    CHECK(check_out(DTS[d], 0) == 0);
    CHECK(check_out(DTS[d], 1) == 0);
    CHECK(check_stats(DTS[d]) == 0);
  }
  printf("exact conversions on the %s path checked\n", argv[1]);
  return DONE();
}
