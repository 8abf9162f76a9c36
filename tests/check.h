/*
 * check.h — the tiny assertion kit of the C tests: CHECK(cond) and CHECK_EQ_STR record a failure
 * with file:line and go on; DONE() prints "N passed, M failed" and returns the exit status;
 * SKIP_NO_CUDA (no GPU) and SKIP_TOOL (a missing tool) return the skip status 77.
 */
#ifndef SC_TEST_CHECK_H
#define SC_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tc_pass, tc_fail;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (cond) tc_pass++;                                                    \
    else { tc_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                  \
  do {                                                                      \
    const char *a_ = (a), *b_ = (b);                                        \
    if (a_ && b_ && strcmp(a_, b_) == 0) tc_pass++;                         \
    else { tc_fail++; fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, b_ ? b_ : "(null)", a_ ? a_ : "(null)"); } \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                         \
  do {                                                                      \
    const char *h_ = (hay), *n_ = (needle);                                 \
    if (h_ && strstr(h_, n_)) tc_pass++;                                    \
    else { tc_fail++; fprintf(stderr, "%s:%d: expected to contain \"%s\", got \"%s\"\n", __FILE__, __LINE__, n_, h_ ? h_ : "(null)"); } \
  } while (0)

#define DONE()                                                              \
  (printf("%d passed, %d failed\n", tc_pass, tc_fail), tc_fail ? 1 : 0)

/* Skips are exit status 77 (ctest's SKIP_RETURN_CODE, set on every test that may skip:
 * tests/CMakeLists.txt), the reason printed as "[SKIP] why" for the reader only. A skip never
 * hides a failure already recorded: with tc_fail set, both macros return DONE() instead. */
#define SC_SKIP_CODE 77

/* Return from main skipping (no GPU here: not a failure; the GPU is never a "tool") — unless the
 * emulated GPU was asked for (SCHEDC_CUDA_PLUGIN, tests/emu/): then no device means the plugin
 * failed, and the test fails with the library's reason instead of skipping every check. Uses
 * schedc_errmsg (schedc.h). */
#define SKIP_NO_CUDA(why)                                                   \
  do {                                                                      \
    const char *p_ = getenv("SCHEDC_CUDA_PLUGIN");                          \
    if (p_ && *p_) {                                                        \
      fprintf(stderr, "FAIL: %s, with SCHEDC_CUDA_PLUGIN=%s: %s\n", why, p_, schedc_errmsg()); \
      return 1;                                                             \
    }                                                                       \
    if (tc_fail) return DONE();                                             \
    printf("[SKIP] %s\n", why);                                             \
    return SC_SKIP_CODE;                                                    \
  } while (0)

/* Return from main skipping because TOOL (libclang, NVRTC, NCCL, MPI, ...) is missing, WHY
 * saying what was tried and which package brings it — unless SCHEDC_REQUIRE_TOOLS is set (not
 * empty, not 0: CI sets it, tests/README.md "Skips and required tools"), where the suite must
 * have every tool and a missing one is this test's failure. */
#define SKIP_TOOL(tool, why)                                                \
  do {                                                                      \
    const char *q_ = getenv("SCHEDC_REQUIRE_TOOLS");                        \
    if (q_ && *q_ && strcmp(q_, "0")) {                                     \
      fprintf(stderr, "FAIL: %s is missing and SCHEDC_REQUIRE_TOOLS=%s requires it: %s\n", tool, q_, why); \
      return 1;                                                             \
    }                                                                       \
    if (tc_fail) return DONE();                                             \
    printf("[SKIP] no %s: %s\n", tool, why);                                \
    return SC_SKIP_CODE;                                                    \
  } while (0)


/* Does /proc/cpuinfo's first "flags" line list every word of `flags` (space-separated)? */
static inline int tc_cpu_flags(const char *flags) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  int found = 0, all = 1;
  while (f && !found && fgets(line, sizeof line, f)) found = !strncmp(line, "flags", 5);
  if (f) fclose(f);
  if (!found) return 0;
  strcat(line, " "); /* words end with a blank */
  const char *w = flags;
  while (*w && all) {
    size_t n = strcspn(w, " ");
    char word[64];
    snprintf(word, sizeof word, " %.*s ", (int)n, w);
    all = strstr(line, word) != NULL;
    w += n + (w[n] == ' ');
  }
  return all;
}
/* Return from main skipping when SCHEDC_SIMD forces a vector path this CPU lacks (the library's
 * communicators would refuse it: cpufeat.h). */
#define SKIP_NO_SIMD()                                                      \
  do {                                                                      \
    const char *v_ = getenv("SCHEDC_SIMD");                                 \
    int lacks_ = v_ && ((!strcmp(v_, "avx2") && !tc_cpu_flags("avx2 f16c")) || \
                        (!strcmp(v_, "avx512") && !tc_cpu_flags("avx2 f16c avx512f avx512dq avx512vl avx512bw"))); \
    if (lacks_) {                                                           \
      printf("[SKIP] SCHEDC_SIMD=%s: this CPU lacks that path\n", v_);      \
      return SC_SKIP_CODE;                                                  \
    }                                                                       \
  } while (0)

#endif
