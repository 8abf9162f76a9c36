/*
 * topk.c — top-k allreduce (compress.h; docs/compression.md): each rank's k largest magnitudes
 * (ties: the lower index first), chosen by a radix select on the magnitude bits, go with their
 * indices to every rank (one allgather); every rank sums the union exactly on exact mode's grid
 * (exact.h: its stats, grid and conversions), so every rank writes the same bits: exact mode's sum
 * of the ranks' sparsified inputs, which is also what the dense fallback computes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "compress.h"
#include "err.h"
#include "exact.h"
#include "kernels.h"

/* The magnitude bits of element i (their order is the magnitudes', NaN and Inf above every finite). */
static inline uint32_t mag(schedc_dtype dt, const void *x, size_t i) {
  return dt == SCHEDC_F32 ? ((const uint32_t *)x)[i] & 0x7fffffffu : ((const uint16_t *)x)[i] & 0x7fffu;
}
static uint32_t inf_mag(schedc_dtype dt) { return dt == SCHEDC_F32 ? 0x7f800000u : dt == SCHEDC_F16 ? 0x7c00u : 0x7f80u; }

/* In a histogram of 65536 buckets, the bucket (from the top) where the k-th largest falls: *above
 * gets how many lie in higher buckets. */
static uint32_t bucket_of(const uint32_t *hist, size_t k, size_t *above) {
  size_t sum = 0;
  uint32_t b = 65535;
  for (;; b--) {
    if (sum + hist[b] >= k || b == 0) break;
    sum += hist[b];
  }
  *above = sum;
  return b;
}

/* The k (1 <= k <= n) largest magnitudes' indices, ascending into idx: every element above the
 * threshold T (the k-th largest magnitude), then the first ones equal to it in index order. A radix
 * select: the top 16 bits' histogram, then (f32) the low 16 bits' within that bucket. */
static schedc_status select_topk(schedc_dtype dt, const void *x, size_t n, size_t k, uint32_t *idx) {
  uint32_t *hist = calloc(65536, sizeof *hist);
  if (!hist) return sc_err(SCHEDC_ENOMEM, "allreduce: out of memory for top-k's histogram");
  uint32_t T;
  size_t above;
  if (dt == SCHEDC_F32) {
    for (size_t i = 0; i < n; i++) hist[mag(dt, x, i) >> 16]++;
    uint32_t hi = bucket_of(hist, k, &above);
    memset(hist, 0, 65536 * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
      uint32_t m = mag(dt, x, i);
      if (m >> 16 == hi) hist[m & 0xffff]++;
    }
    size_t above_lo;
    T = hi << 16 | bucket_of(hist, k - above, &above_lo);
    above += above_lo;
  } else {
    for (size_t i = 0; i < n; i++) hist[mag(dt, x, i)]++;
    T = bucket_of(hist, k, &above);
  }
  free(hist);
  size_t eq = k - above, j = 0; /* how many equal to T are taken: the lowest indices */
  for (size_t i = 0; i < n && j < k; i++) {
    uint32_t m = mag(dt, x, i);
    if (m > T || (m == T && eq && eq--)) idx[j++] = (uint32_t)i;
  }
  return SCHEDC_OK;
}

typedef struct { uint32_t idx; int64_t q; } pair;
static int by_index(const void *a, const void *b) {
  uint32_t x = ((const pair *)a)->idx, y = ((const pair *)b)->idx;
  return x < y ? -1 : x > y;
}

/* The element (kind, rank, index) a message names for a NaN or infinity. */
static schedc_status not_finite(const char *what, int rank, uint64_t i, int nan) {
  return sc_err(SCHEDC_EINVAL, "allreduce: topk: sendbuf of rank %d holds %s at element %llu%s (a top-k sum takes finite "
                "values only); nothing was written", rank, nan ? "NaN" : "an infinity", (unsigned long long)i, what);
}

/* Every rank's n*k (index, value) words in `all` (value: the f32 bits of the element, exact for
 * f16/bf16) summed on exact mode's grid for nranks summands into recv (count elements of dt). */
