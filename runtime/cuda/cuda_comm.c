/*
 * cuda_comm.c — the cuda communicator: one process, nranks ranks on GPUs (or virtual ranks on
 * one GPU), a group object they share. A collective is collected from every rank's call, then
 * per rank: copy in (widening f16/bf16 to f32) on the rank's stream, the plan's generated
 * kernels (one fused cooperative launch for virtual ranks, one launch per device otherwise),
 * finish (avg, narrowing, copy out). Everything is stream-ordered; the host waits only in
 * schedc_cuda_sync, when buffers must grow, for verification (cuda_verify.c) and between the
 * phases of a plan split across nodes (SCHEDC_CUDA_NODES). The group, the kernel sets and the
 * per-rank steps here serve the process-per-GPU communicator too (cuda_proc.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_emit.h"
#include "cuda_group.h"
#include "cuda_net.h"
#include "err.h"
#include "kernels.h"
#include "opreg.h"
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

static schedc_status sync_all(cu_group *g) {
  schedc_status st = SCHEDC_OK;
  for (int r = 0; r < g->n; r++) {
    if (g->dv->select(g->dev[r]) != SCHEDC_OK) continue;
    schedc_status s = sc_cu_sync(g, g->stream[r]);
    if (st == SCHEDC_OK) st = s;
  }
  return st;
}

schedc_status sc_cu_err_status(cu_group *g, const sc_ir *ir, uint32_t *rec) {
  uint32_t buf[CU_ERR_WORDS] = {0}, *e = rec ? rec : buf;
  memset(e, 0, sizeof buf);
  schedc_status st = SCHEDC_OK;
  if (g->err && (st = g->dv->select(g->dev[0])) == SCHEDC_OK &&
      (st = g->dv->copy(e, g->err, sizeof buf, g->stream[0])) == SCHEDC_OK)
    st = sc_cu_sync(g, g->stream[0]);
  if (st != SCHEDC_OK || !e[0]) return st;
  if (e[0] == 2) return sc_cu_corrupt(g, e + 1, ir, NULL);
  char who[32] = "a peer";
  if ((int)e[3] >= 0) snprintf(who, sizeof who, "rank %d", (int)e[3]);
  return sc_err(SCHEDC_ETIMEOUT, "cuda: rank %u waited more than %g s at step %u for %s (timeout; SCHEDC_TIMEOUT)",
                e[1], g->timeout_s, e[2], (int)e[3] >= 0 ? who : "a reader of its buffer");
}

static void kset_free(cu_group *g, cu_kset *k) {
  for (int r = 0; r < g->n && k->mod; r++)
    if (k->mod[r] && (!g->virt || r == 0)) {
      g->dv->select(g->dev[r]);
      g->dv->unload(k->mod[r]);
    }
  free(k->mod);
  free(k->run_fn);
  free(k->widen);
  free(k->narrow);
  free(k->avg);
  sc_split_free(&k->split);
  memset(k, 0, sizeof *k);
}

void sc_cu_group_free(cu_group *g) {
  sync_all(g);
  for (int i = 0; i < g->nks; i++) kset_free(g, &g->ks[i]);
  if (g->proc) sc_cu_proc_free(g);
  for (int r = 0; r < g->n; r++) {
    if (g->dv->select(g->dev[r]) != SCHEDC_OK) continue;
    if (g->ctr) g->dv->release(g->ctr[r]);
    if (g->temp) g->dv->release(g->temp[r]);
    if (g->work) g->dv->release(g->work[r]);
    if (g->mir) g->dv->release(g->mir[r]);
    if (g->own_stream) g->dv->stream_free(g->own_stream[r]);
  }
  if (g->err && g->me < 0 && g->dv->select(g->dev[0]) == SCHEDC_OK) g->dv->release(g->err);
  free(g->dev); free(g->own_stream); free(g->stream); free(g->ctr); free(g->temp);
  free(g->work); free(g->mir); free(g->arrived); free(g->send); free(g->recv);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

static void cuda_free(schedc_comm *c) {
  cu_group *g = c->be_data;
  pthread_mutex_lock(&g->mu);
  int last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) sc_cu_group_free(g);
  c->be_data = NULL;
}

static schedc_status cuda_collective(schedc_comm *c, const sc_call *k) {
  return sc_cuda_collective(c, k->coll, k->send, k->recv, k->count, k->dtype, k->acc, k->op, k->root, k->plan,
                            k->prog, k->K);
}

static const char *cuda_failure(schedc_comm *c) {
  cu_group *g = c->be_data;
  return g->broken[0] ? g->broken : NULL;
}

/* Results are stream-ordered (in device memory when the call returns): this backend verifies
 * inside its own collective (cuda_verify.c), not the core after it. */
