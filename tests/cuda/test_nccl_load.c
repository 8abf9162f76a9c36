/*
 * test_nccl_load.c — NCCL loads with dlopen and every entry point schedc uses resolves, against
 * the real libnccl (the CUDA toolkit's lib64, or SCHEDC_LIBNCCL): the table a GPU run would use,
 * checked without a GPU (nothing is initialised: that needs a device). Skipped without NCCL.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "cuda_net.h"

int main(void) {
  unsetenv("SCHEDC_CUDA_PLUGIN"); /* the table a GPU run uses */
  int v = -1;
  schedc_status st = sc_cunet_nccl.load(&v);
  if (st != SCHEDC_OK) {
    CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_LIBNCCL"); /* the refusal says what to set */
    SKIP_TOOL("NCCL", schedc_errmsg());
  }
  printf("NCCL %d.%d.%d loaded, every entry point resolved\n", v / 10000, v / 100 % 100, v % 100);
  CHECK(v >= 20900); /* NCCL 2.x from 2.9 on codes its version as major * 10000 + minor * 100 + patch */
  CHECK(sc_cunet_get() == &sc_cunet_nccl);
  return DONE();
}