static schedc_status sum_union(int nranks, const uint32_t *all, size_t nk, size_t count, schedc_dtype dt, int avg,
                               void *recv) {
  float *vals = malloc((nk ? nk : 1) * sizeof *vals);
  int64_t *q = malloc((nk ? nk : 1) * sizeof *q);
  pair *p = malloc((nk ? nk : 1) * sizeof *p);
  void *out = malloc((nk ? nk : 1) * schedc_dtype_size(dt));
  schedc_status st = SCHEDC_OK;
  if (!vals || !q || !p || !out) {
    st = sc_err(SCHEDC_ENOMEM, "allreduce: out of memory for top-k's %zu gathered values", nk);
    goto done;
  }
  for (size_t i = 0; i < nk; i++) memcpy(&vals[i], &all[2 * i + 1], 4);
  int64_t w[SC_EXACT_WORDS];
  sc_exact_stats(SCHEDC_F32, vals, nk, w); /* the grid of exact mode's sum over nranks inputs */
  sc_exact ex = {SC_EXACT_CALL, SCHEDC_ALLREDUCE, (int)dt, avg ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, 0,
                 SC_EXACT_FINITE, 0, nranks, 0, NULL, 0, 0};
  sc_exact_grid(&ex, w, nranks);
  sc_exact_in(&ex, SCHEDC_F32, q, vals, nk);
  for (size_t i = 0; i < nk; i++) p[i] = (pair){all[2 * i], q[i]};
  qsort(p, nk, sizeof *p, by_index);
  size_t nu = 0; /* the union: each index once, its integers' sum (any order: integers) */
  for (size_t i = 0; i < nk; i++) {
    if (nu && p[nu - 1].idx == p[i].idx) p[nu - 1].q = (int64_t)((uint64_t)p[nu - 1].q + (uint64_t)p[i].q);
    else p[nu++] = p[i];
  }
  for (size_t i = 0; i < nu; i++) q[i] = p[i].q;
  sc_exact_out(&ex, dt, out, q, nu); /* rounded once (avg: the exact quotient) */
  size_t esz = schedc_dtype_size(dt);
  memset(recv, 0, count * esz); /* +0 where no rank sent anything, as exact mode's sum of zeros */
  for (size_t i = 0; i < nu; i++) memcpy((char *)recv + (size_t)p[i].idx * esz, (char *)out + i * esz, esz);
done:
  free(vals);
  free(q);
  free(p);
  free(out);
  return st;
}

/* The dense fallback: every rank's sparsified input (the selected elements, +0 elsewhere) summed by
 * exact mode through `plan`, after one exchange that names a NaN or infinity on any rank (exact mode
 * would write NaN; here nothing is written). */
static schedc_status dense(schedc_comm *c, const void *x, const uint32_t *idx, size_t k, void *recv, size_t count,
                           schedc_dtype dt, int avg, const schedc_plan *plan) {
  size_t esz = schedc_dtype_size(dt);
  int64_t word = 0, all = 0;
  for (size_t j = 0; j < k; j++) /* a NaN or infinity is among the largest magnitudes if anywhere */
    if (mag(dt, x, idx[j]) >= inf_mag(dt)) {
      word = (int64_t)(((uint64_t)(c->rank + 1) << 41) | ((uint64_t)(mag(dt, x, idx[j]) > inf_mag(dt)) << 40) |
                       (((uint64_t)1 << 40) - 1 - idx[j]));
      break;
    }
  schedc_status st = sc_coll(c, SCHEDC_ALLREDUCE, &word, &all, 1, SCHEDC_I64, SCHEDC_MAX, 0, NULL, SC_CALL_INTERNAL);
  if (st != SCHEDC_OK) return st;
  if (all)
    return not_finite(" (dense fallback)", (int)((uint64_t)all >> 41) - 1,
                      ((uint64_t)1 << 40) - 1 - ((uint64_t)all & (((uint64_t)1 << 40) - 1)), (int)((uint64_t)all >> 40) & 1);
  char *w = calloc(count ? count : 1, esz);
  if (!w) return sc_err(SCHEDC_ENOMEM, "allreduce: out of memory for top-k's dense fallback");
  for (size_t j = 0; j < k; j++) memcpy(w + (size_t)idx[j] * esz, (const char *)x + (size_t)idx[j] * esz, esz);
  st = sc_coll_verified(c, SCHEDC_ALLREDUCE, w, recv, count, dt, avg ? SCHEDC_AVG_EXACT : SCHEDC_SUM_EXACT, 0, plan, NULL);
  free(w);
  return st;
}

