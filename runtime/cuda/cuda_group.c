/*
 * cuda_group.c — the group a cuda communicator's ranks share (cuda_group.h): made and freed,
 * its streams drained (with a timeout when NCCL transfers are in them), broken for good by a
 * failure, and the kernels' failure record read back as a status. The bottom of the cuda
 * backend's own layers: it calls only the device table, the core and codegen.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_group.h"
#include "cuda_net.h"
#include "err.h"
#include "ir.h"
#include "kernels.h"
#include "params.h"

schedc_status sc_cu_broken(const cu_group *g, const char *cn) {
  return sc_err(SCHEDC_EPEER, "%s: the cuda communicator is broken by an earlier failure: %s", cn, g->broken);
}

schedc_status sc_cu_breaks(cu_group *g, schedc_status st) {
  if (!g->broken[0]) snprintf(g->broken, sizeof g->broken, "%s", schedc_errmsg());
  return st;
}

schedc_status sc_cu_sync(cu_group *g, void *stream) {
  if (!g->net) return g->dv->sync(stream);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned us = 1;; us = us < 1000 ? 2 * us : us) {
    int done = 0;
    schedc_status st = g->dv->query(stream, &done);
    if (st != SCHEDC_OK || done) return st;
    if ((st = g->nt->health(g->net)) == SCHEDC_OK) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) <= g->timeout_s) {
        usleep(us);
        continue;
      }
      st = sc_err(SCHEDC_ETIMEOUT, "cuda rank %d: its work did not finish within %g s: the transfers between nodes "
                  "are stuck (a peer on another node stopped?; timeout: SCHEDC_TIMEOUT)", g->me, g->timeout_s);
    }
    g->nt->destroy(g->net, 1); /* frees the stream of the stuck transfers */
    g->net = NULL;
    return sc_cu_breaks(g, st); /* without its NCCL communicator the group cannot go on */
  }
}

schedc_status sc_cu_sync_all(cu_group *g) {
  schedc_status st = SCHEDC_OK;
  for (int r = 0; r < g->n; r++) {
    if (g->dv->select(g->dev[r]) != SCHEDC_OK) continue;
    schedc_status s = sc_cu_sync(g, g->stream[r]);
    if (st == SCHEDC_OK) st = s;
  }
  return st;
}

schedc_status sc_cu_corrupt(const char *cn, const uint32_t *w, const sc_ir *ir, const char *action) {
  sc_corrupt b = {2, w[1], w[3], w[2], w[0], 0, w[4], w[5]};
  const char *file = "?";
  for (uint32_t i = 0; ir && i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    if (x->step == b.step && x->src == b.src && x->dst == b.dst && x->chunk == b.chunk) {
      b.line = x->line;
      if (x->file < ir->nfiles) file = ir->files[x->file];
      break;
    }
  }
  if (!action) return sc_corrupt_error(cn, &b, file);
  sc_corrupt_warn(cn, &b, file, action);
  return SCHEDC_OK;
}

schedc_status sc_cu_err_status(cu_group *g, const char *cn, const sc_ir *ir, uint32_t *rec) {
  uint32_t buf[CU_ERR_WORDS] = {0}, *e = rec ? rec : buf;
  memset(e, 0, sizeof buf);
  schedc_status st = SCHEDC_OK;
  if (g->err && (st = g->dv->select(g->dev[0])) == SCHEDC_OK &&
      (st = g->dv->copy(e, g->err, sizeof buf, g->stream[0])) == SCHEDC_OK)
    st = sc_cu_sync(g, g->stream[0]);
  if (st != SCHEDC_OK || !e[0]) return st;
  if (e[0] == 2) return sc_cu_corrupt(cn, e + 1, ir, NULL);
  char who[32] = "a peer";
  if ((int)e[3] >= 0) snprintf(who, sizeof who, "rank %d", (int)e[3]);
  return sc_err(SCHEDC_ETIMEOUT, "cuda: rank %u waited more than %g s at step %u for %s (timeout; SCHEDC_TIMEOUT)",
                e[1], g->timeout_s, e[2], (int)e[3] >= 0 ? who : "a reader of its buffer");
}

/* Keeps the caller's schedc_errmsg: a group freed on an error path (no driver, a failed init)
 * must not replace the reason with what its own cleanup (select on a missing device) says. */
void sc_cu_group_free(cu_group *g) {
  char *why = strdup(schedc_errmsg());
  sc_cu_sync_all(g);
  for (int r = 0; r < g->n; r++) {
    if (g->dv->select(g->dev[r]) != SCHEDC_OK) continue;
    if (g->ctr) g->dv->release(g->ctr[r]);
    if (g->temp) g->dv->release(g->temp[r]);
    if (g->work) g->dv->release(g->work[r]);
    if (g->mir) g->dv->release(g->mir[r]);
    if (g->xstat && g->xstat[r]) g->dv->release(g->xstat[r]);
    if (g->own_stream) g->dv->stream_free(g->own_stream[r]);
  }
  if (g->err && g->me < 0 && g->dv->select(g->dev[0]) == SCHEDC_OK) g->dv->release(g->err);
  free(g->dev); free(g->own_stream); free(g->stream); free(g->ctr); free(g->temp);
  free(g->work); free(g->mir); free(g->xstat);
  pthread_mutex_destroy(&g->mu);
  free(g);
  if (why) sc_err_str(SCHEDC_OK, why);
  free(why);
}

