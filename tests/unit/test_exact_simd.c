/*
 * test_exact_simd.c — exact mode's AVX-512 conversions (runtime/core/exact_simd.c) against
 * references written here: onto the grid with libm's nearbyint of the exact double x * 2^-g (to
 * nearest even); out through long double, which holds any int64 exactly, rounded to float once.
 * Skips (77) on a CPU without AVX-512 (the AVX2 and scalar loops run instead; test_exact covers them).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "cpufeat.h"
#include "exact_simd.h"
#include "kernels.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* A finite value of dt with an exponent near `e` (spread over 70 binades below), as f32. */
static float finite_near(int e) {
  float v = ldexpf(1.0f + (float)(next() % (1u << 23)) / (float)(1u << 23), e - (int)(next() % 70));
  if (next() % 16 == 0) v = ldexpf((float)(next() % 64), -149); /* subnormals and zeros */
  return next() & 1 ? -v : v;
}

static int check_in(schedc_dtype dt) {
  enum { N = 1003 };
  float x[N];
  uint16_t h[N];
  int64_t got[N];
  int bad = 0;
  for (int round = 0; round < 300; round++) {
    int e = (int)(next() % 250) - 125, hh = (int)(next() % 4);
    if (dt != SCHEDC_F32 && e > 14) e = 14; /* f16's range */
    for (int i = 0; i < N; i++) {
      x[i] = finite_near(e);
      if (dt == SCHEDC_F16) h[i] = sc_f32_to_f16(x[i]), x[i] = sc_f16_to_f32(h[i]);
      if (dt == SCHEDC_BF16) h[i] = sc_f32_to_bf16(x[i]), x[i] = sc_bf16_to_f32(h[i]);
    }
    int E = -200;
    for (int i = 0; i < N; i++)
      if (x[i] != 0) { int ex; frexpf(x[i], &ex); if (ex - 1 > E) E = ex - 1; }
    int g = E - 61 + hh;
    uint64_t sum = 7, want_sum = 7;
    size_t done = sc_exact_in_avx512(dt, got, dt == SCHEDC_F32 ? (const void *)x : (const void *)h, N, g, &sum);
    CHECK(done == N / 8 * 8);
    for (size_t i = 0; i < done; i++) want_sum += (uint64_t)got[i];
    CHECK(sum == want_sum); /* added to what *sum held */
    for (size_t i = 0; i < done; i++) {
      int64_t want = (int64_t)nearbyint(ldexp((double)x[i], -g)); /* exact product; libm's rounding */
      if (got[i] != want && bad++ < 5)
        fprintf(stderr, "in dt %d: x=%a g=%d got %lld want %lld\n", (int)dt, (double)x[i], g, (long long)got[i],
                (long long)want);
    }
  }
  return bad;
}

static int check_out(void) {
  enum { N = 997 };
  int64_t s[N];
  float got[N];
  int bad = 0;
  for (int round = 0; round < 400; round++) {
    int g = (int)(next() % 278) - 210; /* the grid's range: E - 61 + h for E in [-149, 127] */
    for (int i = 0; i < N; i++) {
      int bits = (int)(next() % 63);
      uint64_t m = bits ? next() >> (64 - bits) : 0;
      switch (next() % 5) {
      case 0: m = (m | 1ull << 40) & ~((1ull << 39) - 1); break; /* a tie at 24 bits when 2^63 > m >= 2^40 */
      case 1: m |= 1ull << 53; break;                             /* above 2^53: the fold to odd */
      case 2: { /* just above a float tie, by less than a double's last bit: rounding the int64 to
                 * double first would land on the tie and round it to even, down */
        int p = 54 + (int)(next() % 8);
        uint64_t m24 = (1ull << 23) | (next() & 0x7ffffeull);
        m = (m24 << (p - 23)) | (1ull << (p - 24)) | (1 + next() % ((1ull << (p - 53)) - 1 + 1));
        m &= ~(~0ull << (p - 52)) | (m24 << (p - 23)) | (1ull << (p - 24)); /* small part below the double's last bit */
        break;
      }
      default: break;
      }
      m &= (1ull << 62) - 1;
      s[i] = next() & 1 ? -(int64_t)m : (int64_t)m;
    }
    uint64_t sum = 0, want_sum = 0;
    size_t done = sc_exact_out_f32_avx512(got, s, N, ldexp(1.0, g), &sum);
    CHECK(done == N / 8 * 8);
    for (size_t i = 0; i < done; i++) want_sum += (uint64_t)s[i];
    CHECK(sum == want_sum);
    for (size_t i = 0; i < done; i++) {
      float want = (float)((long double)s[i] * ldexpl(1.0L, g)); /* exact, then one rounding */
      uint32_t a, b;
      memcpy(&a, &got[i], 4), memcpy(&b, &want, 4);
      if (a != b && bad++ < 5)
        fprintf(stderr, "out: s=%lld g=%d got %08x want %08x\n", (long long)s[i], g, (unsigned)a, (unsigned)b);
    }
  }
  return bad;
}

static void check_amax(void) {
  uint32_t x[1000], amax, want = 0;
  uint16_t y[1000];
  uint32_t amax16, want16 = 0;
  for (int i = 0; i < 1000; i++) x[i] = (uint32_t)next(), y[i] = (uint16_t)next();
  size_t d = sc_exact_amax_avx512(SCHEDC_F32, x, 1000, &amax);
  for (size_t i = 0; i < d; i++) want = (x[i] & 0x7fffffffu) > want ? x[i] & 0x7fffffffu : want;
  CHECK(d == 992 && amax == want);
  d = sc_exact_amax_avx512(SCHEDC_BF16, y, 1000, &amax16);
  for (size_t i = 0; i < d; i++) want16 = (y[i] & 0x7fffu) > want16 ? y[i] & 0x7fffu : want16;
  CHECK(d == 992 && amax16 == want16);
}

int main(void) {
  if (!sc_cpu_avx512()) {
    printf("skip: this CPU has no AVX-512\n");
    return 77;
  }
  CHECK(check_in(SCHEDC_F32) == 0);
  CHECK(check_in(SCHEDC_F16) == 0);
  CHECK(check_in(SCHEDC_BF16) == 0);
  CHECK(check_out() == 0);
  check_amax();
  return DONE();
}
