/*
 * cuda_proc.c — the cuda communicator with one process per GPU, the way trainers run (made by
 * cuda_proc_init.c): each process owns its rank's device memory in one "arena" (counters, temps,
 * working buffer) that its peers on the same node map through CUDA IPC; a CPU communicator on
 * the host (the bootstrap: our shared-memory one, or the caller's, e.g. MPI across hosts)
 * exchanges the IPC handles and checks at every call that the ranks agree; it is also the
 * barrier of the verification verdicts and of the IPC boundaries of a plan split across nodes.
 * Between nodes over NCCL (cuda_net.h) the boundaries are grouped send/recv on the stream. The
 * call itself runs in the phase loop (cuda_phase.c) with this file's cu_mode tables (ipc, nccl);
 * the communicator's operation table is sc_cu_backend_proc (cuda_modes.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant.h"
#include "agree.h"
#include "cuda_modes.h"
#include "cuda_net.h"
#include "cuda_proc.h"
#include "err.h"
#include "kernels.h"

static size_t up256(size_t x) { return (x + 255) / 256 * 256; }
static size_t off_ctr(void) { return ARENA_HEAD; }
static size_t off_temp(const cu_proc *p) { return ARENA_HEAD + up256(p->cells * CU_CELL_BYTES); }
static size_t off_work(const cu_proc *p) { return off_temp(p) + up256(p->temp_bytes); }
static size_t off_mir(const cu_proc *p) { return off_work(p) + up256(p->work_bytes); }

/* The rank whose arena holds the kernels' failure record for this rank's kernels: rank 0, or
 * with NCCL the first rank of this rank's node (the others are not mapped). */
static int leader(const cu_group *g) {
  int q = 0;
  while (g->net && g->node[q] != g->node[g->me]) q++;
  return q;
}

static void unmap_peers(cu_group *g) {
  cu_proc *p = g->proc;
  for (int q = 0; q < g->N && p->base; q++) {
    if (q != g->me && p->base[q]) g->dv->ipc_close(p->base[q]);
    p->base[q] = NULL;
  }
  g->err = NULL;
}

schedc_status sc_cu_proc_exchange(cu_group *g, const uint64_t *mine, uint64_t *all, size_t words) {
  schedc_comm *b = g->proc->boot;
  /* internal: a borrowed communicator's verification and SCHEDC_INJECT are for its own collectives */
  schedc_status st = sc_coll(b, SCHEDC_ALLGATHER, mine, all, words, SCHEDC_I64, SCHEDC_SUM, 0, NULL, SC_CALL_INTERNAL);
  if (st != SCHEDC_OK)
    st = sc_err(st, "cuda rank %d: the host exchange with the other ranks failed: %s", g->me, schedc_errmsg());
  return st;
}

/* CUDA forbids freeing exported memory a peer still maps: this rank unmaps its peers, then
 * waits (up to the timeout) until every rank has done so, then frees its arena. A broken group
 * skips the wait (a peer may be dead) and leaves the arena to the process's exit. */
static void proc_free(cu_group *g) {
  cu_proc *p = g->proc;
  if (!p) return;
  if (g->dv->select(g->dev[0]) == SCHEDC_OK) {
    unmap_peers(g);
    uint64_t one = 1, all[CU_MAX_RANKS];
    if (p->arena && !g->broken[0] && sc_cu_proc_exchange(g, &one, all, 1) == SCHEDC_OK) g->dv->release(p->arena);
    if (g->net) g->nt->destroy(g->net, g->broken[0] != 0);
    g->net = NULL;
  }
  if (p->own_boot) schedc_comm_free(p->boot);
  free(p->base);
  free(p);
  g->proc = NULL;
}

void sc_cu_proc_release(cu_group *g) {
  char *why = strdup(schedc_errmsg());
  sc_cu_sync_all(g);
  sc_cu_kcache_free(g);
  proc_free(g);
  if (why) sc_err_str(SCHEDC_OK, why);
  free(why);
  sc_cu_group_free(g);
}

static void proc_comm_free(schedc_comm *c) {
  cu_group *g = c->be_data;
  pthread_mutex_lock(&g->mu);
  int last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) sc_cu_proc_release(g);
  c->be_data = NULL;
}

/* A new arena of the given capacities, its IPC handle to every rank, theirs mapped here. Every
 * kernel of every rank has finished and every rank has unmapped its peers (each did both before
 * the exchange that agreed on the regrow), so the old arena may go. A second exchange after the
 * mapping ends the regrow: no rank launches, frees its arena or exits (whose memory goes with it)
 * before every rank has mapped every peer, and a rank that could not map fails every rank's call
 * at once instead of leaving its peers' kernels to the timeout. Only calls that regrow pay it. */
