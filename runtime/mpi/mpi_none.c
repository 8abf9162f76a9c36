/*
 * mpi_none.c — the `mpi` entry point in builds without MPI (built instead of mpi.c): says so.
 */
#include "backends.h"
#include "err.h"

#include <stdio.h>

int sc_mpi_built(void) { return 0; }

static const char no_mpi[] = "this build of schedc has no MPI backend (install libopenmpi-dev and rebuild)";

void sc_mpi_backend_probe(sc_probe *p) { snprintf(p->why, sizeof p->why, "%s", no_mpi); }
void sc_mpi_probe(sc_probe *p) { snprintf(p->why, sizeof p->why, "%s", no_mpi); }

schedc_status schedc_comm_init_mpi(const void *mpi_comm, const schedc_comm_opts *opts, schedc_comm **out) {
  (void)mpi_comm;
  (void)opts;
  if (out) *out = NULL;
  return sc_err(SCHEDC_EUNAVAIL, "%s", no_mpi);
}
