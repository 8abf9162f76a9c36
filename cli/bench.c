/*
 * bench.c — `schedc bench`: collective throughput in the conventions of nccl-tests. One row per
 * size: size (bytes of the whole buffer S), count, type, op, time_us (mean of back-to-back
 * iterations after warm-up, the slowest rank's), algbw = S/t and busbw (GB/s): allreduce
 * algbw*2(n-1)/n; reduce_scatter and allgather algbw*(n-1)/n; broadcast and reduce algbw; then
 * p50, p99 and max of the per-call times (a stall of one call in a thousand hides in the mean) and
 * the number of calls timed.
 * Ranks: threads in this process, forked shm processes, or the processes of an MPI launcher.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static schedc_status call(schedc_collective c, const void *s, void *r, size_t count, schedc_dtype t, schedc_op op,
                          schedc_comm *comm, const schedc_plan *plan) {
  switch (c) {
  case SCHEDC_ALLREDUCE: return schedc_allreduce(s, r, count, t, op, comm, plan);
  case SCHEDC_REDUCE_SCATTER: return schedc_reduce_scatter(s, r, count, t, op, comm, plan);
  case SCHEDC_ALLGATHER: return schedc_allgather(s, r, count, t, comm, plan);
  case SCHEDC_BROADCAST: return schedc_broadcast(s, r, count, t, 0, comm, plan);
  default: return schedc_reduce(s, r, count, t, op, 0, comm, plan);
  }
}

/* call() with the compression options (docs/compression.md): the _v2 collectives. */
static schedc_status bcall(const benchopts *o, schedc_collective c, const void *s, void *r, size_t count,
                           schedc_comm *comm, const schedc_plan *plan) {
  if (!o->wire && !(o->topk > 0)) return call(c, s, r, count, o->dtype, o->op, comm, plan);
  schedc_call_opts co = SCHEDC_CALL_OPTS_INIT;
  co.wire = o->wire;
  co.topk = o->topk;
  switch (c) {
  case SCHEDC_REDUCE_SCATTER: return schedc_reduce_scatter_v2(s, r, count, o->dtype, o->op, comm, plan, &co);
  case SCHEDC_REDUCE: return schedc_reduce_v2(s, r, count, o->dtype, o->op, 0, comm, plan, &co);
  default: return schedc_allreduce_v2(s, r, count, o->dtype, o->op, comm, plan, &co); /* others refused in cli_bench */
  }
}

/* Elements per call argument for a whole-buffer size S (reduce_scatter/allgather: per rank). */
static size_t call_count(schedc_collective c, size_t S, size_t esz, int n) {
  size_t k = S / esz;
  return c == SCHEDC_REDUCE_SCATTER || c == SCHEDC_ALLGATHER ? k / (size_t)n : k;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}
/* The nearest-rank percentile's index among n sorted values: the smallest value with at least
 * q of the values at or below it. */
static int rank_of(double q, int n) {
  int k = (int)ceil(q * n - 1e-9);
  return k < 1 ? 0 : k - 1;
}

int cli_bench_auto_iters(double t_us) {
  if (!(t_us > 0)) t_us = 1;
  double n = 0.2e6 / t_us;                      /* 0.2 s of calls */
  if (n < 1000) n = 1000;                       /* and at least 1,000 */
  if (n * t_us > 2e6) n = 2e6 / t_us;           /* but not past 2 s ... */
  if (n < 20) n = 20;                           /* ... beyond the first 20 */
  return n > 1 << 24 ? 1 << 24 : (int)n;
}

