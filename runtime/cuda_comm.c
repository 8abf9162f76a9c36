/*
 * cuda_comm.c — the cuda communicator: one process, nranks ranks on GPUs (or virtual ranks on
 * one GPU), a group object they share. A collective is collected from every rank's call, then
 * per rank: copy in (widening f16/bf16 to f32) on the rank's stream, the plan's generated
 * kernels (one fused cooperative launch for virtual ranks, one launch per device otherwise),
 * finish (avg, narrowing, copy out). Everything is stream-ordered; the host never waits except
 * in schedc_cuda_sync and when buffers must grow.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_emit.h"
#include "comm.h"
#include "cuda_dev.h"
#include "err.h"
#include "kernels.h"
#include "plan.h"

#define CU_MAX_RANKS 64 /* the kernel parameter block holds four pointer tables of nranks */
#define CU_MODULES 8
#define CU_EPOCH_BITS 20 /* versions and read counts per call stay below 2^20 */

/* Kernels of one (plan, dtype, op): per rank, the module on its device and the functions. */
typedef struct cu_kset {
  uint64_t key;
  void **mod;                /* [nranks]; virtual: only [0] */
  void **all_fn;             /* [nranks]: schedc_all in rank r's module (virtual: only [0]) */
  void **widen, **narrow, **avg; /* [nranks], NULL where the plan has none */
} cu_kset;

typedef struct cu_group {
  const sc_cudev *dv;
  pthread_mutex_t mu;
  int n, virt, nblk, threads, refs, sms;
  char arch[16];
  double ticks;
  double timeout_s;
  int *dev;                  /* [n] */
  void **own_stream;         /* [n] created at init */
  void **stream;             /* [n] in use (user's or own) */
  void **ctr;                /* [n] counters: versions, then read counts, ctr_cells each */
  size_t ctr_bytes;          /* of each ctr[r]: 2 * ctr_cells * 8 */
  void **temp, **work;       /* [n] */
  size_t temp_bytes, work_bytes;
  uint32_t *err;             /* [4] on dev[0] */
  uint64_t epoch;
  cu_kset ks[CU_MODULES];
  int nks;
  /* the collective being collected */
  int narrived;
  uint8_t *arrived;          /* [n] */
  const void **send;         /* [n] */
  void **recv;               /* [n] */
  int coll, dtype, op, root;
  size_t count;
  uint64_t plan_hash;
  char broken[SC_FAILMSG];
} cu_group;

static schedc_status broken_status(const cu_group *g, const char *cn) {
  return sc_err(SCHEDC_EPEER, "%s: the cuda communicator is broken by an earlier failure: %s", cn, g->broken);
}

/* Record the failure for every rank of the group; returns st. */
static schedc_status breaks(cu_group *g, schedc_status st) {
  if (!g->broken[0]) snprintf(g->broken, sizeof g->broken, "%s", schedc_errmsg());
  return st;
}

static schedc_status sync_all(cu_group *g) {
  schedc_status st = SCHEDC_OK;
  for (int r = 0; r < g->n; r++) {
    if (g->dv->select(g->dev[r]) != SCHEDC_OK) continue;
    schedc_status s = g->dv->sync(g->stream[r]);
    if (st == SCHEDC_OK) st = s;
  }
  return st;
}

static void kset_free(cu_group *g, cu_kset *k) {
  for (int r = 0; r < g->n && k->mod; r++)
    if (k->mod[r] && (!g->virt || r == 0)) {
      g->dv->select(g->dev[r]);
      g->dv->unload(k->mod[r]);
    }
  free(k->mod);
  free(k->all_fn);
  free(k->widen);
  free(k->narrow);
  free(k->avg);
  memset(k, 0, sizeof *k);
}

