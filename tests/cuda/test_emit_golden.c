/*
 * test_emit_golden.c — the CUDA emitter's text, byte for byte, against committed files
 * (tests/golden/cuda_emit/), for plans, dtypes, ops and variants that together reach every piece
 * of the fixed device code: all ranks and one rank, f32/f64/f16/bf16/i32/i64, sum/prod/min/max/avg,
 * exact mode, copy-only collectives, checksums, a plan split across nodes. The fixed code lives in
 * codegen/cuda_device.cuh; this is what keeps moving it (or anything else) from changing a byte.
 * Usage: test_emit_golden SCHEDULES_DIR GOLDEN_DIR [--write]  (--write regenerates the files)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

typedef struct gcase {
  const char *name, *file, *define; /* define: one -D key=value, or NULL */
  int nranks, nnodes, rank;         /* rank -1: the all-ranks unit */
  schedc_dtype dtype;
  schedc_op op;
  int flags;                        /* SCHEDC_CUDA_SRC_CHECKSUMS, SCHEDC_CUDA_SRC_NODES(K) */
} gcase;

static const gcase cases[] = {
    {"ring4_all_f32_sum", "ring.lua", NULL, 4, 0, -1, SCHEDC_F32, SCHEDC_SUM, 0},
    {"ring3_r1_bf16_avg_check", "ring.lua", "k=2", 3, 0, 1, SCHEDC_BF16, SCHEDC_AVG, SCHEDC_CUDA_SRC_CHECKSUMS},
    {"direct4_all_f16_min_check_nodes2", "direct.lua", NULL, 4, 0, -1, SCHEDC_F16, SCHEDC_MIN,
     SCHEDC_CUDA_SRC_CHECKSUMS | SCHEDC_CUDA_SRC_NODES(2)},
    {"hd4_r0_f64_max", "halving_doubling.lua", NULL, 4, 0, 0, SCHEDC_F64, SCHEDC_MAX, 0},
    {"tree4_all_i32_prod", "tree.lua", NULL, 4, 0, -1, SCHEDC_I32, SCHEDC_PROD, 0},
    {"ring3_all_i64_avg_reduce", "ring.lua", "collective=reduce", 3, 0, -1, SCHEDC_I64, SCHEDC_AVG, 0},
    {"ring3_all_f16_allgather_check", "ring.lua", "collective=allgather", 3, 0, -1, SCHEDC_F16, SCHEDC_SUM,
     SCHEDC_CUDA_SRC_CHECKSUMS},
    {"hier8_all_f32_sum_nodes2", "hierarchical.lua", NULL, 8, 2, -1, SCHEDC_F32, SCHEDC_SUM, SCHEDC_CUDA_SRC_NODES(2)},
    {"ring4_r2_f64_prod_nodes4", "ring.lua", "collective=reduce_scatter", 4, 0, 2, SCHEDC_F64, SCHEDC_PROD,
     SCHEDC_CUDA_SRC_NODES(4)},
    /* exact mode: i64 on the grid, the "exact" section (one text for every format and op) */
    {"ring3_all_exact", "ring.lua", NULL, 3, 0, -1, SCHEDC_BF16, SCHEDC_AVG_EXACT, 0},
};

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) { free(p); p = NULL; }
  fclose(f);
  if (p) { p[n] = 0; *len = (size_t)n; }
  return p;
}

/* The first line where a and b differ (1-based), for the failure message. */
static int first_diff_line(const char *a, const char *b) {
  int line = 1;
  for (; *a && *a == *b; a++, b++) line += *a == '\n';
  return line;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int write = argc > 3 && !strcmp(argv[3], "--write");
  /* the goldens' paths as given, then into the schedules folder: the source names each group's
   * schedule file as it was loaded ("ring.lua:23"), whichever folder the test runs from */
  char gold[4096];
  if (argv[2][0] == '/') snprintf(gold, sizeof gold, "%s", argv[2]);
  else if (getcwd(gold, sizeof gold)) snprintf(gold + strlen(gold), sizeof gold - strlen(gold), "/%s", argv[2]);
  if (chdir(argv[1]) != 0) { fprintf(stderr, "cannot enter %s\n", argv[1]); return 2; }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gcase *g = &cases[i];
    char path[4200];
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = g->nranks;
    lo.nnodes = g->nnodes;
    const char *defs[1] = {g->define};
    if (g->define) { lo.defines = defs; lo.ndefines = 1; }
    schedc_plan *plan = NULL;
    schedc_status st = schedc_plan_from_script(g->file, &lo, &plan);
    if (st != SCHEDC_OK) fprintf(stderr, "%s: %s\n", g->name, schedc_errmsg());
    CHECK(st == SCHEDC_OK);
    if (st != SCHEDC_OK) continue;
    char *src = NULL;
    st = schedc_cuda_source_v2(plan, g->rank, g->dtype, g->op, g->flags, &src);
    if (st != SCHEDC_OK) fprintf(stderr, "%s: %s\n", g->name, schedc_errmsg());
    CHECK(st == SCHEDC_OK);
    snprintf(path, sizeof path, "%s/%s.cu.txt", gold, g->name);
    if (st == SCHEDC_OK && write) {
      FILE *f = fopen(path, "wb");
      CHECK(f && fwrite(src, 1, strlen(src), f) == strlen(src));
      if (f) fclose(f);
    } else if (st == SCHEDC_OK) {
      size_t len = 0;
      char *want = slurp(path, &len);
      if (!want) fprintf(stderr, "%s: cannot read %s\n", g->name, path);
      CHECK(want != NULL);
      if (want && (len != strlen(src) || memcmp(want, src, len)))
        fprintf(stderr, "%s: the emitted source differs from %s from line %d (%zu bytes, golden %zu)\n", g->name,
                path, first_diff_line(src, want), strlen(src), len);
      CHECK(want && len == strlen(src) && !memcmp(want, src, len));
      free(want);
    }
    schedc_free(src);
    schedc_plan_free(plan);
  }
  return DONE();
}