static void bench_rank(const benchopts *o, const schedc_plan *plan, schedc_collective coll, schedc_comm *comm,
                       benchres *res) {
  int n = schedc_comm_nranks(comm);
  size_t esz = schedc_dtype_size(o->dtype), maxS = 0;
  for (int i = 0; i < o->nsizes; i++) if (o->sizes[i] > maxS) maxS = o->sizes[i];
  char *send = NULL, *recv = NULL;
  if (o->plain) {
    send = malloc(maxS + 64);
    recv = o->inplace ? send : malloc(maxS + 64);
    if (!send || !recv) { res->status = SCHEDC_ENOMEM; snprintf(res->err, sizeof res->err, "out of memory"); goto out; }
  } else { /* memory every rank maps: collectives work in it, with no copy into and out of the arena */
    void *p = NULL, *q = NULL;
    if ((res->status = schedc_mem_alloc(comm, maxS + 64, &p)) ||
        (!o->inplace && (res->status = schedc_mem_alloc(comm, maxS + 64, &q)))) {
      schedc_mem_free(comm, p);
      goto fail;
    }
    send = p;
    recv = o->inplace ? p : q;
  }
  memset(send, 0, maxS + 64);
  for (size_t i = 0; i + 4 <= maxS; i += 4) { float f = (float)(i % 977) * 0.001f; memcpy(send + i, &f, 4); }
  for (int si = 0; si < o->nsizes; si++) {
    size_t count = call_count(coll, o->sizes[si], esz, n);
    if (!plan) {
      const schedc_plan *p = schedc_comm_default_plan(comm, coll, 0, o->sizes[si] / esz * esz);
      schedc_plan_info pi = SCHEDC_PLAN_INFO_INIT;
      if (p) schedc_plan_get_info(p, &pi);
      snprintf(res->chosen[si], sizeof res->chosen[si], "%s", p ? pi.name : "?");
    }
    /* Warm-up; its mean sets the automatic call count (iters 0), agreed as the largest of the
     * ranks' so every rank makes the same number of calls. */
    int warm = o->warmup > 0 ? o->warmup : !o->iters; /* automatic count, no warm-up: one probe call */
    double tw = now_s();
    for (int w = 0; w < warm; w++)
      if ((res->status = bcall(o, coll, send, recv, count, comm, plan))) goto fail;
    int iters = o->iters;
    if (!iters) {
      int64_t mine = cli_bench_auto_iters(warm ? (now_s() - tw) / warm * 1e6 : 1), all = 0;
      if ((res->status = schedc_allreduce(&mine, &all, 1, SCHEDC_I64, SCHEDC_MAX, comm, NULL))) goto fail;
      iters = (int)all;
    }
    float *lat = malloc((size_t)iters * sizeof *lat); /* per call, us */
    if (!lat) { res->status = SCHEDC_ENOMEM; snprintf(res->err, sizeof res->err, "out of memory (%d call times)", iters); goto out; }
    double t0 = now_s(), prev = t0;
    for (int it = 0; it < iters; it++) {
      if ((res->status = bcall(o, coll, send, recv, count, comm, plan))) { free(lat); goto fail; }
      double t = now_s();
      lat[it] = (float)((t - prev) * 1e6);
      prev = t;
    }
    res->us[si] = (prev - t0) / iters * 1e6;
    res->iters[si] = iters;
    qsort(lat, (size_t)iters, sizeof *lat, cmp_float);
    res->p50[si] = lat[rank_of(0.50, iters)];
    res->p99[si] = lat[rank_of(0.99, iters)];
    res->max[si] = lat[iters - 1];
    free(lat);
  }
  goto out;
fail:
  snprintf(res->err, sizeof res->err, "%s", schedc_errmsg());
out:
  if (o->plain) {
    free(send);
    if (recv != send) free(recv);
  } else {
    schedc_mem_free(comm, send);
    if (recv != send) schedc_mem_free(comm, recv);
  }
}

