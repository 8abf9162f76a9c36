/*
 * cuda_proc_init.c — joining the process-per-GPU mode (cuda_proc.c, below it):
 * schedc_comm_init_cuda_rank (our own shared-memory bootstrap), schedc_comm_init_cuda_over (the
 * caller's CPU communicator, any hosts) and schedc_comm_init_env's cuda under MPI. At init the
 * ranks exchange their GPU, blocks, host and transport: two ranks on one GPU are refused, the
 * hosts become the nodes, and NCCL is set up where payloads cross hosts or it is asked for.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "cuda_modes.h"
#include "cuda_net.h"
#include "cuda_proc.h"
#include "err.h"
#include "hosts.h"

/* The NCCL communicator of the group's ranks: rank 0 makes the rendezvous, the host exchange
 * gives it to all, every rank joins; a last exchange says whether every rank did, so that a rank
 * whose NCCL failed does not leave its peers waiting at their first transfer. */
static schedc_status net_setup(cu_group *g) {
  const sc_cunet *nt = sc_cunet_get();
  int version = 0;
  sc_netid id;
  memset(&id, 0, sizeof id);
  schedc_status st = g->dv->select(g->dev[0]);
  if (st == SCHEDC_OK) st = nt->load(&version);
  if (st == SCHEDC_OK && g->me == 0) st = nt->unique_id(&id);
  uint64_t mine[17], all[CU_MAX_RANKS * 17];
  memcpy(mine, id.b, sizeof id.b);
  mine[16] = st == SCHEDC_OK;
  schedc_status xs = sc_cu_proc_exchange(g, mine, all, 17);
  if (st != SCHEDC_OK || (st = xs) != SCHEDC_OK) return st;
  for (int q = 0; q < g->N; q++)
    if (!all[17 * (size_t)q + 16])
      return sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not load NCCL", g->me, q);
  memcpy(id.b, all, sizeof id.b); /* rank 0's */
  void *net = NULL;
  if ((st = nt->init(&id, g->N, g->me, g->timeout_s, &net)) == SCHEDC_OK) {
    g->nt = nt;
    g->net = net;
    g->mode = &sc_cu_mode_nccl;
  }
  uint64_t ok = st == SCHEDC_OK;
  xs = sc_cu_proc_exchange(g, &ok, all, 1);
  for (int q = 0; q < g->N && xs == SCHEDC_OK && st == SCHEDC_OK; q++)
    if (!all[q]) st = sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not join the NCCL communicator", g->me, q);
  return st == SCHEDC_OK ? xs : st;
}

/* The transport and the nodes, from every rank's words {gpu, blocks, host, SCHEDC_CUDA_NET}
 * (all: N rows of 4). Ranks on several hosts are nodes by host and need NCCL; on one host the
 * nodes are SCHEDC_CUDA_NODES's and NCCL is asked for. Every rank sees the same table, so the
 * same verdict, except for what only names this rank's own GPU. */