cu_group *sc_cu_group_alloc(const sc_cudev *dv, int n, int N, int me, int virt) {
  cu_group *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  pthread_mutex_init(&g->mu, NULL);
  g->dv = dv;
  g->n = n;
  g->N = N;
  g->me = me;
  g->virt = virt;
  g->vf.flipout = g->vf.flip_rank = -1;
  size_t k = (size_t)n;
  g->dev = calloc(k, sizeof *g->dev); g->own_stream = calloc(k, sizeof(void *)); g->stream = calloc(k, sizeof(void *));
  g->ctr = calloc(k, sizeof(void *)); g->temp = calloc(k, sizeof(void *));
  g->work = calloc(k, sizeof(void *)); g->mir = calloc(k, sizeof(void *)); g->xstat = calloc(k, sizeof(void *));
  if (!g->dev || !g->own_stream || !g->stream || !g->ctr || !g->temp || !g->work || !g->mir || !g->xstat) {
    sc_cu_group_free(g);
    return NULL;
  }
  return g;
}

schedc_status sc_cu_group_setup(cu_group *g) {
  const sc_cudev *dv = g->dv;
  int coop = 0, n = g->n;
  schedc_status st = dv->info(g->dev[0], g->arch, &g->sms, &g->ticks, &coop, &g->threads);
  if (st == SCHEDC_OK && g->virt && !coop)
    st = sc_err(SCHEDC_EUNAVAIL, "device %d cannot launch cooperative kernels (needed for virtual ranks)", g->dev[0]);
  /* Blocks per rank: virtual ranks share the GPU's multiprocessors (and must all be resident);
   * a rank on its own GPU uses a share of them, leaving room for the trainer's work. */
  int dflt = g->virt ? (g->sms / n > 0 ? g->sms / n : 1) : (g->sms / 4 > 0 ? g->sms / 4 : 1);
  long long nblk = dflt > 32 ? 32 : dflt, threads = g->threads > 512 ? 512 : g->threads;
  if (st == SCHEDC_OK) st = sc_param_int(SC_P_SCHEDC_CUDA_BLOCKS, &nblk);
  if (st == SCHEDC_OK) st = sc_param_int(SC_P_SCHEDC_CUDA_THREADS, &threads); /* 512: __launch_bounds__ */
  g->nblk = (int)nblk;
  g->threads = (int)threads;
  if (g->virt && g->nblk * n > g->sms * 2 && st == SCHEDC_OK)
    st = sc_err(SCHEDC_EINVAL, "SCHEDC_CUDA_BLOCKS=%d: %d virtual ranks need %d resident blocks; the device has %d "
                "multiprocessors", g->nblk, n, g->nblk * n, g->sms);
  /* Nodes: ranks that cannot map each other's memory. SCHEDC_CUDA_NODES=K splits the ranks into K
   * contiguous groups on this host (the staged path NCCL will serve between real nodes); with
   * more nodes than ranks every rank is alone on its node. */
  long long K = 1;
  _Static_assert(CU_MAX_RANKS == 64, "SCHEDC_CUDA_NODES's bound in params.h is CU_MAX_RANKS");
  if (st == SCHEDC_OK) st = sc_param_int(SC_P_SCHEDC_CUDA_NODES, &K);
  g->nnodes = st == SCHEDC_OK ? (int)K : 1;
  sc_split_contiguous(g->node, (uint32_t)g->nnodes, (uint32_t)g->N);
  for (int r = 0; r < n && st == SCHEDC_OK; r++) {
    if ((st = dv->select(g->dev[r])) != SCHEDC_OK) break;
    for (int q = 0; q < n && !g->virt && st == SCHEDC_OK; q++)
      if (q != r) st = dv->peer(g->dev[q]);
    if (st == SCHEDC_OK) st = dv->stream_new(&g->own_stream[r]);
    g->stream[r] = g->own_stream[r];
  }
  if (st == SCHEDC_OK && g->me < 0 && (st = dv->select(g->dev[0])) == SCHEDC_OK)
    st = dv->alloc(CU_ERR_WORDS * sizeof(uint32_t), (void **)&g->err);
  return st;
}

/* SCHEDC_CUDA_NET: how payloads cross nodes, as *net: 0 unset, 1 ipc (every peer's memory mapped,
 * the staged copies pulled from it: one host), 2 nccl (NCCL send/recv between the ranks).
 * Any other value: SCHEDC_EINVAL naming it and the legal ones. */
schedc_status sc_cu_net_choice(uint64_t *net) {
  int w = -1; /* SCHEDC_CUDA_NET's words: ipc, nccl */
  schedc_status st = sc_param_enum(SC_P_SCHEDC_CUDA_NET, &w);
  *net = w < 0 ? SC_NET_UNSET : w == 1 ? SC_NET_NCCL : SC_NET_IPC;
  return st;
}

const char *sc_cu_failure(schedc_comm *c) {
  cu_group *g = c->be_data;
  return g->broken[0] ? g->broken : NULL;
}

schedc_status sc_cu_mem_alloc(schedc_comm *c, sc_memreg *r) {
  (void)c;
  (void)r;
  return sc_err(SCHEDC_EINVAL, "schedc_mem_alloc: not for cuda communicators (their buffers are device memory: "
                "schedc_cuda_alloc)");
}

void sc_cu_mem_free(schedc_comm *c, sc_memreg *r) {
  (void)c;
  (void)r;
}
