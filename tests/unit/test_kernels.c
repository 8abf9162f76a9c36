/*
 * test_kernels.c — the CPU reduce loops (sc_reduce_chain: vectorised, AVX2 clones chosen at run
 * time) against this file's own scalar reference, bit for bit: every built-in op (sum, avg, prod,
 * min, max) and accumulation type (f32, f64, i32, i64), one to three sources, in place and not,
 * every length 0..300 and a few long ones (past the 2 KiB prefetch blocks and the 512-element chain
 * blocks), starting at an odd element, over special values: ±0, ±inf, NaNs (quiet, signalling,
 * negative, with payloads), denormals, the extremes, and integer overflow (wraps). The rules: a
 * NaN result or input of min/max is the default quiet NaN; min/max order -0 < +0; integers wrap.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "kernels.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The reference, one element at a time, written from the rules (not from kernels.c). */
static uint32_t ref_f32(schedc_op op, uint32_t ua, uint32_t ub) {
  float a, b, r;
  memcpy(&a, &ua, 4);
  memcpy(&b, &ub, 4);
  if ((op == SCHEDC_MIN || op == SCHEDC_MAX) && (isnan(a) || isnan(b))) return 0x7fc00000u;
  if (op == SCHEDC_MIN) {
    if (a < b) return ua;
    if (b < a) return ub;
    return ua | ub; /* equal: only ±0 differ in bits; -0 wins */
  }
  if (op == SCHEDC_MAX) {
    if (a > b) return ua;
    if (b > a) return ub;
    return ua & ub; /* +0 wins */
  }
  r = op == SCHEDC_PROD ? a * b : a + b;
  if (isnan(r)) return 0x7fc00000u;
  uint32_t u;
  memcpy(&u, &r, 4);
  return u;
}
static uint64_t ref_f64(schedc_op op, uint64_t ua, uint64_t ub) {
  double a, b, r;
  memcpy(&a, &ua, 8);
  memcpy(&b, &ub, 8);
  if ((op == SCHEDC_MIN || op == SCHEDC_MAX) && (isnan(a) || isnan(b))) return 0x7ff8000000000000ull;
  if (op == SCHEDC_MIN) return a < b ? ua : b < a ? ub : ua | ub;
  if (op == SCHEDC_MAX) return a > b ? ua : b > a ? ub : ua & ub;
  r = op == SCHEDC_PROD ? a * b : a + b;
  if (isnan(r)) return 0x7ff8000000000000ull;
  uint64_t u;
  memcpy(&u, &r, 8);
  return u;
}
static uint32_t ref_i32(schedc_op op, uint32_t a, uint32_t b) {
  int32_t x = (int32_t)a, y = (int32_t)b;
  if (op == SCHEDC_MIN) return (uint32_t)(x < y ? x : y);
  if (op == SCHEDC_MAX) return (uint32_t)(x > y ? x : y);
  return op == SCHEDC_PROD ? a * b : a + b; /* wraps */
}
static uint64_t ref_i64(schedc_op op, uint64_t a, uint64_t b) {
  int64_t x = (int64_t)a, y = (int64_t)b;
  if (op == SCHEDC_MIN) return (uint64_t)(x < y ? x : y);
  if (op == SCHEDC_MAX) return (uint64_t)(x > y ? x : y);
  return op == SCHEDC_PROD ? a * b : a + b;
}

static const uint32_t sp32[] = {0, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00000u, 0x7fc12345u, 0x7f800001u, 0xff812345u, 0x7f7fffffu, 0xff7fffffu,
                                0x00800000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x40400000u, 0x3f000000u,
                                0x5f000000u, 0x1f000000u, 0x3f800001u};
static const uint64_t sp64[] = {0, 0x8000000000000000ull, 0x3ff0000000000000ull, 0xbff0000000000000ull,
                                0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
                                0xfff8000000000000ull, 0x7ff8000000012345ull, 0x7ff0000000000001ull,
                                0x7fefffffffffffffull, 0xffefffffffffffffull, 0x0010000000000000ull,
                                0x0000000000000001ull, 0x8000000000000001ull, 0x4008000000000000ull,
                                0x5fe0000000000000ull, 0x2000000000000000ull, 0x3ff0000000000001ull};
static const uint32_t spi32[] = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x10000u, 0xfffe0000u, 3, 0x40000000u};
static const uint64_t spi64[] = {0, 1, ~0ull, 0x8000000000000000ull, 0x7fffffffffffffffull, 0x100000000ull,
                                 0xffffffff00000000ull, 3, 0x4000000000000000ull, 0xffffffffull};

/* A value of width w (4 or 8): half the time a special one, else random bits (a quarter of those
 * small: equal values and ties are common). */
static uint64_t value(schedc_dtype t) {
  uint64_t r = next();
  int fl = t == SCHEDC_F32 || t == SCHEDC_F64;
  if (r & 1) {
    if (t == SCHEDC_F32) return sp32[(r >> 8) % (sizeof sp32 / 4)];
    if (t == SCHEDC_F64) return sp64[(r >> 8) % (sizeof sp64 / 8)];
    if (t == SCHEDC_I32) return spi32[(r >> 8) % (sizeof spi32 / 4)];
    return spi64[(r >> 8) % (sizeof spi64 / 8)];
  }
  if ((r & 6) == 0) return fl ? (t == SCHEDC_F32 ? 0x3f800000u + (r >> 60) : 0x3ff0000000000000ull + (r >> 60)) : r >> 61;
  uint64_t v = next();
  return t == SCHEDC_F32 || t == SCHEDC_I32 ? (uint32_t)v : v;
}

