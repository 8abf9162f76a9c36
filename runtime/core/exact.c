/*
 * exact.c — exact mode's grid and conversions (exact.h; docs/determinism.md "Exact mode"). The
 * grid: g = E - 61 + ceil(log2 n), E the largest exponent of any rank's finite nonzero input, from
 * one max exchange (max is exact, so every plan gives every rank the same E). Each input becomes
 * q = round(x / 2^g) (ties to even), |q| <= 2^(62 - ceil(log2 n)), so n of them sum to at most
 * 2^62 in magnitude in any order: no overflow, and integer addition is associative. The sum goes
 * back to the data type rounded once, from the exact integer (avg: from the exact quotient). The
 * loops here are the scalar path and the tails; whole vectors go to exact_avx2.c or exact_simd.c
 * (AVX-512) on those paths (sc_simd(), cpufeat.h), with the same bits.
 */
#include <math.h>
#include <string.h>

#include "cpufeat.h"
#include "exact.h"
#include "exact_simd.h"
#include "kernels.h"
#include "quant.h"

/* ---- the formats: significand bits (with the hidden one), smallest normal exponent, bits ---- */
typedef struct fmt { int p, emin; uint32_t inf, sign, qnan; } fmt;
static const fmt F32 = {24, -126, 0x7f800000u, 0x80000000u, 0x7fc00000u};
static const fmt F16 = {11, -14, 0x7c00u, 0x8000u, 0x7e00u};
static const fmt BF16 = {8, -126, 0x7f80u, 0x8000u, 0x7fc0u};
static const fmt *fmt_of(schedc_dtype dt) { return dt == SCHEDC_F16 ? &F16 : dt == SCHEDC_BF16 ? &BF16 : &F32; }

uint32_t sc_exact_round(schedc_dtype dt, int neg, uint64_t m, int e, int sticky) {
  const fmt *f = fmt_of(dt);
  if (!m) return 0; /* an exact zero is +0 (sticky is never set without m) */
  int L = 64 - __builtin_clzll(m), top = e + L - 1;
  int lsb = (top >= f->emin ? top : f->emin) - (f->p - 1); /* the result's last bit: normal, or subnormal */
  int s = lsb - e;
  uint64_t mant;
  if (s <= 0) {
    mant = m << -s; /* exact: -s <= p - 1 */
  } else if (s > 64) {
    mant = 0; /* m < 2^64 <= half of the last bit: rounds to zero */
  } else {
    uint64_t rem = s == 64 ? m : m & ((1ull << s) - 1), half = 1ull << (s - 1);
    mant = s == 64 ? 0 : m >> s;
    if (rem > half || (rem == half && (sticky || (mant & 1)))) mant++;
  }
  /* exponent field - 1 for normals, 0 for subnormals; a carry out of the significand moves the
   * exponent up by itself, and past the largest finite value gives the infinity's bits */
  uint64_t bits = ((uint64_t)(lsb - (f->emin - (f->p - 1))) << (f->p - 1)) + mant;
  if (bits >= f->inf) bits = f->inf;
  return (uint32_t)bits | (neg ? f->sign : 0);
}

/* ---- the stats a rank contributes to the exchange ---- */

/* floor(log2 |x|) of a finite nonzero value of the format, from its magnitude bits a. */
static int expo_of(const fmt *f, uint32_t a) {
  int mb = f->p - 1, bias = -f->emin + 1;
  uint32_t ef = a >> mb;
  if (ef) return (int)ef - bias;
  return (31 - __builtin_clz(a)) - (bias - 1 + mb); /* subnormal: a * 2^(emin - mb) */
}

static uint32_t elem_bits(schedc_dtype dt, const void *x, size_t i) {
  if (dt == SCHEDC_F32) return ((const uint32_t *)x)[i];
  return ((const uint16_t *)x)[i];
}

