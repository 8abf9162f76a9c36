/*
 * consumer.c — a program written against an installed schedc (tests/install/test_install.sh):
 * the public header and libschedc only. Four thread ranks allreduce small integers (exact in
 * f32, so any order gives the same sum) with a shipped schedule found by name; each rank's bits
 * are compared with the sum computed here.
 * Usage: consumer NAME [PREFIX] — PREFIX: the folder the schedule must be found under.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <schedc/schedc.h>

#define NRANKS 4
#define COUNT 1001 /* not a multiple of the chunk count: the uneven tail is covered too */

typedef struct rank_data {
  schedc_comm *comm;
  const schedc_plan *plan;
  float buf[COUNT];
  schedc_status st;
} rank_data;

static rank_data ranks[NRANKS];

/* Integers below 2^24 are exact in f32 and so are their sums here (< 2^24). */
static float input(int rank, int i) { return (float)((rank + 1) * 1000 + i % 97 - 48); }

static void *run_rank(void *arg) {
  rank_data *r = arg;
  r->st = schedc_allreduce(r->buf, r->buf, COUNT, SCHEDC_F32, SCHEDC_SUM, r->comm, r->plan);
  return NULL;
}

static int fail(const char *what, schedc_status st) {
  fprintf(stderr, "consumer: %s: %s: %s\n", what, schedc_status_str(st), schedc_errmsg());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: consumer NAME [PREFIX]\n");
    return 2;
  }
  char path[4096];
  schedc_status st = schedc_schedule_find(argv[1], path, sizeof path);
  if (st != SCHEDC_OK) return fail("schedc_schedule_find", st);
  if (argc > 2 && strncmp(path, argv[2], strlen(argv[2])) != 0) {
    fprintf(stderr, "consumer: '%s' was found at %s, not under %s\n", argv[1], path, argv[2]);
    return 1;
  }
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = NRANKS;
  schedc_plan *plan = NULL;
  if ((st = schedc_plan_open(argv[1], &lo, &plan)) != SCHEDC_OK) return fail("schedc_plan_open", st);
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.plan = plan;
  schedc_comm *comms[NRANKS];
  if ((st = schedc_comm_init_threads(NRANKS, &co, comms)) != SCHEDC_OK) return fail("schedc_comm_init_threads", st);
  pthread_t th[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    ranks[r].comm = comms[r];
    ranks[r].plan = plan;
    for (int i = 0; i < COUNT; i++) ranks[r].buf[i] = input(r, i);
    if (pthread_create(&th[r], NULL, run_rank, &ranks[r]) != 0) {
      fprintf(stderr, "consumer: pthread_create failed\n");
      return 1;
    }
  }
  for (int r = 0; r < NRANKS; r++) pthread_join(th[r], NULL);
  int bad = 0;
  for (int r = 0; r < NRANKS; r++) {
    if (ranks[r].st != SCHEDC_OK) {
      bad = fail("schedc_allreduce", ranks[r].st);
      continue;
    }
    for (int i = 0; i < COUNT; i++) {
      long sum = 0; /* the expected value, in integers: independent of any order */
      for (int q = 0; q < NRANKS; q++) sum += (long)input(q, i);
      float want = (float)sum;
      if (memcmp(&want, &ranks[r].buf[i], sizeof want) != 0) {
        fprintf(stderr, "consumer: rank %d element %d: %.9g, expected %.9g\n", r, i, ranks[r].buf[i], want);
        bad = 1;
        break;
      }
    }
  }
  for (int r = 0; r < NRANKS; r++) schedc_comm_free(comms[r]);
  schedc_plan_free(plan);
  if (bad) return 1;
  printf("consumer: %d ranks hold the exact sum, bit for bit (schedule %s)\n", NRANKS, path);
  return 0;
}
