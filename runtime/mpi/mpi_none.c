/*
 * nompi.c — the `mpi` entry point in builds without MPI: says so.
 */
#include "comm.h"
#include "err.h"

schedc_status schedc_comm_init_mpi(const void *mpi_comm, const schedc_comm_opts *opts, schedc_comm **out) {
  (void)mpi_comm;
  (void)opts;
  if (out) *out = NULL;
  return sc_err(SCHEDC_EUNAVAIL, "this build of schedc has no MPI transport (install libopenmpi-dev and rebuild)");
}
