/*
 * cuda_proc.c — the cuda communicator with one process per GPU (schedc_comm_init_cuda_rank), the
 * way trainers run: each process owns its rank's device memory in one "arena" (counters, temps,
 * working buffer) that its peers on the same node map through CUDA IPC; a CPU communicator on
 * the host (the bootstrap: our shared-memory one, or the caller's, e.g. MPI across hosts)
 * exchanges the IPC handles and checks at every call that the ranks agree; it is also the
 * barrier of the verification verdicts and of the IPC boundaries of a plan split across nodes.
 * Between nodes over NCCL (cuda_net.h) the boundaries are grouped send/recv on the stream. The
 * call itself runs in the phase loop (cuda_phase.c) with this file's modes (ipc, nccl).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "cuda_group.h"
#include "cuda_net.h"
#include "err.h"
#include "kernels.h"
#include "opreg.h"
#include "params.h"

#define ARENA_HEAD 256 /* rank 0's arena starts with the kernels' failure record (err[4]) */

/* Arena layout, the same on every rank: [head][versions, read counts, sums: 24 bytes per cell]
 * [temps][working buffer][mirror slots (split across nodes)]. The three capacities only grow, and grow on every rank at the same
 * call (they follow from the call, which all ranks agree on), so the layout agrees too; a grown
 * arena is a fresh allocation, so its counters start at 0, below every epoch. */
typedef struct cu_proc {
  schedc_comm *boot;         /* CPU communicator of the same ranks (host side only): our shm one,
                                or the caller's (schedc_comm_init_cuda_over), borrowed */
  int own_boot;
  void *arena;
  size_t cells, temp_bytes, work_bytes, mir_bytes; /* capacities */
  void **base;               /* [N]: every rank's arena as mapped here (own: arena) */
  void *last_stream;         /* the stream of the last call (drained before a regrow) */
} cu_proc;

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

