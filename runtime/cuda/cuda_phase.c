/*
 * cuda_phase.c — one collective of a cuda group (cuda_phase.h), the same loop whether one process
 * drives every rank or each GPU has its own: the kernel parameter block filled from the call,
 * then per slot copy in, the plan's kernels once per phase with the mode's boundary between
 * phases (cu_mode: host copies, IPC pulls or NCCL), finish, verdict.
 */
#include <stdint.h>
#include <string.h>

#include "cuda_phase.h"
#include "err.h"
#include "kernels.h"
#include "quant.h"

schedc_status sc_cu_call_fits(const sc_call *k) {
  const sc_ir *ir = &k->plan->ir;
  if (k->ex.mode == SC_EXACT_CALL && k->ex.nleaves > 0) /* schedc_accum_allreduce's call, even of one leaf */
    return sc_err(SCHEDC_EUNAVAIL, "%s: exact leaves (schedc_accum_allreduce) are not available on the cuda backend: "
                  "the leaves are host memory", k->cn);
  if (ir->nsteps >= (1u << CU_EPOCH_BITS) || ir->nxfers >= (1u << CU_EPOCH_BITS))
    return sc_err(SCHEDC_EUNAVAIL, "%s: plan '%s' has %u steps and %u transfers; the cuda backend takes fewer than %u of each",
                  k->cn, ir->name, ir->nsteps, ir->nxfers, 1u << CU_EPOCH_BITS);
  return SCHEDC_OK;
}

void sc_cu_call_init(const cu_group *g, cu_call *c, const sc_call *k) {
  memset(c, 0, sizeof *c);
  c->call = k;
  c->ir = &k->plan->ir;
  c->prog = k->prog;
  c->esz = schedc_dtype_size(k->acc);
  for (int r = 0; r < g->N; r++)
    if (c->prog->rank[r].ntemp > c->ntemp) c->ntemp = c->prog->rank[r].ntemp;
  /* the tile length, once for every kernel of the call: the device only reads it */
  uint32_t nchunks = c->prog->nchunks;
  c->tile = sc_cuda_tile(k->K, nchunks, c->esz, g->nblk);
  c->tstride = sc_cuda_tstride(k->K, nchunks, c->esz, g->nblk, c->tile);
  c->mstride = g->nnodes > 1 ? sc_cu_mstride(k->K, nchunks, c->esz) : 0;
}

size_t sc_cu_temp_bytes(const cu_group *g, const cu_call *c) {
  return (size_t)c->ntemp * (size_t)g->nblk * c->tstride * c->esz;
}

/* The rank slot s of this process runs. */
static int rank_of(const cu_group *g, int s) { return g->me < 0 ? s : g->me; }

/* base + off, or NULL where the memory is not addressed from here (a peer on another node). */
static char *addr(char *base, size_t off) { return base ? base + off : NULL; }

/* The block for this call: every addressed rank's memory, the sizes, a fresh epoch. */
static void fill_args(cu_group *g, cu_call *c) {
  cu_args *a = &c->args;
  sc_cu_args_init(a, g->N, (g->vf.check ? SC_ABI_CHECK : 0) | (c->sp ? SC_ABI_SPLIT : 0));
  for (int q = 0; q < g->N; q++) {
    const cu_mem *m = &c->mem[q];
    sc_cu_arg_ptr(a, SC_ABI_buf, q, m->work);
    sc_cu_arg_ptr(a, SC_ABI_temp, q, m->temp);
    sc_cu_arg_ptr(a, SC_ABI_ver, q, m->ctr);
    sc_cu_arg_ptr(a, SC_ABI_reads, q, addr(m->ctr, c->cells * 8));
    sc_cu_arg_ptr(a, SC_ABI_sum, q, addr(m->ctr, 2 * c->cells * 8));
    sc_cu_arg_ptr(a, SC_ABI_mir, q, m->mir);
    sc_cu_arg_ptr(a, SC_ABI_msum, q, addr(m->mir, c->sum_off));
  }
  g->epoch++;
  double budget = g->timeout_s * g->ticks;
  sc_cu_arg(a, SC_ABI_err, (uint64_t)(uintptr_t)g->err);
  sc_cu_arg(a, SC_ABI_count, c->call->K);
  sc_cu_arg(a, SC_ABI_tstride, c->tstride);
  sc_cu_arg(a, SC_ABI_tile, c->tile);
  sc_cu_arg(a, SC_ABI_epoch, g->epoch << CU_EPOCH_BITS);
  sc_cu_arg(a, SC_ABI_budget, (uint64_t)(budget > 9e18 ? 9e18 : budget));
  if (g->vf.check) sc_cu_args_check(g, a, c->ir);
  sc_cu_arg(a, SC_ABI_mstride, c->mstride);
}

