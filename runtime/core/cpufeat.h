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
#else
#define SC_CLONES
#endif

/* 1 when the CPU has the feature (0 off x86-64). Set before main by a constructor, so reading
 * them takes no lock and no cpuid (which traps to the hypervisor in a VM). */
int sc_cpu_avx2(void);
int sc_cpu_sse42(void);
int sc_cpu_f16c(void); /* F16C, and AVX2 (the converting loops use both) */
int sc_cpu_avx512(void); /* AVX-512 F, DQ, VL and BW, and F16C (exact mode's conversions) */

#endif
