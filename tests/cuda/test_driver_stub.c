/*
 * test_driver_stub.c — every CUDA driver entry point schedc uses (runtime/dl_abi.h) is exported
 * under the name it looks up, checked without a GPU against the toolkit's stub libcuda (argv[1],
 * lib64/stubs/libcuda.so: the driver's export list, whose cuInit always fails). The loader must
 * get past resolving the symbols and fail only at cuInit. Skipped without the stub.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "cuda_dev.h"

int main(int argc, char **argv) {
  if (argc < 2 || access(argv[1], R_OK)) {
    SKIP_TOOL("stub libcuda.so", "the CUDA toolkit's lib64/stubs/libcuda.so was not found at configure time");
  }
  setenv("SCHEDC_LIBCUDA", argv[1], 1);
  unsetenv("SCHEDC_CUDA_PLUGIN"); /* schedc_cuda_device_count below: the driver's table */
  int n = -1;
  schedc_status st = sc_cudev_driver.init(&n);
  printf("stub driver: %s (%s)\n", schedc_status_str(st), schedc_errmsg());
  CHECK(st == SCHEDC_EUNAVAIL);
  CHECK(n == 0);
  CHECK_CONTAINS(schedc_errmsg(), "no CUDA device (cuInit: "); /* every symbol resolved, cuInit ran */
  CHECK(!strstr(schedc_errmsg(), "lacks"));
  CHECK(schedc_cuda_device_count() == 0);
  return DONE();
}
