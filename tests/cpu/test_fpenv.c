/*
 * test_fpenv.c — a call's bits do not depend on the calling thread's floating-point environment
 * (runtime/core/fpenv.h): two thread ranks, rank 0's thread with flush-to-zero and
 * denormals-are-zero on (what torch.set_flush_denormal(True) sets), rounding upward and the
 * overflow trap enabled; rank 1's as the C runtime starts it. Each f32 element's sum is exact
 * or a single rounding, so its IEEE value is known here without the library: subnormal sums
 * (3 * 2^-141), a sum that rounds to nearest (1 + 2^-30 -> 1), an overflow (-> +inf, no SIGFPE);
 * the small-message path and the plan's, an exact-mode call (its f32 output is subnormal), and
 * schedc_accumulate. Both ranks must return those bits, and rank 0's environment must be as it
 * set it after every call. Before the fix rank 0 computed its chunks flushed (the ranks disagreed).
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "schedc/schedc.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#define HAVE_FLUSH 1
static void set_flush(void) { _mm_setcsr(_mm_getcsr() | 0x8040u); } /* FTZ | DAZ */
static int flush_on(void) { return (_mm_getcsr() & 0x8040u) == 0x8040u; }
#elif defined(__aarch64__)
#define HAVE_FLUSH 1
static void set_flush(void) {
  uint64_t r;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(r));
  r |= (uint64_t)1 << 24; /* FZ */
  __asm__ __volatile__("msr fpcr, %0" : : "r"(r));
}
static int flush_on(void) {
  uint64_t r;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(r));
  return (int)((r >> 24) & 1);
}
#else
#define HAVE_FLUSH 0
static void set_flush(void) {}
static int flush_on(void) { return 1; }
#endif

#if defined(__GLIBC__) && defined(__x86_64__)
#define HAVE_TRAPS 1
#else
#define HAVE_TRAPS 1
#endif

#define NR 2
enum { SMALL = 16, LARGE = 4099 };

typedef struct job {
  schedc_comm *c;
  int rank;
  int bad_env;        /* rank 0: its environment was not as set after a call */
  int bad_bits;       /* wrong result elements */
  schedc_status st;
  char msg[256];
} job;

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* A float from its bits: the values are made without arithmetic, which rank 0's environment would flush. */
static float fb(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
#define P140 0x00000200u /* 2^-140 = 512 * 2^-149, subnormal */
#define P141 0x00000100u /* 2^-141 */
#define S141 0x00000300u /* 3 * 2^-141 = 2^-140 + 2^-141, exact */
#define P30 0x30800000u  /* 2^-30 */
#define ONE 0x3f800000u
#define BIG 0x7f61b1e6u  /* 3e38: twice it overflows */
#define INF 0x7f800000u

/* element e of rank r's input, and the sum's IEEE value (found by hand, not by the library) */
static float input(int r, size_t e) {
  switch (e % 3) {
  case 0: return fb(r ? P141 : P140);
  case 1: return fb(r ? P30 : ONE);
  default: return fb(BIG);
  }
}
static float want(size_t e) { return fb(e % 3 == 0 ? S141 : e % 3 == 1 ? ONE : INF); }

static void env_still_set(job *j) {
  if (j->rank) return;
  int ok = flush_on() && fegetround() == FE_UPWARD;
#if HAVE_TRAPS
  ok = ok && (fegetexcept() & FE_OVERFLOW);
#endif
  if (!ok) j->bad_env++;
}

static void expect(job *j, const float *got, size_t n, int exact_only_subnormal, const char *what) {
  for (size_t e = 0; e < n; e++) {
    float w = exact_only_subnormal ? fb(S141) : want(e);
    if (bits(got[e]) != bits(w) && j->bad_bits++ < 4)
      fprintf(stderr, "rank %d %s element %zu: %08x, want %08x\n", j->rank, what, e, bits(got[e]), bits(w));
  }
}

static void *rank_main(void *p) {
  job *j = p;
  static float buf[NR][LARGE];
  float *b = buf[j->rank];
  if (j->rank == 0) {
    set_flush();
    fesetround(FE_UPWARD);
#if HAVE_TRAPS
    feenableexcept(FE_OVERFLOW);
#endif
  }
  const size_t counts[2] = {SMALL, LARGE};
  for (int k = 0; k < 2 && j->st == SCHEDC_OK; k++) {
    for (size_t e = 0; e < counts[k]; e++) b[e] = input(j->rank, e);
    j->st = schedc_allreduce(b, b, counts[k], SCHEDC_F32, SCHEDC_SUM, j->c, NULL);
    env_still_set(j);
    if (j->st == SCHEDC_OK) expect(j, b, counts[k], 0, k ? "allreduce (plan)" : "allreduce (small)");
  }
  /* exact mode: every input subnormal (the output is too) */
  for (size_t e = 0; e < LARGE && j->st == SCHEDC_OK; e++) b[e] = input(j->rank, 3 * e);
  if (j->st == SCHEDC_OK) {
    j->st = schedc_allreduce(b, b, LARGE, SCHEDC_F32, SCHEDC_SUM_EXACT, j->c, NULL);
    env_still_set(j);
    if (j->st == SCHEDC_OK) expect(j, b, LARGE, 1, "exact allreduce");
  }
  /* canonical accumulation on this thread: leaves 2^-140 and 2^-141 */
  schedc_accum *a = NULL;
  if (j->st == SCHEDC_OK) j->st = schedc_accum_create(SMALL, SCHEDC_F32, SCHEDC_SUM, 0, 2, &a);
  for (int leaf = 0; leaf < 2 && j->st == SCHEDC_OK; leaf++) {
    for (size_t e = 0; e < SMALL; e++) b[e] = input(leaf, 0);
    j->st = schedc_accumulate(a, leaf, b);
    env_still_set(j);
  }
  if (j->st == SCHEDC_OK && (j->st = schedc_accum_result(a, b)) == SCHEDC_OK) expect(j, b, SMALL, 1, "accumulate");
  schedc_accum_free(a);
  if (j->st != SCHEDC_OK) snprintf(j->msg, sizeof j->msg, "%s", schedc_errmsg());
  if (j->rank == 0) {
#if HAVE_TRAPS
    fedisableexcept(FE_OVERFLOW);
#endif
    fesetround(FE_TONEAREST);
  }
  return NULL;
}

int main(void) {
  schedc_comm *c[NR];
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 60;
  CHECK(schedc_comm_init_threads(NR, &o, c) == SCHEDC_OK);
  job j[NR];
  pthread_t th[NR];
  for (int r = 0; r < NR; r++) {
    j[r] = (job){c[r], r, 0, 0, SCHEDC_OK, ""};
    pthread_create(&th[r], NULL, rank_main, &j[r]);
  }
  for (int r = 0; r < NR; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < NR; r++) {
    if (j[r].st != SCHEDC_OK) fprintf(stderr, "rank %d: %s: %s\n", r, schedc_status_str(j[r].st), j[r].msg);
    CHECK(j[r].st == SCHEDC_OK);
    CHECK(j[r].bad_bits == 0);
    CHECK(j[r].bad_env == 0);
  }
  if (!HAVE_FLUSH) printf("(no flush-to-zero control on this architecture: the rounding mode alone was changed)\n");
  for (int r = 0; r < NR; r++) schedc_comm_free(c[r]);
  return DONE();
}