void sc_exact_stats(schedc_dtype dt, const void *x, size_t n, int64_t w[SC_EXACT_WORDS]) {
  const fmt *f = fmt_of(dt);
  uint32_t mag = ~f->sign & (dt == SCHEDC_F32 ? 0xffffffffu : 0xffffu), amax = 0;
  /* the common case in one vectorisable pass: the largest magnitude's bits (NaN > Inf > finite) */
  size_t i0 = sc_cpu_avx512() ? sc_exact_amax_avx512(dt, x, n, &amax) : sc_cpu_avx2() ? sc_exact_amax_avx2(dt, x, n, &amax) : 0;
  if (dt == SCHEDC_F32) {
    const uint32_t *p = x;
    for (size_t i = i0; i < n; i++) { uint32_t a = p[i] & mag; amax = a > amax ? a : amax; }
  } else {
    const uint16_t *p = x;
    for (size_t i = i0; i < n; i++) { uint32_t a = p[i] & mag; amax = a > amax ? a : amax; }
  }
  w[0] = SC_EXACT_NONE;
  w[1] = w[2] = w[3] = w[4] = w[5] = 0;
  if (amax < f->inf) {
    if (amax) w[0] = expo_of(f, amax);
    return;
  }
  /* some NaN or infinity: classify every element (rare) */
  uint32_t fmax = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t b = elem_bits(dt, x, i), a = b & mag;
    if (a > f->inf) w[1] = 1;
    else if (a == f->inf) w[(b & f->sign) ? 3 : 2] = 1;
    else if (a > fmax) fmax = a;
  }
  if (fmax) w[0] = expo_of(f, fmax);
}

void sc_exact_grid(sc_exact *ex, const int64_t w[SC_EXACT_WORDS], int nterms) {
  int h = 0;
  while ((1ll << h) < nterms) h++;
  ex->nterms = nterms;
  ex->special = w[1] || (w[2] && w[3]) ? SC_EXACT_NAN : w[2] ? SC_EXACT_PINF : w[3] ? SC_EXACT_NINF : SC_EXACT_FINITE;
  ex->g = w[0] == SC_EXACT_NONE ? 0 : (int)w[0] - 61 + h;
  ex->ready = 1;
}

/* ---- in: onto the grid ---- */

/* x * 2^-g is exact in double (24 significant bits, |x 2^-g| < 2^62, far from double's limits);
 * below 2^51 adding and taking away 1.5 * 2^52 rounds it to an integer, to nearest, ties to even
 * (the default rounding mode); at or above 2^51 it is an integer already (its last bit is at least
 * 2^(51 - 23)). */
static inline int64_t to_grid(double v) {
  double r = fabs(v) < 0x1p51 ? (v + 0x1.8p52) - 0x1.8p52 : v;
  return (int64_t)r;
}

/* f32 onto the grid with integers only, branch-free (exact_avx2.c's loop is this, four lanes at a time):
 * x = ±m 2^k (k its last bit's exponent); sh = k - g >= 0: m << sh (< 2^62); else m shifted right
 * by s = g - k, to nearest, ties to even (adding half - 1, plus the bit that becomes the last);
 * s is capped at 40, where m < 2^24 gives 0 as any larger s does. The same q as to_grid. Returns
 * the wrapping sum of the q (the identity check's, in passing). */
static uint64_t in_f32(int64_t *restrict dst, const uint32_t *restrict u, size_t n, int g) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t a = u[i] & 0x7fffffffu, ef = a >> 23;
    int64_t m = (int64_t)((a & 0x7fffffu) | (ef ? 0x800000u : 0));
    int64_t sh = (int64_t)(ef ? ef : 1) - 150 - g;
    int64_t s = sh < 0 ? -sh : 0;
    s = s > 40 ? 40 : s;
    int64_t up = m << (sh > 0 ? sh : 0);
    int64_t half = ((int64_t)1 << s) >> 1;
    int64_t dn = (m + (half - (s > 0)) + ((m >> s) & (s > 0))) >> s;
    int64_t q = sh >= 0 ? up : dn;
    dst[i] = (u[i] >> 31) ? -q : q;
    sum += (uint64_t)dst[i];
  }
  return sum;
}

static uint64_t in_one(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n, int want);

/* Leaves: each leaf onto the grid on its own (as it would be on a rank of its own), then summed:
 * the integers are the same whichever rank holds which leaf. In blocks, through a stack buffer.
 * With want, returns the sum of what it wrote: every leaf's integers' sum (mod 2^64). */
