/*
 * crc32c.c — CRC32C (Castagnoli, reflected polynomial 0x82F63B78, initial and final value all
 * ones) of a transfer's payload, for SCHEDC_VERIFY=checksum. With SSE4.2 the payload is split
 * into three contiguous lanes hashed by interleaved crc32 instructions (the instruction's
 * latency is three cycles, its throughput one), then the lane CRCs are joined exactly with the
 * polynomial shift below, so the value is the plain CRC32C of the whole payload on every path.
 * Also the digest the verification compares across ranks (sc_verify_digest), built from CRC
 * chains so that it runs at the instruction's speed and can be fused into the finishing copy.
 */
#include "crc.h"

#include <string.h>

#define POLY 0x82f63b78u
/* How far ahead the hashing passes prefetch (bytes): far enough to cover DRAM's latency at the
 * CRC instruction's pace; prefetching past the end of a buffer does not fault. */
#define SC_DIGEST_AHEAD 2048

static uint32_t table[256];
static uint32_t x2n[64]; /* x^(2^k) mod P, bit-reflected: x^1 = 1 << 30 */

/* a * b mod P for reflected 32-bit polynomials (bit 31 is x^0). */
static uint32_t mulmod(uint32_t a, uint32_t b) {
  uint32_t p = 0;
  for (uint32_t m = 1u << 31; m; m >>= 1) {
    if (a & m) p ^= b;
    b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
  }
  return p;
}

static void init_tables(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
    table[i] = c;
  }
  x2n[0] = 1u << 30;
  for (int k = 1; k < 64; k++) x2n[k] = mulmod(x2n[k - 1], x2n[k - 1]);
}

/* Tables are built once, before any thread can ask (constructor), so reads need no lock. */
__attribute__((constructor)) static void crc_ctor(void) { init_tables(); }

/* CRC of A||B from crc(A), crc(B) and |B|: crc(A) * x^(8|B|) xor crc(B). */
uint32_t sc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b) {
  uint32_t shift = 1u << 31; /* x^0 */
  uint64_t n = (uint64_t)len_b;
  for (int k = 3; n; n >>= 1, k++)
    if (n & 1) shift = mulmod(x2n[k & 63], shift);
  return mulmod(shift, crc_a) ^ crc_b;
}

static uint32_t sw_update(uint32_t c, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) c = table[(c ^ b[i]) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t hw_update(uint32_t c, const unsigned char *b, size_t n) {
  uint64_t x = c;
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    x = __builtin_ia32_crc32di(x, w);
  }
  c = (uint32_t)x;
  for (; n; n--, b++) c = __builtin_ia32_crc32qi(c, *b);
  return c;
}

/* Three lanes read 2 KiB ahead (SC_DIGEST_AHEAD): 64 MiB from DRAM hashed at 12.5 GB/s without,
 * 22 GB/s with (docs/performance.md). */
static inline void prefetch3(const unsigned char *a, const unsigned char *b, const unsigned char *c) {
  __builtin_prefetch(a + SC_DIGEST_AHEAD);
  __builtin_prefetch(b + SC_DIGEST_AHEAD);
  __builtin_prefetch(c + SC_DIGEST_AHEAD);
}