const sc_backend sc_cuda_backend = {"cuda", 0, cuda_collective, cuda_failure, cuda_free};

cu_group *sc_cu_group_alloc(const sc_cudev *dv, int n, int N, int me, int virt) {
  cu_group *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  pthread_mutex_init(&g->mu, NULL);
  g->dv = dv;
  g->n = n;
  g->N = N;
  g->me = me;
  g->virt = virt;
  g->flipout = g->flip_rank = -1;
  size_t k = (size_t)n;
  g->dev = calloc(k, sizeof *g->dev); g->own_stream = calloc(k, sizeof(void *)); g->stream = calloc(k, sizeof(void *));
  g->ctr = calloc(k, sizeof(void *)); g->temp = calloc(k, sizeof(void *));
  g->work = calloc(k, sizeof(void *)); g->arrived = calloc(k, 1); g->send = calloc(k, sizeof(void *));
  g->recv = calloc(k, sizeof(void *)); g->mir = calloc(k, sizeof(void *));
  if (!g->dev || !g->own_stream || !g->stream || !g->ctr || !g->temp || !g->work || !g->arrived || !g->send ||
      !g->recv || !g->mir) {
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

schedc_status schedc_comm_init_cuda(int nranks, const int *devices, int flags, const schedc_comm_opts *opts,
                                    schedc_comm **comms) {
  if (!comms) return sc_err(SCHEDC_EINVAL, "comms is NULL");
  if (nranks < 1 || nranks > CU_MAX_RANKS)
    return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, %d] for the cuda backend", nranks, CU_MAX_RANKS);
  if (flags & ~SCHEDC_CUDA_VIRTUAL) return sc_err(SCHEDC_EINVAL, "flags 0x%x: only SCHEDC_CUDA_VIRTUAL is defined", flags);
  uint64_t net;
  schedc_status st = sc_cu_net_choice(&net);
  if (st != SCHEDC_OK) return st;
  if (net == SC_NET_NCCL)
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_CUDA_NET=nccl: NCCL carries payloads between the processes of a process "
                  "per GPU (schedc_comm_init_cuda_rank, schedc run --processes); one process driving every GPU has "
                  "no other process to send to");
  const sc_cudev *dv = sc_cudev_get();
  int ndev = 0;
  if (!dv) return SCHEDC_EINVAL;
  if ((st = dv->init(&ndev)) != SCHEDC_OK) return st;
  int virt = flags & SCHEDC_CUDA_VIRTUAL, dev[CU_MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    int d = dev[r] = virt ? (devices ? devices[0] : 0) : devices ? devices[r] : r;
    if (d < 0 || d >= ndev)
      return sc_err(SCHEDC_EINVAL, "rank %d: CUDA device %d out of range [0, %d)%s", r, d, ndev,
                    !virt && !devices && nranks > ndev ? " (more ranks than GPUs: use SCHEDC_CUDA_VIRTUAL)" : "");
    for (int q = 0; q < r && !virt; q++)
      if (dev[q] == d)
        return sc_err(SCHEDC_EINVAL, "ranks %d and %d are both on device %d: one rank per GPU, or SCHEDC_CUDA_VIRTUAL", q, r, d);
  }
  schedc_comm *tmp[CU_MAX_RANKS] = {0};
  for (int r = 0; r < nranks; r++)
    if ((st = sc_comm_new(&sc_cuda_backend, r, nranks, opts, &tmp[r])) != SCHEDC_OK) break;
  cu_group *g = st == SCHEDC_OK ? sc_cu_group_alloc(dv, nranks, nranks, -1, virt) : NULL;
  if (st == SCHEDC_OK && !g) st = sc_err(SCHEDC_ENOMEM, "out of memory");
  if (g && (st = sc_cu_verify_setup(g, tmp[0])) == SCHEDC_OK) {
    g->timeout_s = tmp[0]->timeout_s;
    memcpy(g->dev, dev, (size_t)nranks * sizeof *dev);
    st = sc_cu_group_setup(g);
  }
  if (st != SCHEDC_OK) {
    if (g) sc_cu_group_free(g);
    for (int r = 0; r < nranks; r++)
      if (tmp[r]) sc_comm_release(tmp[r]);
    return st;
  }
  g->refs = nranks;
  for (int r = 0; r < nranks; r++) {
    tmp[r]->be_data = g;
    comms[r] = tmp[r];
  }
  return SCHEDC_OK;
}

