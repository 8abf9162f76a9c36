/*
 * test_hash.c — common/hash.h's values never change: plan files' seals, plan and operator
 * hashes, kernel cache keys and shm job tokens are FNV-1a and splitmix64 values compared across
 * processes and stored on disk. Pinned against values computed outside this code base (the FNV
 * authors' published FNV-1a 64 vectors; the splitmix64 reference generator's first outputs from
 * seed 0) and against this file's own bit-at-a-time sc_digest64 (kernels.h, which ends in both),
 * with its values for a fixed pattern written out (computed with a separate Python model).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "hash.h"
#include "kernels.h"

/* The digest as kernels.h documents it, written independently: four lanes over 32-byte blocks,
 * the lanes joined with rotations, the tail FNV-1a, splitmix64's finaliser. */
static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }
static uint64_t ref_digest(const unsigned char *b, size_t n) {
  uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ (uint64_t)n, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                   0x2545f4914f6cdd1dull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w = 0;
      for (int j = 7; j >= 0; j--) w = w << 8 | b[i + 8 * (size_t)k + (size_t)j]; /* little-endian */
      h[k] = rotl(h[k] ^ w * 0xbf58476d1ce4e5b9ull, 31) * 0x94d049bb133111ebull;
    }
  uint64_t x = h[0] ^ rotl(h[1], 1) ^ rotl(h[2], 2) ^ rotl(h[3], 3);
  for (; i < n; i++) {
    x ^= b[i];
    x *= 1099511628211ull; /* the FNV prime, in decimal as the spec writes it */
  }
  x = (x ^ x >> 30) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ x >> 27) * 0x94d049bb133111ebull;
  return x ^ x >> 31;
}

int main(void) {
  /* FNV-1a 64: the offset basis is the empty string's hash; "a" and "foobar" from the spec. */
  CHECK(SC_FNV_INIT == 14695981039346656037ull);
  CHECK(SC_FNV_PRIME == 1099511628211ull);
  CHECK(sc_fnv(SC_FNV_INIT, "", 0) == 0xcbf29ce484222325ull);
  CHECK(sc_fnv(SC_FNV_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(sc_fnv(SC_FNV_INIT, "foobar", 6) == 0x85944171f73967e8ull);
  CHECK(sc_fnv_str(SC_FNV_INIT, "foobar") == 0x85944171f73967e8ull);
  CHECK(sc_fnv_step(SC_FNV_INIT, 'a') == 0xaf63dc4c8601ec8cull);
  /* chaining is concatenation; the NUL counts when the length includes it (cache keys do) */
  CHECK(sc_fnv(sc_fnv(SC_FNV_INIT, "foo", 3), "bar", 3) == 0x85944171f73967e8ull);
  CHECK(sc_fnv(SC_FNV_INIT, "foobar", 7) != sc_fnv(SC_FNV_INIT, "foobar", 6));
  CHECK(sc_fnv(SC_FNV_INIT, "foobar", 7) == sc_fnv_step(0x85944171f73967e8ull, 0));

  /* splitmix64: state += golden gamma, output mix(state); from seed 0 */
  uint64_t s = 0;
  const uint64_t want[3] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full};
  for (int i = 0; i < 3; i++) {
    s += 0x9e3779b97f4a7c15ull;
    CHECK(sc_mix64(s) == want[i]);
  }
  CHECK(sc_mix64(0) == 0);

  /* the digest: pinned values, and the reference over every length up to 300 */
  unsigned char buf[4096];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131 + 7);
  const struct { size_t n; uint64_t d; } pin[] = {
      {0, 0xdf1a229bbca3b739ull},  {1, 0x6f01ec935c81c043ull},   {31, 0xdf2c213e674a7732ull},
      {32, 0xb19cdf144dfeea55ull}, {33, 0xcd85bae25d5b4ff3ull},  {100, 0x487db8f305dff2e5ull},
      {4096, 0x9744cc0a95eefa8bull}};
  for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++) {
    CHECK(sc_digest64(buf, pin[i].n) == pin[i].d);
    CHECK(ref_digest(buf, pin[i].n) == pin[i].d);
  }
  int bad = 0;
  for (size_t n = 0; n <= 300; n++)
    for (size_t off = 0; off < 3; off++) bad += sc_digest64(buf + off, n) != ref_digest(buf + off, n);
  CHECK(bad == 0);
  return DONE();
}