/* An elementwise kernel (widen, narrow, avg) over n elements on slot s's stream. */
static schedc_status elementwise(cu_group *g, int s, void *fn, void **params, size_t n) {
  if (!n) return SCHEDC_OK;
  size_t grid = (n + (size_t)g->threads - 1) / (size_t)g->threads, cap = (size_t)g->sms * 2;
  return g->dv->launch(fn, (unsigned)(grid < cap ? grid : cap), (unsigned)g->threads, params, 0, g->stream[s]);
}

/* Exact mode's kernel parameter block (cuda_abi.h: sc_xargs, 8 words) for one conversion. */
_Static_assert((int)SC_CUDA_XSPECIAL_NAN == (int)SC_EXACT_NAN && (int)SC_CUDA_XSPECIAL_PINF == (int)SC_EXACT_PINF &&
               (int)SC_CUDA_XSPECIAL_NINF == (int)SC_EXACT_NINF && (int)SC_CUDA_XSPECIAL_NONE == (int)SC_EXACT_FINITE,
               "exact mode's special values: the kernels take exact.h's");
static void xargs(uint64_t x[SC_CUDA_XARGS_WORDS], const void *in, void *out, size_t n, int dtype, const sc_exact *ex) {
  x[0] = (uint64_t)(uintptr_t)in;
  x[1] = (uint64_t)(uintptr_t)out;
  x[2] = n;
  x[3] = dtype == SCHEDC_F16 ? SC_CUDA_XFMT_F16 : dtype == SCHEDC_BF16 ? SC_CUDA_XFMT_BF16 : SC_CUDA_XFMT_F32;
  x[4] = (uint64_t)(int64_t)(ex ? ex->g : 0);
  x[5] = (uint64_t)(ex ? ex->nterms : 1);
  x[6] = ex && (ex->op == SCHEDC_AVG_EXACT || (ex->wire && ex->op == SCHEDC_AVG));
  x[7] = (uint64_t)(ex ? ex->special : 0);
  if (ex && ex->wire) x[7] = (uint64_t)ex->wire / 8; /* a wire's kernels: its integers' bytes (cuda_abi.h) */
}

/* Slot s's stats kernel over its input (ex: a quantized call's, else NULL: exact mode's), its four
 * words copied back into got once the stream is done. */
static schedc_status slot_stats(cu_group *g, const cu_call *c, const cu_kset *k, int s, const sc_exact *ex,
                                uint32_t got[4]) {
  static const uint32_t zero[4];
  schedc_status st;
  if ((st = g->dv->select(g->dev[s])) != SCHEDC_OK) return st;
  if (!g->xstat[s] && (st = g->dv->alloc(256, &g->xstat[s])) != SCHEDC_OK) return st;
  uint64_t x[SC_CUDA_XARGS_WORDS];
  xargs(x, c->send[s], g->xstat[s], c->call->K, (int)c->call->dtype, ex);
  void *pr[] = {x};
  if ((st = g->dv->copy(g->xstat[s], zero, sizeof zero, g->stream[s])) == SCHEDC_OK &&
      (st = elementwise(g, s, k->xstats[s], pr, c->call->K)) == SCHEDC_OK &&
      (st = g->dv->copy(got, g->xstat[s], 4 * sizeof *got, g->stream[s])) == SCHEDC_OK)
    st = sc_cu_sync(g, g->stream[s]);
  return st;
}