static cu_group *group_of(schedc_comm *c) {
  return c && c->be == &sc_cuda_backend ? c->be_data : NULL;
}
/* The slot of comm's rank in its group. */
static int slot(const cu_group *g, const schedc_comm *c) { return g->me < 0 ? c->rank : 0; }

schedc_status schedc_cuda_set_stream(schedc_comm *c, void *stream) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_set_stream: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  int s = slot(g, c);
  g->stream[s] = stream ? stream : g->own_stream[s];
  pthread_mutex_unlock(&g->mu);
  return SCHEDC_OK;
}

schedc_status schedc_cuda_sync(schedc_comm *c) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_sync: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  schedc_status st = sync_all(g);
  if (st == SCHEDC_OK && !g->broken[0]) st = sc_cu_err_status(g, NULL, NULL); /* broken: its own message says more */
  if (st != SCHEDC_OK) sc_cu_breaks(g, st);
  else if (g->broken[0]) st = sc_cu_broken(g, "cuda sync");
  pthread_mutex_unlock(&g->mu);
  return st;
}

schedc_status schedc_cuda_alloc(schedc_comm *c, size_t bytes, void **ptr) {
  cu_group *g = group_of(c);
  if (!ptr) return sc_err(SCHEDC_EINVAL, "schedc_cuda_alloc: ptr is NULL");
  *ptr = NULL;
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_alloc: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  schedc_status st = g->dv->select(g->dev[slot(g, c)]);
  if (st == SCHEDC_OK) st = g->dv->alloc(bytes, ptr);
  pthread_mutex_unlock(&g->mu);
  return st;
}

void schedc_cuda_free(schedc_comm *c, void *ptr) {
  cu_group *g = group_of(c);
  if (!g || !ptr) return;
  pthread_mutex_lock(&g->mu);
  if (g->dv->select(g->dev[slot(g, c)]) == SCHEDC_OK) g->dv->release(ptr);
  pthread_mutex_unlock(&g->mu);
}

schedc_status schedc_cuda_copy(schedc_comm *c, void *dst, const void *src, size_t bytes) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_copy: comm is %s", c ? "not a cuda communicator" : "NULL");
  if (bytes && (!dst || !src)) return sc_err(SCHEDC_EINVAL, "schedc_cuda_copy: %s is NULL", dst ? "src" : "dst");
  pthread_mutex_lock(&g->mu);
  void *s = g->stream[slot(g, c)];
  schedc_status st = g->dv->select(g->dev[slot(g, c)]);
  if (st == SCHEDC_OK) st = g->dv->copy(dst, src, bytes, s);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, s);
  pthread_mutex_unlock(&g->mu);
  return st;
}

/* ---- one collective ---- */

/* Emitted once, compiled (cached by schedc_cuda_compile), loaded on every device the group
 * uses: the all-ranks unit (schedc_all) when one process drives every rank, only this rank's
 * code (schedc_rank<me>: a smaller, faster compile) for a process per GPU. */