static schedc_status agree(cu_group *g, const uint64_t *all, int device, int *nccl) {
  int N = g->N, me = g->me, hosts = 0;
  uint32_t host[CU_MAX_RANKS]; /* each rank's host, numbered in order of first appearance */
  for (int q = 0; q < N; q++) {
    int first = 0;
    while (all[4 * first + 2] != all[4 * q + 2]) first++;
    host[q] = first == q ? (uint32_t)hosts++ : host[first];
  }
  for (int q = 0; q < N; q++) {
    int a = q < me ? q : me, b = q < me ? me : q;
    if (q != me && all[4 * q + 2] == all[4 * me + 2] && all[4 * q] == all[4 * me])
      return sc_err(SCHEDC_EINVAL, "ranks %d and %d are on the same GPU (device %d of rank %d, PCI id %llx): one "
                    "process per GPU", a, b, device, me, (unsigned long long)all[4 * me]);
    if (all[4 * q + 1] != all[4 * me + 1])
      return sc_err(SCHEDC_EINVAL, "ranks %d and %d use %llu and %llu blocks per rank: set SCHEDC_CUDA_BLOCKS alike on "
                    "every rank", me, q, (unsigned long long)all[4 * me + 1], (unsigned long long)all[4 * q + 1]);
    if (hosts > 1 && all[4 * q + 3] == SC_NET_IPC)
      return sc_err(SCHEDC_EINVAL, "rank %d sets SCHEDC_CUDA_NET=ipc, but the ranks are on %d hosts, which cannot map "
                    "each other's device memory: unset it (between hosts payloads go through NCCL)", q, hosts);
    if (hosts == 1 && (all[4 * q + 3] == SC_NET_NCCL) != (all[4 * me + 3] == SC_NET_NCCL))
      return sc_err(SCHEDC_EINVAL, "ranks %d and %d move payloads between nodes differently (rank %d: %s, rank %d: %s): "
                    "set SCHEDC_CUDA_NET alike on every rank", a, b, a, all[4 * a + 3] == SC_NET_NCCL ? "nccl" : "ipc", b,
                    all[4 * b + 3] == SC_NET_NCCL ? "nccl" : "ipc");
  }
  if (hosts > 1 && g->nnodes > 1)
    return sc_err(SCHEDC_EINVAL, "SCHEDC_CUDA_NODES=%d emulates nodes on one host, but the ranks are on %d hosts (the "
                  "hosts are the nodes): unset it", g->nnodes, hosts);
  if (hosts > 1) { /* the hosts are the nodes; on one host node[] stays SCHEDC_CUDA_NODES's split */
    g->nnodes = hosts;
    memcpy(g->node, host, (size_t)N * sizeof *host);
  }
  *nccl = hosts > 1 || all[4 * me + 3] == SC_NET_NCCL;
  return SCHEDC_OK;
}

/* A process-per-GPU communicator; host: the caller's CPU communicator to borrow for the host
 * exchanges, or NULL to make our own over shared memory from job. */
static schedc_status proc_init_borrowing(int rank, int nranks, int device, const char *job, schedc_comm *host,
                                         const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (nranks < 1 || nranks > CU_MAX_RANKS)
    return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, %d] for the cuda backend", nranks, CU_MAX_RANKS);
  if (rank < 0 || rank >= nranks) return sc_err(SCHEDC_EINVAL, "rank %d out of range [0, %d)", rank, nranks);
  const sc_cudev *dv = sc_cudev_get();
  schedc_comm *c = NULL;
  schedc_status st = sc_comm_new(&sc_cu_backend_proc, rank, nranks, opts, &c);
  if (st != SCHEDC_OK) return st;
  cu_group *g = sc_cu_group_alloc(dv, 1, nranks, rank, 0);
  if (g) g->mode = &sc_cu_mode_ipc; /* sc_cu_mode_nccl once NCCL is set up (net_setup) */
  if (g && (st = sc_cu_verify_setup(g, c)) != SCHEDC_OK) {
    sc_cu_proc_release(g);
    sc_comm_release(c);
    return st;
  }
  if (g && (!(g->proc = calloc(1, sizeof *g->proc)) || !(g->proc->base = calloc((size_t)nranks, sizeof(void *))))) {
    sc_cu_proc_release(g);
    g = NULL;
  }
  if (!g) {
    sc_comm_release(c);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  g->timeout_s = c->timeout_s;
  g->dev[0] = device;
  /* The bootstrap first: the same ranks over shared memory, unverified, without injections or a
   * default plan of the caller's (its only collective is an allgather of a few words). Joined
   * before anything else can fail, so that a rank failing below leaves it and its peers learn
   * so at once instead of at the timeout. A borrowed one is the caller's as it is. */
  schedc_comm_opts bo = SCHEDC_COMM_OPTS_INIT;
  bo.timeout_s = c->timeout_s;
  bo.verify = SCHEDC_VERIFY_NONE;
  g->proc->own_boot = !host;
  if (host) g->proc->boot = host;
  else st = schedc_comm_init_shm(rank, nranks, job, &bo, &g->proc->boot);
  int ndev = 0;
  if (st == SCHEDC_OK && (st = dv->init(&ndev)) == SCHEDC_OK && (device < 0 || device >= ndev))
    st = sc_err(SCHEDC_EINVAL, "rank %d: CUDA device %d out of range [0, %d)", rank, device, ndev);
  if (st == SCHEDC_OK) st = sc_cu_group_setup(g);
  int nccl = 0;
  uint64_t net = SC_NET_UNSET;
  if (st == SCHEDC_OK) st = sc_cu_net_choice(&net);
  /* one GPU per process, the same blocks per rank everywhere, the hosts (one, with our own
   * shared-memory bootstrap) and the transport */
  unsigned long long id = 0;
  if (st == SCHEDC_OK) st = dv->ident(device, &id);
  uint64_t mine[4] = {id, (uint64_t)g->nblk, host ? sc_host_id() : 0, net};
  uint64_t all[CU_MAX_RANKS * 4];
  if (st == SCHEDC_OK) st = sc_cu_proc_exchange(g, mine, all, 4);
  if (st == SCHEDC_OK) st = agree(g, all, device, &nccl);
  if (st == SCHEDC_OK && nccl) st = net_setup(g);
  if (st != SCHEDC_OK) {
    sc_cu_proc_release(g);
    sc_comm_release(c);
    return st;
  }
  g->refs = 1;
  c->be_data = g;
  *out = c;
  return SCHEDC_OK;
}

