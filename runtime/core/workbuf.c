/*
 * workbuf.c — a host-memory backend's working buffer: this rank's initial cells in (widened to
 * the accumulation type, f32 for f16/bf16) and its result out (avg divided once in the
 * accumulation type, rounded to the data type once). The flipout injection lands on the result;
 * under digest verification the digest is taken by the copy out when the bits are copied as is.
 */
#include <string.h>

#include "comm.h"
#include "workbuf.h"
#include "exact.h"
#include "kernels.h"

/* Into / out of the working buffer: widen to the accumulation type (exact mode: onto the call's
 * grid, exact.h), or copy the bits. */
static void load_in(const sc_call *k, void *dst, const void *src, size_t n) {
  sc_exact_tally *t = k->ex.mode == SC_EXACT_CALL ? k->ex.tally : NULL; /* the identity check's, in passing */
  if (t) t->in = sc_exact_in_summed(&k->ex, k->dtype, dst, src, n), t->done = 1;
  else if (k->ex.mode == SC_EXACT_CALL) sc_exact_in(&k->ex, k->dtype, dst, src, n);
  else if (k->acc != k->dtype) sc_to_acc(k->dtype, dst, src, n);
  else if (dst != src && n) memmove(dst, src, n * schedc_dtype_size(k->dtype));
}
static void store_out(const sc_call *k, void *dst, const void *src, size_t n) {
  if (k->ex.mode == SC_EXACT_CALL) sc_exact_out(&k->ex, k->dtype, dst, src, n); /* avg divided there, exactly */
  else if (k->acc != k->dtype) sc_from_acc(k->dtype, dst, src, n);
  else if (dst != src && n) memmove(dst, src, n * schedc_dtype_size(k->dtype));
}

void sc_work_in(const schedc_comm *c, const sc_call *k, char *W) {
  size_t asz = schedc_dtype_size(k->acc);
  if (k->coll == SCHEDC_ALLGATHER) load_in(k, W + (size_t)c->rank * k->count * asz, k->send, k->count);
  else if (k->coll != SCHEDC_BROADCAST || c->rank == k->root) load_in(k, W, k->send, k->K);
}

void sc_work_out(const schedc_comm *c, const sc_call *k, char *W, sc_result *res) {
  size_t asz = schedc_dtype_size(k->acc), lo, len;
  sc_result_part(k->coll, c->rank, k->root, k->count, k->K, &lo, &len);
  if (k->op == SCHEDC_AVG && sc_reduces(k->coll) && len) sc_divide(k->acc, W + lo * asz, len, c->nranks);
  res->have_digest = 0;
  if (sc_call_digests(k) && k->acc == k->dtype && W + lo * asz != (char *)k->recv) {
    sc_flipout(c, k, W + lo * asz, len * asz);
    res->digest = sc_verify_digest(k->recv, W + lo * asz, len * asz);
    res->have_digest = 1;
    return;
  }
  if (k->ex.mode == SC_EXACT_CALL && k->ex.tally) /* the identity check's sum, in the same pass */
    res->exact_out = sc_exact_out_summed(&k->ex, k->dtype, k->recv, (const int64_t *)(void *)(W + lo * asz), len);
  else if (len) store_out(k, k->recv, W + lo * asz, len);
  if (sc_same_bits(k->coll)) sc_flipout(c, k, k->recv, len * schedc_dtype_size(k->dtype));
}
