/*
 * cpufeat.c — the vector level (cpufeat.h), detected once before main: AVX2 and SSE4.2 as the
 * compiler's runtime reports them (and AVX-512 F/DQ/VL/BW), F16C from cpuid (leaf 1, ecx bit 29;
 * clang's __builtin_cpu_supports does not know "f16c"); then SCHEDC_SIMD, which may lower it.
 */
#include "cpufeat.h"

#include "err.h"
#include "params.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static sc_simd_level cpu_level, level;
static int have_sse42;

/* SCHEDC_SIMD's words, in the list's order (params.h): auto, avx512, avx2, scalar. */
static const sc_simd_level by_word[] = {SC_SIMD_AVX512, SC_SIMD_AVX512, SC_SIMD_AVX2, SC_SIMD_SCALAR};

#if defined(__x86_64__) && defined(__GNUC__)
/* Before any thread runs: the values never change afterwards, so readers need no ordering. */
__attribute__((constructor)) static void detect(void) {
  unsigned a, b, c, d;
  __builtin_cpu_init();
  have_sse42 = __builtin_cpu_supports("sse4.2") != 0;
  int avx2 = __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  cpu_level = avx512 ? SC_SIMD_AVX512 : avx2 ? SC_SIMD_AVX2 : SC_SIMD_SCALAR;
  int w = 0;
  const char *v = sc_param_raw(SC_P_SCHEDC_SIMD);
  sc_simd_level want = v && sc_param_parse_enum(SC_P_SCHEDC_SIMD, v, &w) == SCHEDC_OK ? by_word[w] : SC_SIMD_AVX512;
  level = want < cpu_level ? want : cpu_level;
}
#endif

sc_simd_level sc_simd(void) { return level; }
sc_simd_level sc_simd_cpu(void) { return cpu_level; }
int sc_cpu_sse42(void) { return have_sse42; }

const char *sc_simd_name(sc_simd_level l) { return l == SC_SIMD_AVX512 ? "avx512" : l == SC_SIMD_AVX2 ? "avx2" : "scalar"; }

schedc_status sc_simd_check(void) {
  int w = 0;
  schedc_status st = sc_param_enum(SC_P_SCHEDC_SIMD, &w);
  if (st != SCHEDC_OK) return st;
  if (w && by_word[w] > cpu_level)
    return sc_err(SCHEDC_EINVAL, "SCHEDC_SIMD='%s': this CPU has no %s path (%s); it has %s", sc_param_raw(SC_P_SCHEDC_SIMD),
                  sc_simd_name(by_word[w]),
                  by_word[w] == SC_SIMD_AVX512 ? "AVX-512 F, DQ, VL and BW" : "AVX2 and F16C", sc_simd_name(cpu_level));
  return SCHEDC_OK;
}

void sc_simd_paths_get(sc_simd_paths *p) {
#if defined(__x86_64__) && defined(__GNUC__)
  const char *base = "scalar";
#else
  const char *base = "generic";
#endif
  int avx2 = level >= SC_SIMD_AVX2;
  p->reduce = p->bf16 = avx2 ? "avx2" : base;
  p->checksum = avx2 && have_sse42 ? "avx2+sse4.2" : "two passes";
  p->f16 = avx2 ? "f16c" : "scalar";
  p->exact = level == SC_SIMD_AVX512 ? "avx512 (f32) + avx2" : avx2 ? "avx2" : "scalar";
  p->best = level == SC_SIMD_AVX512 ? "avx512" : avx2 ? "avx2" : base;
}
