/*
 * crc.h — CRC32C (Castagnoli) of a transfer's payload and the 64-bit digest that verification
 * compares across ranks, built from CRC chains (crc32c.c). libc only; used by the runtime's
 * integrity checks and the tests.
 */
#ifndef SC_CRC_H
#define SC_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C (Castagnoli) of n bytes: SSE4.2 when the CPU has it, else a table; same value. */
uint32_t sc_crc32c(const void *p, size_t n);
uint32_t sc_crc32c_portable(const void *p, size_t n);
/* Copy n bytes (dst == src: none) and return their CRC32C, in one pass. */
uint32_t sc_crc32c_copy(void *dst, const void *src, size_t n);
/* CRC32C of A||B from crc(A), crc(B) and the length of B. */
uint32_t sc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b);
/* The 64-bit digest ranks compare under SCHEDC_VERIFY=digest (four CRC32C chains; any single
 * flipped bit changes it); with dst != NULL it also copies the n bytes to dst in the same pass. */
uint64_t sc_verify_digest(void *dst, const void *src, size_t n);
uint64_t sc_verify_digest_portable(const void *src, size_t n);

#endif