/* Three lanes of `part` bytes each, interleaved, then the tail on the last lane. */
__attribute__((target("sse4.2"))) static uint32_t hw_crc(const unsigned char *b, size_t n) {
  size_t part = n / 3 & ~(size_t)7;
  if (part < 256) return ~hw_update(~0u, b, n);
  uint64_t a = ~0u, m = ~0u, z = ~0u;
  const unsigned char *p0 = b, *p1 = b + part, *p2 = b + 2 * part;
  for (size_t i = 0; i < part; i += 8) {
    uint64_t w0, w1, w2;
    if (!(i & 63)) prefetch3(p0 + i, p1 + i, p2 + i); /* once per 64-byte line of each lane */
    memcpy(&w0, p0 + i, 8);
    memcpy(&w1, p1 + i, 8);
    memcpy(&w2, p2 + i, 8);
    a = __builtin_ia32_crc32di(a, w0);
    m = __builtin_ia32_crc32di(m, w1);
    z = __builtin_ia32_crc32di(z, w2);
  }
  uint32_t c2 = ~hw_update((uint32_t)z, p2 + part, n - 3 * part);
  uint32_t c01 = sc_crc32c_combine(~(uint32_t)a, ~(uint32_t)m, part);
  return sc_crc32c_combine(c01, c2, n - 2 * part);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
/* Copy with the CRC of the bytes copied, three lanes (hw_crc's) in one pass. */
__attribute__((target("sse4.2"))) static uint32_t hw_crc_copy(unsigned char *d, const unsigned char *b, size_t n) {
  size_t part = n / 3 & ~(size_t)7;
  if (part < 256) {
    memcpy(d, b, n);
    return ~hw_update(~0u, d, n);
  }
  uint64_t a = ~0u, m = ~0u, z = ~0u;
  const unsigned char *p0 = b, *p1 = b + part, *p2 = b + 2 * part;
  unsigned char *q0 = d, *q1 = d + part, *q2 = d + 2 * part;
  for (size_t i = 0; i < part; i += 8) {
    uint64_t w0, w1, w2;
    if (!(i & 63)) prefetch3(p0 + i, p1 + i, p2 + i); /* once per 64-byte line of each lane */
    memcpy(&w0, p0 + i, 8);
    memcpy(&w1, p1 + i, 8);
    memcpy(&w2, p2 + i, 8);
    memcpy(q0 + i, &w0, 8);
    memcpy(q1 + i, &w1, 8);
    memcpy(q2 + i, &w2, 8);
    a = __builtin_ia32_crc32di(a, w0);
    m = __builtin_ia32_crc32di(m, w1);
    z = __builtin_ia32_crc32di(z, w2);
  }
  memcpy(q2 + part, p2 + part, n - 3 * part);
  uint32_t c2 = ~hw_update((uint32_t)z, p2 + part, n - 3 * part);
  uint32_t c01 = sc_crc32c_combine(~(uint32_t)a, ~(uint32_t)m, part);
  return sc_crc32c_combine(c01, c2, n - 2 * part);
}
#endif

uint32_t sc_crc32c_copy(void *dst, const void *src, size_t n) {
  if (dst == src) return sc_crc32c(src, n);
  const char *d = dst, *s = src;
  if (d < s + n && s < d + n) { /* overlapping: move, then hash */
    memmove(dst, src, n);
    return sc_crc32c(dst, n);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("sse4.2")) return hw_crc_copy(dst, src, n);
#endif
  memcpy(dst, src, n);
  return sc_crc32c(dst, n);
}

uint32_t sc_crc32c(const void *p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("sse4.2")) return hw_crc(p, n);
#endif
  return ~sw_update(~0u, p, n);
}

uint32_t sc_crc32c_portable(const void *p, size_t n) { return ~sw_update(~0u, p, n); }

/* Four CRC32C chains over the 8-byte words w[i], chain i % 4 (independent, so they overlap),
 * the tail bytes on chain 0; the 64-bit value pairs chains 0/2 and 1/3. A single flipped bit
 * changes exactly one chain, so it always changes the digest. Copies src to dst when dst. */
#define DIGEST_INIT(n) {~(uint32_t)(n), ~0u, 0x9e3779b9u, 0x7f4a7c15u}
static inline uint64_t digest_final(const uint32_t h[4]) {
  uint64_t hi = h[0] ^ (h[2] << 16 | h[2] >> 16), lo = h[1] ^ (h[3] << 16 | h[3] >> 16);
  return hi << 32 | lo;
}
/* The chains are four scalars, not an array indexed in a loop: gcc kept such an array on the
 * stack, so every CRC step waited for a store and a reload. And the pass prefetches 2 KiB ahead:
 * four short CRC chains over one stream did not keep enough reads in flight from DRAM. 64 MiB
 * from DRAM: 4.3-5.9 GB/s before, 12.7-15.9 GB/s after (docs/performance.md). */
