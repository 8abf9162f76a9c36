/*
 * test_hosts_mpi.c WANT — run under mpirun: an mpi communicator learns the hosts at init and the
 * calls made without a plan pick their plan from them. SCHEDC_HOST_ID pretends the processes are
 * on several hosts. WANT is the default allreduce plan's expected name ("hierarchical" when the
 * ranks span hosts, in blocks or round-robin, "ring" on one host or an uneven layout). A hierarchical
 * default must cross between hosts less often than the built-in ring in rank order (no more often
 * when every host holds one rank; its transfers
 * counted here against each rank's host: SCHEDC_HOST_ID, else the host name). An i32 allreduce's
 * result is checked against the sum written here. Exit 0 when every check passes on this rank.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schedc/schedc.h"

/* Transfers of p between ranks on different hosts. */
static long crossings(const schedc_plan *p, const int64_t *host) {
  schedc_plan_info info = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(p, &info);
  long k = 0;
  schedc_transfer t;
  for (long i = 0; i < info.ntransfers; i++)
    if (schedc_plan_transfer(p, i, &t) == SCHEDC_OK && host[t.src] != host[t.dst]) k++;
  return k;
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: test_hosts_mpi WANT\n"); return 2; }
  schedc_comm *c = NULL;
  if (schedc_comm_init_mpi(NULL, NULL, &c) != SCHEDC_OK) { fprintf(stderr, "init: %s\n", schedc_errmsg()); return 1; }
  int me = schedc_comm_rank(c), n = schedc_comm_nranks(c), bad = 0;
  /* every rank's host, as this test sees it (FNV-1a of the id or the name) */
  char name[256] = "";
  const char *id = getenv("SCHEDC_HOST_ID");
  if (id) snprintf(name, sizeof name, "id:%s", id);
  else gethostname(name, sizeof name - 1);
  int64_t mine = (int64_t)1469598103934665603ull, *host = calloc((size_t)n, sizeof *host);
  for (const char *q = name; *q; q++) mine = (int64_t)(((uint64_t)mine ^ (unsigned char)*q) * 1099511628211ull);
  if (!host || schedc_allgather(&mine, host, 1, SCHEDC_I64, c, NULL) != SCHEDC_OK) { fprintf(stderr, "hosts: %s\n", schedc_errmsg()); return 1; }
  int one_per_host = 1;
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++) one_per_host &= host[a] != host[b];
  const schedc_collective colls[] = {SCHEDC_ALLREDUCE, SCHEDC_REDUCE_SCATTER, SCHEDC_ALLGATHER, SCHEDC_BROADCAST};
  for (int i = 0; i < 4; i++) {
    const schedc_plan *p = schedc_comm_default_plan(c, colls[i], 0, 4096);
    schedc_plan_info info = SCHEDC_PLAN_INFO_INIT;
    if (!p || schedc_plan_get_info(p, &info) != SCHEDC_OK) { fprintf(stderr, "rank %d: no plan: %s\n", me, schedc_errmsg()); return 1; }
    /* broadcast has no hierarchical form: always the ring */
    const char *want = colls[i] == SCHEDC_BROADCAST ? "ring" : argv[1];
    printf("rank %d: %s %s nnodes %d\n", me, schedc_collective_name(colls[i]), info.name, info.nnodes);
    if (strcmp(info.name, want) != 0) { fprintf(stderr, "rank %d: %s plan '%s', want '%s'\n", me, schedc_collective_name(colls[i]), info.name, want); bad++; }
    schedc_plan *ring = NULL;
    if (!strcmp(info.name, "hierarchical") && schedc_plan_builtin(colls[i], n, 0, &ring) == SCHEDC_OK) {
      long ch = crossings(p, host), cr = crossings(ring, host);
      printf("rank %d: %s crosses hosts in %ld transfers, the ring in rank order in %ld\n", me, schedc_collective_name(colls[i]), ch, cr);
      /* (a rank per host: every transfer crosses, in either plan) */
      if (one_per_host ? ch > cr : ch >= cr) { fprintf(stderr, "rank %d: %s: the hierarchical plan crosses hosts %ld times, not fewer than the ring's %ld\n", me, schedc_collective_name(colls[i]), ch, cr); bad++; }
    }
    schedc_plan_free(ring);
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
  free(host);
  return bad != 0;
}
