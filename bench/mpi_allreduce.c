/*
 * mpi_allreduce.c — baseline: MPI_Allreduce (out of place, float sum), written independently of
 * schedc (plain MPI, no schedc code), printing the columns of `schedc bench`:
 * size count type op time_us algbw busbw p50_us p99_us max_us iters (busbw = algbw * 2(n-1)/n;
 * time = slowest rank's mean; p50/p99/max: of each rank's per-call times, the largest over ranks).
 *   mpirun -np N bench/mpi_allreduce [--sizes 8,4K,1M,64M] [--iters I] [--warmup W]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
/* nearest-rank percentile q of n sorted values */
static double pct(const double *v, int n, double q) {
  int k = 0;
  while (k < n - 1 && (double)(k + 1) < q * n - 1e-9) k++;
  return v[k];
}

/* digits with an optional K/M/G suffix, in [lo, hi] (no sign, blank, other suffix or overflow:
 * `--iters 5x` is an error, not 5): 0, or -1 */
static int parse(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out) {
  if (!s || *s < '0' || *s > '9') return -1;
  char *e;
  errno = 0;
  unsigned long long v = strtoull(s, &e, 10);
  int shift = *e == 'K' || *e == 'k' ? 10 : *e == 'M' || *e == 'm' ? 20 : *e == 'G' || *e == 'g' ? 30 : 0;
  if (shift) e++;
  if (errno || *e || v > hi >> shift || (v << shift) < lo) return -1;
  *out = v << shift;
  return 0;
}

/* the options, or a message in err (every rank parses the same argv and reaches the same verdict) */
static int options(int argc, char **argv, size_t *sizes, int *ns, int *iters, int *warm, char *err, size_t cap) {
  static const struct option lo[] = {{"sizes", required_argument, NULL, 's'}, {"iters", required_argument, NULL, 'i'},
                                     {"warmup", required_argument, NULL, 'w'}, {NULL, 0, NULL, 0}};
  unsigned long long v;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":", lo, NULL)) != -1;) {
    const char *a = optarg;
    if (c == 'i' && !parse(a, 1, 1 << 24, &v)) *iters = (int)v;
    else if (c == 'w' && !parse(a, 0, 1 << 24, &v)) *warm = (int)v;
    else if (c == 's') {
      *ns = 0;
      for (const char *p = a;; p++) {
        char item[32];
        size_t len = strcspn(p, ",");
        if (*ns == 64 || len >= sizeof item) return snprintf(err, cap, "--sizes '%s': at most 64 sizes", a), -1;
        memcpy(item, p, len);
        item[len] = 0;
        if (parse(item, 1, 1ull << 32, &v)) return snprintf(err, cap, "--sizes '%s': bad size '%s' (1 B to 4 GiB)", a, item), -1;
        sizes[(*ns)++] = v;
        p += len;
        if (!*p) break;
      }
    } else if (c == ':') return snprintf(err, cap, "%s needs a value", argv[optind - 1]), -1;
    else if (c == '?') return snprintf(err, cap, "unknown option '%s'", argv[optind - 1]), -1;
    else return snprintf(err, cap, "--%s '%s' is not a count from %d to 2^24", c == 'i' ? "iters" : "warmup", a, c == 'i'), -1;
  }
  if (optind < argc) return snprintf(err, cap, "unexpected '%s'", argv[optind]), -1;
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t sizes[64] = {8, 4096, 1 << 20, 64 << 20};
  int ns = 4, iters = 20, warm = 5;
  char err[256];
  if (options(argc, argv, sizes, &ns, &iters, &warm, err, sizeof err)) {
    if (rank == 0) fprintf(stderr, "mpi_allreduce: %s\n", err);
    MPI_Finalize();
    return 2;
  }
  size_t mx = 0;
  for (int i = 0; i < ns; i++) if (sizes[i] > mx) mx = sizes[i];
  float *s = malloc(mx + 4), *r = malloc(mx + 4);
  double *lat = malloc(sizeof *lat * (size_t)iters); /* per call, us */
  if (!s || !r || !lat) { fprintf(stderr, "mpi_allreduce: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  for (size_t i = 0; i < mx / 4 + 1; i++) { s[i] = (float)(i % 977) * 0.001f; r[i] = 0; }
  if (rank == 0) {
    printf("# MPI_Allreduce baseline, %d ranks, f32 sum, %d iterations after %d warm-up\n", n, iters, warm);
    printf("#%11s %12s %6s %6s %12s %10s %10s %10s %10s %10s %9s\n", "size", "count", "type", "op", "time_us", "algbw",
           "busbw", "p50_us", "p99_us", "max_us", "iters");
  }
  for (int k = 0; k < ns; k++) {
    int count = (int)(sizes[k] / 4);
    for (int w = 0; w < warm; w++) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), prev = t0;
    for (int it = 0; it < iters; it++) {
      MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t = MPI_Wtime();
      lat[it] = (t - prev) * 1e6;
      prev = t;
    }
    qsort(lat, (size_t)iters, sizeof *lat, cmp_double);
    double mine[4] = {(prev - t0) / iters * 1e6, pct(lat, iters, 0.5), pct(lat, iters, 0.99), lat[iters - 1]}, worst[4];
    MPI_Reduce(mine, worst, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double alg = (double)sizes[k] / (worst[0] * 1e3);
      printf(" %11zu %12d %6s %6s %12.2f %10.3f %10.3f %10.2f %10.2f %10.2f %9d\n", sizes[k], count, "f32", "sum",
             worst[0], alg, alg * 2.0 * (n - 1) / n, worst[1], worst[2], worst[3], iters);
    }
  }
  free(s);
  free(r);
  free(lat);
  MPI_Finalize();
  return 0;
}