schedc_status sc_cu_kset(cu_group *g, const schedc_plan *plan, const sc_prog *prog, int dtype, int op, cu_kset **out) {
  uint64_t key = plan->hash ^ ((uint64_t)(dtype + 1) << 56) ^ ((uint64_t)(op + 1) << 48) ^ ((uint64_t)g->check << 40) ^
                 ((uint64_t)g->nnodes << 32);
  const sc_opdef *custom = sc_opreg_get(op); /* a custom op's kernels are keyed by its source too */
  if (custom) key ^= custom->hash * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < g->nks; i++)
    if (g->ks[i].key == key) { *out = &g->ks[i]; return SCHEDC_OK; }
  if (g->nks == CU_MODULES) { /* the oldest goes; nothing may still run it */
    schedc_status st = sync_all(g);
    if (st != SCHEDC_OK) return st;
    kset_free(g, &g->ks[0]);
    memmove(g->ks, g->ks + 1, sizeof g->ks[0] * (CU_MODULES - 1));
    g->nks--;
  }
  cu_kset *k = &g->ks[g->nks];
  memset(k, 0, sizeof *k);
  schedc_status sst = g->nnodes > 1 ? sc_cu_split_build(prog, &plan->ir, g->node, g->check, &k->split) : SCHEDC_OK;
  if (sst != SCHEDC_OK) return sst;
  char *src = sc_cuda_emit_split(&plan->ir, prog, g->me, dtype, op, g->check, g->nnodes > 1 ? &k->split : NULL),
       fn[32] = "schedc_all";
  if (!src) { sc_split_free(&k->split); return sc_err(SCHEDC_ENOMEM, "out of memory emitting the CUDA source"); }
  if (g->me >= 0) snprintf(fn, sizeof fn, "schedc_rank%d", g->me);
  size_t n = (size_t)g->n;
  k->mod = calloc(n, sizeof(void *)); k->run_fn = calloc(n, sizeof(void *)); k->widen = calloc(n, sizeof(void *));
  k->narrow = calloc(n, sizeof(void *)); k->avg = calloc(n, sizeof(void *));
  schedc_status st = k->mod && k->run_fn && k->widen && k->narrow && k->avg ? SCHEDC_OK
                     : sc_err(SCHEDC_ENOMEM, "out of memory");
  int conv = strstr(src, "void schedc_widen(") != NULL, avg = strstr(src, "void schedc_avg(") != NULL;
  for (int r = 0; r < g->n && st == SCHEDC_OK; r++) {
    if (g->virt && r > 0) { /* one module on the one device */
      k->widen[r] = k->widen[0]; k->narrow[r] = k->narrow[0]; k->avg[r] = k->avg[0];
      continue;
    }
    if ((st = g->dv->select(g->dev[r])) != SCHEDC_OK) break;
    if ((st = g->dv->load(src, g->arch, &k->mod[r])) != SCHEDC_OK) break;
    st = g->dv->kernel(k->mod[r], fn, &k->run_fn[r]);
    if (st == SCHEDC_OK && conv) st = g->dv->kernel(k->mod[r], "schedc_widen", &k->widen[r]);
    if (st == SCHEDC_OK && conv) st = g->dv->kernel(k->mod[r], "schedc_narrow", &k->narrow[r]);
    if (st == SCHEDC_OK && avg) st = g->dv->kernel(k->mod[r], "schedc_avg", &k->avg[r]);
  }
  free(src);
  if (st != SCHEDC_OK) { kset_free(g, k); return st; }
  k->key = key;
  g->nks++;
  *out = k;
  return SCHEDC_OK;
}

