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

/* runtime/net: 1 when this build has the net backend (UCX), 0 otherwise (net_none.c). */
int sc_net_built(void);
/* schedc_comm_init_env's net: rank of nranks, bootstrapped at MASTER_ADDR:MASTER_PORT (torchrun's
 * agent store there when TORCHELASTIC_USE_AGENT_STORE=True, else rank 0 listens on it). */
schedc_status sc_net_init_env(int rank, int nranks, const schedc_comm_opts *opts, schedc_comm **out);

/* runtime/cuda: schedc_comm_init_env's cuda backend under an MPI launcher: a process per GPU
 * whose host exchanges go over an MPI communicator of its own (freed with it), so the ranks may
 * be on several hosts (schedc_comm_init_cuda_over). */
schedc_status sc_cu_init_env_mpi(int device, const schedc_comm_opts *opts, schedc_comm **out);
/* The same over `host`, a CPU communicator made for it (net across hosts), taken: freed with the
 * cuda communicator, or here on failure. */
schedc_status sc_cu_init_env_over(schedc_comm *host, int device, const schedc_comm_opts *opts, schedc_comm **out);

#endif
