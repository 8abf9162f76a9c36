/*
 * digest.c — sc_digest64 (kernels.h): a fast 64-bit digest of bytes, not cryptographic. Its values
 * are compared between ranks (and processes), so they never change: tests/unit/test_hash.c pins
 * them against an independent evaluation.
 */
#include "kernels.h"
#include "hash.h"

#include <string.h>

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
