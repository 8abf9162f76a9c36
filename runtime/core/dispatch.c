/*
 * dispatch.c — a collective below verification: the arguments checked, the plan chosen (given,
 * tuned, or the built-in ring, kept per communicator), the call descriptor filled and numbered,
 * an exact call's grid exchanged first (exact.c), the backend's collective run (c->be, chosen when
 * the communicator was made). The calls the
 * library makes for itself (integrity.c, a cuda communicator's bootstrap) enter here directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "comm.h"
#include "err.h"
#include "kernels.h"
#include "log.h"
#include "opreg.h"
#include "plan.h"
#include "quant.h"

#define NDEFPLANS ((int)(sizeof ((schedc_comm *)0)->defplan / sizeof ((schedc_comm *)0)->defplan[0]))

schedc_status schedc_plan_builtin(schedc_collective coll, int nranks, int root, schedc_plan **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (nranks < 1 || root < 0 || root >= nranks || !schedc_collective_name(coll))
    return sc_err(SCHEDC_EINVAL, "bad built-in plan request (collective %d, %d ranks, root %d)", (int)coll, nranks, root);
  sc_ir ir;
  if (sc_builtin_ring(&ir, (int)coll, (uint32_t)nranks, (uint32_t)root)) return sc_err(SCHEDC_ENOMEM, "out of memory");
  return sc_plan_make(&ir, out);
}

/* Ranks on several hosts (hosts.c), in equal consecutive blocks or any other placement (round-
 * robin, as mpirun --map-by node): the shipped hierarchical schedule with one node per host, for
 * the collectives it has — rings inside each host in locality order, one ring across the hosts
 * per local slot, so each payload crosses between hosts once per slot instead of at every ring
 * step (the built-in ring in rank order crosses at every step of an interleaved layout). Every
 * rank loads the same script with the same layout, so every rank gets the same plan (and if one
 * could not, the call's agreement names the plan). NULL: the built-in ring (one host, a layout
 * the schedule cannot serve (hosts of unequal rank counts), another collective, or no such
 * schedule here). */
static schedc_plan *multi_host_plan(schedc_comm *c, int coll) {
  if (!c->topology && c->nhosts < 2) return NULL;
  if (coll != SCHEDC_ALLREDUCE && coll != SCHEDC_REDUCE_SCATTER && coll != SCHEDC_ALLGATHER) return NULL;
  char def[64];
  snprintf(def, sizeof def, "collective=%s", schedc_collective_name((schedc_collective)coll));
  const char *defs[1] = {def};
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = c->nranks;
  if (c->topology) lo.topology = c->topology; /* SCHEDC_TOPOLOGY: the layout it describes (agreed at init) */
  else {
    lo.nnodes = c->nhosts;
    lo.node_of = c->host_blocks ? NULL : c->host_of;
  }
  lo.defines = defs;
  lo.ndefines = 1;
  schedc_plan *p = NULL;
  if (schedc_plan_open("hierarchical", &lo, &p) != SCHEDC_OK) {
    /* said out loud when the user asked for the layout; the ring still gives a right answer */
    sc_log(c->topology ? SCHEDC_LOG_WARN : SCHEDC_LOG_INFO, "%s: no hierarchical plan for %s (%s); the built-in ring",
           schedc_collective_name((schedc_collective)coll), c->topology ? c->topology : "the hosts", schedc_errmsg());
    return NULL;
  }
  return p;
}

static const schedc_plan *default_plan(schedc_comm *c, int coll, int root, size_t bytes, size_t *slice) {
  const sc_tuneentry *e = sc_tuning_pick(&c->tuning, coll, root, bytes);
  if (e) {
    if (e->slice) *slice = e->slice;
    return e->plan;
  }
  for (int i = 0; i < c->ndefplan; i++)
    if (c->defplan[i].coll == coll && c->defplan[i].root == root) return c->defplan[i].plan;
  schedc_plan *p = multi_host_plan(c, coll);
  if (!p && schedc_plan_builtin((schedc_collective)coll, c->nranks, root, &p) != SCHEDC_OK) return NULL;
  if (c->ndefplan == NDEFPLANS) {
    schedc_plan_free(c->defplan[0].plan);
    memmove(c->defplan, c->defplan + 1, sizeof c->defplan[0] * (NDEFPLANS - 1));
    c->ndefplan--;
  }
  c->defplan[c->ndefplan].coll = coll;
  c->defplan[c->ndefplan].root = root;
  c->defplan[c->ndefplan++].plan = p;
  return p;
}