static uint64_t ref(schedc_dtype t, schedc_op op, uint64_t a, uint64_t b) {
  if (op == SCHEDC_AVG) op = SCHEDC_SUM; /* a chain of avg accumulates like sum (the division is sc_divide's) */
  switch (t) {
  case SCHEDC_F32: return ref_f32(op, (uint32_t)a, (uint32_t)b);
  case SCHEDC_F64: return ref_f64(op, a, b);
  case SCHEDC_I32: return ref_i32(op, (uint32_t)a, (uint32_t)b);
  default: return ref_i64(op, a, b);
  }
}

static uint64_t get(const char *p, size_t w, size_t i) {
  uint64_t v = 0;
  if (w == 4) { uint32_t u; memcpy(&u, p + i * 4, 4); v = u; }
  else memcpy(&v, p + i * 8, 8);
  return v;
}
static void put(char *p, size_t w, size_t i, uint64_t v) {
  if (w == 4) { uint32_t u = (uint32_t)v; memcpy(p + i * 4, &u, 4); }
  else memcpy(p + i * 8, &v, 8);
}

static int bad_reported;

/* One case: n sources, len elements starting at element `off` of each buffer; in place or not. */
static void one(schedc_dtype t, schedc_op op, int n, size_t len, size_t off, int inplace) {
  size_t w = schedc_dtype_size(t), cap = (len + off + 1) * w;
  char *a = malloc(cap), *d = malloc(cap), *src[3], *want = malloc(cap);
  for (int k = 0; k < 3; k++) src[k] = malloc(cap);
  for (size_t i = 0; i < len + off + 1; i++) {
    put(a, w, i, value(t));
    put(d, w, i, 0x5555555555555555ull);
    for (int k = 0; k < 3; k++) put(src[k], w, i, value(t));
  }
  for (size_t i = 0; i < len; i++) {
    uint64_t acc = get(a, w, off + i);
    for (int k = 0; k < n; k++) acc = ref(t, op, acc, get(src[k], w, off + i));
    put(want, w, i, acc);
  }
  const void *s[3] = {src[0] + off * w, src[1] + off * w, src[2] + off * w};
  char *dst = inplace ? a : d;
  uint64_t guard = get(dst, w, off + len);
  sc_reduce_chain(t, op, dst + off * w, a + off * w, s, n, len);
  int ok = memcmp(dst + off * w, want, len * w) == 0 && get(dst, w, off + len) == guard;
  CHECK(ok);
  if (!ok && bad_reported++ < 5) {
    for (size_t i = 0; i < len; i++)
      if (get(dst, w, off + i) != get(want, w, i)) {
        fprintf(stderr, "  %s %s, %d sources, len %zu, off %zu%s: element %zu is %#llx, want %#llx\n",
                schedc_dtype_name(t), schedc_op_name(op), n, len, off, inplace ? ", in place" : "", i,
                (unsigned long long)get(dst, w, off + i), (unsigned long long)get(want, w, i));
        break;
      }
  }
  free(a); free(d); free(want);
  for (int k = 0; k < 3; k++) free(src[k]);
}

int main(void) {
  const schedc_dtype types[] = {SCHEDC_F32, SCHEDC_F64, SCHEDC_I32, SCHEDC_I64};
  const schedc_op ops[] = {SCHEDC_SUM, SCHEDC_AVG, SCHEDC_PROD, SCHEDC_MIN, SCHEDC_MAX};
  for (int ti = 0; ti < 4; ti++)
    for (int oi = 0; oi < 5; oi++)
      for (int n = 1; n <= 3; n++) {
        for (size_t len = 0; len <= 300; len++) one(types[ti], ops[oi], n, len, len & 1, (int)(len % 3 == 0));
        const size_t longer[] = {511, 512, 513, 1029, 5000};
        for (int li = 0; li < 5; li++) one(types[ti], ops[oi], n, longer[li], (size_t)li & 1, li == 2);
      }
  /* The rules by name, in one place each (the sweep above finds them among random values). */
  CHECK(ref_f32(SCHEDC_MIN, 0x80000000u, 0) == 0x80000000u && ref_f32(SCHEDC_MIN, 0, 0x80000000u) == 0x80000000u);
  CHECK(ref_f32(SCHEDC_MAX, 0x80000000u, 0) == 0 && ref_f32(SCHEDC_MAX, 0, 0x80000000u) == 0);
  CHECK(ref_f32(SCHEDC_MIN, 0x7fc12345u, 0xff800000u) == 0x7fc00000u);
  float z[4] = {-0.0f, 0.0f, NAN, -INFINITY}, pz[4] = {0.0f, -0.0f, 1.0f, 2.0f}, out[4];
  const void *ps[1] = {pz};
  sc_reduce_chain(SCHEDC_F32, SCHEDC_MIN, out, z, ps, 1, 4);
  uint32_t ob[4];
  memcpy(ob, out, sizeof ob);
  CHECK(ob[0] == 0x80000000u && ob[1] == 0x80000000u && ob[2] == 0x7fc00000u && ob[3] == 0xff800000u);
  sc_reduce_chain(SCHEDC_F32, SCHEDC_MAX, out, z, ps, 1, 4);
  memcpy(ob, out, sizeof ob);
  CHECK(ob[0] == 0 && ob[1] == 0 && ob[2] == 0x7fc00000u && ob[3] == 0x40000000u);
  return DONE();
}
