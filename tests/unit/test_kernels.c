/*
 * test_kernels.c — the CPU reduce loops (sc_reduce_chain) and the f16/bf16 conversions (sc_to_acc,
 * sc_from_acc) on one vector path (SCHEDC_SIMD: ctest runs the test once per path; a path the CPU
 * lacks skips, 77) against this file's own scalar reference, bit for bit: every built-in op (sum,
 * avg, prod, min, max) and accumulation type (f32, f64, i32, i64), one to three sources, in place
 * and not, every length 0..300 and a few long ones (past the 2 KiB prefetch blocks and the
 * 512-element chain blocks), starting at an odd element, over special values: ±0, ±inf, NaNs
 * (quiet, signalling, negative, with payloads), denormals, the extremes, and integer overflow
 * (wraps). The rules: a NaN result or input of min/max is the default quiet NaN; min/max order
 * -0 < +0; integers wrap. Conversions: every f16 and bf16 pattern widened, and f32 values at, just
 * beside and between every pair of neighbouring 16-bit values narrowed (ties to even, overflow to
 * infinity, subnormals, NaNs quieted: exact_ref.h's rounding and the NaN rules of kernels.h).
 * Usage: test_kernels [avx512|avx2|scalar] (with SCHEDC_SIMD the same; none: the CPU's choice).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../exact_ref.h"
#include "cpufeat.h"
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

static uint64_t get_w(const char *p, size_t w, size_t i) {
  uint64_t v = 0;
  if (w == 4) { uint32_t u; memcpy(&u, p + i * 4, 4); v = u; }
  else memcpy(&v, p + i * 8, 8);
  return v;
}
static void put_w(char *p, size_t w, size_t i, uint64_t v) {
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
    put_w(a, w, i, value(t));
    put_w(d, w, i, 0x5555555555555555ull);
    for (int k = 0; k < 3; k++) put_w(src[k], w, i, value(t));
  }
  for (size_t i = 0; i < len; i++) {
    uint64_t acc = get_w(a, w, off + i);
    for (int k = 0; k < n; k++) acc = ref(t, op, acc, get_w(src[k], w, off + i));
    put_w(want, w, i, acc);
  }
  const void *s[3] = {src[0] + off * w, src[1] + off * w, src[2] + off * w};
  char *dst = inplace ? a : d;
  uint64_t guard = get_w(dst, w, off + len);
  sc_reduce_chain(t, op, dst + off * w, a + off * w, s, n, len);
  int ok = memcmp(dst + off * w, want, len * w) == 0 && get_w(dst, w, off + len) == guard;
  CHECK(ok);
  if (!ok && bad_reported++ < 5) {
    for (size_t i = 0; i < len; i++)
      if (get_w(dst, w, off + i) != get_w(want, w, i)) {
        fprintf(stderr, "  %s %s, %d sources, len %zu, off %zu%s: element %zu is %#llx, want %#llx\n",
                schedc_dtype_name(t), schedc_op_name(op), n, len, off, inplace ? ", in place" : "", i,
                (unsigned long long)get_w(dst, w, off + i), (unsigned long long)get_w(want, w, i));
        break;
      }
  }
  free(a); free(d); free(want);
  for (int k = 0; k < 3; k++) free(src[k]);
}

/* ---- f16/bf16 <-> f32 ---- */

/* The f32 bits of a 16-bit pattern widened: its value exactly (exact_ref.h's rounding of a value
 * f32 holds is that value); an f16 NaN or infinity keeps sign and payload (sign | 0x7f800000 |
 * man << 13: a signalling NaN stays signalling), bf16 is the top half of an f32 anyway. */
static uint32_t ref_widen(schedc_dtype dt, uint32_t h) {
  if (dt == SCHEDC_BF16) return h << 16;
  fmt f = fmt_of(dt), f32 = fmt_of(SCHEDC_F32);
  uint32_t sign = h & 0x8000u ? 0x80000000u : 0;
  if ((h & 0x7c00u) == 0x7c00u) return sign | 0x7f800000u | (h & 0x3ffu) << 13;
  uint64_t m;
  int k;
  decomp(&f, h & 0x7fffu, &m, &k);
  return m ? ref_round(&f32, (i128)m, k, 1) | sign : sign;
}
/* An f32 narrowed: rounded once to nearest even (subnormals kept, past the largest finite value
 * the infinity, a nonzero value that rounds to zero keeps its sign); a NaN becomes quiet: f16
 * sign | 0x7e00, bf16 its top half with the quiet bit set. */
