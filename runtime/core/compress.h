/*
 * compress.h — what the compressed collectives share (docs/compression.md): the call options read
 * and checked, error feedback's add and buffer check (compress.c), and top-k (topk.c), which the
 * _v2 entries in compress.c call.
 */
#ifndef SC_COMPRESS_H
#define SC_COMPRESS_H

#include <stddef.h>

#include "schedc/schedc.h"

/* The options a caller passed (NULL: the defaults) into *o, checked on their own (a wire format, a
 * topk fraction in (0, 1], not both, a residual only with one of them): SCHEDC_EINVAL naming the
 * field, cn the collective's name. Fields past opts->size keep their defaults. */
schedc_status sc_call_opts_read(const schedc_call_opts *opts, const char *cn, schedc_call_opts *o);
/* Error feedback's input: v = x + e, added in f32 and rounded to dt once (f32: one addition). */
void sc_feedback_add(schedc_dtype dt, void *v, const void *x, const void *e, size_t n);
/* The residual (n elements of dt) must not overlap the send (nsend) or receive (nrecv) buffer. */
schedc_status sc_residual_check(const char *cn, const void *residual, size_t n, schedc_dtype dt, const void *send,
                                size_t nsend, const void *recv, size_t nrecv);
/* Top-k allreduce (topk.c): each rank's k = ceil(frac * count) largest magnitudes (ties: lower
 * index) with their indices, gathered by every rank, summed exactly on exact mode's grid; the exact
 * dense sum of the sparsified inputs instead when nranks * k > 2 * count (the same bits). op SUM
 * or AVG; residual: error feedback (NULL: none). */
schedc_status sc_topk_allreduce(schedc_comm *c, const void *send, void *recv, size_t count, schedc_dtype dtype,
                                schedc_op op, const schedc_plan *plan, double frac, void *residual);

#endif
