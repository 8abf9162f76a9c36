/*
 * mpi_allreduce.c — baseline: MPI_Allreduce (out of place, float sum), written independently of
 * schedc (plain MPI, no schedc code), printing the columns of `schedc bench`:
 * size count type op time_us algbw busbw (busbw = algbw * 2(n-1)/n; time = slowest rank's mean).
 *   mpirun -np N bench/mpi_allreduce [--sizes 8,4K,1M,64M] [--iters I] [--warmup W]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse(const char *s) {
  char *e;
  size_t v = strtoull(s, &e, 10);
  if (*e == 'K' || *e == 'k') v <<= 10;
  else if (*e == 'M' || *e == 'm') v <<= 20;
  else if (*e == 'G' || *e == 'g') v <<= 30;
  return v;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t sizes[64] = {8, 4096, 1 << 20, 64 << 20};
  int ns = 4, iters = 20, warm = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warm = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--sizes")) {
      ns = 0;
      for (char *t = strtok(argv[i + 1], ","); t && ns < 64; t = strtok(NULL, ",")) sizes[ns++] = parse(t);
    }
  }
  size_t mx = 0;
  for (int i = 0; i < ns; i++) if (sizes[i] > mx) mx = sizes[i];
  float *s = malloc(mx + 4), *r = malloc(mx + 4);
  for (size_t i = 0; i < mx / 4 + 1; i++) { s[i] = (float)(i % 977) * 0.001f; r[i] = 0; }
  if (rank == 0) {
    printf("# MPI_Allreduce baseline, %d ranks, f32 sum, %d iterations after %d warm-up\n", n, iters, warm);
    printf("#%11s %12s %6s %6s %12s %10s %10s\n", "size", "count", "type", "op", "time_us", "algbw", "busbw");
  }
  for (int k = 0; k < ns; k++) {
    int count = (int)(sizes[k] / 4);
    for (int w = 0; w < warm; w++) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) / iters * 1e6, worst;
    MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double alg = (double)sizes[k] / (worst * 1e3);
      printf(" %11zu %12d %6s %6s %12.2f %10.3f %10.3f\n", sizes[k], count, "f32", "sum", worst, alg,
             alg * 2.0 * (n - 1) / n);
    }
  }
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}
