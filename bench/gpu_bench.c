/*
 * gpu_bench.c — the cuda backend on one GPU, through the public API, in one run: the device's
 * device-to-device copy bandwidth (the baseline), the generated reduce kernel's bandwidth (a
 * 2-rank reduce whose one step is rank 0 += rank 1 over the whole buffer, so the call is that
 * one kernel) for several block counts and 256 or 512 threads per block, ring allreduce on
 * virtual ranks, what verification costs, and NVRTC compile and cache-hit times. Prints a
 * markdown report. The reduce result is checked against a + b.
 * Usage: gpu_bench SCHEDULES_DIR [MIB [reduce BLOCKS THREADS]]   (MIB: buffer size, default
 * 1024; `reduce B T`: the copy and that one reduce configuration only, e.g. under ncu)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schedc/schedc.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return t[n / 2];
}
#define REPS 9
#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fprintf(stderr, ": %s\n", schedc_errmsg()); exit(1); } while (0)

static schedc_plan *load(const char *dir, const char *file, int n, int nnodes, const char *d1, const char *d2) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  const char *defs[2] = {d1, d2};
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = n;
  lo.nnodes = nnodes;
  lo.defines = defs;
  lo.ndefines = d1 ? (d2 ? 2 : 1) : 0;
  schedc_plan *p;
  if (schedc_plan_from_script(path, &lo, &p) != SCHEDC_OK) DIE("load %s", file);
  return p;
}

/* Median seconds of REPS timed calls (after one warm-up) of every rank's collective + sync. */
static double time_calls(schedc_comm **comms, int n, schedc_collective coll, void **buf, size_t count,
                         const schedc_plan *plan) {
  double t[REPS];
  for (int rep = -1; rep < REPS; rep++) {
    double t0 = now_s();
    for (int r = 0; r < n; r++) {
      schedc_status st = coll == SCHEDC_REDUCE
                             ? schedc_reduce(buf[r], r == 0 ? buf[r] : NULL, count, SCHEDC_F32, SCHEDC_SUM, 0, comms[r], plan)
                             : schedc_allreduce(buf[r], buf[r], count, SCHEDC_F32, SCHEDC_SUM, comms[r], plan);
      if (st != SCHEDC_OK) DIE("collective");
    }
    if (schedc_cuda_sync(comms[0]) != SCHEDC_OK) DIE("sync");
    if (rep >= 0) t[rep] = now_s() - t0;
  }
  return median(t, REPS);
}

