/*
 * kernels.h — the CPU arithmetic of a collective: fused reduce chains in the accumulation type
 * (f32 for f16/bf16), conversions in and out, the final avg division, NaN canonicalisation and
 * the 64-bit digest (the per-transfer CRC32C and the verification digest: common/crc.h). Every
 * function is deterministic per element: no FMA (-ffp-contract=off), no reassociation, results
 * independent of vector width and of where a slice starts. Defined in kernels.c (the reduce
 * chains, copy, divide), convert.c (f16/bf16 conversions) and digest.c (sc_digest64).
 */
#ifndef SC_KERNELS_H
#define SC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "crc.h"
#include "schedc/schedc.h"

/* Accumulation type of a dtype: f16/bf16 -> f32, others themselves. */
schedc_dtype sc_acc_type(schedc_dtype t);

/* dst[i] = op(...op(op(a[i], s[0][i]), s[1][i])..., s[n-1][i]) for i < len, in the accumulation
 * type `t` (f32, f64, i32, i64). dst may equal a. avg accumulates like sum. Float NaN results
 * are written as the default quiet NaN (so a+b and b+a give the same bits even for NaN inputs);
 * min/max: NaN wins, -0 < +0. */
void sc_reduce_chain(schedc_dtype t, schedc_op op, void *dst, const void *a, const void *const *s, int n,
                     size_t len);
/* dst[i] = op(a[i], s[i]) as sc_reduce_chain with one source, taking in the same pass the CRC32C
 * of s's bytes as they were used (*crc_s) and, with crc_d, of dst's as written: the checksum
 * mode's check of a received slice and the CRC of the partial sum it publishes, without passes of
 * their own. Only where sc_reduce1_crc_ok (f32 sum and avg, on a CPU with AVX2 and SSE4.2). */
int sc_reduce1_crc_ok(schedc_dtype t, schedc_op op);
void sc_reduce1_crc(schedc_dtype t, schedc_op op, void *dst, const void *a, const void *s, size_t len, uint32_t *crc_s,
                    uint32_t *crc_d);
/* memcpy for the runtime's slices (dst and src apart): AVX2 with a prefetch 2 KiB ahead. */
void sc_copy(void *dst, const void *src, size_t n);
/* Convert len elements of dtype `from` into its accumulation type (f16/bf16 -> f32; others copy). */
void sc_to_acc(schedc_dtype from, void *dst, const void *src, size_t len);
/* Convert back, rounding to nearest even once (f32 -> f16/bf16; others copy). */
void sc_from_acc(schedc_dtype to, void *dst, const void *src, size_t len);
/* avg: x[i] /= n in the accumulation type (integers truncate toward zero). */
void sc_divide(schedc_dtype t, void *x, size_t len, int n);
/* Round-trip helpers, exposed for tests' independent reference evaluation. */
float sc_f16_to_f32(uint16_t h);
uint16_t sc_f32_to_f16(float f);
float sc_bf16_to_f32(uint16_t h);
uint16_t sc_f32_to_bf16(float f);
/* 64-bit digest of bytes (fast, not cryptographic; equal bits <=> equal digest w.h.p.). */
uint64_t sc_digest64(const void *p, size_t n);


#endif