static void group_free(cu_group *g) {
  sync_all(g);
  for (int i = 0; i < g->nks; i++) kset_free(g, &g->ks[i]);
  for (int r = 0; r < g->n; r++) {
    if (g->dv->select(g->dev[r]) != SCHEDC_OK) continue;
    if (g->ctr) g->dv->release(g->ctr[r]);
    if (g->temp) g->dv->release(g->temp[r]);
    if (g->work) g->dv->release(g->work[r]);
    if (g->own_stream) g->dv->stream_free(g->own_stream[r]);
  }
  if (g->err && g->dv->select(g->dev[0]) == SCHEDC_OK) g->dv->release(g->err);
  free(g->dev); free(g->own_stream); free(g->stream); free(g->ctr); free(g->temp);
  free(g->work); free(g->arrived); free(g->send); free(g->recv);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

static void cuda_destroy(schedc_comm *c) {
  cu_group *g = c->trdata;
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  int last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) group_free(g);
}

static sc_transport cuda_transport = {NULL, NULL, NULL, cuda_destroy};

static int env_int(const char *name, int dflt, int lo, int hi) {
  const char *v = getenv(name);
  int x = v && *v ? atoi(v) : dflt;
  return x < lo ? lo : x > hi ? hi : x;
}

schedc_status schedc_comm_init_cuda(int nranks, const int *devices, int flags, const schedc_comm_opts *opts,
                                    schedc_comm **comms) {
  if (!comms) return sc_err(SCHEDC_EINVAL, "comms is NULL");
  if (nranks < 1 || nranks > CU_MAX_RANKS)
    return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, %d] for the cuda backend", nranks, CU_MAX_RANKS);
  if (flags & ~SCHEDC_CUDA_VIRTUAL) return sc_err(SCHEDC_EINVAL, "flags 0x%x: only SCHEDC_CUDA_VIRTUAL is defined", flags);
  const sc_cudev *dv = sc_cudev_get();
  int ndev = 0;
  schedc_status st = dv->init(&ndev);
  if (st != SCHEDC_OK) return st;
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
    if ((st = sc_comm_new(SCHEDC_BACKEND_CUDA, r, nranks, opts, &tmp[r])) != SCHEDC_OK) break;
  if (st == SCHEDC_OK && tmp[0]->verify)
    st = sc_err(SCHEDC_EUNAVAIL, "verification (SCHEDC_VERIFY / opts.verify) is not available on the cuda backend");
  cu_group *g = st == SCHEDC_OK ? calloc(1, sizeof *g) : NULL;
  if (st == SCHEDC_OK && !g) st = sc_err(SCHEDC_ENOMEM, "out of memory");
  if (g) {
    pthread_mutex_init(&g->mu, NULL);
    g->dv = dv;
    g->n = nranks;
    g->virt = virt;
    g->timeout_s = tmp[0]->timeout_s;
    size_t n = (size_t)nranks;
    g->dev = calloc(n, sizeof *g->dev); g->own_stream = calloc(n, sizeof(void *)); g->stream = calloc(n, sizeof(void *));
    g->ctr = calloc(n, sizeof(void *)); g->temp = calloc(n, sizeof(void *));
    g->work = calloc(n, sizeof(void *)); g->arrived = calloc(n, 1); g->send = calloc(n, sizeof(void *));
    g->recv = calloc(n, sizeof(void *));
    if (!g->dev || !g->own_stream || !g->stream || !g->ctr || !g->temp || !g->work || !g->arrived ||
        !g->send || !g->recv)
      st = sc_err(SCHEDC_ENOMEM, "out of memory");
    if (st == SCHEDC_OK) memcpy(g->dev, dev, n * sizeof *dev);
    int coop = 0;
    if (st == SCHEDC_OK) st = dv->info(g->dev[0], g->arch, &g->sms, &g->ticks, &coop, &g->threads);
    if (st == SCHEDC_OK && virt && !coop)
      st = sc_err(SCHEDC_EUNAVAIL, "device %d cannot launch cooperative kernels (needed for virtual ranks)", g->dev[0]);
    /* Blocks per rank: virtual ranks share the GPU's multiprocessors (and must all be resident);
     * a rank on its own GPU uses a share of them, leaving room for the trainer's work. */
    int dflt = virt ? (g->sms / nranks > 0 ? g->sms / nranks : 1) : (g->sms / 4 > 0 ? g->sms / 4 : 1);
    g->nblk = env_int("SCHEDC_CUDA_BLOCKS", dflt > 32 ? 32 : dflt, 1, 1024);
    if (virt && g->nblk * nranks > g->sms * 2 && st == SCHEDC_OK)
      st = sc_err(SCHEDC_EINVAL, "SCHEDC_CUDA_BLOCKS=%d: %d virtual ranks need %d resident blocks; the device has %d "
                  "multiprocessors", g->nblk, nranks, g->nblk * nranks, g->sms);
    g->threads = env_int("SCHEDC_CUDA_THREADS", g->threads, 1, 512);
    for (int r = 0; r < nranks && st == SCHEDC_OK; r++) {
      if ((st = dv->select(g->dev[r])) != SCHEDC_OK) break;
      for (int q = 0; q < nranks && !virt && st == SCHEDC_OK; q++)
        if (q != r) st = dv->peer(g->dev[q]);
      if (st == SCHEDC_OK) st = dv->stream_new(&g->own_stream[r]);
      g->stream[r] = g->own_stream[r];
    }
    if (st == SCHEDC_OK && (st = dv->select(g->dev[0])) == SCHEDC_OK) st = dv->alloc(4 * sizeof(uint32_t), (void **)&g->err);
  }
  if (st != SCHEDC_OK) {
    if (g) group_free(g);
    for (int r = 0; r < nranks; r++)
      if (tmp[r]) sc_comm_release(tmp[r]);
    return st;
  }
  g->refs = nranks;
  for (int r = 0; r < nranks; r++) {
    tmp[r]->tr = &cuda_transport;
    tmp[r]->trdata = g;
    comms[r] = tmp[r];
  }
  return SCHEDC_OK;
}

