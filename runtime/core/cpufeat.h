/*
 * cpufeat.h — the vector path every CPU kernel takes (kernels.c, convert.c, exact.c), chosen once
 * per process before main (cpufeat.c): the best this CPU has, or the one SCHEDC_SIMD forces
 * (docs/env.md). Every path gives the same bits; the choice is speed only.
 */
#ifndef SC_CPUFEAT_H
#define SC_CPUFEAT_H

#include "schedc/schedc.h"

/* The levels, each a superset of the one below:
 *  SCALAR  the portable C loops (built for the baseline x86-64, so the compiler may still use SSE2)
 *  AVX2    AVX2 and F16C: the reduce and conversion loops built for AVX2, f16 through F16C, exact
 *          mode's conversions four 64-bit lanes at a time
 *  AVX512  AVX-512 F, DQ, VL and BW as well: exact mode's f32 conversions eight lanes at a time
 *          (the rest as AVX2: memory-bound loops gain nothing from wider vectors) */
typedef enum { SC_SIMD_SCALAR = 0, SC_SIMD_AVX2 = 1, SC_SIMD_AVX512 = 2 } sc_simd_level;

/* The chosen level: set before main by a constructor, so reading it takes no lock and no cpuid
 * (which traps to the hypervisor in a VM). SCHEDC_SIMD above what the CPU has, or malformed, gives
 * the best the CPU has here; sc_simd_check says why at communicator init. */
sc_simd_level sc_simd(void);
/* The best level this CPU has, whatever SCHEDC_SIMD says (tests skip the paths above it). */
sc_simd_level sc_simd_cpu(void);
/* SCHEDC_OK, or SCHEDC_EINVAL naming SCHEDC_SIMD when it is malformed or asks for a path this CPU
 * lacks (with what the CPU has): every communicator's init calls it (comm.c). */
schedc_status sc_simd_check(void);
/* The level's word as SCHEDC_SIMD spells it ("avx2"). */
const char *sc_simd_name(sc_simd_level l);

/* SSE4.2's CRC32 instruction (the checksums: crc32c.c, digest.c), apart from the vector level. */
int sc_cpu_sse42(void);
/* The level's tests as the kernels ask them. */
static inline int sc_cpu_avx2(void) { return sc_simd() >= SC_SIMD_AVX2; }
static inline int sc_cpu_avx512(void) { return sc_simd() >= SC_SIMD_AVX512; }

/* SC_SIMD_FN(NAME, (params), (args), { body }): a static void function built twice from one body,
 * NAME##_avx2 for AVX2 (the vectoriser's loops then use 256-bit lanes) and NAME##_scalar for the
 * baseline, and NAME, which calls the one sc_simd() chose (a predictable branch per call; the
 * callers pass blocks of at least a few hundred elements). Replaces target_clones, whose ifunc
 * resolver chose by the CPU alone (SCHEDC_SIMD could not force a path) and did not mix with the
 * sanitizers (so their trees ran the baseline loops only). */
#if defined(__x86_64__) && defined(__GNUC__)
#define SC_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#else
#define SC_TARGET_AVX2
#endif
#define SC_SIMD_FN(NAME, params, args, ...)                                         \
  static void NAME##_scalar params __VA_ARGS__                                      \
  SC_TARGET_AVX2 static void NAME##_avx2 params __VA_ARGS__                         \
  static inline void NAME params {                                                  \
    if (sc_cpu_avx2()) NAME##_avx2 args;                                            \
    else NAME##_scalar args;                                                        \
  }

/* The path each family of CPU loops takes here, as their dispatch chooses it (sc_simd(): the CPU's
 * best level, or SCHEDC_SIMD's lower one; a dispatch that changes changes this with it), for
 * `schedc info`. Static strings: "scalar" is the portable loops on x86-64, "generic" other CPUs'. */
typedef struct sc_simd_paths {
  const char *best;     /* the level: "avx512", "avx2", "scalar" or "generic" */
  const char *reduce;   /* reduce chains, copies and avg (kernels.c, SC_SIMD_FN): "avx2" or the baseline */
  const char *checksum; /* the fused reduce-and-CRC32C of f32 sums (kernels.c): "avx2+sse4.2", or "two passes" */
  const char *f16;      /* f16 <-> f32 (convert.c): "f16c", or "scalar" */
  const char *bf16;     /* bf16 <-> f32 (convert.c): "avx2" or the baseline */
  const char *exact;    /* exact mode's grid conversions (exact_avx2.c, exact_simd.c): "avx512 (f32) + avx2", "avx2" or "scalar" */
} sc_simd_paths;
void sc_simd_paths_get(sc_simd_paths *p);

#endif