benchres *cli_bench_alloc(int n) {
  benchres *res = mmap(NULL, (size_t)n * sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return NULL;
  memset(res, 0, (size_t)n * sizeof *res);
  return res;
}
void cli_bench_release(benchres *res, int n) { if (res) munmap(res, (size_t)n * sizeof *res); }

double cli_bench_slowest(const benchres *res, int n, int si) {
  double t = 0;
  for (int r = 0; r < n; r++) {
    if (res[r].status) return 0;
    if (res[r].us[si] > t) t = res[r].us[si];
  }
  return t;
}

typedef struct benchctx { const benchopts *o; const schedc_plan *plan; schedc_collective coll; benchres *res; } benchctx;
static void bench_rank_cb(void *ctx, schedc_comm *comm, int rank) {
  benchctx *b = ctx;
  bench_rank(b->o, b->plan, b->coll, comm, &b->res[rank]);
}
static void bench_failed_cb(void *ctx, int rank, const char *why) {
  benchctx *b = ctx;
  b->res[rank].status = SCHEDC_EPEER;
  snprintf(b->res[rank].err, sizeof b->res[rank].err, "%s", why);
}

int cli_bench_measure_comm(const benchopts *o, const schedc_plan *plan, schedc_collective coll, schedc_comm *comm,
                           benchres *res) {
  benchres mine = {0};
  bench_rank(o, plan, coll, comm, &mine);
  /* every rank's record to every rank (its status too: a failed rank's peers fail the same call) */
  if (schedc_allgather(&mine, res, sizeof mine / 4, SCHEDC_I32, comm, NULL) != SCHEDC_OK) res[schedc_comm_rank(comm)] = mine;
  return 0;
}

int cli_bench_measure(const benchopts *o, const schedc_plan *plan, schedc_collective coll, int backend, benchres *res) {
  benchctx b = {o, plan, coll, res}; /* res is shared memory: forked ranks write into it */
  cli_ranks cb = {&b, bench_rank_cb, bench_failed_cb};
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.tuning = o->tuning;
  co.slice_bytes = o->slice;
  return cli_spawn(backend, o->ranks, &co, &cb, "bench");
}

static void print_table(const benchopts *o, schedc_collective coll, int n, const char *name, const char *backend,
                        const benchres *res) {
  double bw_factor = cli_busbw_factor(coll, n);
  char its[96];
  if (o->iters) snprintf(its, sizeof its, "%d iterations", o->iters);
  else snprintf(its, sizeof its, "iterations: at least 1,000 calls and 0.2 s (column iters)");
  printf("# schedc bench: %s, %s, backend %s, %d ranks, %s %s, %s after %d warm-up\n", name,
         schedc_collective_name(coll), backend, n, schedc_dtype_name(o->dtype), schedc_op_name(o->op), its,
         o->warmup);
  if (o->wire || o->topk > 0)
    printf("# compressed: %s%s%s; size, algbw and busbw count the %s data as given\n", o->wire ? "wire " : "top-k ",
           o->wire ? schedc_wire_name((schedc_wire)o->wire) : "", o->wire ? " (the plan moves 1 or 2 bytes per element)" : "",
           schedc_dtype_name(o->dtype));
  if (o->topk > 0) printf("# top-k: each rank sends a fraction %g of the elements (index and value, 8 bytes each)\n", o->topk);
  printf("# buffers: %s, %s\n", o->plain ? "malloc (--plain: copied into the shared arena and out)"
                                          : "schedc_mem_alloc (shared: no copy into the arena or out)",
         o->inplace ? "in place (--inplace)" : "out of place");
  printf("# time: mean per call of the slowest rank; algbw = size/time; busbw = algbw * %.3f\n", bw_factor);
  printf("# p50, p99, max: median, 99th percentile and longest of one rank's per-call times, the largest over ranks\n");
  const char *tuning = NULL; /* a path: never malformed */
  int tuned = o->tuning || (schedc_param_get("SCHEDC_TUNING", &tuning) == SCHEDC_OK && tuning);
  for (int si = 0; si < o->nsizes && res[0].chosen[si][0]; si++)
    printf("# size %zu: plan '%s'%s\n", o->sizes[si], res[0].chosen[si], tuned ? "" : " (built-in)");
  printf("#%11s %12s %6s %6s %12s %10s %10s %10s %10s %10s %9s\n", "size", "count", "type", "op", "time_us", "algbw",
         "busbw", "p50_us", "p99_us", "max_us", "iters");
  size_t esz = schedc_dtype_size(o->dtype);
  for (int si = 0; si < o->nsizes; si++) {
    double t = 0, p50 = 0, p99 = 0, mx = 0;
    for (int r = 0; r < n; r++) {
      if (res[r].us[si] > t) t = res[r].us[si];
      if (res[r].p50[si] > p50) p50 = res[r].p50[si];
      if (res[r].p99[si] > p99) p99 = res[r].p99[si];
      if (res[r].max[si] > mx) mx = res[r].max[si];
    }
    double alg = t > 0 ? (double)o->sizes[si] / (t * 1e3) : 0;
    printf(" %11zu %12zu %6s %6s %12.2f %10.3f %10.3f %10.2f %10.2f %10.2f %9d\n", o->sizes[si],
           call_count(coll, o->sizes[si], esz, n), schedc_dtype_name(o->dtype), schedc_op_name(o->op), t, alg,
           alg * bw_factor, p50, p99, mx, res[0].iters[si]);
  }
}

/* --exact: --op sum or avg in exact mode (sum_exact, avg_exact); 1 (said why) for another op. */
static int cli_exact_op(schedc_op *op, const char *cmd) {
  if (*op == SCHEDC_SUM || *op == SCHEDC_SUM_EXACT) *op = SCHEDC_SUM_EXACT;
  else if (*op == SCHEDC_AVG || *op == SCHEDC_AVG_EXACT) *op = SCHEDC_AVG_EXACT;
  else {
    fprintf(stderr, "schedc %s: --exact takes --op sum or avg, not %s\n", cmd, schedc_op_name(*op) ? schedc_op_name(*op) : "?");
    return 1;
  }
  return 0;
}

int cli_bench(int argc, char **argv) {
  benchopts o = {0};
  o.iters = 0; /* automatic: at least 1,000 calls and 0.2 s per size */
  o.warmup = 5;
  o.dtype = SCHEDC_F32;
  o.op = SCHEDC_SUM;
  o.defines = calloc((size_t)argc + 1, sizeof *o.defines);
  const char *backend = "threads";
  size_t mn = 0, mx = 0, factor = 0;
  int nodes = 0, exact = 0;
  int rc = EXIT_USAGE;
  if (!o.defines) return EXIT_REJECTED;
  enum { O_RANKS = 256, O_NODES, O_TUNING, O_COLLECTIVE, O_BACKEND, O_PLAIN, O_INPLACE, O_ITERS, O_WARMUP, O_DTYPE,
         O_OP, O_MIN, O_MAX, O_FACTOR, O_SIZES, O_EXACT, O_WIRE, O_TOPK };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},              {"ranks", required_argument, NULL, O_RANKS},
    {"nodes", required_argument, NULL, O_NODES},   {"tuning", required_argument, NULL, O_TUNING},
    {"collective", required_argument, NULL, O_COLLECTIVE}, {"backend", required_argument, NULL, O_BACKEND},
    {"plain", no_argument, NULL, O_PLAIN},         {"inplace", no_argument, NULL, O_INPLACE},
    {"iters", required_argument, NULL, O_ITERS},   {"warmup", required_argument, NULL, O_WARMUP},
    {"dtype", required_argument, NULL, O_DTYPE},   {"op", required_argument, NULL, O_OP},
    {"min", required_argument, NULL, O_MIN},       {"max", required_argument, NULL, O_MAX},
    {"factor", required_argument, NULL, O_FACTOR}, {"sizes", required_argument, NULL, O_SIZES},
    {"exact", no_argument, NULL, O_EXACT},         {"wire", required_argument, NULL, O_WIRE},
    {"topk", required_argument, NULL, O_TOPK},
    {NULL, 0, NULL, 0},
  };
  cli_args a = {.cmd = "bench", .argc = argc, .argv = argv, .shortopts = "hD:", .longopts = longopts};
  const char *v;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    int bad = 0;
    long long x;
    switch (c) {
    case 'h':
      printf("usage: schedc bench [FILE|PLAN] --ranks N [--backend threads|shm|mpi|net] [--sizes 8,4K,1M,64M |\n"
             "                    --min S --max S --factor F] [--dtype T] [--op OP] [--iters I] [--warmup W] [-D k=v]\n"
             "                    [--nodes M] [--tuning TABLE] [--collective C] [--plain] [--inplace]\n"
             "                    [--exact | --wire q8|q16 | --topk F]\n\n"
             "Prints '#' header lines, then per size: size (bytes of the whole buffer), count, type, op, time_us\n"
             "(mean of I back-to-back calls after W warm-up calls, slowest rank), algbw and busbw in GB/s\n"
             "(nccl-tests conventions), then p50_us, p99_us and max_us per call and iters. Without --iters:\n"
             "at least 1,000 calls and 0.2 s per size (at most 2 s beyond 20 calls). Without FILE the\n"
             "communicator chooses per size: the tuning table (--tuning or $SCHEDC_TUNING, written by\n"
             "'schedc tune'), else the built-in ring; the header names the plan used for each size.\n"
             "Buffers come from schedc_mem_alloc (memory every rank maps: no copy into the shared arena\n"
             "and out); --plain: malloc'd buffers, as most callers have. --inplace: send == recv.\n"
             "--exact: --op sum or avg in exact mode (sum_exact, avg_exact: f32, f16, bf16 summed as 64-bit\n"
             "integers on a shared grid; docs/determinism.md). --wire q8|q16: --op sum or avg as 8- or 16-bit\n"
             "integers on a shared grid; --topk F: allreduce sending the fraction F of each rank's largest\n"
             "elements, summed exactly (docs/compression.md). With mpi, start under mpirun; with net, each\n"
             "rank under torchrun --no-python, srun or schedc launch (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).\n");
      rc = EXIT_OK;
      goto done;
    case O_RANKS: bad = cli_opt_int(&a, v, 1, 65536, "a rank count from 1 to 65536", &o.ranks); break;
    case O_NODES: bad = cli_opt_int(&a, v, 1, 65536, "a node count from 1 to 65536", &nodes); break;
    case O_TUNING: o.tuning = v; break;
    case O_COLLECTIVE: {
      int k = 0;
      while (k < SCHEDC_COLLECTIVE_COUNT_ && strcmp(v, schedc_collective_name((schedc_collective)k))) k++;
      if ((bad = k == SCHEDC_COLLECTIVE_COUNT_))
        cli_usage_error(&a, "--collective '%s' (allreduce, reduce_scatter, allgather, broadcast, reduce)", v);
      o.coll = (schedc_collective)k;
      break;
    }
    case O_BACKEND: backend = v; break;
    case O_PLAIN: o.plain = 1; break;
    case O_INPLACE: o.inplace = 1; break;
    case O_ITERS: bad = cli_opt_int(&a, v, 1, 1 << 24, "an iteration count from 1 to 2^24", &o.iters); break;
    case O_WARMUP: bad = cli_opt_int(&a, v, 0, 1 << 24, "a warm-up count from 0 to 2^24", &o.warmup); break;
    case O_DTYPE: if ((bad = schedc_dtype_parse(v, &o.dtype) != SCHEDC_OK)) cli_usage_error(&a, "%s", schedc_errmsg()); break;
    case O_OP: if ((bad = cli_op_parse(v, &o.op) != 0)) cli_usage_error(&a, "%s", schedc_errmsg()); break;
    case O_MIN: case O_MAX: case O_FACTOR:
      if ((bad = cli_opt_count(&a, v, 1, 1LL << 40, c == O_FACTOR ? "a factor from 1 to 2^40 (below 2 counts as 2)"
                               : "a byte count from 1 to 2^40 (digits, K, M or G suffix)", &x)))
        break;
      *(c == O_MIN ? &mn : c == O_MAX ? &mx : &factor) = (size_t)x;
      break;
    case O_SIZES: bad = cli_opt_sizes(&a, v, o.sizes, MAXSIZES, &o.nsizes); break;
    case O_EXACT: exact = 1; break;
    case O_WIRE: bad = cli_opt_wire(&a, v, &o.wire); break;
    case O_TOPK: bad = cli_opt_topk(&a, v, &o.topk); break;
    case 'D': bad = cli_opt_define(&a, v, o.defines, &o.ndefines); break;
    case CLI_ARG:
      if ((bad = o.file != NULL)) cli_usage_error(&a, "unexpected '%s' (one FILE only)", v);
      o.file = v;
      break;
    default: bad = 1; break; /* CLI_BAD: said why */
    }
    if (bad) goto done;
  }
  if (exact && cli_exact_op(&o.op, "bench")) goto done;
  if ((exact && (o.wire || o.topk > 0)) || (o.wire && o.topk > 0)) {
    fprintf(stderr, "schedc bench: --exact, --wire and --topk exclude each other\n");
    goto done;
  }
  if (mn || mx) {
    if (!mn) mn = 8;
    if (!mx) mx = mn;
    if (factor < 2) factor = 2;
    for (size_t s = mn; s <= mx && o.nsizes < MAXSIZES; s *= factor) o.sizes[o.nsizes++] = s;
  }
  if (!o.nsizes) { size_t d[] = {8, 4096, 1 << 20, 64 << 20}; memcpy(o.sizes, d, sizeof d); o.nsizes = 4; }
  int is_net = !strcmp(backend, "net"), is_mpi = !strcmp(backend, "mpi") || is_net, is_shm = !strcmp(backend, "shm");
  if (!is_mpi && !is_shm && strcmp(backend, "threads")) { fprintf(stderr, "schedc bench: --backend '%s' (threads, shm, mpi or net)\n", backend); goto done; }
  schedc_comm *mcomm = NULL; /* is_mpi: this process is one rank of a launched job (mpi or net) */
  if (is_mpi) {
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.tuning = o.tuning;
    co.slice_bytes = o.slice;
    if (cli_comm_launched(is_net ? SCHEDC_BACKEND_NET : SCHEDC_BACKEND_MPI, &co, &mcomm)) {
      fprintf(stderr, "schedc bench: %s\n", schedc_errmsg());
      goto done;
    }
    o.ranks = schedc_comm_nranks(mcomm);
  }
  if (o.ranks < 1) { fprintf(stderr, "schedc bench: --ranks N is required\n"); schedc_comm_free(mcomm); goto done; }
  schedc_plan *plan = NULL;
  if (o.file) {
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = o.ranks;
    lo.nnodes = nodes;
    lo.defines = o.defines;
    lo.ndefines = o.ndefines;
    if (schedc_plan_open(o.file, &lo, &plan)) { fprintf(stderr, "%s\n", schedc_errmsg()); schedc_comm_free(mcomm); rc = EXIT_REJECTED; goto done; }
  }
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_collective coll = o.coll;
  if (plan) {
    schedc_plan_get_info(plan, &in);
    coll = in.collective;
  }
  if ((o.wire && (coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST)) || (o.topk > 0 && coll != SCHEDC_ALLREDUCE)) {
    fprintf(stderr, "schedc bench: %s takes %s, not %s\n", o.wire ? "--wire" : "--topk",
            o.wire ? "allreduce, reduce_scatter or reduce" : "allreduce", schedc_collective_name(coll));
    schedc_plan_free(plan);
    schedc_comm_free(mcomm);
    goto done;
  }
  int n = o.ranks;
  benchres *res = cli_bench_alloc(n);
  int me = 0;
  if (is_mpi) {
    me = schedc_comm_rank(mcomm);
    cli_bench_measure_comm(&o, plan, coll, mcomm, res);
    schedc_comm_free(mcomm);
  } else if (cli_bench_measure(&o, plan, coll, is_shm ? SCHEDC_BACKEND_SHM : SCHEDC_BACKEND_THREADS, res)) {
    n = -1; /* the ranks could not start: the reason is on stderr */
  }
  rc = n < 0 ? EXIT_REJECTED : EXIT_OK;
  for (int r = 0; r < n; r++)
    if (res[r].status) { if (me == 0) fprintf(stderr, "schedc bench: rank %d: %s\n", r, res[r].err[0] ? res[r].err : "failed"); rc = EXIT_REJECTED; }
  if (rc == EXIT_OK && me == 0) print_table(&o, coll, n, o.file ? in.name : "the communicator's choice per size", backend, res);
  cli_bench_release(res, o.ranks);
  schedc_plan_free(plan);
done:
  free(o.defines);
  return rc;
}
