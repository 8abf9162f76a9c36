/*
 * test_ops_nvrtc.c — the shipped custom operators in generated CUDA, without a GPU: every rank's
 * kernels of a ring with each operator compile with NVRTC for sm_80 and sm_90; the PTX has no fma
 * (--fmad=false), l2combine's sqrtf is sqrt.rn.f32 (correctly rounded, as glibc's), a call of C's
 * fma on floats stays the double fma; the unit
 * holds the operator's __device__ function and no header. Skipped (exit 77) without NVRTC, or
 * without libclang when no operator loads; an operator that cannot load after another did is a
 * failure (a skip there would discard the checks already made).
 * Usage: test_ops_nvrtc SCHEDULES_DIR OPS_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  char cache[128];
  snprintf(cache, sizeof cache, "/tmp/schedc_ops_nvrtc_%d", (int)getpid());
  setenv("SCHEDC_CACHE_DIR", cache, 1);
  void *img;
  size_t len;
  if (schedc_cuda_compile("extern \"C\" __global__ void k(float *x) { x[0] = x[1] + x[2]; }", "sm_90", 1, &img, &len,
                          NULL) == SCHEDC_EUNAVAIL) {
    SKIP_TOOL("NVRTC", schedc_errmsg());
  }
  schedc_free(img);
  /* fma_tiny (tests/ops/c_math.c) calls fma on floats: C's double fma, so fma.rn.f64 and no
   * fma.rn.f32 (CUDA C++'s float overload); its only fma is that explicit call */
  struct { const char *file, *name; schedc_dtype dt; const char *must, *mustnt; } ops[] = {
      {"absmax.c", "absmax", SCHEDC_F32, "max.f32", "fma."}, {"absmax.c", "absmax", SCHEDC_BF16, "max.f32", "fma."},
      {"l2combine.c", "l2combine", SCHEDC_F32, "sqrt.rn.f32", "fma."},
      {"l2combine.c", "l2combine", SCHEDC_F16, "sqrt.rn.f32", "fma."}, {"or64.c", "or64", SCHEDC_I64, "or.b64", "fma."},
      {"c_math.c", "fma_tiny", SCHEDC_F32, "fma.rn.f64", "fma.rn.f32"}};
  char path[4096];
  snprintf(path, sizeof path, "%s/ring.lua", argv[1]);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = 4;
  schedc_plan *plan = NULL;
  CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
  if (!plan) return DONE();
  int judged = 0, unavailable = 0; /* operators the checker judged; refused as unavailable (no tool) */
  char why[1024] = "";
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    schedc_op op;
    if (!strncmp(ops[i].file, "c_", 2)) snprintf(path, sizeof path, "%s/%s", SC_TEST_OPS_DIR, ops[i].file);
    else snprintf(path, sizeof path, "%s/shipped/%s", argv[2], ops[i].file);
    schedc_status st = schedc_op_create(path, ops[i].name, NULL, &op);
    if (st == SCHEDC_EUNAVAIL) { /* judged after the loop: every operator is tried */
      unavailable++;
      snprintf(why, sizeof why, "%s", schedc_errmsg());
      fprintf(stderr, "%s:%s: unavailable: %s\n", ops[i].file, ops[i].name, why);
      continue;
    }
    judged++;
    CHECK(st == SCHEDC_OK);
    if (st != SCHEDC_OK) continue;
    char *src = NULL;
    CHECK(schedc_cuda_source(plan, -1, ops[i].dt, op, &src) == SCHEDC_OK);
    if (!src) continue;
    CHECK(!strstr(src, "#include"));
    CHECK_CONTAINS(src, "sc_custom_op");
    const char *archs[] = {"sm_80", "sm_90"};
    for (int a = 0; a < 2; a++) {
      schedc_cuda_compile_info ci = SCHEDC_CUDA_COMPILE_INFO_INIT;
      st = schedc_cuda_compile(src, archs[a], 1, &img, &len, &ci);
      CHECK(st == SCHEDC_OK);
      if (st != SCHEDC_OK) { fprintf(stderr, "%s\n", schedc_errmsg()); continue; }
      const char *ptx = img;
      CHECK(!strstr(ptx, ops[i].mustnt));
      CHECK_CONTAINS(ptx, ops[i].must);
      printf("%s %s %s: PTX %zu bytes, %.2f s%s\n", ops[i].name, schedc_dtype_name(ops[i].dt), archs[a], len,
             ci.seconds, ci.cache_hit ? " (cache)" : "");
      schedc_free(img);
    }
    schedc_free(src);
    schedc_op_free(op);
  }
  schedc_plan_free(plan);
  char rm[200];
  snprintf(rm, sizeof rm, "rm -rf %s", cache);
  if (system(rm)) {}
  /* a skip only when no operator could be created at all (the tool is missing); some created and
   * some not is a failure, reported with the checks made */
  if (!judged && unavailable) SKIP_TOOL(strstr(why, "libclang") ? "libclang" : "C compiler", why);
  if (unavailable) fprintf(stderr, "FAIL: %d of %d operators unavailable while the others loaded\n", unavailable, judged + unavailable);
  CHECK(unavailable == 0);
  return DONE();
}
