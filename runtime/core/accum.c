/*
 * accum.c — canonical local accumulation of a rank's block of leaves (see schedc_accum in
 * schedc.h). The block's canonical tree (left subtree = largest power of two below the count)
 * is built once as explicit nodes. A node's value exists once both children are in; it is
 * left (+) right, computed in one pass, and the children are freed. Arrival order changes only
 * when a node is computed, never its operands, so the bits never depend on it.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "compress.h"
#include "err.h"
#include "exact.h"
#include "fpenv.h"
#include "integrity.h"
#include "kernels.h"
#include "opreg.h"

struct schedc_accum {
  size_t count, esz;
  schedc_dtype dtype;
  schedc_op op;
  int first, n, nnodes;
  int *left, *right, *parent; /* [nnodes]; leaves have left = right = -1 */
  int *leafnode;              /* [n] */
  void **val;                 /* [nnodes]: node values (NULL until computed or after use) */
  unsigned char *used;        /* [nnodes]: the value was consumed by its parent (exact: [n], leaf in) */
  int done;
  char *leaves;               /* exact mode: the n leaves, back to back (count elements each) */
};

static int build(schedc_accum *a, int lo, int hi, int parent) {
  int id = a->nnodes++;
  a->parent[id] = parent;
  if (hi - lo == 1) {
    a->left[id] = a->right[id] = -1;
    a->leafnode[lo] = id;
    return id;
  }
  int l = 1;
  while (l * 2 < hi - lo) l *= 2;
  a->left[id] = build(a, lo, lo + l, id);
  a->right[id] = build(a, lo + l, hi, id);
  return id;
}

