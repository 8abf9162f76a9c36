/*
 * test_crc.c — the per-transfer checksum: sc_crc32c (three SSE4.2 lanes joined by a polynomial
 * shift, or a table) must equal this file's own bit-at-a-time CRC32C for every length and
 * alignment around the lane boundaries, the standard check value, and the combine rule; and
 * the public continuation (schedc_crc32c); the verification digest must be path-independent and catch every single-bit flip. The fused
 * reduce-and-hash (sc_reduce1_crc, the checksum mode's one-source f32 step) must give the sum's
 * bits (each element's IEEE sum, NaN as the default NaN, against this file's own loop) and the
 * reference CRC32C of the source and of the result, for every length 0..300 and NaN/Inf inputs.
 * The array conversions (sc_to_acc / sc_from_acc: vectorised bf16, F16C for f16) must give the
 * scalar functions' bits for every f16 and bf16 value and, narrowing, for f32 values at and around
 * every f16/bf16 value and rounding midpoint, NaNs with any payload (signalling too) and infinities.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "kernels.h"
#include "schedc/schedc.h"

/* Independent reference: one bit at a time, reflected Castagnoli polynomial. */
static uint32_t ref_crc32c(const unsigned char *b, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= b[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
  }
  return ~c;
}

int main(void) {
  CHECK(sc_crc32c("123456789", 9) == 0xe3069283u); /* the CRC-32C check value */
  CHECK(sc_crc32c_portable("123456789", 9) == 0xe3069283u);
  CHECK(sc_crc32c("", 0) == 0);
  size_t cap = 1 << 17;
  unsigned char *buf = malloc(cap + 16), *copy = malloc(cap + 16);
  uint64_t x = 0x243f6a8885a308d3ull;
  for (size_t i = 0; i < cap + 16; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; buf[i] = (unsigned char)x; }
  int bad = 0, lens = 0;
  size_t special[] = {767, 768, 769, 775, 776, 777, 783, 784, 1000, 4095, 4096, 4097, 65536 + 5, 1 << 17};
  for (size_t n = 0; n <= 2100 + sizeof special / sizeof special[0]; n++) {
    size_t len = n <= 2100 ? n : special[n - 2101];
    for (size_t off = 0; off < 8; off += len < 3000 ? 1 : 7) {
      uint32_t want = ref_crc32c(buf + off, len);
      bad += sc_crc32c(buf + off, len) != want;
      bad += sc_crc32c_portable(buf + off, len) != want;
      /* the copy-in's fused copy: the same CRC, and the bytes copied (to another alignment) */
      memset(copy, 0, len + 16);
      bad += sc_crc32c_copy(copy + 3, buf + off, len) != want || memcmp(copy + 3, buf + off, len) != 0;
      lens++;
    }
  }
  CHECK(bad == 0);
  CHECK(lens > 16000);
  /* combine: crc(A||B) from the parts, for split points across a 5000-byte buffer */
  int cbad = 0;
  for (size_t a = 0; a <= 5000; a += 37)
    cbad += sc_crc32c_combine(ref_crc32c(buf, a), ref_crc32c(buf + a, 5000 - a), 5000 - a) != ref_crc32c(buf, 5000);
  CHECK(cbad == 0);
  /* the public continuation (schedc_crc32c, what checkpoints carry): zlib's convention, any split */
  CHECK(schedc_crc32c(0, "123456789", 9) == 0xe3069283u && schedc_crc32c(0, "", 0) == 0);
  cbad = 0;
  for (size_t a = 0; a <= 5000; a += 37)
    cbad += schedc_crc32c(schedc_crc32c(0, buf, a), buf + a, 5000 - a) != ref_crc32c(buf, 5000) ||
            schedc_crc32c_combine(ref_crc32c(buf, a), ref_crc32c(buf + a, 5000 - a), 5000 - a) != ref_crc32c(buf, 5000);
  CHECK(cbad == 0);
  /* any single bit flipped changes the CRC (all 8192 bits of a 1 KiB payload) */
  uint32_t base = sc_crc32c(buf, 1024);
  int missed = 0;
  for (size_t bit = 0; bit < 8192; bit++) {
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    missed += sc_crc32c(buf, 1024) == base;
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  CHECK(missed == 0);
  /* the verification digest: hardware and table paths agree, the copying form copies and
   * gives the same value, and every single-bit flip of a 1 KiB + 5 buffer changes it */
  for (size_t len = 0; len < 300; len += 7) {
    uint64_t d = sc_verify_digest(NULL, buf + 3, len);
    CHECK(sc_verify_digest(copy, buf + 3, len) == d);
    CHECK(sc_verify_digest_portable(buf + 3, len) == d);
    CHECK(memcmp(copy, buf + 3, len) == 0);
  }
  /* the streaming copy (large buffers), at several alignments of the destination */
  size_t big = (5u << 20) + 13;
  unsigned char *bsrc = malloc(big + 64), *bdst = malloc(big + 64);
  for (size_t i = 0; i < big + 64; i++) bsrc[i] = (unsigned char)(i * 2654435761u >> 13);
  for (size_t off = 0; off < 24; off += 5) {
    memset(bdst, 0, big + 64);
    CHECK(sc_verify_digest(bdst + off, bsrc + 8, big) == sc_verify_digest_portable(bsrc + 8, big));
    CHECK(memcmp(bdst + off, bsrc + 8, big) == 0);
  }
  free(bsrc);
  free(bdst);
  uint64_t dbase = sc_verify_digest(NULL, buf, 1029);
  int dmissed = 0;
  for (size_t bit = 0; bit < 1029 * 8; bit++) {
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    dmissed += sc_verify_digest(NULL, buf, 1029) == dbase;
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  CHECK(dmissed == 0);
  free(buf);
  free(copy);
  /* sc_reduce1_crc: wherever sc_reduce1_crc_ok, one pass = the sum + the two CRCs */
  if (sc_reduce1_crc_ok(SCHEDC_F32, SCHEDC_SUM)) {
    enum { M = 300 };
    float fa[M], fs[M], fd[M], want[M];
    uint32_t xs = 12345;
    int badsum = 0;
    for (size_t len = 0; len <= M; len++) {
      for (size_t i = 0; i < len; i++) {
        xs ^= xs << 13; xs ^= xs >> 17; xs ^= xs << 5;
        fa[i] = (float)(int)(xs % 2001) / 7.0f;
        fs[i] = (float)(int)(xs >> 20) / 3.0f - 600.0f;
        if (xs % 53 == 0) fs[i] = NAN;
        if (xs % 59 == 0) fa[i] = INFINITY, fs[i] = -INFINITY; /* NaN from two infinities */
      }
      for (size_t i = 0; i < len; i++) {
        float r = fa[i] + fs[i];
        if (r != r) { uint32_t q = 0x7fc00000u; memcpy(&r, &q, 4); }
        want[i] = r;
      }
      uint32_t cs = 0, cd = 0;
      sc_reduce1_crc(SCHEDC_F32, SCHEDC_SUM, fd, fa, fs, len, &cs, &cd);
      badsum += memcmp(fd, want, len * 4) != 0;
      badsum += cs != ref_crc32c((const unsigned char *)fs, len * 4) || cd != ref_crc32c((const unsigned char *)fd, len * 4);
      sc_reduce1_crc(SCHEDC_F32, SCHEDC_AVG, fa, fa, fs, len, &cs, NULL); /* in place, no result CRC */
      badsum += memcmp(fa, want, len * 4) != 0 || cs != ref_crc32c((const unsigned char *)fs, len * 4);
    }
    CHECK(badsum == 0);
  }
  /* array conversions == the scalar functions, bit for bit */
  {
    enum { H = 65536 };
    uint16_t *h = malloc(H * 2), *h2 = malloc(16 * H * 2);
    uint32_t *w = malloc(16 * H * 4);
    int badconv = 0;
    for (uint32_t i = 0; i < H; i++) h[i] = (uint16_t)i;
    for (int t = 0; t < 2; t++) { /* every f16 / bf16 value widened */
      schedc_dtype dt = t ? SCHEDC_BF16 : SCHEDC_F16;
      sc_to_acc(dt, w, h, H);
      for (uint32_t i = 0; i < H; i++) {
        float f = t ? sc_bf16_to_f32(h[i]) : sc_f16_to_f32(h[i]);
        uint32_t want;
        memcpy(&want, &f, 4);
        badconv += w[i] != want;
      }
    }
    size_t m = 0; /* f32 inputs: around every f16 and bf16 value and midpoint, NaNs, strides */
    for (uint32_t i = 0; i < H; i++) {
      float a = sc_f16_to_f32((uint16_t)i), b = sc_bf16_to_f32((uint16_t)i);
      uint32_t ua, ub;
      memcpy(&ua, &a, 4);
      memcpy(&ub, &b, 4);
      w[m++] = ua; w[m++] = ua + 1; w[m++] = ua - 1; w[m++] = ua + 0x1000; /* f16 midpoint above */
      w[m++] = ua + 0xfff; w[m++] = ua + 0x1001;
      w[m++] = ub; w[m++] = ub + 0x8000; w[m++] = ub + 0x7fff; w[m++] = ub + 0x8001; /* bf16 midpoints */
      w[m++] = 0x7f800001u + i * 97u; w[m++] = 0xff800001u + i * 89u; /* NaNs, signalling too */
      w[m++] = i * 65537u; w[m++] = ~(i * 65537u); w[m++] = 0x477ff000u + (i & 0xff) - 0x80; /* f16 overflow edge */
      w[m++] = 0x33000000u + (i & 0xfff) - 0x800;                                          /* below the subnormals */
    }
    for (int t = 0; t < 2; t++) {
      schedc_dtype dt = t ? SCHEDC_BF16 : SCHEDC_F16;
      sc_from_acc(dt, h2, w, m);
      for (size_t i = 0; i < m; i++) {
        float f;
        memcpy(&f, &w[i], 4);
        badconv += h2[i] != (t ? sc_f32_to_bf16(f) : sc_f32_to_f16(f));
      }
    }
    if (badconv) fprintf(stderr, "conversions: %d values differ from the scalar functions\n", badconv);
    CHECK(badconv == 0);
    free(h);
    free(h2);
    free(w);
  }
  return DONE();
}
