/*
 * test_nvrtc.c — CUDA code generation without a GPU: for every shipped schedule, dtype and op,
 * the kernels of all ranks compile with NVRTC: every dtype and op of the ring for sm_90 and a
 * rotating sixth of them for sm_80 (the source does not depend on the architecture); the other
 * schedules' sources are all checked, a rotating twelfth of them compiled (each compile is ~0.7 s:
 * 45 of them since 2026-11-28, when the suite outgrew its time); the emitted source includes no
 * header; the PTX rounds every reduction as the CPU does (add.rn / mul.rn, and no fma anywhere,
 * --fmad=false); the cache turns a second compile into a hit, also in a new process (disk).
 * Skips (exit 77) when NVRTC is not installed; fails then under SCHEDC_REQUIRE_TOOLS (check.h).
 * Usage: test_nvrtc SCHEDULES_DIR [quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

static int count_substr(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* Shipped schedule files[f] at 4 ranks (hierarchical.lua on 2 nodes), or NULL (a failed CHECK). */
static schedc_plan *load4(const char *dir, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = 4;
  lo.nnodes = strcmp(file, "hierarchical.lua") ? 0 : 2;
  schedc_plan *plan = NULL;
  CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
  return plan;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int quick = argc > 2 && !strcmp(argv[2], "quick");
  char cache[128];
  snprintf(cache, sizeof cache, "/tmp/schedc_nvrtc_test_%d", (int)getpid());
  setenv("SCHEDC_CACHE_DIR", cache, 1);
  void *img;
  size_t len;
  if (schedc_cuda_compile("extern \"C\" __global__ void k(float *x) { x[0] = x[1] + x[2]; }", "sm_90", 1, &img, &len, NULL) ==
      SCHEDC_EUNAVAIL) {
    SKIP_TOOL("NVRTC", schedc_errmsg());
  }
  schedc_free(img);
  const char *files[] = {"ring.lua", "tree.lua", "direct.lua", "halving_doubling.lua", "hierarchical.lua"};
  const char *archs[] = {"sm_80", "sm_90"};
  int compiled = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    schedc_plan *plan = load4(argv[1], files[f]);
    if (!plan) continue;
    for (int dt = 0; dt < SCHEDC_DTYPE_COUNT_; dt++) {
      for (int op = 0; op < SCHEDC_OP_COUNT_; op++) {
        if (quick && op != SCHEDC_SUM && op != SCHEDC_MAX) continue;
        char *src;
        CHECK(schedc_cuda_source(plan, -1, (schedc_dtype)dt, (schedc_op)op, &src) == SCHEDC_OK);
        CHECK(!strstr(src, "#include"));
        CHECK(count_substr(src, "__device__ __noinline__ void sc_rank") == 4); /* every rank's code */
        CHECK(count_substr(src, "__global__") == 1 + 2 * (dt == SCHEDC_F16 || dt == SCHEDC_BF16) + (op == SCHEDC_AVG));
        CHECK(strstr(src, "__global__ void __launch_bounds__(512, 2) schedc_all(sc_args a, int first, int count)") != NULL);
        CHECK(strstr(src, files[f]) != NULL); /* groups carry the schedule's file:line */
        /* Compiled: every dtype and op of the ring for sm_90 and a rotating sixth for sm_80, a
         * rotating twelfth for the other schedules (each source still checked above): the generator's
         * per-op and per-dtype code is the ring's; the others differ in their steps. */
        if (f > 0 && (dt + 2 * op + 3 * (int)f) % 12) continue;
        for (int a = quick || f > 0 || (dt + op) % 6 ? 1 : 0; a < 2; a++) { /* sm_80: a sixth of the ring's */
          /* PTX, checked below; a cubin (through ptxas) for the ring's f32 on sm_90 */
          int ptx = a == 0 || dt != SCHEDC_F32 || f > 0;
          schedc_status st = schedc_cuda_compile(src, archs[a], ptx, &img, &len, NULL);
          if (st != SCHEDC_OK) {
            fprintf(stderr, "%s %s %s %s: %s\n", files[f], schedc_dtype_name((schedc_dtype)dt),
                    schedc_op_name((schedc_op)op), archs[a], schedc_errmsg());
            CHECK(st == SCHEDC_OK);
            continue;
          }
          compiled++;
          CHECK(len > 0);
          if (ptx) {
            const char *p = img;
            CHECK(!strstr(p, "fma")); /* no contraction anywhere */
            int fl = dt == SCHEDC_F32 || dt == SCHEDC_F16 || dt == SCHEDC_BF16;
            if (op == SCHEDC_SUM || op == SCHEDC_AVG) {
              if (fl) CHECK(strstr(p, "add.rn.f32") || strstr(p, "add.f32"));
              if (dt == SCHEDC_F32) CHECK(strstr(p, "add.rn.f32") != NULL);
              if (dt == SCHEDC_F64) CHECK(strstr(p, "add.rn.f64") != NULL);
            }
            if (op == SCHEDC_PROD && dt == SCHEDC_F32) CHECK(strstr(p, "mul.rn.f32") != NULL);
          }
          schedc_free(img);
        }
        schedc_free(src);
      }
    }
    schedc_plan_free(plan);
  }
  printf("nvrtc: %d compilations\n", compiled);
  CHECK(compiled >= (quick ? 5 * 6 * 2 / 3 : 6 * 5 + 4 + 4 * 2));

  /* the checksum-verifying kernels (SCHEDC_VERIFY=checksum) of every shipped schedule compile
   * too: f32 sum through ptxas for sm_90, bf16 sum and f64 max as PTX; every rank seals what
   * it publishes and checks what it reads, and the sums add no float contraction */
  int checked = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    schedc_plan *plan = load4(argv[1], files[f]);
    if (!plan) continue;
    const int dts[] = {SCHEDC_F32, SCHEDC_BF16, SCHEDC_F64}, ops[] = {SCHEDC_SUM, SCHEDC_SUM, SCHEDC_MAX};
    for (int k = 0; k < 3; k++) {
      char *src = NULL;
      CHECK(schedc_cuda_source_v2(plan, -1, (schedc_dtype)dts[k], (schedc_op)ops[k], SCHEDC_CUDA_SRC_CHECKSUMS, &src) == SCHEDC_OK);
      if (!src) continue;
      CHECK(count_substr(src, "sc_check(a, ") > 0 && count_substr(src, "sc_seal(a, ") > 0);
      /* and split across two nodes (phases, mirror slots), with and without the checks */
      char *split = NULL;
      int fl = SCHEDC_CUDA_SRC_NODES(2) | (k == 0 ? SCHEDC_CUDA_SRC_CHECKSUMS : 0);
      CHECK(schedc_cuda_source_v2(plan, -1, (schedc_dtype)dts[k], (schedc_op)ops[k], fl, &split) == SCHEDC_OK);
      if (split) {
        CHECK(strstr(split, "if (a.phase == 1)") != NULL && strstr(split, "a.mir[") != NULL);
        schedc_status sst = schedc_cuda_compile(split, "sm_90", 1, &img, &len, NULL);
        if (sst != SCHEDC_OK) fprintf(stderr, "%s split: %s\n", files[f], schedc_errmsg());
        CHECK(sst == SCHEDC_OK);
        if (sst == SCHEDC_OK) { CHECK(!strstr(img, "fma")); schedc_free(img); }
        schedc_free(split);
      }
      schedc_status st = schedc_cuda_compile(src, "sm_90", k > 0, &img, &len, NULL);
      if (st != SCHEDC_OK) fprintf(stderr, "%s checked: %s\n", files[f], schedc_errmsg());
      CHECK(st == SCHEDC_OK);
      if (st == SCHEDC_OK) {
        checked++;
        if (k > 0) CHECK(!strstr(img, "fma"));
        schedc_free(img);
      }
      schedc_free(src);
    }
    schedc_plan_free(plan);
  }
  CHECK(checked == 15);
  char *none = NULL;
  CHECK(schedc_cuda_source_v2(NULL, -1, SCHEDC_F32, SCHEDC_SUM, 4, &none) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "use SCHEDC_CUDA_SRC_CHECKSUMS and SCHEDC_CUDA_SRC_NODES(K)");
  CHECK(schedc_cuda_source_v2(NULL, -1, SCHEDC_F32, SCHEDC_SUM, SCHEDC_CUDA_SRC_NODES(1), &none) == SCHEDC_EINVAL);

  /* copy-only collectives (allgather, broadcast) move the bits as unsigned integers of the
   * element's size, for every dtype: no float arithmetic at all in their PTX */
  const int copy_colls[] = {SCHEDC_ALLGATHER, SCHEDC_BROADCAST};
  for (int ci = 0; ci < 2; ci++) {
    int coll = copy_colls[ci];
    char path[4096], cdef[48];
    snprintf(path, sizeof path, "%s/ring.lua", argv[1]);
    snprintf(cdef, sizeof cdef, "collective=%s", schedc_collective_name((schedc_collective)coll));
    const char *defs[] = {cdef};
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = 3;
    lo.defines = defs;
    lo.ndefines = 1;
    schedc_plan *plan;
    CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
    for (int dt = 0; plan && dt < SCHEDC_DTYPE_COUNT_; dt++) {
      char *src;
      CHECK(schedc_cuda_source(plan, -1, (schedc_dtype)dt, SCHEDC_SUM, &src) == SCHEDC_OK);
      CHECK(strstr(src, "typedef unsigned") && strstr(src, " sc_acc;"));
      CHECK(!strstr(src, "schedc_widen") && !strstr(src, "schedc_avg"));
      CHECK(schedc_cuda_compile(src, "sm_90", 1, &img, &len, NULL) == SCHEDC_OK);
      CHECK(!strstr(img, ".f32") && !strstr(img, ".f64") && !strstr(img, ".f16"));
      schedc_free(img);
      schedc_free(src);
    }
    schedc_plan_free(plan);
  }

  /* cache: the same source again is a hit, from memory and from disk in a fresh process */
  char path[4096];
  snprintf(path, sizeof path, "%s/ring.lua", argv[1]);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = 8;
  schedc_plan *plan;
  CHECK(schedc_plan_from_script(path, &lo, &plan) == SCHEDC_OK);
  char *src;
  CHECK(schedc_cuda_source(plan, -1, SCHEDC_BF16, SCHEDC_AVG, &src) == SCHEDC_OK);
  schedc_cuda_compile_info a = SCHEDC_CUDA_COMPILE_INFO_INIT, b = SCHEDC_CUDA_COMPILE_INFO_INIT;
  CHECK(schedc_cuda_compile(src, "sm_90", 0, &img, &len, &a) == SCHEDC_OK);
  schedc_free(img);
  CHECK(schedc_cuda_compile(src, "sm_90", 0, &img, &len, &b) == SCHEDC_OK);
  schedc_free(img);
  CHECK(a.cache_hit == 0 && b.cache_hit == 1);
  CHECK(b.seconds < 0.5);
  CHECK(access(b.cache_file, R_OK) == 0);
  printf("8-rank bf16 avg plan: compiled in %.3f s, cache hit in %.4f s\n", a.seconds, b.seconds);
  /* a compile error reports the log, the options and where the source went */
  CHECK(schedc_cuda_compile("this is not C++", "sm_90", 1, &img, &len, NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "--fmad=false");
  CHECK_CONTAINS(schedc_errmsg(), ".failed.cu");
  CHECK(schedc_cuda_compile(src, "gfx90a", 1, &img, &len, NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "expected sm_XX");
  schedc_free(src);
  schedc_plan_free(plan);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
  CHECK(system(cmd) == 0);
  return DONE();
}