/* A quantized call's grid words (quant.h) from its schedc_qstats words on every slot: the largest
 * magnitude, the first NaN and the first infinity, as sc_quant_stats takes them on the host. */
static schedc_status quant_words(cu_group *g, const cu_call *c, const cu_kset *k, int64_t w[SC_EXACT_WORDS]) {
  const sc_call *call = c->call;
  int mbits = sc_quant_mag_bits(call->ex.wire, g->N);
  schedc_status st = SCHEDC_OK;
  for (int s = 0; s < g->n && st == SCHEDC_OK; s++) {
    uint32_t got[4];
    if ((st = slot_stats(g, c, k, s, &call->ex, got)) != SCHEDC_OK) break;
    uint64_t nan = got[1] ? 0xffffffffu - got[1] : UINT64_MAX, inf = got[2] ? 0xffffffffu - got[2] : UINT64_MAX;
    int64_t mine[SC_EXACT_WORDS];
    sc_quant_words(call->dtype, got[0], nan < inf ? nan : inf, nan < inf ? 2 : inf != UINT64_MAX, mbits,
                   g->me < 0 ? s : g->me, mine);
    for (int i = 0; i < 4; i++) w[i] = mine[i] > w[i] ? mine[i] : w[i];
  }
  return st;
}

schedc_status sc_cu_exact_words(cu_group *g, const cu_call *c, const cu_kset *k, int64_t w[SC_EXACT_WORDS]) {
  const sc_call *call = c->call;
  w[0] = SC_EXACT_NONE;
  w[1] = w[2] = w[3] = 0;
  w[4] = 1; /* leaves per rank: one input (exact leaves are refused on cuda) */
  w[5] = -1;
  if (call->ex.wire) return quant_words(g, c, k, w);
  schedc_status st = SCHEDC_OK;
  for (int s = 0; s < g->n && st == SCHEDC_OK; s++) {
    uint32_t got[4];
    if ((st = slot_stats(g, c, k, s, NULL, got)) != SCHEDC_OK) break;
    /* the same words as sc_exact_stats of the whole input: they depend only on the largest
     * finite magnitude and the three flags, so take them from those values, in the data type */
    uint32_t v[4];
    size_t nv = 0, es = schedc_dtype_size(call->dtype);
    uint32_t inf = call->dtype == SCHEDC_F32 ? 0x7f800000u : call->dtype == SCHEDC_F16 ? 0x7c00u : 0x7f80u;
    uint32_t sign = call->dtype == SCHEDC_F32 ? 0x80000000u : 0x8000u;
    if (got[0]) v[nv++] = got[0];
    if (got[1]) v[nv++] = inf | 1u; /* a NaN */
    if (got[2]) v[nv++] = inf;
    if (got[3]) v[nv++] = inf | sign;
    unsigned char elems[16];
    for (size_t i = 0; i < nv; i++) {
      if (es == 4) memcpy(elems + 4 * i, &v[i], 4);
      else { uint16_t h = (uint16_t)v[i]; memcpy(elems + 2 * i, &h, 2); }
    }
    int64_t mine[SC_EXACT_WORDS];
    sc_exact_stats(call->dtype, elems, nv, mine);
    for (int i = 0; i < 4; i++) w[i] = mine[i] > w[i] ? mine[i] : w[i];
  }
  return st;
}

/* Slot s before the plan: its input into its working buffer on its stream (widened; exact mode:
 * onto the grid). */