void sc_cu_layout(const cu_group *g, const sc_prog *prog, size_t esz, size_t K, uint32_t *ntemp, size_t *tstride) {
  uint32_t C = prog->nchunks, nt = 0;
  for (int r = 0; r < g->N; r++) if (prog->rank[r].ntemp > nt) nt = prog->rank[r].ntemp;
  /* A block's part of a chunk (sc_tile0): ceil(tiles / nblk) tiles of L elements, L the chunk's
   * share per block rounded up to a vector, capped as sc_tile0 caps it; counted here for a chunk
   * of maxchunk + vw elements, which bounds every chunk's (its start rounded down to a vector). */
  size_t vw = 16 / esz, nb = (size_t)g->nblk, m = (K + C - 1) / C + vw;
  size_t L = ((m + nb - 1) / nb + vw - 1) / vw * vw, cap = SC_CUDA_TILE_MIN;
  while (cap * 2 <= SC_CUDA_TILE_WINDOW / nb) cap *= 2;
  if (L > cap / esz) L = cap / esz;
  size_t tiles = (m + L - 1) / L, part = (tiles + nb - 1) / nb * L;
  *ntemp = nt;
  *tstride = (part + 2 * vw + vw - 1) / vw * vw;
}

void sc_cu_args_tail(cu_group *g, uint64_t *P, size_t K, size_t tstride) {
  int N = g->N;
  g->epoch++;
  P[4 * N] = (uint64_t)(uintptr_t)g->err;
  P[4 * N + 1] = K;
  P[4 * N + 2] = tstride;
  P[4 * N + 3] = g->epoch << CU_EPOCH_BITS;
  double budget = g->timeout_s * g->ticks;
  P[4 * N + 4] = (uint64_t)(budget > 9e18 ? 9e18 : budget);
}

/* Per-rank device buffers of at least the given sizes (all streams drained before a regrow). */
static schedc_status grow(cu_group *g, void **bufs, size_t *have, size_t want) {
  if (want <= *have) return SCHEDC_OK;
  schedc_status st = sync_all(g);
  for (int r = 0; r < g->n && st == SCHEDC_OK; r++) {
    if ((st = g->dv->select(g->dev[r])) != SCHEDC_OK) break;
    g->dv->release(bufs[r]);
    bufs[r] = NULL;
    st = g->dv->alloc(want, &bufs[r]);
  }
  *have = st == SCHEDC_OK ? want : 0;
  return st;
}

/* An elementwise kernel (widen, narrow, avg) over n elements on slot s's stream. */
static schedc_status elementwise(cu_group *g, int s, void *fn, void **params, size_t n) {
  if (!n) return SCHEDC_OK;
  size_t grid = (n + (size_t)g->threads - 1) / (size_t)g->threads, cap = (size_t)g->sms * 2;
  return g->dv->launch(fn, (unsigned)(grid < cap ? grid : cap), (unsigned)g->threads, params, 0, g->stream[s]);
}

schedc_status sc_cu_copy_in(cu_group *g, const cu_kset *k, int s, int r, char *W, schedc_dtype acc, size_t K) {
  size_t esz = schedc_dtype_size(acc);
  const void *in = g->send[s];
  schedc_status st = g->dv->select(g->dev[s]);
  if (st != SCHEDC_OK) return st;
  if (g->coll == SCHEDC_ALLGATHER) return g->dv->copy(W + (size_t)r * g->count * esz, in, g->count * esz, g->stream[s]);
  if (g->coll == SCHEDC_BROADCAST && r != g->root) return SCHEDC_OK;
  if (acc == (schedc_dtype)g->dtype) return g->dv->copy(W, in, K * esz, g->stream[s]);
  uint64_t nn = K;
  void *pr[] = {&in, &W, &nn};
  return elementwise(g, s, k->widen[s], pr, K);
}