/* Host-side exchange: every rank's `words` 64-bit words, in rank order, into all. */
static schedc_status exchange(cu_group *g, const uint64_t *mine, uint64_t *all, size_t words) {
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
void sc_cu_proc_free(cu_group *g) {
  cu_proc *p = g->proc;
  if (!p) return;
  if (g->dv->select(g->dev[0]) == SCHEDC_OK) {
    unmap_peers(g);
    uint64_t one = 1, all[CU_MAX_RANKS];
    if (p->arena && !g->broken[0] && exchange(g, &one, all, 1) == SCHEDC_OK) g->dv->release(p->arena);
    if (g->net) g->nt->destroy(g->net, g->broken[0] != 0);
    g->net = NULL;
  }
  if (p->own_boot) schedc_comm_free(p->boot);
  free(p->base);
  free(p);
  g->proc = NULL;
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
  schedc_status xs = exchange(g, mine, all, 9);
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
  xs = exchange(g, &mapped, all, 1);
  for (int q = 0; q < g->N && xs == SCHEDC_OK && st == SCHEDC_OK; q++)
    if (!all[q]) st = sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not map its peers' device memory", g->me, q);
  if (st == SCHEDC_OK) st = xs;
  if (st == SCHEDC_OK) g->err = p->base[leader(g)];
  return st;
}

/* What every rank must agree on at a call; words of the host exchange. Growth last: ranks that
 * differ in what decides it are named for that, not for its effect. */
enum { D_SEQ, D_COLL, D_DTYPE, D_OP, D_ROOT, D_COUNT, D_PLAN, D_NBLK, D_VERIFY, D_NODES, D_GROW, D_WORDS };
static const char *const d_name[D_WORDS] = {"call number", "collective", "dtype", "op", "root", "count", "plan",
                                            "blocks per rank (SCHEDC_CUDA_BLOCKS)",
                                            "verification (SCHEDC_VERIFY, SCHEDC_REPAIR: 1 digest + 2 checksum + 4 repair)",
                                            "nodes (SCHEDC_CUDA_NODES)", "buffer growth"};

/* Word w of a descriptor as a reader wants it: names for the enumerations, hex for the plan. */
static void d_word(int w, uint64_t v, char *buf, size_t cap) {
  const char *name = w == D_COLL ? schedc_collective_name((schedc_collective)v)
                     : w == D_DTYPE ? schedc_dtype_name((schedc_dtype)v) : w == D_OP ? schedc_op_name((schedc_op)v) : NULL;
  if (name) snprintf(buf, cap, "%s", name);
  else snprintf(buf, cap, w == D_PLAN ? "%016llx" : "%llu", (unsigned long long)v);
}

/* Digest verification of this rank's result (cuda_verify.c): the ranks' digests through the
 * bootstrap; with repair, the majority rank's bits through it too (from its host copy). Every
 * rank sees the same digests, so all return the same verdict and the group stays usable; a
 * failure of the exchange itself (a peer gone) breaks it. */
static schedc_status verify(cu_group *g, const char *cn, size_t bytes) {
  cu_proc *p = g->proc;
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return sc_cu_breaks(g, sc_err(SCHEDC_ENOMEM, "%s: out of memory for the digest of %zu bytes", cn, bytes));
  uint64_t d = 0, all[CU_MAX_RANKS];
  schedc_status st = sc_cu_result_digest(g, 0, g->me, bytes, host, &d);
  if (st == SCHEDC_OK) st = exchange(g, &d, all, 1);
  int nbad = 0, root = st == SCHEDC_OK && g->digest ? sc_digest_majority(all, g->N, &nbad) : 0;
  if (st == SCHEDC_OK && nbad && g->repair && (st = sc_rebroadcast(p->boot, host, bytes, root)) == SCHEDC_OK) {
    if (all[g->me] != all[root] && (st = g->dv->copy(g->recv[0], host, bytes, g->stream[0])) == SCHEDC_OK)
      st = sc_cu_sync(g, g->stream[0]);
    if (st == SCHEDC_OK && sc_verify_digest(NULL, host, bytes) != all[root])
      st = sc_err(SCHEDC_ECORRUPT, "%s: repair failed on rank %d", cn, g->me);
  }
  free(host);
  if (st != SCHEDC_OK) return st == SCHEDC_ECORRUPT ? st : sc_cu_breaks(g, st);
  return nbad ? sc_digest_outcome(cn, all, g->N, g->me, root, g->repair) : SCHEDC_OK;
}

/* The host barrier of the group's processes (the mode's rendezvous; each drained its stream). */
static schedc_status rendezvous(cu_group *g) {
  uint64_t one = 1, all[CU_MAX_RANKS];
  return exchange(g, &one, all, 1);
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
    if (st == SCHEDC_OK && g->check) /* the sums as a second message */
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
  if (st == SCHEDC_OK) st = exchange(g, mine, all, CU_ERR_WORDS / 2);
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
static const cu_mode mode_ipc = {rendezvous, sc_cu_pull, NULL};
static const cu_mode mode_nccl = {rendezvous, stage_net, share_record};

schedc_status sc_cu_proc_collective(cu_group *g, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                    schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                    const schedc_plan *plan, const sc_prog *prog, size_t K) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  cu_proc *p = g->proc;
  const sc_cudev *dv = g->dv;
  int N = g->N, me = g->me;
  size_t esz = schedc_dtype_size(acc);
  g->coll = coll; g->dtype = (int)dtype; g->op = sc_reduces(coll) ? (int)op : 0; g->root = root; g->count = count;
  g->send[0] = sendbuf;
  g->recv[0] = recvbuf;
  cu_call c;
  sc_cu_call_init(g, &c, &plan->ir, prog, acc, K);
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
    st = sc_cu_err_status(g, NULL, NULL); /* a timeout of an earlier call not yet seen by schedc_cuda_sync */
  if (st != SCHEDC_OK) return sc_cu_breaks(g, st);
  if (grow) unmap_peers(g);
  const sc_opdef *custom = sc_opreg_get(g->op); /* its value is this process's own: compare its source */
  uint64_t d[D_WORDS] = {g->epoch, (uint64_t)coll, (uint64_t)dtype, custom ? custom->hash : (uint64_t)g->op,
                         (uint64_t)root, count,
                         plan->hash, (uint64_t)g->nblk, (uint64_t)(g->digest | g->check << 1 | g->repair << 2),
                         (uint64_t)g->nnodes, (uint64_t)grow};
  uint64_t all[CU_MAX_RANKS * D_WORDS]; /* the exchange tables: at most 64 ranks, so on the stack */
  st = exchange(g, d, all, D_WORDS);
  for (int q = 0; q < N && st == SCHEDC_OK; q++)
    for (int w = 0; w < D_WORDS && st == SCHEDC_OK; w++)
      if (all[(size_t)q * D_WORDS + w] != d[w]) {
        char mine[32], theirs[32];
        d_word(w, d[w], mine, sizeof mine);
        d_word(w, all[(size_t)q * D_WORDS + w], theirs, sizeof theirs);
        st = sc_err(SCHEDC_EMISMATCH, "%s: ranks %d and %d disagree on the %s (rank %d: %s, rank %d: %s; every rank "
                    "issues the same collectives in the same order with the same arguments)", cn, q < me ? q : me,
                    q < me ? me : q, d_name[w], me, mine, q, theirs);
      }
  if (st == SCHEDC_OK && grow) st = regrow(g, cells, tbytes, K * esz, mbytes);
  cu_kset *k = NULL;
  if (st == SCHEDC_OK) st = sc_cu_kset(g, plan, prog, g->dtype, g->op, &k);
  if (st != SCHEDC_OK) return sc_cu_breaks(g, st);
  /* peers' working buffers and counters as mapped here; only this rank's temps and mirrors */
  for (int q = 0; q < N; q++) {
    char *b = p->base[q];
    if (b) c.mem[q] = (cu_mem){b + off_work(p), NULL, b + off_ctr(), NULL}; /* else on another node (NCCL) */
  }
  c.mem[me].temp = (char *)p->arena + off_temp(p);
  c.mem[me].mir = (char *)p->arena + off_mir(p);
  c.cells = p->cells;
  st = sc_cu_run(g, &c, k); /* checksums: judged in it, once every rank's kernel has finished */
  p->last_stream = g->stream[0];
  if (st == SCHEDC_OK && (g->digest || g->flipout >= 0) && sc_same_bits(coll))
    return verify(g, cn, sc_same_bits_elems(coll, count, N) * schedc_dtype_size(dtype));
  return st == SCHEDC_OK ? st : sc_cu_breaks(g, st);
}

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
  schedc_status xs = exchange(g, mine, all, 17);
  if (st != SCHEDC_OK || (st = xs) != SCHEDC_OK) return st;
  for (int q = 0; q < g->N; q++)
    if (!all[17 * (size_t)q + 16])
      return sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not load NCCL", g->me, q);
  memcpy(id.b, all, sizeof id.b); /* rank 0's */
  void *net = NULL;
  if ((st = nt->init(&id, g->N, g->me, g->timeout_s, &net)) == SCHEDC_OK) {
    g->nt = nt;
    g->net = net;
    g->mode = &mode_nccl;
  }
  uint64_t ok = st == SCHEDC_OK;
  xs = exchange(g, &ok, all, 1);
  for (int q = 0; q < g->N && xs == SCHEDC_OK && st == SCHEDC_OK; q++)
    if (!all[q]) st = sc_err(SCHEDC_EPEER, "cuda rank %d: rank %d could not join the NCCL communicator", g->me, q);
  return st == SCHEDC_OK ? xs : st;
}

