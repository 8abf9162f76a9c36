/*
 * mem_bench.c — measurement, not a test: 64 MiB f32 allreduce on N forked shm ranks with a plan
 * (e.g. schedules/ring.lua), malloc buffers vs schedc_mem_alloc buffers, 9 timed iterations of
 * each, interleaved, after one warm-up; rank 0 prints medians and busBW = 2(n-1)/n * bytes / t.
 * Usage: mem_bench NRANKS PLAN.lua [1: out of place]. Exits non-zero if the two results differ.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "schedc/schedc.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
#define IT 9
static int rank_main(int r, int n, const schedc_uid *id, const char *ring, int outplace) {
  schedc_comm *c;
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT; o.timeout_s = 120;
  if (schedc_comm_init_shm_uid(r, n, id, &o, &c)) { fprintf(stderr, "init %s\n", schedc_errmsg()); return 1; }
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT; lo.nranks = n;
  schedc_plan *p;
  if (schedc_plan_from_script(ring, &lo, &p)) { fprintf(stderr, "plan %s\n", schedc_errmsg()); return 1; }
  size_t bytes = 64u << 20, cnt = bytes / 4;
  float *a = aligned_alloc(4096, bytes), *as = aligned_alloc(4096, bytes), *z, *zs;
  if (schedc_mem_alloc(c, bytes, (void **)&z) || schedc_mem_alloc(c, bytes, (void **)&zs)) { fprintf(stderr, "alloc %s\n", schedc_errmsg()); return 1; }
  for (size_t i = 0; i < cnt; i++) a[i] = z[i] = as[i] = zs[i] = (float)((i + r) % 13) * 0.25f;
  double tp[IT], tz[IT]; float tiny = 0;
  for (int it = -1; it < IT; it++) { /* -1: warm-up of both */
    for (int k = 0; k < 2; k++) {
      float *buf = k ? z : a, *src = outplace ? (k ? zs : as) : buf;
      schedc_allreduce(&tiny, &tiny, 1, SCHEDC_F32, SCHEDC_SUM, c, NULL); /* line up */
      double t0 = now();
      schedc_status st = schedc_allreduce(src, buf, cnt, SCHEDC_F32, SCHEDC_SUM, c, p);
      double t = now() - t0;
      if (st) { fprintf(stderr, "allreduce %s\n", schedc_errmsg()); return 1; }
      if (it >= 0) (k ? tz : tp)[it] = t;
    }
  }
  if (memcmp(a, z, bytes) != 0) { fprintf(stderr, "rank %d: results differ!\n", r); return 2; }
  if (r == 0) {
    qsort(tp, IT, sizeof *tp, cmpd); qsort(tz, IT, sizeof *tz, cmpd);
    double f = 2.0 * (n - 1) / n * bytes / 1e9;
    printf("n=%d %s: malloc median %.2f ms (min %.2f max %.2f) busBW %.2f GB/s | mem_alloc median %.2f ms (min %.2f max %.2f) busBW %.2f GB/s | speedup %.2fx\n",
           n, outplace ? "out-of-place" : "in-place", tp[IT/2]*1e3, tp[0]*1e3, tp[IT-1]*1e3, f / tp[IT/2], tz[IT/2]*1e3, tz[0]*1e3, tz[IT-1]*1e3, f / tz[IT/2], tp[IT/2] / tz[IT/2]);
  }
  fflush(stdout);
  schedc_plan_free(p);
  schedc_comm_free(c);
  free(a); free(as);
  return 0;
}
int main(int argc, char **argv) {
  if (argc < 3 || atoi(argv[1]) < 1 || atoi(argv[1]) > 16) { fprintf(stderr, "usage: mem_bench NRANKS(1-16) PLAN.lua [1]\n"); return 2; }
  int n = atoi(argv[1]), outplace = argc > 3 && atoi(argv[3]);
  schedc_uid id; schedc_unique_id(&id);
  pid_t pid[16];
  for (int r = 0; r < n; r++) { fflush(NULL); if (!(pid[r] = fork())) _exit(rank_main(r, n, &id, argv[2], outplace)); }
  int bad = 0;
  for (int r = 0; r < n; r++) { int ws; waitpid(pid[r], &ws, 0); bad |= !(WIFEXITED(ws) && !WEXITSTATUS(ws)); }
  return bad;
}