/* A process-per-GPU communicator; host: a CPU communicator for the host exchanges (the caller's,
 * borrowed, or ours when own: freed with the group, and here on failure), or NULL to make our
 * own over shared memory from job. */
static schedc_status proc_init(int rank, int nranks, int device, const char *job, schedc_comm *host, int own,
                               const schedc_comm_opts *opts, schedc_comm **out) {
  schedc_status st = proc_init_borrowing(rank, nranks, device, job, host, opts, out);
  if (st == SCHEDC_OK && own) ((cu_group *)(*out)->be_data)->proc->own_boot = 1;
  if (st != SCHEDC_OK && own) schedc_comm_free(host);
  return st;
}

schedc_status schedc_comm_init_cuda_rank(int rank, int nranks, int device, const char *job,
                                         const schedc_comm_opts *opts, schedc_comm **out) {
  return proc_init(rank, nranks, device, job, NULL, 0, opts, out);
}

schedc_status schedc_comm_init_cuda_over(schedc_comm *host, int device, const schedc_comm_opts *opts,
                                         schedc_comm **out) {
  if (out) *out = NULL;
  if (!host || !(host->be->caps & SC_CAP_HOST_RESULT))
    return sc_err(SCHEDC_EINVAL, "host: %s (a CPU communicator of the same ranks: shm, mpi or net)",
                  host ? "a cuda communicator" : "NULL");
  return proc_init(host->rank, host->nranks, device, NULL, host, 0, opts, out);
}

schedc_status sc_cu_init_env_over(schedc_comm *host, int device, const schedc_comm_opts *opts, schedc_comm **out) {
  *out = NULL;
  return proc_init(host->rank, host->nranks, device, NULL, host, 1, opts, out);
}

schedc_status sc_cu_init_env_mpi(int device, const schedc_comm_opts *opts, schedc_comm **out) {
  *out = NULL;
  schedc_comm_opts bo = SCHEDC_COMM_OPTS_INIT; /* as proc_init's own bootstrap: unverified, no plan */
  if (opts && opts->size >= offsetof(schedc_comm_opts, timeout_s) + sizeof opts->timeout_s) bo.timeout_s = opts->timeout_s;
  bo.verify = SCHEDC_VERIFY_NONE;
  schedc_comm *host = NULL;
  schedc_status st = schedc_comm_init_mpi(NULL, &bo, &host);
  if (st != SCHEDC_OK) return st;
  return sc_cu_init_env_over(host, device, opts, out);
}