static schedc_status regrow(cu_group *g, size_t cells, size_t temp_bytes, size_t work_bytes, size_t mir_bytes) {
  cu_proc *p = g->proc;
  const sc_cudev *dv = g->dv;
  schedc_status st = dv->select(g->dev[0]);
  if (st != SCHEDC_OK) return st;
  if (p->arena) dv->release(p->arena);
  p->arena = NULL;
  p->cells = cells > p->cells ? cells : p->cells;
  p->temp_bytes = temp_bytes > p->temp_bytes ? temp_bytes : p->temp_bytes;
  p->work_bytes = work_bytes > p->work_bytes ? work_bytes : p->work_bytes;
  p->mir_bytes = mir_bytes > p->mir_bytes ? mir_bytes : p->mir_bytes;
  /* A rank whose allocation fails still takes part in the handle exchange (word 8 says it has no
   * handle), so its peers fail at once, naming it, instead of waiting for it until the timeout. */
  sc_ipc h;
  memset(&h, 0, sizeof h);
  if ((st = dv->alloc(off_mir(p) + up256(p->mir_bytes), &p->arena)) != SCHEDC_OK)
    p->cells = p->temp_bytes = p->work_bytes = p->mir_bytes = 0;
  else if ((st = dv->ipc_get(p->arena, &h)) != SCHEDC_OK)
    memset(&h, 0, sizeof h);
  uint64_t mine[9], all[CU_MAX_RANKS * 9];
  memcpy(mine, h.b, sizeof h.b);
  mine[8] = st == SCHEDC_OK;
  schedc_status xs = sc_cu_proc_exchange(g, mine, all, 9);
  if (st != SCHEDC_OK || (st = xs) != SCHEDC_OK) return st;
  for (int q = 0; q < g->N; q++) /* every rank sees the same table, so all leave here or none */
    if (!all[9 * (size_t)q + 8])
      return sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not allocate its device memory", g->me, q);
  for (int q = 0; q < g->N && st == SCHEDC_OK; q++) {
    if (q == g->me) { p->base[q] = p->arena; continue; }
    if (g->net && g->node[q] != g->node[g->me]) continue; /* another node: reached through NCCL only */
    memcpy(h.b, all + 9 * (size_t)q, sizeof h.b);
    if ((st = dv->ipc_open(&h, &p->base[q])) != SCHEDC_OK)
      st = sc_err(st, "cuda rank %d: cannot map rank %d's device memory: %s", g->me, q, schedc_errmsg());
  }
  uint64_t mapped = st == SCHEDC_OK; /* the second exchange: how the mapping went everywhere */
  xs = sc_cu_proc_exchange(g, &mapped, all, 1);
  for (int q = 0; q < g->N && xs == SCHEDC_OK && st == SCHEDC_OK; q++)
    if (!all[q]) st = sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not map its peers' device memory", g->me, q);
  if (st == SCHEDC_OK) st = xs;
  if (st == SCHEDC_OK) g->err = p->base[leader(g)];
  return st;
}

/* What every rank must agree on at a call, as words of the host exchange: the core's agreement
 * (agree.h: number, collective, dtype, op, root, count, plan, verification), then this backend's
 * own fields, compared with the same message (sc_disagree). Growth last: ranks that differ in
 * what decides it are named for that, not for its effect. */
enum { A_WORDS = sizeof(sc_agreement) / 8, X_NBLK = A_WORDS, X_NODES, X_GROW, D_WORDS };
_Static_assert(sizeof(sc_agreement) % 8 == 0, "the agreement travels as 64-bit words");
static const char *const x_name[] = {"blocks per rank (SCHEDC_CUDA_BLOCKS)", "nodes (SCHEDC_CUDA_NODES)",
                                     "buffer growth"};

/* SCHEDC_OK when rank q's words (theirs) match this rank's (mine); else SCHEDC_EMISMATCH naming
 * the first field that differs and both values. */
static schedc_status agree_call(const cu_group *g, const sc_call *k, const uint64_t *mine, int q, const uint64_t *theirs) {
  sc_agreement a, b;
  memcpy(&a, mine, sizeof a);
  memcpy(&b, theirs, sizeof b);
  schedc_status st = sc_agreement_check(k->cn, g->me, &a, q, &b);
  for (int w = X_NBLK; w < D_WORDS && st == SCHEDC_OK; w++)
    if (mine[w] != theirs[w]) {
      char v1[24], v2[24];
      snprintf(v1, sizeof v1, "%llu", (unsigned long long)mine[w]);
      snprintf(v2, sizeof v2, "%llu", (unsigned long long)theirs[w]);
      st = sc_disagree(k->cn, g->me, q, k->seq, x_name[w - X_NBLK], v1, v2, NULL);
    }
  return st;
}

