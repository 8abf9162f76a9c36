/*
 * allreduce_threads.c — a trainer's view of schedc with ranks as threads: every thread holds a
 * gradient, sums it with the others in the plan's proven order, and gets the same bits.
 *   cc allreduce_threads.c -lschedc ...   (built by CMake as examples/allreduce_threads)
 *   ./allreduce_threads [SCHEDULE.lua]     (default: the built-in ring)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "schedc/schedc.h"

#define NRANKS 4
#define COUNT 100000

typedef struct worker { schedc_comm *comm; const schedc_plan *plan; uint64_t digest; int ok; } worker;

static void *train_step(void *arg) {
  worker *w = arg;
  int rank = schedc_comm_rank(w->comm);
  float *grad = malloc(COUNT * sizeof *grad);
  for (int i = 0; i < COUNT; i++) grad[i] = (float)((i * 7919 + rank * 104729) % 1000) / 1000.0f - 0.5f;
  /* In place; avg = sum / nranks, computed once at the end in float. */
  schedc_status st = schedc_allreduce(grad, grad, COUNT, SCHEDC_F32, SCHEDC_AVG, w->comm, w->plan);
  if (st != SCHEDC_OK) fprintf(stderr, "rank %d: %s\n", rank, schedc_errmsg());
  w->ok = st == SCHEDC_OK;
  w->digest = schedc_digest(grad, COUNT * sizeof *grad);
  free(grad);
  return NULL;
}

int main(int argc, char **argv) {
  schedc_plan *plan = NULL;
  if (argc > 1) {
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = NRANKS;
    if (schedc_plan_from_script(argv[1], &lo, &plan) != SCHEDC_OK) {
      fprintf(stderr, "%s\n", schedc_errmsg()); /* file:line: what is wrong */
      return 1;
    }
  }
  schedc_comm *comms[NRANKS];
  if (schedc_comm_init_threads(NRANKS, NULL, comms) != SCHEDC_OK) {
    fprintf(stderr, "%s\n", schedc_errmsg());
    return 1;
  }
  pthread_t th[NRANKS];
  worker w[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    w[r] = (worker){comms[r], plan, 0, 0};
    pthread_create(&th[r], NULL, train_step, &w[r]);
  }
  int ok = 1;
  for (int r = 0; r < NRANKS; r++) {
    pthread_join(th[r], NULL);
    ok &= w[r].ok && w[r].digest == w[0].digest;
    printf("rank %d: gradient digest %016llx\n", r, (unsigned long long)w[r].digest);
  }
  for (int r = 0; r < NRANKS; r++) schedc_comm_free(comms[r]);
  schedc_plan_free(plan);
  printf("%s\n", ok ? "all ranks hold the same bits" : "MISMATCH");
  return ok ? 0 : 1;
}
