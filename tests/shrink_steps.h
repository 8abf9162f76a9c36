/*
 * shrink_steps.h — the training steps the shrink tests redo (cpu/test_shrink.c on threads and shm,
 * net/test_net_shrink.c on net): 12 exact leaves per step, spread over however many ranks there
 * are by index, and the bits of the run that never failed, evaluated by exact_ref.h (include it
 * first). One copy per test program (static).
 */
#ifndef SC_TEST_SHRINK_STEPS_H
#define SC_TEST_SHRINK_STEPS_H

#include <stdlib.h>

#include "schedc/schedc.h"

enum { NL = 12, COUNT = 300, STEPS = 2 };
static void *g_leaf[STEPS][NL];
static float g_want[STEPS][COUNT];

/* The leaves of every step and their reference sums (0, or -1 when the reference failed). */
static int steps_setup(void) {
  for (int s = 0; s < STEPS; s++) {
    fmt f = fmt_of(SCHEDC_F32);
    for (int j = 0; j < NL; j++) {
      if (!(g_leaf[s][j] = malloc(COUNT * sizeof(float)))) return -1;
      for (size_t i = 0; i < COUNT; i++) put(SCHEDC_F32, g_leaf[s][j], i, input(&f, NL, j, i, 7 + s));
    }
    if (reference(SCHEDC_F32, s, g_leaf[s], NL, COUNT, g_want[s]) != 0) return -1;
  }
  return 0;
}

static void steps_free(void) {
  for (int s = 0; s < STEPS; s++)
    for (int j = 0; j < NL; j++) free(g_leaf[s][j]);
}

/* Step s on the communicator c: this rank's block of the 12 leaves (balanced, by index: 12 on 5 is
 * 3, 3, 2, 2, 2), summed exactly over every rank into out (step 1: their average, which divides by
 * the 12 leaves however many ranks hold them). */
static schedc_status step_call(schedc_comm *c, int s, float *out) {
  int n = schedc_comm_nranks(c), r = schedc_comm_rank(c);
  int first = r * NL / n, m = (r + 1) * NL / n - first;
  schedc_accum *a = NULL;
  schedc_status st = schedc_accum_create(COUNT, SCHEDC_F32, s ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, first, m, &a);
  for (int j = m - 1; j >= 0 && st == SCHEDC_OK; j--) st = schedc_accumulate(a, first + j, g_leaf[s][first + j]);
  if (st == SCHEDC_OK) st = schedc_accum_allreduce(a, out, c, NULL);
  schedc_accum_free(a);
  return st;
}

#endif