const schedc_plan *schedc_comm_default_plan(schedc_comm *c, schedc_collective coll, int root, size_t bytes) {
  if (!c) { sc_err(SCHEDC_EINVAL, "comm is NULL"); return NULL; }
  size_t slice = 0;
  const schedc_plan *p = default_plan(c, (int)coll, root, bytes, &slice);
  if (!p) sc_err(SCHEDC_EINVAL, "no default plan for %s root %d", schedc_collective_name(coll), root);
  return p;
}

schedc_status sc_call_make(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                           schedc_dtype dtype, schedc_op op, int root, const schedc_plan *plan, unsigned flags,
                           sc_call *k) {
  return sc_call_make_wire(c, coll, sendbuf, recvbuf, count, dtype, op, root, plan, flags, 0, k);
}

/* The arguments of a call checked and its descriptor filled. `count` is the user's count; `wire`
 * a quantized call's SCHEDC_WIRE_* (quant.h: an exact call whose integers are the wire's), or 0. */
schedc_status sc_call_make_wire(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                schedc_dtype dtype, schedc_op op, int root, const schedc_plan *plan, unsigned flags,
                                int wire, sc_call *k) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  if (!c) return sc_err(SCHEDC_EINVAL, "%s: comm is NULL", cn);
  if (c->broken) {
    const char *why = c->be->failure ? c->be->failure(c) : NULL;
    return sc_err(SCHEDC_EPEER, "%s: the communicator is broken by an earlier failure%s%s", cn, why ? ": " : "",
                  why ? why : "");
  }
  if (!schedc_dtype_name(dtype)) return sc_err(SCHEDC_EINVAL, "%s: bad dtype %d", cn, (int)dtype);
  if (!schedc_op_name(op)) return sc_err(SCHEDC_EINVAL, "%s: bad op %d%s", cn, (int)op, op >= SCHEDC_OP_CUSTOM_BASE ?
                                         " (a custom operator already freed, or never made by schedc_op_create)" : "");
  schedc_status st;
  if (sc_reduces(coll) && (st = sc_op_check_dtype(op, dtype, cn)) != SCHEDC_OK) return st;
  if (wire && (st = sc_quant_check(cn, coll, op, dtype, wire, c->nranks)) != SCHEDC_OK) return st;
  if (wire && !(c->be->caps & SC_CAP_WIRE))
    return sc_err(SCHEDC_EUNAVAIL, "%s: wire %s: the %s backend has no quantized wire (threads, shm and mpi have)", cn,
                  sc_wire_name(wire), c->be->name);
  /* exact mode: f32/f16/bf16 summed as i64 on a grid (exact.h), or as a wire's integers (quant.h);
   * allgather and broadcast ignore the op */
  int exact = sc_reduces(coll) && (sc_exact_op(op) || wire);
  if (exact && dtype != SCHEDC_F32 && dtype != SCHEDC_F16 && dtype != SCHEDC_BF16)
    return sc_err(SCHEDC_EINVAL, "%s: op %s takes f32, f16 or bf16 data, not %s (integer sums are exact already)", cn,
                  schedc_op_name(op), schedc_dtype_name(dtype));
  if (exact && !(c->be->caps & SC_CAP_EXACT))
    return sc_err(SCHEDC_EUNAVAIL, "%s: op %s: the %s backend has no exact mode (threads, shm and mpi have)", cn,
                  schedc_op_name(op), c->be->name);
  if (root < 0 || root >= c->nranks) return sc_err(SCHEDC_EINVAL, "%s: root %d out of range [0, %d)", cn, root, c->nranks);
  int n = c->nranks, me = c->rank;
  size_t K = coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER ? count * (size_t)n : count;
  if (count && (size_t)n > SIZE_MAX / count) return sc_err(SCHEDC_EINVAL, "%s: count %zu too large", cn, count);
  int needs_send = coll != SCHEDC_BROADCAST || me == root;
  int needs_recv = coll != SCHEDC_REDUCE || me == root;
  if (count && ((needs_send && !sendbuf) || (needs_recv && !recvbuf)))
    return sc_err(SCHEDC_EINVAL, "%s: %s is NULL", cn, needs_send && !sendbuf ? "sendbuf" : "recvbuf");
  size_t slice = c->slice_bytes;
  if (!plan && !(plan = default_plan(c, coll, root, K * schedc_dtype_size(dtype), &slice)))
    return sc_err(SCHEDC_ENOMEM, "%s: no default plan", cn);
  const sc_ir *ir = &plan->ir;
  if (ir->nranks != (uint32_t)n)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' is for %u ranks, the communicator has %d", cn, ir->name, ir->nranks, n);
  if (ir->collective != coll)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' is a %s plan", cn, ir->name, sc_ir_collective_name(ir->collective));
  if ((coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE) && ir->root != (uint32_t)root)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' has root %u, the call root %d", cn, ir->name, ir->root, root);
  /* Reductions run in the accumulation type; allgather and broadcast only move the bits. */
  int reduction = sc_reduces(coll);
  *k = (sc_call){coll, cn, sendbuf, recvbuf, count, K, dtype, reduction ? sc_acc_type(dtype) : dtype,
                 reduction ? op : SCHEDC_SUM, root, plan, &plan->prog, slice, flags, 0, sc_call_checks_word(c, flags),
                 0, ir->nfiles ? ir->files[0] : "?", {0}};
  const sc_opdef *custom = reduction ? sc_opreg_get(op) : NULL;
  if (custom) k->op_hash = custom->hash;
  if (exact) {
    k->acc = wire ? (schedc_dtype)sc_quant_type(wire) : SCHEDC_I64;
    k->op = SCHEDC_SUM;
    k->ex = (sc_exact){SC_EXACT_CALL, coll, (int)dtype, (int)op, 0, SC_EXACT_FINITE, 0, n, 0, NULL, 0, wire};
  }
  /* The identity check applies to exact calls only: any other call runs under SCHEDC_VERIFY=exact
   * as under none (its checks word 0: the small-message path, no repair). */
  if (!exact) k->checks &= ~(uint32_t)SC_V_EXACT;
  if (!(k->checks & (SC_V_DIGEST | SC_V_CHECKSUM))) k->checks &= ~(uint32_t)SC_V_REPAIR; /* nothing it could repair */
  return SCHEDC_OK;
}