/* avg once in the accumulation type, round to the data type once, copy out */
schedc_status sc_cu_finish(cu_group *g, const cu_kset *k, int s, int r, char *W, schedc_dtype acc, size_t K) {
  size_t lo, len, esz = schedc_dtype_size(acc);
  sc_result_part(g->coll, r, g->root, g->count, K, &lo, &len);
  schedc_status st = SCHEDC_OK;
  if (!len || (st = g->dv->select(g->dev[s])) != SCHEDC_OK) return st;
  void *at = W + lo * esz, *out = g->recv[s];
  uint64_t nn = len;
  if (g->op == SCHEDC_AVG && sc_reduces(g->coll)) {
    int nr = g->N;
    void *pr[] = {&at, &nn, &nr};
    if ((st = elementwise(g, s, k->avg[s], pr, len)) != SCHEDC_OK) return st;
  }
  if (acc == (schedc_dtype)g->dtype) return g->dv->copy(out, at, len * esz, g->stream[s]);
  void *pr[] = {&at, &out, &nn};
  return elementwise(g, s, k->narrow[s], pr, len);
}

/* Everything after the last rank's call: copy in, run the plan, finish; on every rank. */
static schedc_status launch(cu_group *g, const schedc_plan *plan, const sc_prog *prog, schedc_dtype acc, size_t K) {
  const sc_ir *ir = &plan->ir;
  const sc_cudev *dv = g->dv;
  int n = g->n, coll = g->coll, root = g->root;
  schedc_dtype dtype = (schedc_dtype)g->dtype;
  size_t esz = schedc_dtype_size(acc);
  cu_kset *k = NULL;
  schedc_status st = sc_cu_kset(g, plan, prog, g->dtype, g->op, &k);
  if (st != SCHEDC_OK) return st;
  /* counters, temps, working buffers; fresh counters are 0: below every epoch */
  uint32_t ntemp;
  size_t tstride;
  sc_cu_layout(g, prog, esz, K, &ntemp, &tstride);
  if ((st = grow(g, g->ctr, &g->ctr_bytes, (size_t)ir->nchunks * (size_t)g->nblk * CU_CELL_BYTES)) != SCHEDC_OK)
    return st;
  size_t cells = g->ctr_bytes / CU_CELL_BYTES; /* versions at ctr[r], then read counts, then sums */
  if ((st = grow(g, g->temp, &g->temp_bytes, (size_t)ntemp * (size_t)g->nblk * tstride * esz)) != SCHEDC_OK) return st;
  int direct = acc == dtype && (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST);
  if (!direct)
    if ((st = grow(g, g->work, &g->work_bytes, K * esz)) != SCHEDC_OK) return st;
  /* parameter block, laid out as the generated struct sc_args */
  uint64_t P[CU_PARAMS];
  char *W[CU_MAX_RANKS];
  for (int r = 0; r < n; r++) {
    W[r] = direct || (coll == SCHEDC_REDUCE && r == root && acc == dtype) ? g->recv[r] : g->work[r];
    /* a rank the plan never writes (a leaf of a reduce) is only read: its input serves as is */
    if (coll == SCHEDC_REDUCE && r != root && acc == dtype && prog->rank[r].ng == 0) W[r] = (char *)g->send[r];
    P[r] = (uint64_t)(uintptr_t)W[r];
    P[n + r] = (uint64_t)(uintptr_t)g->temp[r];
    P[2 * n + r] = (uint64_t)(uintptr_t)g->ctr[r];
    P[3 * n + r] = (uint64_t)(uintptr_t)((uint64_t *)g->ctr[r] + cells);
    P[4 * n + 5 + r] = (uint64_t)(uintptr_t)((uint64_t *)g->ctr[r] + 2 * cells);
  }
  sc_cu_args_tail(g, P, K, tstride);
  if (g->check) sc_cu_args_check(g, P, ir);
  const sc_split *sp = g->nnodes > 1 ? &k->split : NULL;
  size_t mstride = 0, sum_off = 0;
  if (sp) { /* mirror slots: a chunk at its own offset modulo 16 bytes; then their sums */
    mstride = sc_cu_mstride(K, ir->nchunks, esz);
    size_t need = sc_cu_mir_bytes(sp->maxslots, mstride, esz, g->nblk, &sum_off);
    if ((st = grow(g, g->mir, &g->mir_bytes, need)) != SCHEDC_OK) return st;
    int a = sc_cu_split_args(g);
    for (int r = 0; r < n; r++) {
      P[a + r] = (uint64_t)(uintptr_t)g->mir[r];
      P[a + n + r] = (uint64_t)(uintptr_t)((char *)g->mir[r] + sum_off);
    }
    P[a + 2 * n] = mstride;
  }
  for (int r = 0; r < n && st == SCHEDC_OK; r++)
    if (W[r] != (char *)g->send[r]) st = sc_cu_copy_in(g, k, r, r, W[r], acc, K);
  /* the plan: schedc_all(args, first rank, rank count), once per phase; between phases every
   * rank's kernel has ended and the cross-node payloads are moved into their mirrors */
  int first = 0, one = 1, nph = sp ? (int)sp->nphases : 1;
  void *params[] = {P, &first, &n};
  for (int ph = -1; ph < nph && st == SCHEDC_OK && K; ph++) {
    if (ph >= 0 && sp) P[sc_cu_split_args(g) + 2 * n + 1] = (uint64_t)ph;
    if (ph >= 0 && g->virt) {
      for (int r = 1; r < n && st == SCHEDC_OK; r++) st = dv->join(g->stream[0], g->stream[r]);
      if (st == SCHEDC_OK)
        st = dv->launch(k->run_fn[0], (unsigned)(n * g->nblk), (unsigned)g->threads, params, 1, g->stream[0]);
      for (int r = 1; r < n && st == SCHEDC_OK; r++) st = dv->join(g->stream[r], g->stream[0]);
    } else if (ph >= 0) {
      params[2] = &one;
      for (first = 0; first < n && st == SCHEDC_OK; first++) /* params hold &first: read at launch */
        if ((st = dv->select(g->dev[first])) == SCHEDC_OK)
          st = dv->launch(k->run_fn[first], (unsigned)g->nblk, (unsigned)g->threads, params, 0, g->stream[first]);
    }
    if (!sp || st != SCHEDC_OK || ph == nph - 1) continue;
    if ((st = sync_all(g)) == SCHEDC_OK) st = sc_cu_err_status(g, ir, NULL); /* a stopped phase ends the call */
    for (uint32_t i = 0; i < sp->ncopies && st == SCHEDC_OK; i++) {
      const sc_mirror_copy *m = &sp->copies[i];
      if (m->boundary != ph) continue;
      size_t lo, hi, vw = 16 / esz;
      sc_chunk_range(K, ir->nchunks, m->chunk, &lo, &hi);
      char *dst = (char *)g->mir[m->dst] + ((size_t)m->slot * mstride + lo % vw) * esz;
      if ((st = dv->select(g->dev[m->dst])) == SCHEDC_OK)
        st = dv->copy(dst, W[m->src] + lo * esz, (hi - lo) * esz, g->stream[m->dst]);
      if (st == SCHEDC_OK && g->check) /* the writer's sums of the chunk's parts travel with it */
        st = dv->copy((char *)g->mir[m->dst] + sum_off + (size_t)m->slot * g->nblk * 8,
                      (uint64_t *)g->ctr[m->src] + 2 * cells + (size_t)m->chunk * g->nblk, (size_t)g->nblk * 8,
                      g->stream[m->dst]);
    }
    if (st == SCHEDC_OK) st = sync_all(g);
  }
  for (int r = 0; r < n && st == SCHEDC_OK; r++) st = sc_cu_finish(g, k, r, r, W[r], acc, K);
  return st;
}