static schedc_status copy_in(cu_group *g, const cu_call *c, int s) {
  const sc_call *k = c->call;
  int r = rank_of(g, s);
  size_t esz = c->esz, K = k->K;
  char *W = c->mem[r].work;
  const void *in = c->send[s];
  schedc_status st = g->dv->select(g->dev[s]);
  if (st != SCHEDC_OK) return st;
  if (k->coll == SCHEDC_ALLGATHER) return g->dv->copy(W + (size_t)r * k->count * esz, in, k->count * esz, g->stream[s]);
  if (k->coll == SCHEDC_BROADCAST && r != k->root) return SCHEDC_OK;
  if (k->acc == k->dtype) return g->dv->copy(W, in, K * esz, g->stream[s]);
  if (k->ex.mode == SC_EXACT_CALL) {
    uint64_t x[SC_CUDA_XARGS_WORDS];
    xargs(x, in, W, K, (int)k->dtype, &c->ex);
    void *pr[] = {x};
    return elementwise(g, s, c->k->xin[s], pr, K);
  }
  uint64_t nn = K;
  void *pr[] = {&in, &W, &nn};
  return elementwise(g, s, c->k->widen[s], pr, K);
}

/* Slot s after the plan: avg once in the accumulation type, round to the data type once, its
 * result part out to recv[s] (exact mode: the integers rounded once, avg divided exactly there). */
static schedc_status finish(cu_group *g, const cu_call *c, int s) {
  const sc_call *k = c->call;
  int r = rank_of(g, s);
  size_t lo, len, esz = c->esz;
  sc_result_part(k->coll, r, k->root, k->count, k->K, &lo, &len);
  schedc_status st = SCHEDC_OK;
  if (!len || (st = g->dv->select(g->dev[s])) != SCHEDC_OK) return st;
  void *at = c->mem[r].work + lo * esz, *out = c->recv[s];
  if (k->ex.mode == SC_EXACT_CALL) {
    uint64_t x[SC_CUDA_XARGS_WORDS];
    xargs(x, at, out, len, (int)k->dtype, &c->ex);
    void *pr[] = {x};
    return elementwise(g, s, c->k->xout[s], pr, len);
  }
  uint64_t nn = len;
  if (k->op == SCHEDC_AVG && sc_reduces(k->coll)) {
    int nr = g->N;
    void *pr[] = {&at, &nn, &nr};
    if ((st = elementwise(g, s, c->k->avg[s], pr, len)) != SCHEDC_OK) return st;
  }
  if (k->acc == k->dtype) return g->dv->copy(out, at, len * esz, g->stream[s]);
  void *pr[] = {&at, &out, &nn};
  return elementwise(g, s, c->k->narrow[s], pr, len);
}

/* Phase ph of the plan on every slot: virtual ranks in one cooperative launch of schedc_all
 * (every rank's blocks resident at once), ordered after and before every slot's stream; else
 * one launch per slot of its own rank (schedc_all with count 1, or schedc_rank<me>, which takes
 * only the block). */
static schedc_status launch(cu_group *g, cu_call *c, int ph) {
  const sc_cudev *dv = g->dv;
  int n = g->n, first = 0, count = n;
  void *params[] = {c->args.P, &first, &count};
  sc_cu_arg(&c->args, SC_ABI_phase, (uint64_t)ph);
  schedc_status st = SCHEDC_OK;
  if (g->virt) {
    for (int r = 1; r < n && st == SCHEDC_OK; r++) st = dv->join(g->stream[0], g->stream[r]);
    if (st == SCHEDC_OK)
      st = dv->launch(c->k->run_fn[0], (unsigned)(n * g->nblk), (unsigned)g->threads, params, 1, g->stream[0]);
    for (int r = 1; r < n && st == SCHEDC_OK; r++) st = dv->join(g->stream[r], g->stream[0]);
    return st;
  }
  count = 1;
  for (int s = 0; s < n && st == SCHEDC_OK; s++) {
    first = rank_of(g, s); /* params hold &first: read at launch */
    if ((st = dv->select(g->dev[s])) == SCHEDC_OK)
      st = dv->launch(c->k->run_fn[s], (unsigned)g->nblk, (unsigned)g->threads, params, 0, g->stream[s]);
  }
  return st;
}

