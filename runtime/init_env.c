/*
 * init_env.c — schedc_comm_init_env: the rank, the job and the backend from the environment
 * (SCHEDC_*, torchrun's, Open MPI's, SLURM's), then the backend's own init. The one place above the
 * backends that names them; the core only ever sees the chosen backend's operation table.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "err.h"
#include "hash.h"
#include "params.h"

/* Do the ranks span hosts, as the launcher says? torchrun (and `schedc launch`, which sets the
 * same): fewer ranks on this host than in the job; srun: a step over several nodes. */
static int spans_hosts(sc_param pr, long long nranks) {
  long long v = 0;
  if ((pr == SC_P_RANK || pr == SC_P_SCHEDC_RANK) && sc_param_int(SC_P_LOCAL_WORLD_SIZE, &v) == SCHEDC_OK && v > 0)
    return v < nranks;
  if (pr == SC_P_SLURM_PROCID && sc_param_int(SC_P_SLURM_STEP_NUM_NODES, &v) == SCHEDC_OK) return v > 1;
  return 0;
}

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
  if (!r || !n) { r = sc_param_raw(pr = SC_P_SLURM_PROCID); n = sc_param_raw(pn = SC_P_SLURM_NTASKS); }
  if (!r || !n)
    return sc_err(SCHEDC_EINVAL, "no rank in the environment: set SCHEDC_RANK and SCHEDC_NRANKS (and SCHEDC_JOB), "
                                 "or start under torchrun (RANK, WORLD_SIZE), mpirun or srun");
  long long rank, nranks;
  schedc_status st = sc_param_parse_int(pr, r, &rank);
  if (st != SCHEDC_OK || (st = sc_param_parse_int(pn, n, &nranks)) != SCHEDC_OK) return st;
  /* under an MPI launcher, built with MPI: the mpi backend by default, and the cuda backend's
   * host exchanges over MPI (its ranks may then be on several hosts); ranks on several hosts
   * without one: net, bootstrapped at MASTER_ADDR:MASTER_PORT */
  int mpi_launched = sc_mpi_built() && pr == SC_P_OMPI_COMM_WORLD_RANK;
  int spans = !mpi_launched && spans_hosts(pr, nranks);
  int be = mpi_launched ? 1 : spans && sc_net_built() ? 3 : 0; /* SCHEDC_BACKEND's words: shm, mpi, cuda, net */
  int set = sc_param_raw(SC_P_SCHEDC_BACKEND) != NULL;
  if ((st = sc_param_enum(SC_P_SCHEDC_BACKEND, &be)) != SCHEDC_OK) return st;
  if (be == 1) return schedc_comm_init_mpi(NULL, opts, out);
  if (be == 3) return sc_net_init_env((int)rank, (int)nranks, opts, out);
  if (spans && !(be == 2 && sc_net_built())) {
    int shm = set && be == 0; /* asked for; else there is no net */
    return sc_err(SCHEDC_EINVAL, "the ranks span hosts (%s) but %s: %s", pr == SC_P_SLURM_PROCID ? "SLURM_STEP_NUM_NODES > 1"
                  : "LOCAL_WORLD_SIZE < WORLD_SIZE", shm ? "SCHEDC_BACKEND asks for shm, which is for one host"
                  : "this build of schedc has no net backend", shm ? "unset it, or set it to net"
                  : "install libucx-dev and rebuild, or start under mpirun");
  }
  int cuda = be == 2;
  /* cuda: the GPU is SCHEDC_CUDA_DEVICE, else torchrun's LOCAL_RANK, else Open MPI's rank on
   * this host, else srun's, else the rank */
  sc_param dp = SC_P_SCHEDC_CUDA_DEVICE;
  const char *dv = sc_param_raw(dp);
  if (!dv) dv = sc_param_raw(dp = SC_P_LOCAL_RANK);
  if (!dv) dv = sc_param_raw(dp = SC_P_OMPI_COMM_WORLD_LOCAL_RANK);
  if (!dv) dv = sc_param_raw(dp = SC_P_SLURM_LOCALID);
  long long device = rank;
  if (cuda && dv && (st = sc_param_parse_int(dp, dv, &device)) != SCHEDC_OK) return st;
  if (cuda && spans) { /* across hosts without MPI: the host exchanges over a net communicator */
    schedc_comm_opts bo = SCHEDC_COMM_OPTS_INIT; /* unverified, no plan: as the cuda backend's own */
    if (opts && opts->size >= offsetof(schedc_comm_opts, timeout_s) + sizeof opts->timeout_s) bo.timeout_s = opts->timeout_s;
    bo.verify = SCHEDC_VERIFY_NONE;
    schedc_comm *host = NULL;
    if ((st = sc_net_init_env((int)rank, (int)nranks, &bo, &host)) != SCHEDC_OK) return st;
    return sc_cu_init_env_over(host, (int)device, opts, out);
  }
  /* The job names the shared segments and its token (shm.c), so it must be unique among the
   * jobs running on this host: taken only from values two live jobs cannot share. Not
   * MASTER_PORT (two jobs on different masters, or one after a restart, share it) and not
   * TORCHELASTIC_RUN_ID=none (torchrun's value for every job started without --rdzv-id). A
   * real --rdzv-id is the user's name for the job, unique by torchrun's own contract (it keys
   * the rendezvous), and --standalone draws a random one. Open MPI's HNP uri holds the port
   * mpirun listens on, which no other live mpirun on the host holds; SLURM's job and step ids
   * are unique in the cluster. */
  char jobbuf[96];
  const char *ompi = sc_param_str(SC_P_OMPI_MCA_orte_hnp_uri), *tid = sc_param_str(SC_P_TORCHELASTIC_RUN_ID);
  const char *sj = sc_param_str(SC_P_SLURM_JOB_ID), *ss = sc_param_str(SC_P_SLURM_STEP_ID);
  if (!job && tid && strcmp(tid, "none") != 0) job = tid;
  if (!job && ompi) { /* the job's number (the uri's leading digits) and a hash of the whole uri */
    uint64_t h = sc_fnv_str(SC_FNV_INIT, ompi);
    snprintf(jobbuf, sizeof jobbuf, "ompi%lu-%016llx", (unsigned long)strtoul(ompi, NULL, 10), (unsigned long long)h);
    job = jobbuf;
  }
  if (!job && sj && pr == SC_P_SLURM_PROCID) {
    snprintf(jobbuf, sizeof jobbuf, "slurm%.40s.%.40s", sj, ss ? ss : "");
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