/* This process's host, as a 64-bit id: SCHEDC_HOST_ID when set (containers that share a host
 * name, tests that pretend to be several hosts), else the host name and the kernel's boot id. */
static uint64_t host_id(void) {
  char buf[512] = "";
  const char *e = sc_param_str(SC_P_SCHEDC_HOST_ID);
  if (e) {
    snprintf(buf, sizeof buf, "id:%s", e);
  } else {
    gethostname(buf, 255);
    buf[255] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t l = strlen(buf);
    if (f && !fgets(buf + l, (int)(sizeof buf - l), f)) buf[l] = 0;
    if (f) fclose(f);
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *c = buf; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h;
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
  schedc_status st = sc_comm_new(&sc_cuda_backend, rank, nranks, opts, &c);
  if (st != SCHEDC_OK) return st;
  cu_group *g = sc_cu_group_alloc(dv, 1, nranks, rank, 0);
  if (g) g->mode = &mode_ipc; /* mode_nccl once NCCL is set up (net_setup) */
  if (g && (st = sc_cu_verify_setup(g, c)) != SCHEDC_OK) {
    sc_cu_group_free(g);
    sc_comm_release(c);
    return st;
  }
  if (g && (!(g->proc = calloc(1, sizeof *g->proc)) || !(g->proc->base = calloc((size_t)nranks, sizeof(void *))))) {
    sc_cu_group_free(g);
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
  uint64_t mine[4] = {id, (uint64_t)g->nblk, host ? host_id() : 0, net};
  uint64_t all[CU_MAX_RANKS * 4];
  if (st == SCHEDC_OK) st = exchange(g, mine, all, 4);
  if (st == SCHEDC_OK) st = agree(g, all, device, &nccl);
  if (st == SCHEDC_OK && nccl) st = net_setup(g);
  if (st != SCHEDC_OK) {
    sc_cu_group_free(g);
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
    return sc_err(SCHEDC_EINVAL, "host: %s (a CPU communicator of the same ranks: shm or mpi)",
                  host ? "a cuda communicator" : "NULL");
  return proc_init(host->rank, host->nranks, device, NULL, host, 0, opts, out);
}

schedc_status sc_cu_init_env_mpi(int device, const schedc_comm_opts *opts, schedc_comm **out) {
  *out = NULL;
  schedc_comm_opts bo = SCHEDC_COMM_OPTS_INIT; /* as proc_init's own bootstrap: unverified, no plan */
  if (opts && opts->size >= offsetof(schedc_comm_opts, timeout_s) + sizeof opts->timeout_s) bo.timeout_s = opts->timeout_s;
  bo.verify = SCHEDC_VERIFY_NONE;
  schedc_comm *host = NULL;
  schedc_status st = schedc_comm_init_mpi(NULL, &bo, &host);
  if (st != SCHEDC_OK) return st;
  return proc_init(host->rank, host->nranks, device, NULL, host, 1, opts, out);
}
