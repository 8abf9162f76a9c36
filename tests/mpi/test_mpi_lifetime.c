/*
 * test_mpi_lifetime.c — the mpi backend and MPI's own lifetime (run under mpirun -np 2):
 * schedc never finalises MPI the caller initialised, so communicators may come and go and the
 * caller's MPI keeps working; an options struct whose size ends inside the `plan` field does not
 * give a plan (the field is read only when the struct covers it whole). With "self": schedc
 * initialises MPI itself; a second communicator after the first is freed still works.
 */
#include <mpi.h>
#include <stddef.h>
#include <string.h>

#include "../check.h"
#include "schedc/schedc.h"

static void allreduce_once(schedc_comm *c, int rank, int size) {
  float x[3] = {(float)rank, 1.0f, 0.5f}, y[3];
  CHECK(schedc_allreduce(x, y, 3, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
  CHECK(y[0] == (float)(size * (size - 1) / 2) && y[1] == (float)size && y[2] == 0.5f * (float)size);
}

int main(int argc, char **argv) {
  int self = argc > 1 && !strcmp(argv[1], "self");
  if (self) {
    /* schedc initialises MPI: two communicators one after the other */
    for (int round = 0; round < 2; round++) {
      schedc_comm *c = NULL;
      CHECK(schedc_comm_init_mpi(NULL, NULL, &c) == SCHEDC_OK);
      if (!c) return DONE();
      allreduce_once(c, schedc_comm_rank(c), schedc_comm_nranks(c));
      schedc_comm_free(c);
      int fin = 1;
      MPI_Finalized(&fin);
      CHECK(fin == 0); /* finalised only at exit */
    }
    return DONE();
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm world = MPI_COMM_WORLD;
  for (int round = 0; round < 3; round++) {
    schedc_comm *c = NULL;
    CHECK(schedc_comm_init_mpi(&world, NULL, &c) == SCHEDC_OK);
    if (c) allreduce_once(c, rank, size);
    schedc_comm_free(c);
    int fin = 1;
    MPI_Finalized(&fin);
    CHECK(fin == 0); /* the caller's MPI is still the caller's */
  }
  int one = 1, sum = 0; /* and it still works */
  CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && sum == size);

  /* opts->size that ends inside `plan`: rank 0's plan is not taken, so the plans differ */
  schedc_plan *p = NULL;
  CHECK(schedc_plan_builtin(SCHEDC_ALLREDUCE, size, 0, &p) == SCHEDC_OK);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.plan = p;
  if (rank == 0) o.size = offsetof(schedc_comm_opts, plan) + 4;
  schedc_comm *c = NULL;
  schedc_status st = schedc_comm_init_mpi(&world, &o, &c);
  CHECK(st == SCHEDC_EMISMATCH);
  if (st != SCHEDC_EMISMATCH) fprintf(stderr, "rank %d: status %d: %s\n", rank, (int)st, schedc_errmsg());
  schedc_comm_free(c);
  o.size = sizeof o; /* whole: the same plan everywhere */
  CHECK(schedc_comm_init_mpi(&world, &o, &c) == SCHEDC_OK);
  if (c) allreduce_once(c, rank, size);
  schedc_comm_free(c);
  schedc_plan_free(p);
  int code = DONE();
  MPI_Finalize();
  return code;
}