/* Exact leaves (schedc_accum_allreduce): do the ranks' blocks — rank r's (first, count) at
 * w[2r], w[2r + 1] — tile the leaves 0..L-1, each leaf on one rank? Then *L is the number of
 * leaves; else SCHEDC_EMISMATCH naming the gap or the overlap (every rank reaches it from the same
 * words). Blocks of any sizes: 12 leaves on 5 ranks is 3, 3, 2, 2, 2. */
typedef struct leafblock { int64_t lo, n; int rank; } leafblock;
static int by_lo(const void *a, const void *b) {
  const leafblock *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : x->rank - y->rank;
}
static schedc_status leaf_blocks(const sc_call *k, int n, const int64_t *w, uint64_t seq, int *L) {
  leafblock *b = malloc((size_t)n * sizeof *b);
  if (!b) return sc_err(SCHEDC_ENOMEM, "%s: out of memory for the exact leaves' check", k->cn);
  for (int r = 0; r < n; r++) b[r] = (leafblock){w[2 * r], w[2 * r + 1], r};
  qsort(b, (size_t)n, sizeof *b, by_lo);
  int64_t next = 0;
  schedc_status st = SCHEDC_OK;
  for (int i = 0; i < n && st == SCHEDC_OK; i++) {
    int r = b[i].rank;
    int64_t lo = b[i].lo, hi = lo + b[i].n;
    if (lo > next)
      st = sc_err(SCHEDC_EMISMATCH, "%s: exact leaves: leaves [%lld, %lld) are on no rank (rank %d holds [%lld, %lld); "
                  "call %llu): the ranks' blocks must together be leaves 0..L-1, each on one rank", k->cn,
                  (long long)next, (long long)lo, r, (long long)lo, (long long)hi, (unsigned long long)seq);
    else if (lo < next)
      st = sc_err(SCHEDC_EMISMATCH, "%s: exact leaves: rank %d holds [%lld, %lld) and rank %d [%lld, %lld): they overlap "
                  "(call %llu): the ranks' blocks must together be leaves 0..L-1, each on one rank", k->cn, b[i - 1].rank,
                  (long long)b[i - 1].lo, (long long)next, r, (long long)lo, (long long)hi, (unsigned long long)seq);
    next = hi;
  }
  free(b);
  if (st == SCHEDC_OK && next > (1 << 30))
    st = sc_err(SCHEDC_EINVAL, "%s: exact leaves: %lld leaves in all: more than 2^30", k->cn, (long long)next);
  *L = (int)next;
  return st;
}

