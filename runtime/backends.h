/*
 * backends.h — what the backends offer beyond the public API, for the one place that chooses a
 * backend from the environment (init_env.c). The core never includes this: it only knows the
 * operation table (sc_backend, core/comm.h) of the communicator it holds.
 */
#ifndef SC_BACKENDS_H
#define SC_BACKENDS_H

#include "schedc/schedc.h"

/* runtime/mpi: 1 when this build has the mpi backend (mpi.c), 0 otherwise (mpi_none.c). */
int sc_mpi_built(void);

/* runtime/cuda: schedc_comm_init_env's cuda backend under an MPI launcher: a process per GPU
 * whose host exchanges go over an MPI communicator of its own (freed with it), so the ranks may
 * be on several hosts (schedc_comm_init_cuda_over). */
schedc_status sc_cu_init_env_mpi(int device, const schedc_comm_opts *opts, schedc_comm **out);

#endif