/* Digest verification of this rank's result (cuda_verify.c): the ranks' records (integrity.h)
 * through the bootstrap, the core's verdict on them (sc_verdict); with repair, the majority
 * rank's bits through the bootstrap too (from its host copy). Every rank sees the same records,
 * so all return the same verdict and the group stays usable; a failure of the exchange itself
 * (a peer gone) breaks it. */
static schedc_status verify(cu_group *g, const cu_call *c, size_t bytes) {
  cu_proc *p = g->proc;
  const sc_call *k = c->call;
  const char *cn = k->cn;
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return sc_cu_breaks(g, sc_err(SCHEDC_ENOMEM, "%s: out of memory for the digest of %zu bytes", cn, bytes));
  uint64_t d = 0, mine[SC_VREC_WORDS], all[CU_MAX_RANKS * SC_VREC_WORDS], dg[CU_MAX_RANKS];
  const sc_corrupt none = {0}; /* the checksum kernels' verdict came before (sc_cu_check_verdict) */
  schedc_status st = sc_cu_result_digest(g, cn, 0, c->recv[0], bytes, g->vf.flipout == g->me, host, &d);
  sc_vrec_pack(mine, d, &none);
  if (st == SCHEDC_OK) st = sc_cu_proc_exchange(g, mine, all, SC_VREC_WORDS);
  int fix = -1; /* the core's verdict, the same on every rank */
  if (st == SCHEDC_OK && g->vf.digest) st = sc_verdict(cn, k->file, all, g->N, g->me, 1, g->vf.repair, dg, &fix);
  if (st == SCHEDC_OK && fix >= 0 && (st = sc_rebroadcast(p->boot, host, bytes, fix)) == SCHEDC_OK) {
    if (dg[g->me] != dg[fix] && (st = g->dv->copy(c->recv[0], host, bytes, g->stream[0])) == SCHEDC_OK)
      st = sc_cu_sync(g, g->stream[0]);
    if (st == SCHEDC_OK) st = sc_repaired(cn, g->me, sc_verify_digest(NULL, host, bytes), dg[fix]);
    if (st == SCHEDC_OK) st = sc_digest_outcome(cn, dg, g->N, g->me, fix, 1);
  }
  free(host);
  return st == SCHEDC_OK || st == SCHEDC_ECORRUPT ? st : sc_cu_breaks(g, st);
}

/* The host barrier of the group's processes (the mode's rendezvous; each drained its stream). */
static schedc_status rendezvous(cu_group *g) {
  uint64_t one = 1, all[CU_MAX_RANKS];
  return sc_cu_proc_exchange(g, &one, all, 1);
}

/* The boundary after phase ph (-1: after the copy-in) through NCCL (SCHEDC_CUDA_NET=nccl; peers
 * on other nodes are not mapped): one group per rank holding its sends (payloads other nodes read
 * from it) and receives (into its mirror slots), in the order of the split's copy list on both
 * sides, so they match per pair; enqueued on the rank's stream between the phases' launches.
 * Stream order replaces both barriers of sc_cu_pull: a send completes before the writer's next
 * phase may overwrite its buffer, a receive before the reader's next phase reads the slot. No
 * host wait. */
static schedc_status stage_net(cu_group *g, const cu_call *c, int ph) {
  const sc_cunet *nt = g->nt;
  const sc_split *sp = c->sp;
  schedc_status st = nt->group_start();
  if (st != SCHEDC_OK) return st;
  for (uint32_t i = 0; i < sp->ncopies && st == SCHEDC_OK; i++) {
    const sc_mirror_copy *m = &sp->copies[i];
    int out = (int)m->src == g->me;
    if (m->boundary != ph || (!out && (int)m->dst != g->me)) continue;
    cu_xfer x = sc_cu_xfer(g, c, m); /* this rank's side of it */
    if (out) st = nt->send(g->net, x.from, x.bytes, (int)m->dst, g->stream[0]);
    else st = nt->recv(g->net, x.to, x.bytes, (int)m->src, g->stream[0]);
    if (st == SCHEDC_OK && g->vf.check) /* the sums as a second message */
      st = out ? nt->send(g->net, x.sfrom, x.sbytes, (int)m->dst, g->stream[0])
               : nt->recv(g->net, x.sto, x.sbytes, (int)m->src, g->stream[0]);
  }
  schedc_status e = nt->group_end(); /* a started group is always ended */
  return st != SCHEDC_OK ? st : e;
}

