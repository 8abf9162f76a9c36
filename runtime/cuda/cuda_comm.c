/*
 * cuda_comm.c — the cuda communicator with one process driving every rank (schedc_comm_init_cuda;
 * ranks on GPUs, or virtual ranks on one GPU), like ncclCommInitAll: one group the ranks share.
 * A collective is collected from every rank's call (the slots arrive one thread at a time), then
 * its buffers are sized and it runs in the phase loop (cuda_phase.c); between the phases of a
 * plan split across nodes (SCHEDC_CUDA_NODES) this process copies the payloads itself
 * (mode_host). Everything is stream-ordered; the host waits only in schedc_cuda_sync, when
 * buffers must grow, for verification (cuda_verify.c) and between phases.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"
#include "agree.h"
#include "cuda_modes.h"
#include "cuda_phase.h"
#include "err.h"
#include "kernels.h"

/* The collection: what the group keeps between its slots' calls of one collective, and only
 * that. The first call's agreement (agree.h) is what every later one must match; each slot's
 * buffers wait here until the last slot's call launches the collective (on that call's thread,
 * with that call's sc_call: the same on every slot but for the buffers), then it is emptied. */
typedef struct cu_collect {
  int narrived;
  uint8_t arrived[CU_MAX_RANKS];   /* by slot (= rank) */
  const void *send[CU_MAX_RANKS];
  void *recv[CU_MAX_RANKS];
  int first;                       /* the rank whose call came first */
  sc_agreement want;               /* its agreement */
} cu_collect;

/* Keeps the caller's schedc_errmsg (cleanup on an error path must not replace the reason). */
static void release(cu_group *g) {
  char *why = strdup(schedc_errmsg());
  sc_cu_sync_all(g);
  sc_cu_kcache_free(g);
  free(g->collect);
  g->collect = NULL;
  if (why) sc_err_str(SCHEDC_OK, why);
  free(why);
  sc_cu_group_free(g);
}

static void one_free(schedc_comm *c) {
  cu_group *g = c->be_data;
  pthread_mutex_lock(&g->mu);
  int last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) release(g);
  c->be_data = NULL;
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
static const cu_mode mode_host = {NULL, sc_cu_pull, NULL};

/* Everything after the last rank's call: the kernels, the buffers (grown as needed), then the
 * phase loop. */
static schedc_status launch(cu_group *g, cu_call *c) {
  const sc_call *k = c->call;
  const sc_ir *ir = c->ir;
  int coll = k->coll, root = k->root;
  cu_kset *ks = NULL;
  int exact = k->ex.mode == SC_EXACT_CALL;
  schedc_status st = sc_cu_kset(g, k->plan, (int)k->dtype, exact ? sc_cu_exact_kop(&k->ex) : (int)k->op, &ks);
  if (st != SCHEDC_OK) return st;
  /* counters, temps, working buffers; fresh counters are 0: below every epoch */
  if ((st = grow(g, g->ctr, &g->ctr_bytes, (size_t)ir->nchunks * (size_t)g->nblk * CU_CELL_BYTES)) != SCHEDC_OK)
    return st;
  c->cells = g->ctr_bytes / CU_CELL_BYTES; /* versions at ctr[r], then read counts, then sums */
  if ((st = grow(g, g->temp, &g->temp_bytes, sc_cu_temp_bytes(g, c))) != SCHEDC_OK) return st;
  int same = k->acc == k->dtype;
  int direct = same && (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST);
  if (!direct)
    if ((st = grow(g, g->work, &g->work_bytes, k->K * c->esz)) != SCHEDC_OK) return st;
  if (g->nnodes > 1) { /* mirror slots: a chunk at its own offset modulo 16 bytes; then their sums */
    size_t sum_off;
    size_t need = sc_cu_mir_bytes(ks->split.maxslots, c->mstride, c->esz, g->nblk, &sum_off);
    if ((st = grow(g, g->mir, &g->mir_bytes, need)) != SCHEDC_OK) return st;
  }
  if (exact) { /* the grid: every rank's input is here, so the max over the slots is the exchange */
    int64_t w[SC_EXACT_WORDS];
    if ((st = sc_cu_exact_words(g, c, ks, w)) != SCHEDC_OK) return st;
    c->ex = k->ex;
    if (c->ex.wire && (st = sc_quant_grid(&c->ex, w, g->N, k->cn)) != SCHEDC_OK) return st; /* NaN, Inf: refused */
    if (!c->ex.wire) sc_exact_grid(&c->ex, w, g->N);
  }
  for (int r = 0; r < g->n; r++) {
    char *W = direct || (coll == SCHEDC_REDUCE && r == root && same) ? c->recv[r] : g->work[r];
    /* a rank the plan never writes (a leaf of a reduce) is only read: its input serves as is */
    if (coll == SCHEDC_REDUCE && r != root && same && c->prog->rank[r].ng == 0) W = (char *)c->send[r];
    c->mem[r] = (cu_mem){W, g->temp[r], g->ctr[r], g->mir[r]};
  }
  return sc_cu_run(g, c, ks);
}

