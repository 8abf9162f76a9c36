/*
 * cuda_comm.c — the cuda communicator: one process, nranks ranks on GPUs (or virtual ranks on
 * one GPU), a group object they share. A collective is collected from every rank's call, then
 * its buffers are sized and run by the phase loop (cuda_phase.c: copy in, the plan's generated
 * kernels, finish); between the phases of a plan split across nodes (SCHEDC_CUDA_NODES) this
 * process copies the payloads itself (sc_cu_mode_host). Everything is stream-ordered; the host
 * waits only in schedc_cuda_sync, when buffers must grow, for verification (cuda_verify.c) and
 * between phases. The group and the kernel sets here serve the process-per-GPU communicator too
 * (cuda_proc.c).
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

schedc_status sc_cu_sync_all(cu_group *g) {
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

/* Keeps the caller's schedc_errmsg: a group freed on an error path (no driver, a failed init)
 * must not replace the reason with what its own cleanup (select on a missing device) says. */
void sc_cu_group_free(cu_group *g) {
  char *why = strdup(schedc_errmsg());
  sc_cu_sync_all(g);
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
  if (why) sc_err_str(SCHEDC_OK, why);
  free(why);
}

static void cuda_free(schedc_comm *c) {
  cu_group *g = c->be_data;
  pthread_mutex_lock(&g->mu);
  int last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) sc_cu_group_free(g);
  c->be_data = NULL;
}

static schedc_status cuda_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  (void)res; /* stream-ordered: verified inside (cuda_verify.c), nothing for the core's checks */
  return sc_cuda_collective(c, k->coll, k->send, k->recv, k->count, k->dtype, k->acc, k->op, k->root, k->plan,
                            k->prog, k->K);
}

static const char *cuda_failure(schedc_comm *c) {
  cu_group *g = c->be_data;
  return g->broken[0] ? g->broken : NULL;
}

/* Results are stream-ordered (in device memory when the call returns): this backend verifies
 * inside its own collective (cuda_verify.c), not the core after it. */
static schedc_status cuda_mem_alloc(schedc_comm *c, sc_memreg *r) {
  (void)c;
  (void)r;
  return sc_err(SCHEDC_EINVAL, "schedc_mem_alloc: not for cuda communicators (their buffers are device memory: "
                "schedc_cuda_alloc)");
}
static void cuda_mem_free(schedc_comm *c, sc_memreg *r) { (void)c; (void)r; }
const sc_backend sc_cuda_backend = {"cuda", 0, cuda_collective, cuda_failure, cuda_free, cuda_mem_alloc, cuda_mem_free};

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
  g->mode = &sc_cu_mode_host; /* a process per GPU sets its own */
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
  schedc_status st = sc_cu_sync_all(g);
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
    schedc_status st = sc_cu_sync_all(g);
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
       fn[32] = SC_CUDA_ENTRY_ALL;
  if (!src) { sc_split_free(&k->split); return sc_err(SCHEDC_ENOMEM, "out of memory emitting the CUDA source"); }
  if (g->me >= 0) snprintf(fn, sizeof fn, SC_CUDA_ENTRY_RANK "%d", g->me);
  size_t n = (size_t)g->n;
  k->mod = calloc(n, sizeof(void *)); k->run_fn = calloc(n, sizeof(void *)); k->widen = calloc(n, sizeof(void *));
  k->narrow = calloc(n, sizeof(void *)); k->avg = calloc(n, sizeof(void *));
  schedc_status st = k->mod && k->run_fn && k->widen && k->narrow && k->avg ? SCHEDC_OK
                     : sc_err(SCHEDC_ENOMEM, "out of memory");
  int conv = strstr(src, "void " SC_CUDA_ENTRY_WIDEN "(") != NULL, avg = strstr(src, "void " SC_CUDA_ENTRY_AVG "(") != NULL;
  for (int r = 0; r < g->n && st == SCHEDC_OK; r++) {
    if (g->virt && r > 0) { /* one module on the one device */
      k->widen[r] = k->widen[0]; k->narrow[r] = k->narrow[0]; k->avg[r] = k->avg[0];
      continue;
    }
    if ((st = g->dv->select(g->dev[r])) != SCHEDC_OK) break;
    if ((st = g->dv->load(src, g->arch, &k->mod[r])) != SCHEDC_OK) break;
    st = g->dv->kernel(k->mod[r], fn, &k->run_fn[r]);
    if (st == SCHEDC_OK && conv) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_WIDEN, &k->widen[r]);
    if (st == SCHEDC_OK && conv) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_NARROW, &k->narrow[r]);
    if (st == SCHEDC_OK && avg) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_AVG, &k->avg[r]);
  }
  free(src);
  if (st != SCHEDC_OK) { kset_free(g, k); return st; }
  k->key = key;
  g->nks++;
  *out = k;
  return SCHEDC_OK;
}

