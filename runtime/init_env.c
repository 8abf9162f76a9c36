/*
 * init_env.c — schedc_comm_init_env: the rank, the job and the backend from the environment
 * (SCHEDC_*, torchrun's, Open MPI's), then the backend's own init. The one place above the
 * backends that names them; the core only ever sees the chosen backend's operation table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "err.h"
#include "hash.h"
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
  /* The job names the shared segments and its token (shm.c), so it must be unique among the
   * jobs running on this host: taken only from values two live jobs cannot share. Not
   * MASTER_PORT (two jobs on different masters, or one after a restart, share it) and not
   * TORCHELASTIC_RUN_ID=none (torchrun's value for every job started without --rdzv-id). A
   * real --rdzv-id is the user's name for the job, unique by torchrun's own contract (it keys
   * the rendezvous), and --standalone draws a random one. Open MPI's HNP uri holds the port
   * mpirun listens on, which no other live mpirun on the host holds. */
  char jobbuf[64];
  const char *ompi = sc_param_str(SC_P_OMPI_MCA_orte_hnp_uri), *tid = sc_param_str(SC_P_TORCHELASTIC_RUN_ID);
  if (!job && tid && strcmp(tid, "none") != 0) job = tid;
  if (!job && ompi) { /* the job's number (the uri's leading digits) and a hash of the whole uri */
    uint64_t h = sc_fnv_str(SC_FNV_INIT, ompi);
    snprintf(jobbuf, sizeof jobbuf, "ompi%lu-%016llx", (unsigned long)strtoul(ompi, NULL, 10), (unsigned long long)h);
    job = jobbuf;
  }
  if (cuda && mpi_launched) return sc_cu_init_env_mpi((int)device, opts, out);
  if (!job)
    return sc_err(SCHEDC_EINVAL, "no unique job id in the environment%s%s: set SCHEDC_JOB (the same on every rank) to "
                  "a value unique among the jobs running on this host, e.g. drawn at random by the launcher; or start "
                  "the ranks with `schedc launch`, or torchrun --standalone or --rdzv-id=ID; from Python, "
                  "schedc.torch.init_comm() bootstraps through torch's store instead",
                  tid ? " (TORCHELASTIC_RUN_ID is 'none', torchrun's value for every job without --rdzv-id)" : "",
                  sc_param_raw(SC_P_MASTER_PORT) ? " (MASTER_PORT is not one: two jobs can share it)" : "");
  if (cuda) return schedc_comm_init_cuda_rank((int)rank, (int)nranks, (int)device, job, opts, out);
  return schedc_comm_init_shm((int)rank, (int)nranks, job, opts, out);
}