cu_xfer sc_cu_xfer(const cu_group *g, const cu_call *c, const sc_mirror_copy *m) {
  size_t lo, hi, esz = c->esz, vw = 16 / esz;
  sc_chunk_range(c->call->K, c->ir->nchunks, m->chunk, &lo, &hi);
  const cu_mem *w = &c->mem[m->src], *r = &c->mem[m->dst];
  cu_xfer x = {addr(w->work, lo * esz), addr(r->mir, ((size_t)m->slot * c->mstride + lo % vw) * esz), (hi - lo) * esz,
               addr(w->ctr, (2 * c->cells + (size_t)m->chunk * g->nblk) * 8),
               addr(r->mir, c->sum_off + (size_t)m->slot * g->nblk * 8), (size_t)g->nblk * 8};
  return x;
}

schedc_status sc_cu_barrier(cu_group *g) {
  schedc_status st = sc_cu_sync_all(g);
  if (st == SCHEDC_OK && g->mode->rendezvous) st = g->mode->rendezvous(g);
  return st;
}

schedc_status sc_cu_pull(cu_group *g, const cu_call *c, int ph) {
  const sc_cudev *dv = g->dv;
  schedc_status st = sc_cu_barrier(g);
  if (st == SCHEDC_OK) st = sc_cu_err_status(g, c->call->cn, c->ir, NULL); /* a stopped phase ends the call */
  for (uint32_t i = 0; i < c->sp->ncopies && st == SCHEDC_OK; i++) {
    const sc_mirror_copy *m = &c->sp->copies[i];
    int s = g->me < 0 ? (int)m->dst : (int)m->dst == g->me ? 0 : -1; /* the reader's slot here */
    if (m->boundary != ph || s < 0) continue;
    cu_xfer x = sc_cu_xfer(g, c, m);
    if ((st = dv->select(g->dev[s])) == SCHEDC_OK) st = dv->copy(x.to, x.from, x.bytes, g->stream[s]);
    if (st == SCHEDC_OK && g->vf.check) /* the writer's sums of the chunk's parts travel with it */
      st = dv->copy(x.sto, x.sfrom, x.sbytes, g->stream[s]);
  }
  if (st == SCHEDC_OK) st = sc_cu_barrier(g);
  return st;
}

schedc_status sc_cu_run(cu_group *g, cu_call *c, const cu_kset *k) {
  c->k = k;
  c->sp = g->nnodes > 1 ? &k->split : NULL;
  if (c->sp) sc_cu_mir_bytes(c->sp->maxslots, c->mstride, c->esz, g->nblk, &c->sum_off);
  fill_args(g, c);
  schedc_status st = SCHEDC_OK;
  for (int s = 0; s < g->n && st == SCHEDC_OK; s++) /* a leaf of a reduce may serve its input as is */
    if (c->mem[rank_of(g, s)].work != (const char *)c->send[s]) st = copy_in(g, c, s);
  /* the plan once per phase; between phases every rank's kernel has ended (or, with NCCL, the
   * transfers are ordered between them on the streams) and the cross-node payloads are moved
   * into their mirrors */
  int nph = c->sp ? (int)c->sp->nphases : 1;
  for (int ph = -1; ph < nph && st == SCHEDC_OK && c->call->K; ph++) {
    if (ph >= 0) st = launch(g, c, ph);
    if (c->sp && st == SCHEDC_OK && ph < nph - 1) st = g->mode->cross(g, c, ph);
  }
  for (int s = 0; s < g->n && st == SCHEDC_OK; s++) st = finish(g, c, s);
  /* checksums: judged once every rank's kernel has finished (all read one failure record) */
  if (st == SCHEDC_OK && g->vf.check && (st = sc_cu_barrier(g)) == SCHEDC_OK &&
      (!g->mode->share_record || (st = g->mode->share_record(g)) == SCHEDC_OK))
    st = sc_cu_check_verdict(g, c->call->cn, c->ir, g->me);
  return st;
}
