/*
 * cpufeat.h — what this CPU can do, asked once (cpufeat.c), for the kernels that choose a
 * vector path at run time (kernels.c, convert.c), and SC_CLONES, the attribute that builds a
 * loop twice (AVX2 and baseline) for the loader's ifunc resolver to choose.
 */
#ifndef SC_CPUFEAT_H
#define SC_CPUFEAT_H

/* target_clones: not under the sanitizers (their runtimes and ifuncs do not mix). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SC_CLONES __attribute__((target_clones("avx2", "default")))
#define SC_CLONES_ON 1
#else
#define SC_CLONES
#define SC_CLONES_ON 0
#endif

/* 1 when the CPU has the feature (0 off x86-64). Set before main by a constructor, so reading
 * them takes no lock and no cpuid (which traps to the hypervisor in a VM). */
int sc_cpu_avx2(void);
int sc_cpu_sse42(void);
int sc_cpu_f16c(void); /* F16C, and AVX2 (the converting loops use both) */
int sc_cpu_avx512(void); /* AVX-512 F, DQ, VL and BW, and F16C (exact mode's conversions) */

/* The path each family of CPU loops takes here, as their dispatch chooses it (SC_CLONES' resolver
 * and the sc_cpu_* checks of kernels.c, convert.c and exact.c; a dispatch that changes changes
 * this with it), for `schedc info`. Static strings; "sse2" is x86-64's baseline, "generic" other
 * CPUs'. */
typedef struct sc_simd_paths {
  const char *best;     /* the widest path any of them takes: "avx512", "avx2", "sse2" or "generic" */
  const char *reduce;   /* reduce chains, copies and avg (kernels.c): "avx2" or the baseline */
  const char *checksum; /* the fused reduce-and-CRC32C of f32 sums (kernels.c): "avx2+sse4.2", or "two passes" */
  const char *f16;      /* f16 <-> f32 (convert.c): "f16c", or "scalar" */
  const char *bf16;     /* bf16 <-> f32 (convert.c): "avx2" or the baseline */
  const char *exact;    /* exact mode's grid conversions (exact.c): "avx512", "avx2 (f32)" or "scalar" */
} sc_simd_paths;
void sc_simd_paths_get(sc_simd_paths *p);

#endif