/* a whole number in [lo, hi] (digits only: "1024x" is an error, not 1024), else exit 2 */
static long number(const char *what, const char *s, long lo, long hi) {
  char *e;
  errno = 0;
  long v = s && *s >= '0' && *s <= '9' ? strtol(s, &e, 10) : -1;
  if (v < 0 || errno || *e || v < lo || v > hi) {
    fprintf(stderr, "gpu_bench: %s '%s' is not a whole number from %ld to %ld\n", what, s ? s : "", lo, hi);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  int only = argc == 6 && !strcmp(argv[3], "reduce"); /* one reduce configuration (for a profiler) */
  if (argc < 2 || (argc > 3 && !only)) { fprintf(stderr, "usage: gpu_bench SCHEDULES_DIR [MIB [reduce BLOCKS THREADS]]\n"); return 2; }
  size_t mib = argc > 2 ? (size_t)number("MIB", argv[2], 1, 1 << 16) : 1024, bytes = mib << 20, K = bytes / 4;
  int only_blocks = only ? (int)number("BLOCKS", argv[4], 1, 1 << 20) : 0, only_threads = only ? (int)number("THREADS", argv[5], 1, 1024) : 0;
  if (schedc_cuda_device_count() < 1) { printf("[SKIP] no CUDA device\n"); return 0; }
  printf("## cuda backend on one GPU (%zu MiB buffers, f32)\n\n", mib);

  /* 1. baseline: device-to-device copy of the same bytes */
  schedc_comm *c2[8];
  if (schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c2) != SCHEDC_OK) DIE("init");
  void *a, *b;
  if (schedc_cuda_alloc(c2[0], bytes, &a) || schedc_cuda_alloc(c2[1], bytes, &b)) DIE("alloc");
  double t[REPS];
  for (int rep = -1; rep < REPS; rep++) {
    double t0 = now_s();
    if (schedc_cuda_copy(c2[0], b, a, bytes) != SCHEDC_OK) DIE("copy");
    if (rep >= 0) t[rep] = now_s() - t0;
  }
  double copy_bw = 2.0 * (double)bytes / median(t, REPS) / 1e9;
  printf("device-to-device copy: %.0f GB/s (read + write)\n\n", copy_bw);

  /* 2. the reduce kernel: rank 0 += rank 1, one step over the whole buffer */
  float *h0 = malloc(bytes), *h1 = malloc(bytes), *out = malloc(bytes);
  if (!h0 || !h1 || !out) { fprintf(stderr, "out of memory\n"); return 1; }
  for (size_t i = 0; i < K; i++) { h0[i] = (float)(i % 1000) * 0.37f - 100.0f; h1[i] = 1.0f / (float)(1 + i % 77); }
  schedc_plan *red = load(argv[1], "tree.lua", 2, 0, "collective=reduce", "chunks=1");
  printf("| blocks per rank | threads | reduce call | bandwidth (3 x bytes) | vs copy |\n|---|---|---|---|---|\n");
  double best = 0;
  int blocks[] = {8, 16, 32, 66, 132}, threads[] = {256, 512}, nb = 5, nt = 2;
  if (only) { blocks[0] = only_blocks; threads[0] = only_threads; nb = nt = 1; }
  for (int ci = 0; ci < nb * nt; ci++) {
    int bi = ci % nb, ti = ci / nb;
    char v[16];
    snprintf(v, sizeof v, "%d", blocks[bi]);
    setenv("SCHEDC_CUDA_BLOCKS", v, 1);
    snprintf(v, sizeof v, "%d", threads[ti]);
    setenv("SCHEDC_CUDA_THREADS", v, 1);
    schedc_comm *c[2];
    if (schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) != SCHEDC_OK) { printf("| %d | %d | (%s) | | |\n", blocks[bi], threads[ti], schedc_errmsg()); continue; }
    void *buf[2];
    if (schedc_cuda_alloc(c[0], bytes, &buf[0]) || schedc_cuda_alloc(c[1], bytes, &buf[1])) DIE("alloc");
    if (schedc_cuda_copy(c[0], buf[0], h0, bytes) || schedc_cuda_copy(c[1], buf[1], h1, bytes)) DIE("copy in");
    /* once for the bits: a + b, rounded once (f32 add; --fmad=false) */
    if (schedc_reduce(buf[0], buf[0], K, SCHEDC_F32, SCHEDC_SUM, 0, c[0], red) ||
        schedc_reduce(buf[1], NULL, K, SCHEDC_F32, SCHEDC_SUM, 0, c[1], red) || schedc_cuda_sync(c[0])) {
      printf("| %d | %d | (%s) | | |\n", blocks[bi], threads[ti], schedc_errmsg()); /* e.g. too many blocks to be resident */
      for (int r = 0; r < 2; r++) { schedc_cuda_free(c[r], buf[r]); schedc_comm_free(c[r]); }
      continue;
    }
    if (schedc_cuda_copy(c[0], out, buf[0], bytes)) DIE("copy out");
    size_t bad = 0;
    for (size_t i = 0; i < K; i++) {
      float want = h0[i] + h1[i];
      if (memcmp(&out[i], &want, 4)) bad++;
    }
    if (bad) { printf("reduce result differs from a + b in %zu of %zu elements\n", bad, K); return 1; }
    double s = time_calls(c, 2, SCHEDC_REDUCE, buf, K, red);
    double bw = 3.0 * (double)bytes / s / 1e9;
    if (bw > best) best = bw;
    printf("| %d | %d | %.3f ms | %.0f GB/s | %.0f%% |\n", blocks[bi], threads[ti], s * 1e3, bw, 100 * bw / copy_bw);
    schedc_cuda_free(c[0], buf[0]);
    schedc_cuda_free(c[1], buf[1]);
    for (int r = 0; r < 2; r++) schedc_comm_free(c[r]);
  }
  unsetenv("SCHEDC_CUDA_BLOCKS");
  unsetenv("SCHEDC_CUDA_THREADS");
  printf("\nreduce kernel, best: %.0f GB/s = %.0f%% of the copy bandwidth (goal >= 90%%); result = a + b bit for bit\n\n",
         best, 100 * best / copy_bw);
  if (only) return 0;

  /* 3. ring allreduce on virtual ranks (all on this GPU: algorithm bandwidth = bytes / time) */
  printf("| virtual ranks | size | ring allreduce | bytes / time |\n|---|---|---|---|\n");
  int ns[] = {2, 8};
  size_t sizes[] = {1 << 20, 64 << 20, bytes};
  for (int ni = 0; ni < 2; ni++) {
    int n = ns[ni];
    schedc_comm *c[8];
    if (schedc_comm_init_cuda(n, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) != SCHEDC_OK) DIE("init %d", n);
    void *buf[8];
    for (int r = 0; r < n; r++) if (schedc_cuda_alloc(c[r], bytes, &buf[r])) DIE("alloc");
    for (int si = 0; si < 3; si++) {
      if (sizes[si] > bytes || (si == 2 && sizes[2] == sizes[1])) continue; /* within the buffers */
      double s = time_calls(c, n, SCHEDC_ALLREDUCE, buf, sizes[si] / 4, NULL);
      printf("| %d | %zu MiB | %.3f ms | %.1f GB/s |\n", n, sizes[si] >> 20, s * 1e3, (double)sizes[si] / s / 1e9);
    }
    for (int r = 0; r < n; r++) { schedc_cuda_free(c[r], buf[r]); schedc_comm_free(c[r]); }
  }

  /* 3b. what verification costs: the same 8-rank ring allreduce (64 MiB, or the buffer size if
   * smaller) without it and with each mode, in one run (docs/performance.md has the expectation) */
  size_t vbytes = bytes < ((size_t)64 << 20) ? bytes : (size_t)64 << 20;
  printf("\n| verification | 8 virtual ranks, %zu MiB ring allreduce | vs none |\n|---|---|---|\n", vbytes >> 20);
  const int vmode[] = {SCHEDC_VERIFY_NONE, SCHEDC_VERIFY_CHECKSUM, SCHEDC_VERIFY_DIGEST, SCHEDC_VERIFY_FULL};
  const char *vname[] = {"none", "checksum", "digest", "full"};
  double vbase = 0;
  for (int v = 0; v < 4; v++) {
    schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
    o.verify = vmode[v];
    schedc_comm *c[8];
    void *buf[8];
    if (schedc_comm_init_cuda(8, NULL, SCHEDC_CUDA_VIRTUAL, &o, c) != SCHEDC_OK) DIE("init (verify %s)", vname[v]);
    for (int r = 0; r < 8; r++) if (schedc_cuda_alloc(c[r], vbytes, &buf[r])) DIE("alloc");
    double s = time_calls(c, 8, SCHEDC_ALLREDUCE, buf, vbytes / 4, NULL);
    if (v == 0) vbase = s;
    printf("| %s | %.3f ms | %.2fx |\n", vname[v], s * 1e3, s / vbase);
    for (int r = 0; r < 8; r++) { schedc_cuda_free(c[r], buf[r]); schedc_comm_free(c[r]); }
  }

  /* 4. NVRTC: an 8-rank plan's kernels, first compile and cache hit */
  schedc_plan *h = load(argv[1], "hierarchical.lua", 8, 2, NULL, NULL);
  char *src;
  if (schedc_cuda_source(h, -1, SCHEDC_BF16, SCHEDC_SUM, &src) != SCHEDC_OK) DIE("source");
  schedc_cuda_compile_info i1 = SCHEDC_CUDA_COMPILE_INFO_INIT, i2 = SCHEDC_CUDA_COMPILE_INFO_INIT;
  void *img;
  size_t len;
  if (schedc_cuda_compile(src, "sm_90", 0, &img, &len, &i1) != SCHEDC_OK) DIE("compile");
  schedc_free(img);
  if (schedc_cuda_compile(src, "sm_90", 0, &img, &len, &i2) != SCHEDC_OK) DIE("compile");
  schedc_free(img);
  printf("\nNVRTC %d.%d, 8-rank hierarchical bf16 plan, sm_90 cubin: %.3f s (%s), again %.4f s (%s)\n", i1.nvrtc_major,
         i1.nvrtc_minor, i1.seconds, i1.cache_hit ? "cache hit" : "compiled", i2.seconds,
         i2.cache_hit ? "cache hit" : "compiled");
  schedc_free(src);
  schedc_plan_free(h);
  schedc_plan_free(red);
  schedc_cuda_free(c2[0], a);
  schedc_cuda_free(c2[1], b);
  for (int r = 0; r < 2; r++) schedc_comm_free(c2[r]);
  free(h0); free(h1); free(out);
  return 0;
}