schedc_status sc_topk_allreduce(schedc_comm *c, const void *send, void *recv, size_t count, schedc_dtype dt,
                                schedc_op op, const schedc_plan *plan, double frac, void *residual) {
  if (!c) return sc_err(SCHEDC_EINVAL, "allreduce: comm is NULL");
  if (dt != SCHEDC_F32 && dt != SCHEDC_F16 && dt != SCHEDC_BF16)
    return sc_err(SCHEDC_EINVAL, "allreduce: topk takes f32, f16 or bf16 data, not %s",
                  schedc_dtype_name(dt) ? schedc_dtype_name(dt) : "a bad dtype");
  if (count && (!send || !recv)) return sc_err(SCHEDC_EINVAL, "allreduce: %s is NULL", !send ? "sendbuf" : "recvbuf");
  if (count > UINT32_MAX)
    return sc_err(SCHEDC_EINVAL, "allreduce: topk: count %zu is above 2^32 - 1 (the indices travel as 32 bits)", count);
  double kk = ceil(frac * (double)count);
  size_t k = kk > (double)count ? count : (size_t)kk, n = (size_t)c->nranks, esz = schedc_dtype_size(dt);
  schedc_status st;
  if (residual && (st = sc_residual_check("allreduce", residual, count, dt, send, count, recv, count)) != SCHEDC_OK)
    return st;
  void *v = NULL;
  uint32_t *idx = malloc((k ? k : 1) * sizeof *idx), *mine = malloc((k ? 2 * k : 1) * sizeof *mine), *all = NULL;
  if (!idx || !mine || (residual && count && !(v = malloc(count * esz)))) {
    st = sc_err(SCHEDC_ENOMEM, "allreduce: out of memory for top-k");
    goto done;
  }
  const void *x = send;
  if (v) sc_feedback_add(dt, v, send, residual, count), x = v; /* error feedback: the residual added first */
  if (k && (st = select_topk(dt, x, count, k, idx)) != SCHEDC_OK) goto done;
  if (n * k > 2 * count) { /* the union can be dense: the exact dense sum moves less (the same bits) */
    st = dense(c, x, idx, k, recv, count, dt, op == SCHEDC_AVG, plan);
  } else {
    if (!(all = malloc((n * k > 0 ? 2 * n * k : 1) * sizeof *all))) {
      st = sc_err(SCHEDC_ENOMEM, "allreduce: out of memory for top-k's %zu gathered pairs", n * k);
      goto done;
    }
    for (size_t j = 0; j < k; j++) { /* (index, the value's f32 bits: exact for f16/bf16) */
      float f;
      sc_to_acc(dt, &f, (const char *)x + (size_t)idx[j] * esz, 1);
      mine[2 * j] = idx[j];
      memcpy(&mine[2 * j + 1], &f, 4);
    }
    st = sc_coll_verified(c, SCHEDC_ALLGATHER, mine, all, 2 * k, SCHEDC_I32, SCHEDC_SUM, 0, NULL, NULL);
    for (size_t i = 0; st == SCHEDC_OK && i < n * k; i++) /* the same check on every rank: the same words */
      if ((all[2 * i + 1] & 0x7fffffffu) >= 0x7f800000u)
        st = not_finite("", (int)(i / k), all[2 * i], (all[2 * i + 1] & 0x7fffffffu) > 0x7f800000u);
    if (st == SCHEDC_OK) st = sum_union(c->nranks, all, n * k, count, dt, op == SCHEDC_AVG, recv);
  }
  if (st == SCHEDC_OK && residual) { /* what was not sent: v, its sent elements now +0 (exact) */
    memcpy(residual, v, count * esz);
    for (size_t j = 0; j < k; j++) memset((char *)residual + (size_t)idx[j] * esz, 0, esz);
  }
done:
  free(v);
  free(idx);
  free(mine);
  free(all);
  return st;
}
