/*
 * hash.h — the library's two non-cryptographic 64-bit hashes, written once: FNV-1a over bytes
 * and the splitmix64 finaliser. Their values are stored and compared across processes (plan
 * files' seals, plan and operator hashes, kernel cache keys, shm job tokens, digests), so they
 * must never change: tests/unit/test_hash.c pins values computed independently.
 */
#ifndef SC_HASH_H
#define SC_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64 (Fowler–Noll–Vo): start from SC_FNV_INIT (the offset basis), then for each byte
 * h = (h ^ byte) * SC_FNV_PRIME. Chaining is concatenation: sc_fnv(sc_fnv(h, a, n), b, m) is
 * the hash of a's n bytes followed by b's m bytes. */
#define SC_FNV_INIT 0xcbf29ce484222325ull
#define SC_FNV_PRIME 0x100000001b3ull

/* One step: h folded with one byte (for loops that advance several hashes in lockstep). */
static inline uint64_t sc_fnv_step(uint64_t h, unsigned char byte) { return (h ^ byte) * SC_FNV_PRIME; }

/* h folded with n bytes at p, in order. */
static inline uint64_t sc_fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = sc_fnv_step(h, b[i]);
  return h;
}

/* h folded with the bytes of the string s, its terminating NUL excluded. */
static inline uint64_t sc_fnv_str(uint64_t h, const char *s) {
  for (const unsigned char *b = (const unsigned char *)s; *b; b++) h = sc_fnv_step(h, *b);
  return h;
}

/* The splitmix64 finaliser (Steele, Lea, Flood 2014; Stafford's "Mix13" constants): a bijection
 * of 64-bit words in which every input bit affects every output bit. mix64(0) == 0. */
static inline uint64_t sc_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

#endif
