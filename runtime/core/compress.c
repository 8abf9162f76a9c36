/*
 * compress.c — the collectives with call options (schedc_*_v2; docs/compression.md): the options
 * checked, a quantized call made (a wire: quant.h, through dispatch.c and verified as any call) or
 * top-k's (topk.c), and error feedback around either: the residual added to the input first, and
 * what the call did not send left in it afterwards, only when the call succeeded.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "compress.h"
#include "err.h"
#include "kernels.h"
#include "names.h"
#include "quant.h"

schedc_status sc_call_opts_read(const schedc_call_opts *opts, const char *cn, schedc_call_opts *o) {
  *o = (schedc_call_opts)SCHEDC_CALL_OPTS_INIT;
  if (!opts) return SCHEDC_OK;
  if (opts->size < sizeof(size_t) || opts->size > sizeof *o)
    return sc_err(SCHEDC_EINVAL, "%s: opts->size is %zu; set it with SCHEDC_CALL_OPTS_INIT", cn, opts->size);
  memcpy(o, opts, opts->size); /* fields past opts->size keep their defaults */
  o->size = sizeof *o;
  if (!sc_wire_name(o->wire))
    return sc_err(SCHEDC_EINVAL, "%s: opts->wire is %d (SCHEDC_WIRE_DEFAULT, _Q8 or _Q16)", cn, o->wire);
  if (!(o->topk == 0.0 || (o->topk > 0.0 && o->topk <= 1.0)))
    return sc_err(SCHEDC_EINVAL, "%s: opts->topk is %g: a fraction of the elements in (0, 1] (k larger than the "
                  "tensor is no top-k), or 0 for none", cn, o->topk);
  if (o->topk > 0.0 && o->wire)
    return sc_err(SCHEDC_EINVAL, "%s: opts->topk and opts->wire %s together: top-k sums its values exactly; choose one",
                  cn, sc_wire_name(o->wire));
  if (o->residual && !o->wire && o->topk == 0.0)
    return sc_err(SCHEDC_EINVAL, "%s: opts->residual (error feedback) needs opts->wire or opts->topk: a plain sum "
                  "sends everything", cn);
  return SCHEDC_OK;
}

/* A quantized collective with its options read: wire set; op SUM or AVG. */
static schedc_status wired(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                           schedc_op op, int root, const schedc_plan *plan, const schedc_call_opts *o) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  size_t K = coll == SCHEDC_REDUCE_SCATTER && c ? count * (size_t)c->nranks : count; /* the send buffer's */
  size_t nrecv = coll == SCHEDC_REDUCE && c && c->rank != root ? 0 : count;
  schedc_status st;
  void *v = NULL;
  if (o->residual) {
    if ((st = sc_residual_check(cn, o->residual, K, dtype, send, K, recv, nrecv)) != SCHEDC_OK) return st;
    if (K && !schedc_dtype_name(dtype)) return sc_err(SCHEDC_EINVAL, "%s: bad dtype %d", cn, (int)dtype);
    if (K && !(v = malloc(K * schedc_dtype_size(dtype))))
      return sc_err(SCHEDC_ENOMEM, "%s: out of memory for error feedback's %zu elements", cn, K);
    if (K && send) sc_feedback_add(dtype, v, send, o->residual, K);
    if (send) send = v;
  }
  sc_call k;
  sc_result res;
  st = sc_call_make_wire(c, coll, send, recv, count, dtype, op, root, plan, 0, o->wire, &k);
  if (st == SCHEDC_OK) st = sc_call_run(c, &k, &res);
  if (st == SCHEDC_OK && (c->be->caps & SC_CAP_HOST_RESULT)) st = sc_integrity_check(c, &k, &res);
  /* what this rank did not send: v minus its integers on the call's grid (only now known) */
  if (st == SCHEDC_OK && v) sc_quant_residual(&k.ex, dtype, o->residual, v, K);
  free(v);
  return st;
}

/* The options' entry of every _v2 collective. */
static schedc_status with_opts(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                               schedc_op op, int root, const schedc_plan *plan, const schedc_call_opts *opts) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  schedc_call_opts o;
  schedc_status st = sc_call_opts_read(opts, cn, &o);
  if (st != SCHEDC_OK) return st;
  if (!o.wire && o.topk == 0.0) return sc_coll_verified(c, coll, send, recv, count, dtype, op, root, plan, NULL);
  if (op != SCHEDC_SUM && op != SCHEDC_AVG) /* exact mode's ops are a wire of their own (64-bit integers) */
    return sc_err(SCHEDC_EINVAL, "%s: %s%s takes op sum or avg, not %s", cn, o.wire ? "wire " : "topk",
                  o.wire ? sc_wire_name(o.wire) : "",
                  schedc_op_name(op) ? schedc_op_name(op) : "a custom operator");
  if ((o.topk > 0.0 || o.residual) && c && (c->be->caps & SC_CAP_EXACT_DEVICE)) /* device buffers (cuda) */
    return sc_err(SCHEDC_EUNAVAIL, "%s: opts->%s works on host memory; the %s backend's buffers are device memory "
                  "(its wires take no residual)", cn, o.topk > 0.0 ? "topk" : "residual", c->be->name);
  if (o.topk > 0.0) {
    if (coll != SCHEDC_ALLREDUCE) return sc_err(SCHEDC_EINVAL, "%s: opts->topk is for allreduce only", cn);
    return sc_topk_allreduce(c, send, recv, count, dtype, op, plan, o.topk, o.residual);
  }
  return wired(c, coll, send, recv, count, dtype, op, root, plan, &o);
}

schedc_status schedc_allreduce_v2(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op,
                                  schedc_comm *comm, const schedc_plan *plan, const schedc_call_opts *opts) {
  return with_opts(comm, SCHEDC_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, plan, opts);
}
schedc_status schedc_reduce_scatter_v2(const void *sendbuf, void *recvbuf, size_t recvcount, schedc_dtype dtype,
                                       schedc_op op, schedc_comm *comm, const schedc_plan *plan,
                                       const schedc_call_opts *opts) {
  return with_opts(comm, SCHEDC_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, plan, opts);
}
schedc_status schedc_reduce_v2(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op,
                               int root, schedc_comm *comm, const schedc_plan *plan, const schedc_call_opts *opts) {
  return with_opts(comm, SCHEDC_REDUCE, sendbuf, recvbuf, count, dtype, op, root, plan, opts);
}