/* One max exchange of nw words (mine into all) as an internal allreduce that carries k's agreement
 * (mode GRID); *seq: its call number (given when it runs), for messages. */
static schedc_status max_exchange(schedc_comm *c, const sc_call *k, int64_t *mine, int64_t *all, size_t nw,
                                  uint64_t *seq) {
  sc_call g;
  sc_result r;
  schedc_status st = sc_call_make(c, SCHEDC_ALLREDUCE, mine, all, nw, SCHEDC_I64, SCHEDC_MAX, 0, NULL,
                                  SC_CALL_INTERNAL | (sc_call_injects(k) ? SC_CALL_FAILDIES : 0u), &g);
  if (st != SCHEDC_OK) return st;
  g.ex = k->ex;
  g.ex.mode = SC_EXACT_GRID;
  st = sc_call_run(c, &g, &r);
  *seq = g.seq; /* numbered by the run */
  return st;
}

/* An exact call's grid: every rank's exponent and flags (exact.c) through an internal allreduce
 * (max, i64) on the communicator's default plan — max is exact, so its association does not
 * matter — whose agreement carries this call's collective, dtype and op (agree.c), so a rank not
 * in exact mode is named at the op. With exact leaves the same max carries every rank's block of
 * leaves (rank r's in words of its own, the others' words at INT64_MIN), so every rank learns the
 * blocks and the number of leaves L, which sets the headroom and avg's divisor: the same for every
 * rank count that holds the same L leaves, however they are spread. Here, not in exact.c: it is a
 * call, and calls are made here. */
static schedc_status exact_prepare(schedc_comm *c, sc_call *k) {
  int n = c->nranks, m = k->ex.nleaves > 1 ? k->ex.nleaves : 1, leaves = k->ex.nleaves > 0;
  size_t nw = SC_EXACT_WORDS + (leaves ? 2 * (size_t)n : 0);
  int64_t *mine = malloc(nw * sizeof *mine), *all = malloc(nw * sizeof *all);
  if (!mine || !all) {
    free(mine);
    free(all);
    return sc_err(SCHEDC_ENOMEM, "%s: out of memory for the exact grid's exchange", k->cn);
  }
  /* A quantized call's words depend on its number of summands (quant.h: the magnitude bits); with
   * leaves that is the L the exchange finds, so they assume equal blocks (n * m) and are made and
   * exchanged again below when the blocks say otherwise. */
  int wire = k->ex.wire;
  if (wire) sc_quant_stats(k->dtype, k->send, k->K * (size_t)m, sc_quant_mag_bits(wire, n * m), c->rank, mine);
  else sc_exact_stats(k->dtype, k->send, k->K * (size_t)m, mine);
  mine[4] = m;
  mine[5] = -m;
  for (size_t i = SC_EXACT_WORDS; i < nw; i++) mine[i] = INT64_MIN;
  if (leaves) {
    mine[SC_EXACT_WORDS + 2 * (size_t)c->rank] = k->ex.leaf0;
    mine[SC_EXACT_WORDS + 2 * (size_t)c->rank + 1] = m;
  }
  uint64_t seq = 0;
  schedc_status st = max_exchange(c, k, mine, all, nw, &seq);
  int L = n;
  if (st == SCHEDC_OK && leaves) st = leaf_blocks(k, n, all + SC_EXACT_WORDS, seq, &L);
  if (st == SCHEDC_OK && wire && L != n * m) { /* every rank found the same L: all take this branch */
    sc_quant_stats(k->dtype, k->send, k->K * (size_t)m, sc_quant_mag_bits(wire, L), c->rank, mine);
    st = max_exchange(c, k, mine, all, SC_EXACT_WORDS, &seq);
  }
  if (st == SCHEDC_OK) {
    if (wire) st = sc_quant_grid(&k->ex, all, L, k->cn);
    else sc_exact_grid(&k->ex, all, L);
  }
  free(mine);
  free(all);
  return st;
}

/* Exact mode under the identity check (SCHEDC_VERIFY exact, digest, checksum or full): the integers
 * are summed exactly, so the result's integers must sum to every rank's inputs' integers, mod 2^64
 * — an algorithm-based check of the reduction itself, which catches what a digest cannot (a partial
 * sum corrupted before it was sent on: every rank then ends with the same wrong bits) and what a
 * CRC cannot (a reduce that computed a wrong sum, then hashed and sent it). One internal i64 sum
 * allreduce of n + 2 words: the inputs' sum, whether any rank's transfer checks found a corrupted
 * transfer (then those name it, and repair it if asked), and each rank's result-part sum in its own
 * word. Every rank reaches the same verdict from the same words. `insum`: this rank's inputs'
 * integers, summed by the conversion onto the grid as it wrote them (before anything overwrites
 * the inputs in place). */