static cu_group *group_of(schedc_comm *c) {
  return c && c->backend == SCHEDC_BACKEND_CUDA ? c->trdata : NULL;
}

schedc_status schedc_cuda_set_stream(schedc_comm *c, void *stream) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_set_stream: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  g->stream[c->rank] = stream ? stream : g->own_stream[c->rank];
  pthread_mutex_unlock(&g->mu);
  return SCHEDC_OK;
}

schedc_status schedc_cuda_sync(schedc_comm *c) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_sync: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  schedc_status st = sync_all(g);
  uint32_t e[4] = {0};
  if (st == SCHEDC_OK && (st = g->dv->select(g->dev[0])) == SCHEDC_OK &&
      (st = g->dv->copy(e, g->err, sizeof e, g->stream[0])) == SCHEDC_OK)
    st = g->dv->sync(g->stream[0]);
  if (st != SCHEDC_OK) {
    breaks(g, st);
  } else if (e[0]) {
    char who[32] = "a peer";
    if ((int)e[3] >= 0) snprintf(who, sizeof who, "rank %d", (int)e[3]);
    st = sc_err(SCHEDC_ETIMEOUT, "cuda: rank %u waited more than %g s at step %u for %s (timeout; SCHEDC_TIMEOUT)",
                e[1], g->timeout_s, e[2], (int)e[3] >= 0 ? who : "a reader of its buffer");
    breaks(g, st);
  } else if (g->broken[0]) {
    st = broken_status(g, "cuda sync");
  }
  pthread_mutex_unlock(&g->mu);
  return st;
}

