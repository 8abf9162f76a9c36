/*
 * backends.h — what the backends offer beyond the public API, for the one place that chooses a
 * backend from the environment (init_env.c) and the one that reports them (info.c: `schedc
 * info`). The core never includes this: it only knows the operation table (sc_backend,
 * core/comm.h) of the communicator it holds.
 */
#ifndef SC_BACKENDS_H
#define SC_BACKENDS_H

#include "probe.h"
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

/* Every backend, in the order `schedc info` lists them: X(name, probe). The probe (probe.h) says
 * whether this build has the backend (built) and whether it can run here (found), or why not; a
 * new backend adds its row here, and the report lists it with no other change. */
#define SC_BACKEND_LIST(X)                                                                        \
  X("threads", sc_threads_probe)                                                                  \
  X("shm", sc_shm_probe)                                                                          \
  X("mpi", sc_mpi_backend_probe)                                                                  \
  X("net", sc_net_backend_probe)                                                                  \
  X("cuda", sc_cuda_probe)

/* runtime/cpu_probe.c: a one-rank communicator of each, made and freed through the public entry
 * points (what running there takes). */
void sc_threads_probe(sc_probe *p);
void sc_shm_probe(sc_probe *p);
/* runtime/mpi (mpi.c, or mpi_none.c): the backend's row, and the MPI library it was built with
 * (the file it runs on, MPI_Get_library_version). */
void sc_mpi_backend_probe(sc_probe *p);
void sc_mpi_probe(sc_probe *p);
/* runtime/net (net_ucx.c, or net_none.c): the backend's row, and the UCX it was linked with. */
void sc_net_backend_probe(sc_probe *p);
void sc_ucx_probe(sc_probe *p);
/* runtime/cuda: the backend's row (devices through the table in use, cuda_plugin.c), and the
 * libraries it loads with dlopen: NVRTC (nvrtc.c), the driver (cuda_driver.c), NCCL (cuda_nccl.c). */
void sc_cuda_probe(sc_probe *p);
void sc_nvrtc_probe(sc_probe *p);
void sc_cudrv_probe(sc_probe *p);
void sc_nccl_probe(sc_probe *p);
/* The CUDA devices the cuda backend sees (the driver's, or a test plugin's): their count, and
 * the first cap of them into out. */
typedef struct sc_gpu_seen {
  char arch[16]; /* "sm_90" */
  int sms;       /* multiprocessors */
} sc_gpu_seen;
int sc_cuda_gpus(sc_gpu_seen *out, int cap);

#endif