static schedc_status exact_check(schedc_comm *c, const sc_call *k, uint64_t insum, const sc_result *res) {
  int n = c->nranks;
  int64_t *w = calloc((size_t)n + 2, sizeof *w), *all = malloc(((size_t)n + 2) * sizeof *all);
  if (!w || !all) {
    free(w);
    free(all);
    return sc_err(SCHEDC_ENOMEM, "%s: out of memory for the exact-mode check", k->cn);
  }
  w[0] = (int64_t)insum;
  w[1] = res->bad.found != 0;
  w[2 + c->rank] = (int64_t)res->exact_out;
  sc_call g;
  sc_result r;
  schedc_status st = sc_call_make(c, SCHEDC_ALLREDUCE, w, all, (size_t)n + 2, SCHEDC_I64, SCHEDC_SUM, 0, NULL,
                                  SC_CALL_INTERNAL, &g);
  if (st == SCHEDC_OK) st = sc_call_run(c, &g, &r);
  if (st == SCHEDC_OK && !all[1]) {
    /* allreduce: each rank's whole result; reduce: the root's; reduce_scatter: the blocks together */
    uint64_t in = (uint64_t)all[0], out = 0;
    char who[256] = "";
    size_t len = 0;
    if (k->coll == SCHEDC_REDUCE_SCATTER) {
      for (int q = 0; q < n; q++) out += (uint64_t)all[2 + q];
      if (out != in) snprintf(who, sizeof who, "the ranks' blocks together");
    } else {
      for (int q = 0; q < n; q++) {
        if ((k->coll == SCHEDC_REDUCE && q != k->root) || (uint64_t)all[2 + q] == in || len >= sizeof who - 16) continue;
        out = (uint64_t)all[2 + q];
        len += (size_t)snprintf(who + len, sizeof who - len, "%s%d", len ? ", " : "", q);
      }
    }
    if (who[0])
      st = sc_err(SCHEDC_ECORRUPT, "%s: exact-mode check of call %llu failed: the result's integers (rank(s) %s) sum to "
                  "%016llx, every rank's inputs to %016llx (mod 2^64): a transfer or the reduction's arithmetic was "
                  "corrupted", k->cn, (unsigned long long)k->seq, who, (unsigned long long)out, (unsigned long long)in);
  }
  free(w);
  free(all);
  return st;
}

schedc_status sc_call_run(schedc_comm *c, sc_call *k, sc_result *res) {
  memset(res, 0, sizeof *res);
  int host_exact = k->ex.mode == SC_EXACT_CALL && !(c->be->caps & SC_CAP_EXACT_DEVICE); /* else the backend's */
  if (host_exact && !k->ex.ready) { /* the grid first: every rank makes this call too */
    schedc_status st = exact_prepare(c, k);
    if (st != SCHEDC_OK) return st;
  }
  int check = host_exact && (k->checks & SC_V_EXACT); /* cuda: SC_CAP_EXACT_DEVICE, no host-side check */
  sc_exact_tally tally = {0, 0}; /* the inputs' sum, taken by the conversion onto the grid (workbuf.c) */
  k->ex.tally = check ? &tally : NULL;
  c->inj.arith_armed = c->inj.arith_rank == c->rank && sc_call_injects(k); /* arith: once in this call */
  k->seq = ++c->seq;
  schedc_status st = c->be->collective(c, k, res);
  k->ex.tally = NULL; /* it lives on this frame */
  c->inj.arith_armed = 0;
  if (st == SCHEDC_OK && check && !tally.done)
    st = sc_err(SCHEDC_EINTERNAL, "%s: exact-mode check: the %s backend converted no inputs onto the grid (no sum "
                "to check against)", k->cn, c->be->name);
  if (st == SCHEDC_OK && check) st = exact_check(c, k, tally.in, res);
  return st;
}

schedc_status sc_coll(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                      schedc_op op, int root, const schedc_plan *plan, unsigned flags) {
  sc_call k;
  sc_result res;
  schedc_status st = sc_call_make(c, coll, send, recv, count, dtype, op, root, plan, flags, &k);
  return st == SCHEDC_OK ? sc_call_run(c, &k, &res) : st;
}