schedc_status schedc_accum_create(size_t count, schedc_dtype dtype, schedc_op op, int first, int n,
                                  schedc_accum **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (sc_exact_op(op)) { /* exact leaves: kept until schedc_accum_allreduce puts them on one grid */
    if (dtype != SCHEDC_F32 && dtype != SCHEDC_F16 && dtype != SCHEDC_BF16)
      return sc_err(SCHEDC_EINVAL, "schedc_accum_create: op %s takes f32, f16 or bf16 leaves, not %s", schedc_op_name(op),
                    schedc_dtype_name(dtype));
    if (n < 1 || n > (1 << 24) || first < 0)
      return sc_err(SCHEDC_EINVAL, "leaf count %d out of range [1, 2^24], or first leaf %d negative", n, first);
    size_t esz = schedc_dtype_size(dtype);
    if (count && (size_t)n > SIZE_MAX / esz / count) return sc_err(SCHEDC_EINVAL, "%d leaves of %zu elements: too large", n, count);
    schedc_accum *a = calloc(1, sizeof *a);
    if (!a || !(a->used = calloc((size_t)n, 1)) || !(a->leaves = malloc((size_t)n * count * esz + 1))) {
      schedc_accum_free(a);
      return sc_err(SCHEDC_ENOMEM, "out of memory");
    }
    *a = (schedc_accum){count, esz, dtype, op, first, n, 0, NULL, NULL, NULL, NULL, NULL, a->used, 0, a->leaves};
    *out = a;
    return SCHEDC_OK;
  }
  if (dtype != SCHEDC_F32 && dtype != SCHEDC_F64 && dtype != SCHEDC_I32 && dtype != SCHEDC_I64)
    return sc_err(SCHEDC_EINVAL, "accumulation dtype must be f32, f64, i32 or i64 (accumulate f16/bf16 in f32)");
  if (!schedc_op_name(op) || op == SCHEDC_AVG)
    return sc_err(SCHEDC_EINVAL, "op must be sum, prod, min, max or a live custom operator (divide after the "
                  "collective for an average)");
  schedc_status st = sc_op_check_dtype(op, dtype, "schedc_accum_create");
  if (st != SCHEDC_OK) return st;
  if (n < 1 || n > (1 << 24)) return sc_err(SCHEDC_EINVAL, "leaf count %d out of range [1, 2^24]", n);
  if (first != 0 && (n & (n - 1)))
    return sc_err(SCHEDC_EINVAL, "a rank's leaf count %d must be a power of two: only then is its block a whole "
                  "subtree of the canonical tree (or the rank must hold all leaves, from leaf 0)", n);
  if (first < 0 || first % n)
    return sc_err(SCHEDC_EINVAL, "first leaf %d must be a multiple of the block size %d (aligned blocks)", first, n);
  schedc_accum *a = calloc(1, sizeof *a);
  size_t nn = 2 * (size_t)n;
  if (!a || !(a->left = malloc(nn * sizeof(int))) || !(a->right = malloc(nn * sizeof(int))) ||
      !(a->parent = malloc(nn * sizeof(int))) || !(a->leafnode = malloc((size_t)n * sizeof(int))) ||
      !(a->val = calloc(nn, sizeof(void *))) || !(a->used = calloc(nn, 1))) {
    schedc_accum_free(a);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  a->count = count;
  a->esz = schedc_dtype_size(dtype);
  a->dtype = dtype;
  a->op = op;
  a->first = first;
  a->n = n;
  build(a, 0, n, -1);
  *out = a;
  return SCHEDC_OK;
}

schedc_status schedc_accumulate(schedc_accum *a, int leaf, const void *data) {
  if (!a || (!data && a->count)) return sc_err(SCHEDC_EINVAL, "accumulator or data is NULL");
  if (leaf < a->first || leaf >= a->first + a->n)
    return sc_err(SCHEDC_EINVAL, "leaf %d is not in this rank's block [%d, %d)", leaf, a->first, a->first + a->n);
  if (a->leaves) {
    if (a->used[leaf - a->first]) return sc_err(SCHEDC_EINVAL, "leaf %d was already added", leaf);
    memcpy(a->leaves + (size_t)(leaf - a->first) * a->count * a->esz, data, a->count * a->esz);
    a->used[leaf - a->first] = 1;
    return SCHEDC_OK;
  }
  int node = a->leafnode[leaf - a->first];
  if (a->val[node] || a->used[node] || a->done) return sc_err(SCHEDC_EINVAL, "leaf %d was already added", leaf);
  size_t bytes = a->count * a->esz;
  if (!(a->val[node] = malloc(bytes + 1))) return sc_err(SCHEDC_ENOMEM, "out of memory");
  memcpy(a->val[node], data, bytes);
  /* Combine upwards while the sibling is in: parent = left (+) right, into the left's buffer, in
   * the library's floating-point environment (fpenv.h). */
  sc_fpenv env;
  sc_fpenv_enter(&env);
  for (int p; (p = a->parent[node]) >= 0 && a->val[a->left[p]] && a->val[a->right[p]]; node = p) {
    int l = a->left[p], r = a->right[p];
    const void *rv = a->val[r];
    sc_reduce_chain(a->dtype, a->op, a->val[l], a->val[l], &rv, 1, a->count);
    a->val[p] = a->val[l];
    a->val[l] = NULL;
    free(a->val[r]);
    a->val[r] = NULL;
    a->used[l] = a->used[r] = 1;
  }
  sc_fpenv_leave(&env);
  return SCHEDC_OK;
}

schedc_status schedc_accum_result(schedc_accum *a, void *out) {
  if (!a || (!out && a->count)) return sc_err(SCHEDC_EINVAL, "accumulator or out is NULL");
  if (a->leaves)
    return sc_err(SCHEDC_EINVAL, "an exact accumulator (%s) has no result of its own: its sum needs every rank's leaves "
                  "on one grid (schedc_accum_allreduce)", schedc_op_name(a->op));
  if (!a->val[0]) {
    for (int j = 0; j < a->n; j++) {
      int node = a->leafnode[j];
      if (!a->val[node] && !a->used[node])
        return sc_err(SCHEDC_EINVAL, "leaf %d of block [%d, %d) was never added", a->first + j, a->first,
                      a->first + a->n);
    }
    return sc_err(SCHEDC_EINVAL, "the block is incomplete");
  }
  memcpy(out, a->val[0], a->count * a->esz);
  a->done = 1;
  return SCHEDC_OK;
}

void schedc_accum_reset(schedc_accum *a) {
  if (!a) return;
  if (a->leaves) {
    memset(a->used, 0, (size_t)a->n);
    return;
  }
  for (int i = 0; i < a->nnodes; i++) { free(a->val[i]); a->val[i] = NULL; a->used[i] = 0; }
  a->done = 0;
}

void schedc_accum_free(schedc_accum *a) {
  if (!a) return;
  if (a->val) schedc_accum_reset(a);
  free(a->left); free(a->right); free(a->parent); free(a->leafnode); free(a->val); free(a->used);
  free(a->leaves);
  free(a);
}

/* An exact allreduce whose send buffer is the n leaves (sc_exact.nleaves): each rank's leaves go
 * onto the call's grid one by one in sc_work_in; the call is then verified as schedc_allreduce's. */
schedc_status schedc_accum_allreduce(schedc_accum *a, void *recv, schedc_comm *comm, const schedc_plan *plan) {
  return schedc_accum_allreduce_v2(a, recv, comm, plan, NULL);
}

/* With options: a wire quantizes each leaf onto the grid (quant.h; headroom for every leaf). */
schedc_status schedc_accum_allreduce_v2(schedc_accum *a, void *recv, schedc_comm *comm, const schedc_plan *plan,
                                        const schedc_call_opts *opts) {
  schedc_call_opts o;
  schedc_status st = sc_call_opts_read(opts, "schedc_accum_allreduce", &o);
  if (st != SCHEDC_OK) return st;
  if (o.topk != 0.0 || o.residual)
    return sc_err(SCHEDC_EINVAL, "schedc_accum_allreduce: opts->%s is not for exact leaves (only opts->wire is)",
                  o.topk != 0.0 ? "topk" : "residual");
  if (!a || (!recv && a->count)) return sc_err(SCHEDC_EINVAL, "schedc_accum_allreduce: accumulator or recv is NULL");
  if (!a->leaves)
    return sc_err(SCHEDC_EINVAL, "schedc_accum_allreduce: the accumulator is not exact (op %s): use schedc_accum_result "
                  "and a collective", schedc_op_name(a->op) ? schedc_op_name(a->op) : "?");
  for (int j = 0; j < a->n; j++)
    if (!a->used[j])
      return sc_err(SCHEDC_EINVAL, "schedc_accum_allreduce: leaf %d of block [%d, %d) was never added", a->first + j,
                    a->first, a->first + a->n);
  sc_call k;
  sc_result res;
  st = sc_call_make_wire(comm, SCHEDC_ALLREDUCE, a->leaves, recv, a->count, a->dtype, a->op, 0, plan, 0, o.wire, &k);
  if (st != SCHEDC_OK) return st;
  k.ex.nleaves = a->n;
  k.ex.leaf0 = a->first;
  sc_fpenv env;
  sc_fpenv_enter(&env);
  if ((st = sc_call_run(comm, &k, &res)) == SCHEDC_OK && (comm->be->caps & SC_CAP_HOST_RESULT))
    st = sc_integrity_check(comm, &k, &res);
  sc_fpenv_leave(&env);
  return st;
}
