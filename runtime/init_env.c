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
#include "params.h"

schedc_status schedc_comm_init_env(const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  const char *r = sc_param_raw(SC_P_SCHEDC_RANK), *n = sc_param_raw(SC_P_SCHEDC_NRANKS);
  const char *job = sc_param_str(SC_P_SCHEDC_JOB);
  sc_param pr = SC_P_SCHEDC_RANK, pn = SC_P_SCHEDC_NRANKS; /* the pair read, for its messages */
  if (!r || !n) { r = sc_param_raw(pr = SC_P_RANK); n = sc_param_raw(pn = SC_P_WORLD_SIZE); }
  if (!r || !n) {
    r = sc_param_raw(pr = SC_P_OMPI_COMM_WORLD_RANK);
    n = sc_param_raw(pn = SC_P_OMPI_COMM_WORLD_SIZE);
  }
  if (!r || !n)
    return sc_err(SCHEDC_EINVAL, "no rank in the environment: set SCHEDC_RANK and SCHEDC_NRANKS (and SCHEDC_JOB), "
                                 "or start under torchrun (RANK, WORLD_SIZE) or mpirun");
  long long rank, nranks;
  schedc_status st = sc_param_parse_int(pr, r, &rank);
  if (st != SCHEDC_OK || (st = sc_param_parse_int(pn, n, &nranks)) != SCHEDC_OK) return st;
  /* under an MPI launcher, built with MPI: the mpi backend by default, and the cuda backend's
   * host exchanges over MPI (its ranks may then be on several hosts) */
  int mpi_launched = sc_mpi_built() && pr == SC_P_OMPI_COMM_WORLD_RANK;
  int be = mpi_launched ? 1 : 0; /* SCHEDC_BACKEND's words: shm, mpi, cuda */
  if ((st = sc_param_enum(SC_P_SCHEDC_BACKEND, &be)) != SCHEDC_OK) return st;
  if (be == 1) return schedc_comm_init_mpi(NULL, opts, out);
  int cuda = be == 2;
  /* cuda: the GPU is SCHEDC_CUDA_DEVICE, else torchrun's LOCAL_RANK, else Open MPI's rank on
   * this host, else the rank */
  sc_param dp = SC_P_SCHEDC_CUDA_DEVICE;
  const char *dv = sc_param_raw(dp);
  if (!dv) dv = sc_param_raw(dp = SC_P_LOCAL_RANK);
  if (!dv) dv = sc_param_raw(dp = SC_P_OMPI_COMM_WORLD_LOCAL_RANK);
  long long device = rank;
  if (cuda && dv && (st = sc_param_parse_int(dp, dv, &device)) != SCHEDC_OK) return st;
  char jobbuf[64];
  const char *port = sc_param_str(SC_P_MASTER_PORT), *ompi = sc_param_str(SC_P_OMPI_MCA_orte_hnp_uri);
  if (!job) job = sc_param_str(SC_P_TORCHELASTIC_RUN_ID);
  if (!job && port) { snprintf(jobbuf, sizeof jobbuf, "port%s", port); job = jobbuf; }
  if (!job && ompi) { /* the job's number: the uri's leading digits */
    snprintf(jobbuf, sizeof jobbuf, "ompi%lu", (unsigned long)strtoul(ompi, NULL, 10));
    job = jobbuf;
  }
  if (cuda && mpi_launched) return sc_cu_init_env_mpi((int)device, opts, out);
  if (!job) return sc_err(SCHEDC_EINVAL, "no job id in the environment: set SCHEDC_JOB (the same on every rank)");
  if (cuda) return schedc_comm_init_cuda_rank((int)rank, (int)nranks, (int)device, job, opts, out);
  return schedc_comm_init_shm((int)rank, (int)nranks, job, opts, out);
}
