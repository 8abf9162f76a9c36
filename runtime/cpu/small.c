/*
 * small.c — the small-message path of the CPU backends: a call of at most SCHEDC_SMALL bytes
 * carries each rank's initial cells in its arrival line, and every rank evaluates its own result
 * part from the peers' lines in the order the plan's proof gives each chunk (one exchange instead
 * of a hand-off per step, the same bits as running the plan).
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "err.h"
#include "kernels.h"
#include "plan.h"
#include "terms.h"

/* The small-message path: does this call take it? Small enough for the arrival line, nothing to
 * verify and no fault to inject (those need the plan's transfers), a plan with its proof. A
 * function of what the descriptor holds, SCHEDC_SMALL and SCHEDC_INJECT, so ranks agree (the
 * descriptor's path field catches the settings that differ). */
int sc_small_call(const schedc_comm *c, const sc_call *k) {
  const sc_cpu *x = sc_cpu_of(c);
  const sc_inject *in = &c->inj;
  int faults = in->kill_rank >= 0 || (in->delay_rank >= 0 && in->delay_us) || in->jitter_us || in->flip_rank >= 0 ||
               in->flipout_rank >= 0;
  size_t bytes = k->K * schedc_dtype_size(k->acc);
  return k->K && bytes <= x->small && bytes <= x->sh->arr_data && !k->checks && !(faults && sc_call_injects(k)) &&
         k->plan->v.final;
}

/* Term t of the plan's proof evaluated over the ranks' initial cells [i0, i0 + len) (in[r]: rank
 * r's working buffer) into dst: a leaf is rank t's cells, a sum is the op of its sides, in the
 * accumulation type. Only the association matters: the terms are commutative as the verifier
 * proves them (the op is commutative and NaN is the default NaN), so each side may be either
 * operand. The larger side goes to dst and the other, when it is a sum, to tmp: a level of
 * scratch for each halving, at most log2(n) + 1 levels of `stride` bytes. */
static void eval_term(const sc_terms *T, uint32_t t, schedc_dtype acc, schedc_op op, char *const *in, size_t i0,
                      size_t len, char *dst, char *tmp, size_t stride) {
  size_t esz = schedc_dtype_size(acc);
  if (t < T->nleaves) {
    memcpy(dst, in[t] + i0 * esz, len * esz);
    return;
  }
  uint32_t big = T->a[t], other = T->b[t];
  if (T->size[other] > T->size[big]) big = T->b[t], other = T->a[t];
  const void *x = in[big] + i0 * esz, *y = in[other] + i0 * esz;
  if (big >= T->nleaves) {
    eval_term(T, big, acc, op, in, i0, len, dst, tmp, stride);
    x = dst;
  }
  if (other >= T->nleaves) {
    eval_term(T, other, acc, op, in, i0, len, tmp, tmp + stride, stride);
    y = tmp;
  }
  sc_reduce_chain(acc, op, dst, x, &y, 1, len);
}

/* Run a small call after the arrival: every rank reads the peers' initial cells from their arrival
 * lines (one pass over n * K elements, no per-step hand-off) and evaluates its own result part in
 * the order the plan's proof gives each chunk: the bits of running the plan, from one exchange. */
schedc_status sc_small_run(schedc_comm *c, const sc_call *k, uint64_t seq) {
  sc_cpu *x = sc_cpu_of(c);
  int n = c->nranks, me = c->rank, parity = (int)(seq & 1);
  const schedc_plan *pl = k->plan;
  uint32_t C = pl->ir.nchunks, levels = 1;
  size_t esz = schedc_dtype_size(k->acc), K = k->K, maxchunk = (K + C - 1) / C, lo, len;
  while (levels < 33 && ((size_t)1 << (levels - 1)) < (size_t)n) levels++;
  size_t need = K * esz + (size_t)levels * maxchunk * esz;
  if (need > x->temp_cap) {
    void *t = realloc(x->temp, need);
    if (!t) {
      sc_fail(c, SC_ABORTED, "rank %d ran out of memory", me);
      return sc_err(SCHEDC_ENOMEM, "out of memory for %zu bytes of temporaries", need);
    }
    x->temp = t;
    x->temp_cap = need;
  }
  char *Wl = x->temp, *tmp = Wl + K * esz;
  for (int r = 0; r < n; r++) x->peer[r] = sc_arr(x->sh, parity, (uint32_t)r)->data;
  sc_result_part(k->coll, me, k->root, k->count, K, &lo, &len);
  for (uint32_t ch = 0; ch < C && len; ch++) {
    size_t clo, chi;
    sc_chunk_range(K, C, ch, &clo, &chi);
    if (clo < lo) clo = lo;
    if (chi > lo + len) chi = lo + len;
    if (chi <= clo) continue;
    uint32_t t = pl->v.final[(size_t)me * C + ch];
    if (t < pl->v.terms.n) eval_term(&pl->v.terms, t, k->acc, k->op, x->peer, clo, chi - clo, Wl + clo * esz, tmp,
                                     maxchunk * esz);
    else memcpy(Wl + clo * esz, x->peer[me] + clo * esz, (chi - clo) * esz); /* not defined: as it was */
  }
  sc_work_out(c, k, Wl);
  return SCHEDC_OK;
}