static uint64_t in_leaves(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n, int want) {
  if (ex->special || ex->nleaves <= 1) return in_one(ex, dt, dst, src, n, want);
  size_t esz = schedc_dtype_size(dt);
  int64_t tmp[512];
  uint64_t sum = 0;
  for (size_t lo = 0; lo < n; lo += 512) {
    size_t len = n - lo < 512 ? n - lo : 512;
    sum += in_one(ex, dt, dst + lo, (const char *)src + lo * esz, len, want);
    for (int j = 1; j < ex->nleaves; j++) {
      sum += in_one(ex, dt, tmp, (const char *)src + ((size_t)j * n + lo) * esz, len, want);
      for (size_t i = 0; i < len; i++) dst[lo + i] = (int64_t)((uint64_t)dst[lo + i] + (uint64_t)tmp[i]);
    }
  }
  return sum;
}

uint64_t sc_exact_in_summed(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n) {
  if (ex->wire) return sc_quant_in(ex, dt, dst, src, n); /* a quantized call: its wire's integers */
  return in_leaves(ex, dt, dst, src, n, 1);
}
void sc_exact_in(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n) {
  if (ex->wire) sc_quant_in(ex, dt, dst, src, n);
  else in_leaves(ex, dt, dst, src, n, 0);
}

uint64_t sc_exact_isum(const int64_t *x, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s += (uint64_t)x[i];
  return s;
}


/* One input onto the grid; with want, returns the wrapping sum of what it wrote (else 0, or that
 * sum: the scalar loops take it anyway). */
static uint64_t in_one(const sc_exact *ex, schedc_dtype dt, int64_t *dst, const void *src, size_t n, int want) {
  if (ex->special) { /* the result is NaN or an infinity whatever the sums: zeros travel */
    memset(dst, 0, n * sizeof *dst);
    return 0;
  }
  double scale = ldexp(1.0, -ex->g);
  uint64_t sum = 0;
  if (sc_cpu_avx2()) { /* every type, eight lanes (AVX-512) or four; the scalar loops below finish */
    size_t done = sc_cpu_avx512() ? sc_exact_in_avx512(dt, dst, src, n, ex->g, want ? &sum : NULL)
                                  : sc_exact_in_avx2(dt, dst, src, n, ex->g, want ? &sum : NULL);
    dst += done, n -= done, src = (const char *)src + done * schedc_dtype_size(dt);
  }
  if (dt == SCHEDC_F32) {
    sum += in_f32(dst, src, n, ex->g);
  } else if (dt == SCHEDC_F16) {
    const uint16_t *x = src;
    for (size_t i = 0; i < n; i++) sum += (uint64_t)(dst[i] = to_grid((double)sc_f16_to_f32(x[i]) * scale));
  } else {
    const uint16_t *x = src;
    for (size_t i = 0; i < n; i++) sum += (uint64_t)(dst[i] = to_grid((double)sc_bf16_to_f32(x[i]) * scale));
  }
  return sum;
}

/* ---- out: rounded once ---- */

/* avg: the exact quotient |s| / n (1 <= n < 2^31) as m * 2^e plus a sticky bit (the remainder),
 * by long division in 32-bit digits until m has at least 33 significant bits: every format keeps
 * at most 24, so the rounding point lies inside m and the sticky bit decides ties exactly. (Taking
 * 32 fraction bits only, as this once did, left m as short as 13 bits for |s| < n: a count above
 * 256 truncated the quotient.) The same long division as cuda_device.cuh's sc_xavg. */
static uint32_t avg_bits(schedc_dtype dt, int64_t s, int n, int g) {
  uint64_t a = s < 0 ? 0 - (uint64_t)s : (uint64_t)s, un = (uint64_t)n, m = a / un, r = a % un;
  int e = g;
  if (!a) return 0; /* +0 */
  while (m < (1ull << 32)) { /* at most twice: a >= 1 and n < 2^31 give m >= 2^33 after two digits */
    uint64_t t = r << 32; /* r < n < 2^31: no overflow */
    m = (m << 32) | (t / un), r = t % un, e -= 32;
  }
  return sc_exact_round(dt, s < 0, m, e, r != 0);
}