schedc_status schedc_cuda_alloc(schedc_comm *c, size_t bytes, void **ptr) {
  cu_group *g = group_of(c);
  if (!ptr) return sc_err(SCHEDC_EINVAL, "schedc_cuda_alloc: ptr is NULL");
  *ptr = NULL;
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_alloc: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  schedc_status st = g->dv->select(g->dev[c->rank]);
  if (st == SCHEDC_OK) st = g->dv->alloc(bytes, ptr);
  pthread_mutex_unlock(&g->mu);
  return st;
}

void schedc_cuda_free(schedc_comm *c, void *ptr) {
  cu_group *g = group_of(c);
  if (!g || !ptr) return;
  pthread_mutex_lock(&g->mu);
  if (g->dv->select(g->dev[c->rank]) == SCHEDC_OK) g->dv->release(ptr);
  pthread_mutex_unlock(&g->mu);
}

schedc_status schedc_cuda_copy(schedc_comm *c, void *dst, const void *src, size_t bytes) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_copy: comm is %s", c ? "not a cuda communicator" : "NULL");
  if (bytes && (!dst || !src)) return sc_err(SCHEDC_EINVAL, "schedc_cuda_copy: %s is NULL", dst ? "src" : "dst");
  pthread_mutex_lock(&g->mu);
  void *s = g->stream[c->rank];
  schedc_status st = g->dv->select(g->dev[c->rank]);
  if (st == SCHEDC_OK) st = g->dv->copy(dst, src, bytes, s);
  if (st == SCHEDC_OK) st = g->dv->sync(s);
  pthread_mutex_unlock(&g->mu);
  return st;
}

/* ---- one collective ---- */

/* The kernels for (plan, dtype, op): emitted once, compiled (cached by schedc_cuda_compile),
 * loaded on every device the group uses. */
