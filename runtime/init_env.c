/*
 * init_env.c — schedc_comm_init_env: the rank, the job and the backend from the environment
 * (SCHEDC_*, torchrun's, Open MPI's), then the backend's own init. The one place above the
 * backends that names them; the core only ever sees the chosen backend's operation table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "err.h"

schedc_status schedc_comm_init_env(const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  const char *r = getenv("SCHEDC_RANK"), *n = getenv("SCHEDC_NRANKS"), *job = getenv("SCHEDC_JOB");
  const char *src = "SCHEDC_RANK/SCHEDC_NRANKS";
  if (!r || !n) { r = getenv("RANK"); n = getenv("WORLD_SIZE"); src = "RANK/WORLD_SIZE"; }
  if (!r || !n) { r = getenv("OMPI_COMM_WORLD_RANK"); n = getenv("OMPI_COMM_WORLD_SIZE"); src = "OMPI_COMM_WORLD_RANK/SIZE"; }
  if (!r || !n)
    return sc_err(SCHEDC_EINVAL, "no rank in the environment: set SCHEDC_RANK and SCHEDC_NRANKS (and SCHEDC_JOB), "
                                 "or start under torchrun (RANK, WORLD_SIZE) or mpirun");
  char *e1, *e2;
  long rank = strtol(r, &e1, 10), nranks = strtol(n, &e2, 10);
  if (*e1 || *e2 || !*r || !*n) return sc_err(SCHEDC_EINVAL, "%s='%s/%s' are not integers", src, r, n);
  /* under an MPI launcher, built with MPI: the mpi backend by default, and the cuda backend's
   * host exchanges over MPI (its ranks may then be on several hosts) */
  int mpi_launched = sc_mpi_built() && !strcmp(src, "OMPI_COMM_WORLD_RANK/SIZE");
  const char *be = getenv("SCHEDC_BACKEND");
  if (!be && mpi_launched) be = "mpi";
  if (be && !strcmp(be, "mpi")) return schedc_comm_init_mpi(NULL, opts, out);
  int cuda = be && !strcmp(be, "cuda");
  if (be && strcmp(be, "shm") && !cuda)
    return sc_err(SCHEDC_EINVAL, "SCHEDC_BACKEND='%s' (choose shm, mpi or cuda; threads needs schedc_comm_init_threads)", be);
  /* cuda: the GPU is SCHEDC_CUDA_DEVICE, else torchrun's LOCAL_RANK, else Open MPI's rank on
   * this host, else the rank */
  const char *dv = getenv("SCHEDC_CUDA_DEVICE"), *dsrc = "SCHEDC_CUDA_DEVICE";
  if (!dv) { dv = getenv("LOCAL_RANK"); dsrc = "LOCAL_RANK"; }
  if (!dv) { dv = getenv("OMPI_COMM_WORLD_LOCAL_RANK"); dsrc = "OMPI_COMM_WORLD_LOCAL_RANK"; }
  long device = rank;
  if (cuda && dv) {
    device = strtol(dv, &e1, 10);
    if (*e1 || !*dv) return sc_err(SCHEDC_EINVAL, "%s='%s' is not an integer", dsrc, dv);
  }
  char jobbuf[64];
  if (!job) job = getenv("TORCHELASTIC_RUN_ID");
  if (!job && getenv("MASTER_PORT")) { snprintf(jobbuf, sizeof jobbuf, "port%s", getenv("MASTER_PORT")); job = jobbuf; }
  if (!job && getenv("OMPI_MCA_orte_hnp_uri")) {
    snprintf(jobbuf, sizeof jobbuf, "ompi%lu", (unsigned long)strtoul(getenv("OMPI_MCA_orte_hnp_uri"), NULL, 10));
    job = jobbuf;
  }
  if (cuda && mpi_launched) return sc_cu_init_env_mpi((int)device, opts, out);
  if (!job) return sc_err(SCHEDC_EINVAL, "no job id in the environment: set SCHEDC_JOB (the same on every rank)");
  if (cuda) return schedc_comm_init_cuda_rank((int)rank, (int)nranks, (int)device, job, opts, out);
  return schedc_comm_init_shm((int)rank, (int)nranks, job, opts, out);
}
