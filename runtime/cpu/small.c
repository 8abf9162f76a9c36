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

/* The small-message path: does this call take it? Small enough for the arrival line, no transfer
 * to verify and no fault to inject (those need the plan's transfers and steps), a plan with its
 * proof. Exact mode's identity check alone (SC_V_EXACT) needs neither: the inputs' and the
 * result's sums are taken by sc_work_in and sc_work_out here too. A function of what the
 * descriptor holds, SCHEDC_SMALL and SCHEDC_INJECT, so ranks agree (the descriptor's path field
 * catches the settings that differ). */
int sc_small_call(const schedc_comm *c, const sc_call *k) {
  const sc_cpu *x = sc_cpu_of(c);
  const sc_inject *in = &c->inj;
  int faults = in->kill_rank >= 0 || (in->delay_rank >= 0 && in->delay_us) || in->jitter_us || in->flip_rank >= 0 ||
               in->flipout_rank >= 0 || in->arith_rank >= 0;
  size_t bytes = k->K * schedc_dtype_size(k->acc);
  return k->K && bytes <= x->small && bytes <= x->sh->arr_data && !(k->checks & ~(uint32_t)SC_V_EXACT) &&
         !(faults && sc_call_injects(k)) && k->plan->v.final;
}

/* What evaluating a term needs: the term store, the op in the accumulation type, the ranks' initial
 * cells (in[r]: rank r's working buffer), the element range [i0, i0 + len), and the scratch strides
 * per level (tmp bytes, spine entries). */
typedef struct evalctx {
  const sc_terms *T;
  schedc_dtype acc;
  schedc_op op;
  char *const *in;
  size_t i0, len, esz, stride, nspine;
} evalctx;

/* The side of sum u with more leaves (the first on a tie), and the other. */
static uint32_t bigger(const sc_terms *T, uint32_t u) { return T->size[T->b[u]] > T->size[T->a[u]] ? T->b[u] : T->a[u]; }
static uint32_t smaller(const sc_terms *T, uint32_t u) { return T->size[T->b[u]] > T->size[T->a[u]] ? T->a[u] : T->b[u]; }

/* Term t of the plan's proof evaluated over the ranks' initial cells into dst: a leaf is rank t's
 * cells, a sum is the op of its sides. Only the association matters: the terms are commutative as
 * the verifier proves them (the op is commutative and NaN is the default NaN), so each side may be
 * either operand. The larger sides, down to a leaf, are walked as a loop (a ring's chain of n
 * leaves is n - 1 sums deep) and folded into dst bottom up; each smaller side that is a sum is
 * evaluated into tmp by a recursive call, which has at most half the leaves: at most log2(n) + 1
 * levels of scratch (`tmp`, `stride` bytes, and `spine`, `nspine` entries, per level). */
static void eval_term(const evalctx *e, uint32_t t, char *dst, char *tmp, uint32_t *spine) {
  const sc_terms *T = e->T;
  uint32_t depth = 0, u = t;
  while (u >= T->nleaves) {
    spine[depth++] = u;
    u = bigger(T, u);
  }
  const void *x = e->in[u] + e->i0 * e->esz; /* the bottom leaf */
  if (!depth) memcpy(dst, x, e->len * e->esz);
  for (uint32_t i = depth; i-- > 0;) {
    uint32_t o = smaller(T, spine[i]);
    const void *y = tmp; /* a sum: evaluated into tmp; a leaf: read in place (in[] has a rank's entries only) */
    if (o >= T->nleaves) eval_term(e, o, tmp, tmp + e->stride, spine + e->nspine);
    else y = e->in[o] + e->i0 * e->esz;
    sc_reduce_chain(e->acc, e->op, dst, x, &y, 1, e->len);
    x = dst;
  }
}

/* Run a small call after the arrival: every rank reads the peers' initial cells from their arrival
 * lines (one pass over n * K elements, no per-step hand-off) and evaluates its own result part in
 * the order the plan's proof gives each chunk: the bits of running the plan, from one exchange. */
schedc_status sc_small_run(schedc_comm *c, const sc_call *k, sc_result *res) {
  sc_cpu *x = sc_cpu_of(c);
  int n = c->nranks, me = c->rank, parity = (int)(k->seq & 1);
  const schedc_plan *pl = k->plan;
  uint32_t C = pl->ir.nchunks, levels = 1;
  size_t esz = schedc_dtype_size(k->acc), K = k->K, maxchunk = (K + C - 1) / C, lo, len;
  while (levels < 33 && ((size_t)1 << (levels - 1)) < (size_t)n) levels++;
  size_t tmpb = (K + (size_t)levels * maxchunk) * esz, spb = (size_t)levels * (size_t)n * sizeof(uint32_t);
  tmpb = (tmpb + 7) & ~(size_t)7;
  size_t need = tmpb + spb;
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
  uint32_t *spine = (uint32_t *)(void *)((char *)x->temp + tmpb);
  for (int r = 0; r < n; r++) x->peer[r] = sc_arr(x->sh, parity, (uint32_t)r)->data;
  sc_result_part(k->coll, me, k->root, k->count, K, &lo, &len);
  for (uint32_t ch = 0; ch < C && len; ch++) {
    size_t clo, chi;
    sc_chunk_range(K, C, ch, &clo, &chi);
    if (clo < lo) clo = lo;
    if (chi > lo + len) chi = lo + len;
    if (chi <= clo) continue;
    uint32_t t = pl->v.final[(size_t)me * C + ch];
    evalctx e = {&pl->v.terms, k->acc, k->op, x->peer, clo, chi - clo, esz, maxchunk * esz, (size_t)n};
    if (t < pl->v.terms.n) eval_term(&e, t, Wl + clo * esz, tmp, spine);
    else memcpy(Wl + clo * esz, x->peer[me] + clo * esz, (chi - clo) * esz); /* not defined: as it was */
  }
  sc_work_out(c, k, Wl, res);
  return SCHEDC_OK;
}