static uint64_t out_all(const sc_exact *ex, schedc_dtype dt, void *dst, const int64_t *src, size_t n, int want);
void sc_exact_out(const sc_exact *ex, schedc_dtype dt, void *dst, const int64_t *src, size_t n) {
  if (ex->wire) sc_quant_out(ex, dt, dst, src, n);
  else out_all(ex, dt, dst, src, n, 0);
}
uint64_t sc_exact_out_summed(const sc_exact *ex, schedc_dtype dt, void *dst, const int64_t *src, size_t n) {
  if (ex->wire) return sc_quant_out(ex, dt, dst, src, n); /* a quantized call: its wire's integers */
  return out_all(ex, dt, dst, src, n, 1);
}

/* Out, rounded once; with want, returns the integers' wrapping sum (else 0, or that sum: the
 * scalar loops take it anyway). */
static uint64_t out_all(const sc_exact *ex, schedc_dtype dt, void *dst, const int64_t *src, size_t n, int want) {
  int nranks = ex->nterms; /* avg: ranks, or ranks x leaves */
  const fmt *f = fmt_of(dt);
  int avg = ex->op == SCHEDC_AVG_EXACT;
  uint64_t sum = 0;
  if (ex->special) { /* the integers are zeros (in_one), unless something corrupted them: summed all the same */
    uint32_t v = ex->special == SC_EXACT_NAN ? f->qnan : ex->special == SC_EXACT_PINF ? f->inf : f->inf | f->sign;
    for (size_t i = 0; i < n; i++) {
      sum += (uint64_t)src[i];
      if (dt == SCHEDC_F32) ((uint32_t *)dst)[i] = v;
      else ((uint16_t *)dst)[i] = (uint16_t)v;
    }
    return sum;
  }
  int g = ex->g;
  if (avg && !(nranks & (nranks - 1))) { /* n = 2^k: the quotient S 2^(g-k) is exact, a sum's rounding */
    avg = 0;
    while (nranks > 1) nranks >>= 1, g--;
  }
  uint64_t *ws = want ? &sum : NULL;
  if (sc_cpu_avx2()) { /* whole vectors (f32 sums eight lanes at a time with AVX-512); the loops below finish */
    size_t done = sc_cpu_avx512() && dt == SCHEDC_F32 && !avg ? sc_exact_out_f32_avx512(dst, src, n, ldexp(1.0, g), ws)
                                                              : sc_exact_out_avx2(dt, avg, nranks, dst, src, n, g, ws);
    dst = (char *)dst + done * schedc_dtype_size(dt), src += done, n -= done;
  }
  if (dt == SCHEDC_F32 && !avg) {
    float *y = dst;
    double scale = ldexp(1.0, g); /* 2^g: g in [-210, 97], a double */
    /* Below 2^53 the double s * 2^g is exact and its conversion to float the one rounding. At or
     * above (|s| < 2^63), bits 0..10 are folded into bit 11 (rounded to odd there: bit 11 set when
     * any is), which the double holds exactly; a float's last bit is then at bit 30 or higher, and
     * rounding to odd at least two bits below the target precision does not change a round to
     * nearest even (nor where it overflows to infinity). */
    for (size_t i = 0; i < n; i++) {
      int64_t s = src[i];
      sum += (uint64_t)s;
      int64_t a = s < 0 ? -s : s;
      int64_t odd = (a & ~(int64_t)0x7ff) | ((a & 0x7ff) ? 0x800 : 0);
      int64_t t = a < ((int64_t)1 << 53) ? a : odd;
      y[i] = (float)((double)(s < 0 ? -t : t) * scale);
    }
    return sum;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t s = src[i];
    sum += (uint64_t)s;
    uint32_t b = avg ? avg_bits(dt, s, nranks, g)
                     : sc_exact_round(dt, s < 0, s < 0 ? 0 - (uint64_t)s : (uint64_t)s, g, 0);
    if (dt == SCHEDC_F32) ((uint32_t *)dst)[i] = b;
    else ((uint16_t *)dst)[i] = (uint16_t)b;
  }
  return sum;
}