static schedc_status get_kset(cu_group *g, const schedc_plan *plan, const sc_prog *prog, int dtype, int op,
                              cu_kset **out) {
  uint64_t key = plan->hash ^ ((uint64_t)(dtype + 1) << 56) ^ ((uint64_t)(op + 1) << 48);
  for (int i = 0; i < g->nks; i++)
    if (g->ks[i].key == key) { *out = &g->ks[i]; return SCHEDC_OK; }
  if (g->nks == CU_MODULES) { /* the oldest goes; nothing may still run it */
    schedc_status st = sync_all(g);
    if (st != SCHEDC_OK) return st;
    kset_free(g, &g->ks[0]);
    memmove(g->ks, g->ks + 1, sizeof g->ks[0] * (CU_MODULES - 1));
    g->nks--;
  }
  char *src = sc_cuda_emit(&plan->ir, prog, -1, dtype, op);
  if (!src) return sc_err(SCHEDC_ENOMEM, "out of memory emitting the CUDA source");
  cu_kset *k = &g->ks[g->nks];
  memset(k, 0, sizeof *k);
  size_t n = (size_t)g->n;
  k->mod = calloc(n, sizeof(void *)); k->all_fn = calloc(n, sizeof(void *)); k->widen = calloc(n, sizeof(void *));
  k->narrow = calloc(n, sizeof(void *)); k->avg = calloc(n, sizeof(void *));
  schedc_status st = k->mod && k->all_fn && k->widen && k->narrow && k->avg ? SCHEDC_OK
                     : sc_err(SCHEDC_ENOMEM, "out of memory");
  int conv = strstr(src, "void schedc_widen(") != NULL, avg = strstr(src, "void schedc_avg(") != NULL;
  for (int r = 0; r < g->n && st == SCHEDC_OK; r++) {
    if (g->virt && r > 0) { /* one module on the one device */
      k->widen[r] = k->widen[0]; k->narrow[r] = k->narrow[0]; k->avg[r] = k->avg[0];
      continue;
    }
    if ((st = g->dv->select(g->dev[r])) != SCHEDC_OK) break;
    if ((st = g->dv->load(src, g->arch, &k->mod[r])) != SCHEDC_OK) break;
    st = g->dv->kernel(k->mod[r], "schedc_all", &k->all_fn[r]);
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

/* An elementwise kernel (widen, narrow, avg) over n elements on rank r's stream. */
static schedc_status elementwise(cu_group *g, int r, void *fn, void **params, size_t n) {
  if (!n) return SCHEDC_OK;
  size_t grid = (n + (size_t)g->threads - 1) / (size_t)g->threads, cap = (size_t)g->sms * 2;
  return g->dv->launch(fn, (unsigned)(grid < cap ? grid : cap), (unsigned)g->threads, params, 0, g->stream[r]);
}

/* Everything after the last rank's call: copy in, run the plan, finish; on every rank. */
static schedc_status launch(cu_group *g, const schedc_plan *plan, const sc_prog *prog, schedc_dtype acc, size_t K) {
  const sc_ir *ir = &plan->ir;
  const sc_cudev *dv = g->dv;
  int n = g->n, coll = g->coll, root = g->root;
  schedc_dtype dtype = (schedc_dtype)g->dtype;
  size_t esz = schedc_dtype_size(acc), count = g->count;
  if (ir->nsteps >= (1u << CU_EPOCH_BITS) || ir->nxfers >= (1u << CU_EPOCH_BITS))
    return sc_err(SCHEDC_EUNAVAIL, "plan '%s' has %u steps and %u transfers; the cuda backend takes fewer than %u of each",
                  ir->name, ir->nsteps, ir->nxfers, 1u << CU_EPOCH_BITS);
  cu_kset *k = NULL;
  schedc_status st = get_kset(g, plan, prog, g->dtype, g->op, &k);
  if (st != SCHEDC_OK) return st;
  /* counters, temps, working buffers */
  uint32_t C = ir->nchunks, ntemp = 0;
  for (int r = 0; r < n; r++) if (prog->rank[r].ntemp > ntemp) ntemp = prog->rank[r].ntemp;
  size_t vw = 16 / esz, maxchunk = (K + C - 1) / C, part = (maxchunk + (size_t)g->nblk - 1) / (size_t)g->nblk;
  size_t tstride = (part + 2 * vw + vw - 1) / vw * vw;
  /* fresh counters are 0: below every epoch */
  if ((st = grow(g, g->ctr, &g->ctr_bytes, (size_t)C * (size_t)g->nblk * 16)) != SCHEDC_OK) return st;
  size_t cells = g->ctr_bytes / 16; /* versions at ctr[r], read counts right after */
  if ((st = grow(g, g->temp, &g->temp_bytes, (size_t)ntemp * (size_t)g->nblk * tstride * esz)) != SCHEDC_OK) return st;
  int direct = acc == dtype && (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST);
  if (!direct)
    if ((st = grow(g, g->work, &g->work_bytes, K * esz)) != SCHEDC_OK) return st;
  /* parameter block, laid out as the generated struct sc_args */
  uint64_t P[4 * CU_MAX_RANKS + 5];
  char *W[CU_MAX_RANKS];
  for (int r = 0; r < n; r++) {
    W[r] = direct || (coll == SCHEDC_REDUCE && r == root && acc == dtype) ? g->recv[r] : g->work[r];
    /* a rank the plan never writes (a leaf of a reduce) is only read: its input serves as is */
    if (coll == SCHEDC_REDUCE && r != root && acc == dtype && prog->rank[r].ng == 0) W[r] = (char *)g->send[r];
    P[r] = (uint64_t)(uintptr_t)W[r];
    P[n + r] = (uint64_t)(uintptr_t)g->temp[r];
    P[2 * n + r] = (uint64_t)(uintptr_t)g->ctr[r];
    P[3 * n + r] = (uint64_t)(uintptr_t)((uint64_t *)g->ctr[r] + cells);
  }
  g->epoch++;
  P[4 * n] = (uint64_t)(uintptr_t)g->err;
  P[4 * n + 1] = K;
  P[4 * n + 2] = tstride;
  P[4 * n + 3] = g->epoch << CU_EPOCH_BITS;
  double budget = g->timeout_s * g->ticks;
  P[4 * n + 4] = (uint64_t)(budget > 9e18 ? 9e18 : budget);
  /* copy in, rank by rank on its stream */
  for (int r = 0; r < n && st == SCHEDC_OK; r++) {
    if ((st = dv->select(g->dev[r])) != SCHEDC_OK) break;
    const void *in = g->send[r];
    if (coll == SCHEDC_ALLGATHER) st = dv->copy(W[r] + (size_t)r * count * esz, in, count * esz, g->stream[r]);
    else if (coll == SCHEDC_BROADCAST && r != root) continue;
    else if (acc != dtype) {
      uint64_t nn = K;
      void *pr[] = {&in, &W[r], &nn};
      st = elementwise(g, r, k->widen[r], pr, K);
    } else st = dv->copy(W[r], in, K * esz, g->stream[r]);
  }
  /* the plan: schedc_all(args, first rank, rank count) */
  int first = 0, one = 1;
  void *params[] = {P, &first, &n};
  if (st == SCHEDC_OK && K) {
    if (g->virt) {
      for (int r = 1; r < n && st == SCHEDC_OK; r++) st = dv->join(g->stream[0], g->stream[r]);
      if (st == SCHEDC_OK)
        st = dv->launch(k->all_fn[0], (unsigned)(n * g->nblk), (unsigned)g->threads, params, 1, g->stream[0]);
      for (int r = 1; r < n && st == SCHEDC_OK; r++) st = dv->join(g->stream[r], g->stream[0]);
    } else {
      params[2] = &one;
      for (first = 0; first < n && st == SCHEDC_OK; first++) /* params hold &first: read at launch */
        if ((st = dv->select(g->dev[first])) == SCHEDC_OK)
          st = dv->launch(k->all_fn[first], (unsigned)g->nblk, (unsigned)g->threads, params, 0, g->stream[first]);
    }
  }
  /* finish: avg once in the accumulation type, round to the data type once, copy out */
  for (int r = 0; r < n && st == SCHEDC_OK; r++) {
    size_t lo, len;
    sc_result_part(coll, r, root, count, K, &lo, &len);
    if (!len || (st = dv->select(g->dev[r])) != SCHEDC_OK) continue;
    void *at = W[r] + lo * esz, *out = g->recv[r];
    if (g->op == SCHEDC_AVG && sc_reduces(coll)) {
      uint64_t nn = len;
      int nr = n;
      void *pr[] = {&at, &nn, &nr};
      if ((st = elementwise(g, r, k->avg[r], pr, len)) != SCHEDC_OK) break;
    }
    if (acc != dtype) {
      uint64_t nn = len;
      void *pr[] = {&at, &out, &nn};
      st = elementwise(g, r, k->narrow[r], pr, len);
    } else {
      st = dv->copy(out, at, len * esz, g->stream[r]);
    }
  }
  return st;
}

schedc_status sc_cuda_collective(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                 schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                 const schedc_plan *plan, const sc_prog *prog, size_t K) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  cu_group *g = c->trdata;
  pthread_mutex_lock(&g->mu);
  schedc_status st = SCHEDC_OK;
  int op_key = sc_reduces(coll) ? (int)op : 0;
  if (g->broken[0]) {
    st = broken_status(g, cn);
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
      breaks(g, st);
    }
  }
  if (st == SCHEDC_OK) {
    g->arrived[c->rank] = 1;
    g->send[c->rank] = sendbuf;
    g->recv[c->rank] = recvbuf;
    if (++g->narrived == g->n) {
      st = launch(g, plan, prog, acc, K);
      if (st != SCHEDC_OK) breaks(g, st);
      memset(g->arrived, 0, (size_t)g->n);
      g->narrived = 0;
    }
  }
  pthread_mutex_unlock(&g->mu);
  return st;
}