/* With NCCL each node's kernels have their own failure record. Once every kernel of the call has
 * ended (the caller's barrier), the records go to every rank, and a node whose record is clean
 * takes the first failure of another (its first words: what failed and where), so every rank
 * returns the same verdict. Every rank of a node writes the same words. */
static schedc_status share_record(cu_group *g) {
  if (!g->net || g->nnodes < 2) return SCHEDC_OK;
  uint32_t rec[CU_ERR_WORDS] = {0};
  uint64_t mine[CU_ERR_WORDS / 2], all[CU_MAX_RANKS * (CU_ERR_WORDS / 2)];
  schedc_status st = g->dv->copy(rec, g->err, sizeof rec, g->stream[0]);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, g->stream[0]);
  memcpy(mine, rec, sizeof mine);
  if (st == SCHEDC_OK) st = sc_cu_proc_exchange(g, mine, all, CU_ERR_WORDS / 2);
  for (int q = 0; q < g->N && st == SCHEDC_OK && !rec[0]; q++) {
    const uint32_t *w = (const uint32_t *)(all + (size_t)q * (CU_ERR_WORDS / 2));
    if (!w[0]) continue;
    if ((st = g->dv->copy(g->err, w, 8 * sizeof *w, g->stream[0])) == SCHEDC_OK) st = sc_cu_sync(g, g->stream[0]);
    break;
  }
  return st;
}

/* Peers' memory mapped (one host): the boundaries pulled between host barriers. With NCCL: sent
 * and received on the streams, and each node's failure record shared at the verdict. */
const cu_mode sc_cu_mode_ipc = {rendezvous, sc_cu_pull, NULL};
const cu_mode sc_cu_mode_nccl = {rendezvous, stage_net, share_record};

/* Exact mode: this rank's grid words (sc_cu_exact_words), every rank's through the host exchange
 * with whether it could take them (a rank that failed fails every rank at once, named), the max
 * of each word (max is exact: the same on every rank), the grid. */
static schedc_status exact_grid(cu_group *g, cu_call *c, const cu_kset *ks, schedc_status st) {
  int64_t w[SC_EXACT_WORDS] = {0};
  uint64_t mine[SC_EXACT_WORDS + 1], all[CU_MAX_RANKS * (SC_EXACT_WORDS + 1)];
  if (st == SCHEDC_OK) st = sc_cu_exact_words(g, c, ks, w);
  memcpy(mine, w, sizeof w);
  mine[SC_EXACT_WORDS] = st == SCHEDC_OK;
  schedc_status xs = sc_cu_proc_exchange(g, mine, all, SC_EXACT_WORDS + 1);
  if (st != SCHEDC_OK || (st = xs) != SCHEDC_OK) return st;
  for (int q = 0; q < g->N; q++) {
    const uint64_t *t = all + (size_t)q * (SC_EXACT_WORDS + 1);
    if (!t[SC_EXACT_WORDS])
      return sc_err(SCHEDC_EPEER, "%s: cuda rank %d: rank %d could not take its input's exact-mode grid words",
                    c->call->cn, g->me, q);
    for (int i = 0; i < SC_EXACT_WORDS; i++) w[i] = (int64_t)t[i] > w[i] ? (int64_t)t[i] : w[i];
  }
  c->ex = c->call->ex;
  if (c->ex.wire) return sc_quant_grid(&c->ex, w, g->N, c->call->cn); /* NaN, Inf: refused on every rank alike */
  sc_exact_grid(&c->ex, w, g->N);
  return SCHEDC_OK;
}

/* One call on this rank (called with g->mu held): the ranks agree on it over the host (and on
 * whether the arena must grow, which follows from it), then the phase loop, then with digests
 * the verdict over the host exchange. */
