/*
 * bench.h — the measuring core of `schedc bench`, shared with `schedc tune`: time a plan (or the
 * communicator's own choice) on N ranks over a list of sizes.
 */
#ifndef SC_CLI_BENCH_H
#define SC_CLI_BENCH_H

#include "cli.h"

#define MAXSIZES 64

typedef struct benchopts {
  const char *file;
  int ranks, backend, warmup, nsizes;
  int iters;                   /* calls timed per size; 0: at least 1,000 calls and 0.2 s (cli_bench_auto_iters) */
  schedc_collective coll;      /* plan NULL: which collective */
  const char *tuning;          /* tuning table for plan NULL (else $SCHEDC_TUNING) */
  size_t slice;                /* 0: the default */
  size_t sizes[MAXSIZES];
  schedc_dtype dtype;
  schedc_op op;
  const char **defines;
  int ndefines;
  int plain;                   /* 1: malloc'd buffers; 0: schedc_mem_alloc's (shared: no copy in or out) */
  int inplace;                 /* 1: send == recv */
  int wire;                    /* --wire: SCHEDC_WIRE_* (docs/compression.md); 0: none */
  double topk;                 /* --topk: the fraction each rank sends; 0: dense */
} benchopts;

typedef struct benchres {
  double us[MAXSIZES];         /* mean per call */
  double p50[MAXSIZES], p99[MAXSIZES], max[MAXSIZES]; /* per call: median, 99th percentile, slowest */
  int iters[MAXSIZES];         /* calls timed (o->iters, or the automatic count when that is 0) */
  int status;
  char err[400];
  char chosen[MAXSIZES][64];   /* plan NULL: the plan the communicator chose per size */
} benchres;

/* Time `plan` (NULL: what the communicator picks per size) on o->ranks ranks of `backend`
 * (threads or shm). res: o->ranks entries in memory shared with forked ranks (cli_bench_alloc).
 * 0, or -1 when ranks could not be started; per-rank failures are in res[r].status. */
int cli_bench_measure(const benchopts *o, const schedc_plan *plan, schedc_collective coll, int backend, benchres *res);
/* The same on this process's communicator (a rank of an MPI launcher's job, every rank calling):
 * res[nranks] gets every rank's record. 0. */
int cli_bench_measure_comm(const benchopts *o, const schedc_plan *plan, schedc_collective coll, schedc_comm *comm,
                           benchres *res);
benchres *cli_bench_alloc(int n);
void cli_bench_release(benchres *res, int n);
/* The automatic call count for a call of about t_us microseconds: at least 1,000 calls and at least
 * 0.2 s of them (so a stall of one scheduler slice in a thousand calls shows in p99 and max), but
 * no more than 2 s of calls beyond the first 20 (a 64 MiB call of 20 ms runs 100 times, not 1,000). */
int cli_bench_auto_iters(double t_us);
/* Slowest rank's time for size index si (0 if a rank failed). */
double cli_bench_slowest(const benchres *res, int n, int si);

#endif
