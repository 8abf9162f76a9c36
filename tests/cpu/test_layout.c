/*
 * test_layout.c — SCHEDC_TOPOLOGY gives calls without a plan the layout it describes: 4 thread
 * ranks with a 2-node topology file get the hierarchical plan on 2 nodes for allreduce,
 * reduce_scatter and allgather (broadcast keeps the ring) and sum right (checked against the sum
 * written here); a file the schedule cannot use (another rank count) warns through the log and
 * keeps the ring; shm ranks whose SCHEDC_TOPOLOGY differ are refused at init on every rank,
 * naming it (EMISMATCH), never a plan mismatch at the first call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

enum { N = 4, COUNT = 999 };

static const char *plan_name(schedc_comm *c, schedc_collective coll, int *nnodes) {
  const schedc_plan *p = schedc_comm_default_plan(c, coll, 0, COUNT * 4);
  static schedc_plan_info info;
  info = (schedc_plan_info)SCHEDC_PLAN_INFO_INIT;
  if (!p || schedc_plan_get_info(p, &info) != SCHEDC_OK) return "(none)";
  *nnodes = info.nnodes;
  return info.name;
}

typedef struct rankjob { schedc_comm *c; int x[COUNT]; schedc_status st; } rankjob;
static void *rank_main(void *arg) {
  rankjob *j = arg;
  j->st = schedc_allreduce(j->x, j->x, COUNT, SCHEDC_I32, SCHEDC_SUM, j->c, NULL);
  return NULL;
}

static int warned;
static void hook(void *ctx, schedc_log_level level, const char *msg) {
  (void)ctx;
  if (level == SCHEDC_LOG_WARN && strstr(msg, "no hierarchical plan")) warned++;
}

static void threads_layout(const char *file, const char *want, int want_nodes) {
  setenv("SCHEDC_TOPOLOGY", file, 1);
  schedc_comm *c[N];
  CHECK(schedc_comm_init_threads(N, NULL, c) == SCHEDC_OK);
  unsetenv("SCHEDC_TOPOLOGY");
  const schedc_collective colls[] = {SCHEDC_ALLREDUCE, SCHEDC_REDUCE_SCATTER, SCHEDC_ALLGATHER, SCHEDC_BROADCAST};
  for (int i = 0; i < 4; i++) {
    int nn = -1;
    const char *name = plan_name(c[0], colls[i], &nn);
    const char *w = colls[i] == SCHEDC_BROADCAST ? "ring" : want;
    if (strcmp(name, w) != 0) fprintf(stderr, "%s: %s plan '%s', want '%s'\n", file, schedc_collective_name(colls[i]), name, w);
    CHECK(strcmp(name, w) == 0);
    if (!strcmp(w, "hierarchical")) CHECK(nn == want_nodes);
  }
  rankjob j[N];
  pthread_t t[N];
  for (int r = 0; r < N; r++) {
    j[r].c = c[r];
    for (int i = 0; i < COUNT; i++) j[r].x[i] = r * 100000 + i * 3;
  }
  for (int r = 0; r < N; r++) pthread_create(&t[r], NULL, rank_main, &j[r]);
  for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < N; r++) {
    CHECK(j[r].st == SCHEDC_OK);
    int bad = 0;
    for (int i = 0; i < COUNT; i++) {
      int sum = 0;
      for (int q = 0; q < N; q++) sum += q * 100000 + i * 3;
      bad += j[r].x[i] != sum;
    }
    CHECK(bad == 0);
  }
  for (int r = 0; r < N; r++) schedc_comm_free(c[r]);
}

/* shm rank r of a job whose ranks set SCHEDC_TOPOLOGY to topo[r]: exit 0 when init is refused
 * with EMISMATCH naming SCHEDC_TOPOLOGY, 1 otherwise. */
static int shm_rank(int r, const char *job, const char *topo) {
  if (topo) setenv("SCHEDC_TOPOLOGY", topo, 1);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 30;
  schedc_comm *c = NULL;
  schedc_status st = schedc_comm_init_shm(r, 2, job, &o, &c);
  int ok = st == SCHEDC_EMISMATCH && strstr(schedc_errmsg(), "disagree on the topology (SCHEDC_TOPOLOGY) at init");
  if (!ok) fprintf(stderr, "rank %d: status %d: %s\n", r, (int)st, schedc_errmsg());
  schedc_comm_free(c);
  return !ok;
}

int main(int argc, char **argv) {
  char two[256], odd[256];
  snprintf(two, sizeof two, "/tmp/schedc_layout_%d_two.lua", (int)getpid());
  snprintf(odd, sizeof odd, "/tmp/schedc_layout_%d_odd.lua", (int)getpid());
  FILE *f = fopen(two, "w");
  if (f) { fputs("return { nnodes = 2, ranks_per_node = 2 }\n", f); fclose(f); }
  f = fopen(odd, "w");
  if (f) { fputs("return { nnodes = 3, ranks_per_node = 2 }\n", f); fclose(f); } /* 6 ranks: not this job */
  (void)argc;
  (void)argv;
  threads_layout(two, "hierarchical", 2);
  schedc_set_log(hook, NULL);
  threads_layout(odd, "ring", 0);
  schedc_set_log(NULL, NULL);
  /* once per communicator and collective that would have had one: rank 0's three queries, then
   * ranks 1-3 at their allreduce (rank 0 has its ring by then) */
  if (warned != 6) fprintf(stderr, "warned %d times\n", warned);
  CHECK(warned == 6);
  char job[64];
  snprintf(job, sizeof job, "layout%d", (int)getpid());
  pid_t pid[2];
  for (int r = 0; r < 2; r++)
    if ((pid[r] = fork()) == 0) _exit(shm_rank(r, job, r ? two : NULL));
  for (int r = 0; r < 2; r++) {
    int ws = 0;
    waitpid(pid[r], &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
  unlink(two);
  unlink(odd);
  return DONE();
}