/* Per-rank device buffers of at least the given sizes (all streams drained before a regrow). */
static schedc_status grow(cu_group *g, void **bufs, size_t *have, size_t want) {
  if (want <= *have) return SCHEDC_OK;
  schedc_status st = sc_cu_sync_all(g);
  for (int r = 0; r < g->n && st == SCHEDC_OK; r++) {
    if ((st = g->dv->select(g->dev[r])) != SCHEDC_OK) break;
    g->dv->release(bufs[r]);
    bufs[r] = NULL;
    st = g->dv->alloc(want, &bufs[r]);
  }
  *have = st == SCHEDC_OK ? want : 0;
  return st;
}

/* One process drives every rank: its streams drained, every rank has met; at a boundary it
 * copies each payload itself, from the writer's buffer to the reader's mirror (peer access). */
const cu_mode sc_cu_mode_host = {NULL, sc_cu_pull, NULL};

/* Everything after the last rank's call: the buffers (grown as needed), then the phase loop. */
static schedc_status launch(cu_group *g, const schedc_plan *plan, const sc_prog *prog, schedc_dtype acc, size_t K) {
  const sc_ir *ir = &plan->ir;
  int n = g->n, coll = g->coll, root = g->root;
  schedc_dtype dtype = (schedc_dtype)g->dtype;
  cu_kset *k = NULL;
  schedc_status st = sc_cu_kset(g, plan, prog, g->dtype, g->op, &k);
  if (st != SCHEDC_OK) return st;
  cu_call c;
  sc_cu_call_init(g, &c, ir, prog, acc, K);
  /* counters, temps, working buffers; fresh counters are 0: below every epoch */
  if ((st = grow(g, g->ctr, &g->ctr_bytes, (size_t)ir->nchunks * (size_t)g->nblk * CU_CELL_BYTES)) != SCHEDC_OK)
    return st;
  c.cells = g->ctr_bytes / CU_CELL_BYTES; /* versions at ctr[r], then read counts, then sums */
  if ((st = grow(g, g->temp, &g->temp_bytes, sc_cu_temp_bytes(g, &c))) != SCHEDC_OK) return st;
  int direct = acc == dtype && (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST);
  if (!direct)
    if ((st = grow(g, g->work, &g->work_bytes, K * c.esz)) != SCHEDC_OK) return st;
  if (g->nnodes > 1) { /* mirror slots: a chunk at its own offset modulo 16 bytes; then their sums */
    size_t sum_off;
    size_t need = sc_cu_mir_bytes(k->split.maxslots, c.mstride, c.esz, g->nblk, &sum_off);
    if ((st = grow(g, g->mir, &g->mir_bytes, need)) != SCHEDC_OK) return st;
  }
  for (int r = 0; r < n; r++) {
    char *W = direct || (coll == SCHEDC_REDUCE && r == root && acc == dtype) ? g->recv[r] : g->work[r];
    /* a rank the plan never writes (a leaf of a reduce) is only read: its input serves as is */
    if (coll == SCHEDC_REDUCE && r != root && acc == dtype && prog->rank[r].ng == 0) W = (char *)g->send[r];
    c.mem[r] = (cu_mem){W, g->temp[r], g->ctr[r], g->mir[r]};
  }
  return sc_cu_run(g, &c, k);
}

schedc_status sc_cu_split_build(const sc_prog *prog, const sc_ir *ir, const uint32_t *node, int check, sc_split *out) {
  /* with checksums the input crosses after phase 0, whose entry takes its sums */
  int rc = sc_split_build(prog, node, check ? 0 : -1, out);
  if (rc == -1) return sc_err(SCHEDC_ENOMEM, "out of memory");
  if (rc) return sc_err(SCHEDC_EINTERNAL, "plan '%s': no consistent phases across nodes", ir->name);
  return SCHEDC_OK;
}

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
      st = launch(g, plan, prog, acc, K); /* checksums: judged in it */
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
