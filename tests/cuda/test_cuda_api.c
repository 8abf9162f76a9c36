/*
 * test_cuda_api.c — the cuda communicator's contract on the emulated device (run with
 * SCHEDC_CUDA_EMULATE=1): bad init arguments named, verification refused, a rank calling twice
 * before the others, ranks disagreeing (EMISMATCH, then the group is broken), a kernel wait past
 * the timeout reported by schedc_cuda_sync (ETIMEOUT naming rank and step), and the calls on a
 * CPU communicator refused.
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "schedc/schedc.h"

static void free_all(schedc_comm **c, int n) {
  for (int r = 0; r < n; r++) schedc_comm_free(c[r]);
}

int main(void) {
  if (schedc_cuda_device_count() < 1) { printf("[SKIP] no CUDA device (and SCHEDC_CUDA_EMULATE is not 1)\n"); return 0; }
  schedc_comm *c[4] = {0};

  /* init: the offending argument is named */
  CHECK(schedc_comm_init_cuda(65, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "nranks 65 out of range");
  int devs[2] = {0, 0};
  CHECK(schedc_comm_init_cuda(2, devs, 0, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "both on device 0");
  devs[1] = 99;
  CHECK(schedc_comm_init_cuda(2, devs, 0, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "CUDA device 99 out of range");
  CHECK(schedc_comm_init_cuda(2, NULL, 4, NULL, c) == SCHEDC_EINVAL);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = SCHEDC_VERIFY_FULL;
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, &o, c) == SCHEDC_EUNAVAIL);
  CHECK_CONTAINS(schedc_errmsg(), "not available on the cuda backend");

  /* a CPU communicator is not a cuda one */
  schedc_comm *t[2];
  CHECK(schedc_comm_init_threads(2, NULL, t) == SCHEDC_OK);
  CHECK(schedc_cuda_set_stream(t[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "not a cuda communicator");
  CHECK(schedc_cuda_sync(t[0]) == SCHEDC_EINVAL);
  free_all(t, 2);

  /* twice before the others; then a disagreement breaks the group */
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) == SCHEDC_OK);
  void *b0, *b1;
  CHECK(schedc_cuda_alloc(c[0], 4096, &b0) == SCHEDC_OK && schedc_cuda_alloc(c[1], 4096, &b1) == SCHEDC_OK);
  CHECK(schedc_allreduce(b0, b0, 100, SCHEDC_F32, SCHEDC_SUM, c[0], NULL) == SCHEDC_OK); /* enqueued: waits for rank 1 */
  CHECK(schedc_allreduce(b0, b0, 100, SCHEDC_F32, SCHEDC_SUM, c[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "rank 0 already issued a allreduce");
  CHECK(schedc_allreduce(b1, b1, 101, SCHEDC_F32, SCHEDC_SUM, c[1], NULL) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), "disagrees with the ranks already called on the count");
  CHECK(schedc_allreduce(b1, b1, 100, SCHEDC_F32, SCHEDC_SUM, c[1], NULL) == SCHEDC_EPEER);
  CHECK_CONTAINS(schedc_errmsg(), "broken by an earlier failure");
  CHECK(schedc_cuda_sync(c[0]) == SCHEDC_EPEER);
  schedc_cuda_free(c[0], b0);
  schedc_cuda_free(c[1], b1);
  free_all(c, 2);

  /* a matched call works; a wait past a (tiny) timeout stops every kernel and is reported */
  o.verify = 0;
  o.timeout_s = 1e-9;
  CHECK(schedc_comm_init_cuda(4, NULL, SCHEDC_CUDA_VIRTUAL, &o, c) == SCHEDC_OK);
  void *b[4];
  for (int r = 0; r < 4; r++) CHECK(schedc_cuda_alloc(c[r], 1 << 20, &b[r]) == SCHEDC_OK);
  schedc_status st = SCHEDC_OK;
  for (int i = 0; i < 50 && st == SCHEDC_OK; i++) { /* a wait satisfied at its first look cannot time out */
    for (int r = 0; r < 4; r++) CHECK(schedc_allreduce(b[r], b[r], 200000, SCHEDC_F32, SCHEDC_SUM, c[r], NULL) == SCHEDC_OK);
    st = schedc_cuda_sync(c[0]);
  }
  CHECK(st == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(schedc_errmsg(), "waited more than");
  CHECK_CONTAINS(schedc_errmsg(), "at step");
  CHECK(schedc_allreduce(b[0], b[0], 10, SCHEDC_F32, SCHEDC_SUM, c[0], NULL) == SCHEDC_EPEER);
  for (int r = 0; r < 4; r++) schedc_cuda_free(c[r], b[r]);
  free_all(c, 4);
  return DONE();
}
