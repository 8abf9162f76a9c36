/*
 * allreduce_mpi.c — schedc inside an MPI program: the communicator comes from MPI_COMM_WORLD,
 * the sum follows the plan's proven order, and every rank checks it holds the bits of rank 0.
 *   mpirun -np 4 ./allreduce_mpi [SCHEDULE.lua]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "schedc/schedc.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  schedc_plan *plan = NULL;
  if (argc > 1) {
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = size;
    if (schedc_plan_from_script(argv[1], &lo, &plan) != SCHEDC_OK) {
      if (rank == 0) fprintf(stderr, "%s\n", schedc_errmsg());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Comm world = MPI_COMM_WORLD;
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.plan = plan; /* every rank must hold the same plan: checked here */
  schedc_comm *comm;
  if (schedc_comm_init_mpi(&world, &co, &comm) != SCHEDC_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, schedc_errmsg());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  enum { COUNT = 1 << 16 };
  float *grad = malloc(COUNT * sizeof *grad);
  for (int i = 0; i < COUNT; i++) grad[i] = (float)((i * 31 + rank * 17) % 101) * 0.01f - 0.5f;
  if (schedc_allreduce(grad, grad, COUNT, SCHEDC_F32, SCHEDC_SUM, comm, plan) != SCHEDC_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, schedc_errmsg());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  unsigned long long d = schedc_digest(grad, COUNT * sizeof *grad), d0 = d;
  MPI_Bcast(&d0, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  printf("rank %d: digest %016llx %s\n", rank, d, d == d0 ? "(same as rank 0)" : "(DIFFERENT)");
  free(grad);
  schedc_comm_free(comm);
  schedc_plan_free(plan);
  MPI_Finalize();
  return d == d0 ? 0 : 1;
}
