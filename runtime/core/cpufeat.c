/*
 * cpufeat.c — the CPU's features (cpufeat.h), detected once before main: AVX2 and SSE4.2 as the
 * compiler's runtime reports them (and AVX-512 F/DQ/VL/BW), F16C from cpuid (leaf 1, ecx bit 29; clang's
 * __builtin_cpu_supports does not know "f16c"); and the paths the loops take with them (`schedc info`).
 */
#include "cpufeat.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static int have_avx2, have_sse42, have_f16c, have_avx512;

#if defined(__x86_64__) && defined(__GNUC__)
/* Before any thread runs: the values never change afterwards, so readers need no ordering. */
__attribute__((constructor)) static void detect(void) {
  unsigned a, b, c, d;
  __builtin_cpu_init();
  have_avx2 = __builtin_cpu_supports("avx2") != 0;
  have_sse42 = __builtin_cpu_supports("sse4.2") != 0;
  have_f16c = have_avx2 && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  have_avx512 = have_f16c && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
}
#endif

int sc_cpu_avx2(void) { return have_avx2; }
int sc_cpu_sse42(void) { return have_sse42; }
int sc_cpu_f16c(void) { return have_f16c; }
int sc_cpu_avx512(void) { return have_avx512; }

void sc_simd_paths_get(sc_simd_paths *p) {
#if defined(__x86_64__)
  const char *base = "sse2";
#else
  const char *base = "generic";
#endif
  const char *clone = SC_CLONES_ON && have_avx2 ? "avx2" : base; /* the resolver picks avx2 where the CPU has it */
  p->reduce = clone;
  p->bf16 = clone;
  p->checksum = have_avx2 && have_sse42 ? "avx2+sse4.2" : "two passes";
  p->f16 = have_f16c ? "f16c" : "scalar";
  p->exact = have_avx512 ? "avx512" : have_avx2 ? "avx2 (f32)" : "scalar";
  p->best = have_avx512 ? "avx512" : have_avx2 ? "avx2" : base;
}