#define DIGEST_BODY(UPD8, UPD1)                                                                   \
  const uint32_t h_init[4] = DIGEST_INIT(n);                                                      \
  uint32_t h0 = h_init[0], h1 = h_init[1], h2 = h_init[2], h3 = h_init[3];                        \
  size_t i = 0;                                                                                   \
  for (; i + 32 <= n; i += 32) {                                                                  \
    uint64_t w0, w1, w2, w3;                                                                      \
    memcpy(&w0, src + i, 8);                                                                      \
    memcpy(&w1, src + i + 8, 8);                                                                  \
    memcpy(&w2, src + i + 16, 8);                                                                 \
    memcpy(&w3, src + i + 24, 8);                                                                 \
    __builtin_prefetch(src + i + SC_DIGEST_AHEAD);                                                \
    if (dst) memcpy(dst + i, src + i, 32);                                                        \
    h0 = UPD8(h0, w0);                                                                            \
    h1 = UPD8(h1, w1);                                                                            \
    h2 = UPD8(h2, w2);                                                                            \
    h3 = UPD8(h3, w3);                                                                            \
  }                                                                                               \
  for (; i < n; i++) {                                                                            \
    if (dst) dst[i] = src[i];                                                                     \
    h0 = UPD1(h0, src[i]);                                                                        \
  }                                                                                               \
  const uint32_t h[4] = {h0, h1, h2, h3};                                                         \
  return digest_final(h);

static inline uint32_t sw8(uint32_t c, uint64_t w) {
  unsigned char b[8];
  memcpy(b, &w, 8);
  return sw_update(c, b, 8);
}
static inline uint32_t sw1(uint32_t c, unsigned char b) { return sw_update(c, &b, 1); }
static uint64_t sw_digest(unsigned char *dst, const unsigned char *src, size_t n) { DIGEST_BODY(sw8, sw1) }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HW8(c, w) (uint32_t) __builtin_ia32_crc32di((c), (w))
#define HW1(c, b) __builtin_ia32_crc32qi((c), (b))
__attribute__((target("sse4.2"))) static uint64_t hw_digest(unsigned char *dst, const unsigned char *src, size_t n) {
  DIGEST_BODY(HW8, HW1)
}
/* The same over a large copy with streaming stores: the destination is not read for ownership
 * (as glibc's memcpy does above its threshold), so the fused copy costs what memcpy costs.
 * Streaming needs a 16-byte aligned destination; other layouts take the plain copy. */
__attribute__((target("sse4.2"))) static uint64_t hw_digest_stream(unsigned char *dst, const unsigned char *src,
                                                                   size_t n) {
  if ((uintptr_t)dst % 16) return hw_digest(dst, src, n);
  const uint32_t h_init[4] = DIGEST_INIT(n);
  uint32_t h0 = h_init[0], h1 = h_init[1], h2 = h_init[2], h3 = h_init[3]; /* scalars: DIGEST_BODY */
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w0, w1, w2, w3;
    memcpy(&w0, src + i, 8);
    memcpy(&w1, src + i + 8, 8);
    memcpy(&w2, src + i + 16, 8);
    memcpy(&w3, src + i + 24, 8);
    __builtin_prefetch(src + i + SC_DIGEST_AHEAD);
    _mm_stream_si128((__m128i *)(void *)(dst + i), _mm_set_epi64x((long long)w1, (long long)w0));
    _mm_stream_si128((__m128i *)(void *)(dst + i + 16), _mm_set_epi64x((long long)w3, (long long)w2));
    h0 = HW8(h0, w0);
    h1 = HW8(h1, w1);
    h2 = HW8(h2, w2);
    h3 = HW8(h3, w3);
  }
  _mm_sfence();
  for (; i < n; i++) {
    dst[i] = src[i];
    h0 = HW1(h0, src[i]);
  }
  const uint32_t h[4] = {h0, h1, h2, h3};
  return digest_final(h);
}
#endif

uint64_t sc_verify_digest(void *dst, const void *src, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("sse4.2"))
    return dst && n >= (4u << 20) ? hw_digest_stream(dst, src, n) : hw_digest(dst, src, n);
#endif
  return sw_digest(dst, src, n);
}

uint64_t sc_verify_digest_portable(const void *src, size_t n) { return sw_digest(NULL, src, n); }