/* Rank r's call into the collection: the first sets what the others must agree with, checked
 * by the core's one agreement check (agree.h: the first field that differs, both values). The
 * slots' calls are matched by their arrival, not by their numbers: a rank's refused second call
 * (above) took a number its peers did not, and the one process sees the order anyway. The
 * kernels do not slice, so SCHEDC_SLICE is not compared either. */
static schedc_status collect(cu_group *g, int r, const sc_call *k) {
  cu_collect *col = g->collect;
  if (col->arrived[r])
    return sc_err(SCHEDC_EINVAL, "%s: rank %d already issued a %s that waits for the other ranks' calls (%d of %d "
                  "arrived): issue each collective on every rank before the next", k->cn, r,
                  schedc_collective_name((schedc_collective)col->want.coll), col->narrived, g->n);
  sc_agreement a;
  sc_agreement_of(&a, k, SC_PATH_PLAN);
  a.slice = 0;
  if (col->narrived == 0) {
    col->want = a;
    col->first = r;
  } else {
    a.seq = col->want.seq;
    schedc_status st = sc_agreement_check(k->cn, r, &a, col->first, &col->want);
    if (st != SCHEDC_OK) return sc_cu_breaks(g, st);
  }
  col->arrived[r] = 1;
  col->send[r] = k->send;
  col->recv[r] = k->recv;
  col->narrived++;
  return SCHEDC_OK;
}

/* The collected collective, on the last slot's call: the launch (checksums judged in it), then
 * digest verification (or flipout injection), which waits for the kernels here: a corruption it
 * cannot repair breaks the group, so that every rank's next call and schedc_cuda_sync report it
 * (the other ranks' calls have returned already). The collection is emptied either way. */
static schedc_status run_collected(cu_group *g, const sc_call *k) {
  cu_collect *col = g->collect;
  cu_call c;
  sc_cu_call_init(g, &c, k);
  memcpy(c.send, col->send, (size_t)g->n * sizeof c.send[0]);
  memcpy(c.recv, col->recv, (size_t)g->n * sizeof c.recv[0]);
  schedc_status st = launch(g, &c);
  if (st == SCHEDC_OK && (g->vf.digest || g->vf.flipout >= 0) && sc_same_bits(k->coll))
    st = sc_cu_verify_slots(g, k->cn, c.recv, sc_same_bits_elems(k->coll, k->count, g->n) * schedc_dtype_size(k->dtype));
  if (st != SCHEDC_OK) sc_cu_breaks(g, st);
  memset(col->arrived, 0, sizeof col->arrived);
  col->narrived = 0;
  return st;
}

static schedc_status one_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  (void)res; /* stream-ordered: verified inside the collective, nothing for the core's checks after it */
  cu_group *g = c->be_data;
  schedc_status st = sc_cu_call_fits(k);
  if (st != SCHEDC_OK) return st;
  pthread_mutex_lock(&g->mu);
  st = g->broken[0] ? sc_cu_broken(g, k->cn) : collect(g, c->rank, k);
  if (st == SCHEDC_OK && g->collect->narrived == g->n) st = run_collected(g, k);
  pthread_mutex_unlock(&g->mu);
  return st;
}

/* Results are stream-ordered (in device memory when the call returns): this backend verifies
 * inside its own collective (cuda_verify.c), not the core after it. */
const sc_backend sc_cu_backend_one = {"cuda", SC_CAP_EXACT | SC_CAP_EXACT_DEVICE | SC_CAP_WIRE, one_collective, sc_cu_failure, one_free, sc_cu_mem_alloc,
                                      sc_cu_mem_free, NULL};

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
    if ((st = sc_comm_new(&sc_cu_backend_one, r, nranks, opts, &tmp[r])) != SCHEDC_OK) break;
  cu_group *g = st == SCHEDC_OK ? sc_cu_group_alloc(dv, nranks, nranks, -1, virt) : NULL;
  if (g) {
    g->mode = &mode_host;
    g->collect = calloc(1, sizeof *g->collect);
  }
  if (st == SCHEDC_OK && (!g || !g->collect)) st = sc_err(SCHEDC_ENOMEM, "out of memory");
  if (st == SCHEDC_OK && (st = sc_cu_verify_setup(g, tmp[0])) == SCHEDC_OK) {
    g->timeout_s = tmp[0]->timeout_s;
    memcpy(g->dev, dev, (size_t)nranks * sizeof *dev);
    st = sc_cu_group_setup(g);
  }
  if (st != SCHEDC_OK) {
    if (g) release(g);
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
