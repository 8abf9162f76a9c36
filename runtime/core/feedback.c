/*
 * feedback.c — error feedback's pieces that quantized calls (compress.c) and top-k (topk.c) share
 * (compress.h): the residual added to the input, and the residual buffer kept apart from the call's.
 */
#include <string.h>

#include "compress.h"
#include "err.h"
#include "kernels.h"

void sc_feedback_add(schedc_dtype dt, void *v, const void *x, const void *e, size_t n) {
  if (dt == SCHEDC_F32) {
    const float *a = x, *b = e;
    float *y = v;
    for (size_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    return;
  }
  size_t esz = schedc_dtype_size(dt);
  float fa[512], fb[512];
  for (size_t lo = 0; lo < n; lo += 512) {
    size_t len = n - lo < 512 ? n - lo : 512;
    sc_to_acc(dt, fa, (const char *)x + lo * esz, len);
    sc_to_acc(dt, fb, (const char *)e + lo * esz, len);
    for (size_t i = 0; i < len; i++) fa[i] += fb[i];
    sc_from_acc(dt, (char *)v + lo * esz, fa, len); /* rounded to the data type once */
  }
}

/* Does [a, a + an) overlap [b, b + bn)? */
static int overlaps(const void *a, size_t an, const void *b, size_t bn) {
  const char *x = a, *y = b;
  return a && b && an && bn && x < y + bn && y < x + an;
}

schedc_status sc_residual_check(const char *cn, const void *residual, size_t n, schedc_dtype dt, const void *send,
                                size_t nsend, const void *recv, size_t nrecv) {
  size_t esz = schedc_dtype_size(dt);
  if (overlaps(residual, n * esz, send, nsend * esz) || overlaps(residual, n * esz, recv, nrecv * esz))
    return sc_err(SCHEDC_EINVAL, "%s: opts->residual overlaps %s: error feedback's residual is a buffer of its own",
                  cn, overlaps(residual, n * esz, send, nsend * esz) ? "sendbuf" : "recvbuf");
  return SCHEDC_OK;
}