static uint32_t ref_narrow(schedc_dtype dt, uint32_t u) {
  fmt f = fmt_of(dt), f32 = fmt_of(SCHEDC_F32);
  uint32_t sign = u & 0x80000000u ? 0x8000u : 0, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return dt == SCHEDC_F16 ? sign | 0x7e00u : (u >> 16) | 0x40u;
  if (a == 0x7f800000u) return sign | f.inf;
  uint64_t m;
  int k;
  decomp(&f32, a, &m, &k);
  return m ? ref_round(&f, u >> 31 ? -(i128)m : (i128)m, k, 1) : sign;
}

static void conversions(schedc_dtype dt) {
  enum { N = 65536 * 6 + 3 };
  uint16_t *h = malloc(N * 2 + 16), *h2 = malloc(N * 2 + 16);
  uint32_t *w = malloc(N * 4 + 32), *x = malloc(N * 4 + 32);
  int bad = 0;
  /* widening: every pattern, at an odd start (the vector loops' tails and alignments) */
  for (uint32_t i = 0; i < 65536; i++) h[1 + i] = (uint16_t)i;
  sc_to_acc(dt, w + 1, h + 1, 65536);
  for (uint32_t i = 0; i < 65536; i++)
    if (w[1 + i] != ref_widen(dt, i) && bad++ < 5)
      fprintf(stderr, "widen %s %04x: got %08x, want %08x\n", schedc_dtype_name(dt), i, w[1 + i], ref_widen(dt, i));
  /* narrowing: per pattern its f32 value, the midpoint to the next pattern up (a tie), and one
   * f32 ulp either side of that midpoint; NaN patterns give NaNs with payloads; plus the f32
   * specials and random words */
  size_t n = 0;
  for (uint32_t i = 0; i < 65536; i++) {
    uint32_t v = ref_widen(dt, i), up = ref_widen(dt, (i & 0x7fffu) == 0x7fffu ? i : i + 1);
    x[n++] = v;
    uint32_t mid = (v & 0x7fffffffu) < 0x7f800000u && (up & 0x7fffffffu) <= 0x7f800000u && (i & 0x7fffu) != 0x7fffu
                       ? (uint32_t)(((uint64_t)v + up) / 2) : v; /* same sign: the bit patterns are monotone */
    x[n++] = mid, x[n++] = mid + 1, x[n++] = mid - 1;
    x[n++] = v ^ (uint32_t)(next() & 0x1fffu); /* the bits below a 16-bit value's last one, random */
    x[n++] = (uint32_t)next();
  }
  for (size_t i = 0; i < sizeof sp32 / 4 && n < N; i++) x[n++] = sp32[i];
  while (n < N) x[n++] = (uint32_t)next();
  sc_from_acc(dt, h2 + 1, x, n);
  for (size_t i = 0; i < n; i++)
    if (h2[1 + i] != ref_narrow(dt, x[i]) && bad++ < 10)
      fprintf(stderr, "narrow %s %08x: got %04x, want %04x\n", schedc_dtype_name(dt), x[i], h2[1 + i], ref_narrow(dt, x[i]));
  /* every length up to 40 (tails of every size), in place of the arrays' starts */
  for (size_t len = 0; len <= 40; len++) {
    sc_from_acc(dt, h2, x + 7, len);
    sc_to_acc(dt, w, h + 3, len);
    for (size_t i = 0; i < len; i++) bad += h2[i] != ref_narrow(dt, x[7 + i]) || w[i] != ref_widen(dt, h[3 + i]);
  }
  CHECK(bad == 0);
  free(h), free(h2), free(w), free(x);
}

int main(int argc, char **argv) {
  if (argc > 1) { /* the path under test: the CPU must have it and SCHEDC_SIMD must have chosen it */
    sc_simd_level want = !strcmp(argv[1], "avx512") ? SC_SIMD_AVX512 : !strcmp(argv[1], "avx2") ? SC_SIMD_AVX2 : SC_SIMD_SCALAR;
    if (sc_simd_cpu() < want) {
      printf("[SKIP] this CPU has no %s path (it has %s)\n", argv[1], sc_simd_name(sc_simd_cpu()));
      return SC_SKIP_CODE;
    }
    if (sc_simd() != want) {
      fprintf(stderr, "FAIL: sc_simd() is %s; run with SCHEDC_SIMD=%s\n", sc_simd_name(sc_simd()), argv[1]);
      return 1;
    }
  }
  conversions(SCHEDC_F16);
  conversions(SCHEDC_BF16);
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
