/*
 * test_hosts_mpi.c WANT — run under mpirun: an mpi communicator learns the hosts at init and the
 * calls made without a plan pick their plan from them. SCHEDC_HOST_ID pretends the processes are
 * on several hosts. WANT is the default allreduce plan's expected name ("hierarchical" when the
 * hosts hold equal consecutive blocks of ranks, "ring" otherwise). An i32 allreduce's result is
 * checked against the sum written here. Exit 0 when every check passes on this rank.
 */
#include <stdio.h>
#include <string.h>

#include "schedc/schedc.h"

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: test_hosts_mpi WANT\n"); return 2; }
  schedc_comm *c = NULL;
  if (schedc_comm_init_mpi(NULL, NULL, &c) != SCHEDC_OK) { fprintf(stderr, "init: %s\n", schedc_errmsg()); return 1; }
  int me = schedc_comm_rank(c), n = schedc_comm_nranks(c), bad = 0;
  const schedc_collective colls[] = {SCHEDC_ALLREDUCE, SCHEDC_REDUCE_SCATTER, SCHEDC_ALLGATHER, SCHEDC_BROADCAST};
  for (int i = 0; i < 4; i++) {
    const schedc_plan *p = schedc_comm_default_plan(c, colls[i], 0, 4096);
    schedc_plan_info info = SCHEDC_PLAN_INFO_INIT;
    if (!p || schedc_plan_get_info(p, &info) != SCHEDC_OK) { fprintf(stderr, "rank %d: no plan: %s\n", me, schedc_errmsg()); return 1; }
    /* broadcast has no hierarchical form: always the ring */
    const char *want = colls[i] == SCHEDC_BROADCAST ? "ring" : argv[1];
    printf("rank %d: %s %s nnodes %d\n", me, schedc_collective_name(colls[i]), info.name, info.nnodes);
    if (strcmp(info.name, want) != 0) { fprintf(stderr, "rank %d: %s plan '%s', want '%s'\n", me, schedc_collective_name(colls[i]), info.name, want); bad++; }
  }
  enum { COUNT = 1000 };
  int x[COUNT];
  for (int i = 0; i < COUNT; i++) x[i] = me * 1000 + i;
  if (schedc_allreduce(x, x, COUNT, SCHEDC_I32, SCHEDC_SUM, c, NULL) != SCHEDC_OK) {
    fprintf(stderr, "rank %d: allreduce: %s\n", me, schedc_errmsg());
    bad++;
  }
  for (int i = 0; i < COUNT; i++) {
    int want = 0;
    for (int r = 0; r < n; r++) want += r * 1000 + i;
    if (x[i] != want && bad++ < 3) fprintf(stderr, "rank %d: element %d is %d, want %d\n", me, i, x[i], want);
  }
  schedc_comm_free(c);
  return bad != 0;
}