schedc_status sc_cu_split_build(const sc_prog *prog, const sc_ir *ir, const uint32_t *node, int check, sc_split *out) {
  /* with checksums the input crosses after phase 0, whose entry takes its sums */
  int rc = sc_split_build(prog, node, check ? 0 : -1, out);
  if (rc == -1) return sc_err(SCHEDC_ENOMEM, "out of memory");
  if (rc) return sc_err(SCHEDC_EINTERNAL, "plan '%s': no consistent phases across nodes", ir->name);
  return SCHEDC_OK;
}

size_t sc_cu_mir_bytes(size_t slots, size_t mstride, size_t esz, int nblk, size_t *sum_off) {
  *sum_off = (slots * mstride * esz + 16 + 255) / 256 * 256;
  return *sum_off + slots * (size_t)nblk * 8;
}

size_t sc_cu_mstride(size_t K, uint32_t nchunks, size_t esz) {
  size_t vw = 16 / esz;
  return ((K + nchunks - 1) / nchunks + 2 * vw) / vw * vw;
}

int sc_cu_split_args(const cu_group *g) { return 4 * g->N + 5 + (g->check ? g->N + 6 : 0); }

schedc_status sc_cuda_collective(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                 schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                 const schedc_plan *plan, const sc_prog *prog, size_t K) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  cu_group *g = c->be_data;
  const sc_ir *ir = &plan->ir;
  if (ir->nsteps >= (1u << CU_EPOCH_BITS) || ir->nxfers >= (1u << CU_EPOCH_BITS))
    return sc_err(SCHEDC_EUNAVAIL, "%s: plan '%s' has %u steps and %u transfers; the cuda backend takes fewer than %u of each",
                  cn, ir->name, ir->nsteps, ir->nxfers, 1u << CU_EPOCH_BITS);
  pthread_mutex_lock(&g->mu);
  schedc_status st = SCHEDC_OK;
  int op_key = sc_reduces(coll) ? (int)op : 0;
  if (g->broken[0]) {
    st = sc_cu_broken(g, cn);
  } else if (g->me >= 0) {
    st = sc_cu_proc_collective(g, coll, sendbuf, recvbuf, count, dtype, acc, op, root, plan, prog, K);
  } else if (g->arrived[c->rank]) {
    st = sc_err(SCHEDC_EINVAL, "%s: rank %d already issued a %s that waits for the other ranks' calls (%d of %d "
                "arrived): issue each collective on every rank before the next", cn, c->rank,
                schedc_collective_name((schedc_collective)g->coll), g->narrived, g->n);
  } else if (g->narrived == 0) {
    g->coll = coll; g->dtype = (int)dtype; g->op = op_key; g->root = root; g->count = count; g->plan_hash = plan->hash;
  } else {
    const char *what = g->coll != coll ? "collective" : g->dtype != (int)dtype ? "dtype" : g->op != op_key ? "op"
                       : g->root != root ? "root" : g->count != count ? "count" : g->plan_hash != plan->hash ? "plan" : NULL;
    if (what) {
      st = sc_err(SCHEDC_EMISMATCH, "%s: rank %d disagrees with the ranks already called on the %s (they issued %s "
                  "count %zu plan %016llx; rank %d: %s count %zu plan %016llx)", cn, c->rank, what,
                  schedc_collective_name((schedc_collective)g->coll), g->count, (unsigned long long)g->plan_hash,
                  c->rank, cn, count, (unsigned long long)plan->hash);
      sc_cu_breaks(g, st);
    }
  }
  if (st == SCHEDC_OK && g->me < 0) {
    g->arrived[c->rank] = 1;
    g->send[c->rank] = sendbuf;
    g->recv[c->rank] = recvbuf;
    if (++g->narrived == g->n) {
      st = launch(g, plan, prog, acc, K);
      if (st == SCHEDC_OK && g->check && (st = sync_all(g)) == SCHEDC_OK) /* checksums: judged now */
        st = sc_cu_check_verdict(g, &plan->ir, -1);
      /* digest verification (or flipout injection) waits for the kernels here, in the call that
       * launched them: a corruption it cannot repair breaks the group, so that every rank's next
       * call and schedc_cuda_sync report it (the other ranks' calls have returned already) */
      if (st == SCHEDC_OK && (g->digest || g->flipout >= 0) && sc_same_bits(coll))
        st = sc_cu_verify_slots(g, cn, sc_same_bits_elems(coll, count, g->n) * schedc_dtype_size(dtype));
      if (st != SCHEDC_OK) sc_cu_breaks(g, st);
      memset(g->arrived, 0, (size_t)g->n);
      g->narrived = 0;
    }
  }
  pthread_mutex_unlock(&g->mu);
  return st;
}