static schedc_status run_call(cu_group *g, const sc_call *k) {
  const char *cn = k->cn;
  cu_proc *p = g->proc;
  const sc_cudev *dv = g->dv;
  const sc_prog *prog = k->prog;
  int N = g->N, me = g->me;
  cu_call c;
  sc_cu_call_init(g, &c, k);
  c.send[0] = k->send;
  c.recv[0] = k->recv;
  size_t esz = c.esz, K = k->K;
  size_t cells = (size_t)prog->nchunks * (size_t)g->nblk, tbytes = sc_cu_temp_bytes(g, &c);
  /* split across nodes: mirror slots, at most one per cross-node source of the busiest rank */
  size_t mstride = c.mstride, mbytes = 0;
  for (int q = 0; q < N && mstride; q++) {
    size_t slots = 0;
    for (uint32_t i = 0; i < prog->rank[q].ng; i++) {
      const sc_group *gr = &prog->groups[prog->rank[q].g_off + i];
      for (uint32_t s = 0; gr->phase != SC_PH_C && s < gr->nsrc; s++)
        slots += g->node[prog->srcs[gr->src_off + s].rank] != g->node[q];
    }
    size_t so, need = sc_cu_mir_bytes(slots, mstride, esz, g->nblk, &so);
    if (need > mbytes) mbytes = need;
  }
  int grow = !p->arena || cells > p->cells || tbytes > p->temp_bytes || K * esz > p->work_bytes || mbytes > p->mir_bytes;
  schedc_status st = SCHEDC_OK;
  /* A regrow frees memory peers' kernels use and peers map: before the exchange, drain this
   * rank's kernels and unmap the peers (so after it, every rank has done both). */
  if (grow && p->last_stream && (st = dv->select(g->dev[0])) == SCHEDC_OK && (st = sc_cu_sync(g, p->last_stream)) == SCHEDC_OK)
    st = sc_cu_err_status(g, cn, NULL, NULL); /* a timeout of an earlier call not yet seen by schedc_cuda_sync */
  if (st != SCHEDC_OK) return sc_cu_breaks(g, st);
  if (grow) unmap_peers(g);
  sc_agreement a; /* the kernels do not slice: SCHEDC_SLICE is not compared */
  sc_agreement_of(&a, k, SC_PATH_PLAN);
  a.slice = 0;
  uint64_t d[D_WORDS];
  memcpy(d, &a, sizeof a);
  d[X_NBLK] = (uint64_t)g->nblk;
  d[X_NODES] = (uint64_t)g->nnodes;
  d[X_GROW] = (uint64_t)grow;
  uint64_t all[CU_MAX_RANKS * D_WORDS]; /* the exchange tables: at most 64 ranks, so on the stack */
  st = sc_cu_proc_exchange(g, d, all, D_WORDS);
  for (int q = 0; q < N && st == SCHEDC_OK; q++)
    if (q != me) st = agree_call(g, k, d, q, all + (size_t)q * D_WORDS);
  if (st == SCHEDC_OK && grow) st = regrow(g, cells, tbytes, K * esz, mbytes);
  cu_kset *ks = NULL;
  int exact = k->ex.mode == SC_EXACT_CALL;
  int agreed = st == SCHEDC_OK; /* every rank alike: the exchanges above decided it */
  if (st == SCHEDC_OK) st = sc_cu_kset(g, k->plan, (int)k->dtype, exact ? sc_cu_exact_kop(&k->ex) : (int)k->op, &ks);
  if (agreed && exact) st = exact_grid(g, &c, ks, st); /* every rank takes part, even one whose kernels failed */
  if (st != SCHEDC_OK) return sc_cu_breaks(g, st);
  /* peers' working buffers and counters as mapped here; only this rank's temps and mirrors */
  for (int q = 0; q < N; q++) {
    char *b = p->base[q];
    if (b) c.mem[q] = (cu_mem){b + off_work(p), NULL, b + off_ctr(), NULL}; /* else on another node (NCCL) */
  }
  c.mem[me].temp = (char *)p->arena + off_temp(p);
  c.mem[me].mir = (char *)p->arena + off_mir(p);
  c.cells = p->cells;
  st = sc_cu_run(g, &c, ks); /* checksums: judged in it, once every rank's kernel has finished */
  p->last_stream = g->stream[0];
  if (st == SCHEDC_OK && (g->vf.digest || g->vf.flipout >= 0) && sc_same_bits(k->coll))
    return verify(g, &c, sc_same_bits_elems(k->coll, k->count, N) * schedc_dtype_size(k->dtype));
  return st == SCHEDC_OK ? st : sc_cu_breaks(g, st);
}

static schedc_status proc_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  (void)res; /* stream-ordered: verified inside the collective, nothing for the core's checks after it */
  cu_group *g = c->be_data;
  schedc_status st = sc_cu_call_fits(k);
  if (st != SCHEDC_OK) return st;
  pthread_mutex_lock(&g->mu);
  st = g->broken[0] ? sc_cu_broken(g, k->cn) : run_call(g, k);
  pthread_mutex_unlock(&g->mu);
  return st;
}

/* Results are stream-ordered: verified inside the collective (above), not by the core after it. */
const sc_backend sc_cu_backend_proc = {"cuda", SC_CAP_EXACT | SC_CAP_EXACT_DEVICE | SC_CAP_WIRE, proc_collective, sc_cu_failure, proc_comm_free, sc_cu_mem_alloc,
                                       sc_cu_mem_free, NULL};
