/*
 * tune.c — `schedc tune`: measure this host's links (memcpy bandwidth alone and on all ranks at
 * once, a + b bandwidth, per-step latency), predict every candidate schedule x parameters with the cost
 * model, time the best few per size, and write a tuning table (size ranges -> plan file, slice)
 * that communicators load. `--model-only --topology T` predicts without hardware. With `--backend
 * mpi` (under an MPI launcher, every rank runs it) the ranks may span hosts: their layout is
 * learned, the link between hosts measured, the candidates built for the layout, the table written
 * by rank 0 and bound to the layout (`hosts HEX`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define MAXC 32

typedef struct cand {
  char label[96];
  schedc_plan *plan;
  double pred[MAXSIZES], meas[MAXSIZES];
  size_t slice;
} cand;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int quiet; /* an mpi rank other than 0: no progress, no report */

/* A bar redrawn in place with carriage returns: only when stderr is a terminal (a log or a pipe
 * would keep every redraw), as git and pip do. */
static void progress(const char *what, int done, int total) {
  static int tty = -1;
  if (quiet) return;
  if (tty < 0) tty = isatty(STDERR_FILENO);
  if (!tty) return;
  int w = 30, k = total ? done * w / total : w;
  fprintf(stderr, "\r  %-28s [%.*s%*s] %d/%d", what, k, "##############################", w - k, "", done, total);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* ---- the host's numbers ---- */
typedef struct bwjob { char *a, *b, *c; size_t n; int add; double gbps; } bwjob;

static void *bw_run(void *arg) {
  bwjob *j = arg;
  double best = 0;
  for (int rep = 0; rep < 4; rep++) {
    double t0 = now_s();
    if (j->add) {
      float *x = (float *)j->a, *y = (float *)j->b, *z = (float *)j->c;
      for (size_t i = 0; i < j->n / 4; i++) z[i] = x[i] + y[i];
    } else {
      memcpy(j->c, j->a, j->n);
    }
    double g = (double)j->n / (now_s() - t0) / 1e9;
    if (g > best) best = g;
  }
  j->gbps = best;
  return NULL;
}

/* GB/s of one operand for memcpy (add=0) or c = a + b (add=1), on `threads` cores at once:
 * per thread (the slowest) and in total. */
static int measure_bw(int threads, int add, size_t bytes, double *per, double *total) {
  bwjob j[64];
  pthread_t th[64];
  if (threads > 64) threads = 64;
  for (int t = 0; t < threads; t++) {
    j[t] = (bwjob){malloc(bytes), malloc(bytes), malloc(bytes), bytes, add, 0};
    if (!j[t].a || !j[t].b || !j[t].c) return -1;
    for (size_t i = 0; i < bytes; i += 4) { float f = (float)(i & 1023); memcpy(j[t].a + i, &f, 4); memcpy(j[t].b + i, &f, 4); }
    memset(j[t].c, 0, bytes);
  }
  for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, bw_run, &j[t]);
  *per = 1e30;
  *total = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(th[t], NULL);
    if (j[t].gbps < *per) *per = j[t].gbps;
    *total += j[t].gbps;
    free(j[t].a); free(j[t].b); free(j[t].c);
  }
  return 0;
}

/* comm: an mpi rank's communicator (every rank times the plan together); NULL: start the ranks */
static int time_plan(const benchopts *o, const schedc_plan *plan, schedc_collective coll, int backend, schedc_comm *comm,
                     double *us) {
  benchres *res = cli_bench_alloc(o->ranks);
  if (!res) return -1;
  int rc = comm ? cli_bench_measure_comm(o, plan, coll, comm, res) : cli_bench_measure(o, plan, coll, backend, res);
  for (int i = 0; i < o->nsizes && rc == 0; i++) {
    us[i] = cli_bench_slowest(res, o->ranks, i);
    if (us[i] <= 0) {
      fprintf(stderr, "\nschedc tune: %s\n", res[0].status ? res[0].err : "a rank failed");
      rc = -1;
    }
  }
  cli_bench_release(res, o->ranks);
  return rc;
}

/* The job's hosts (mpi): how many, each rank's (numbered as they first appear), in blocks or not. */
typedef struct hostlayout { int nhosts, blocks, *node_of; uint64_t fp; } hostlayout;

static schedc_plan *load_cand(const char *dir, const char *file, const char *const *defs, int ranks,
                              const char *topo, const hostlayout *hl, schedc_collective coll) {
  char path[PATH_MAX], cdef[64];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  snprintf(cdef, sizeof cdef, "collective=%s", schedc_collective_name(coll));
  const char *all[6];
  int n = 0;
  for (int i = 0; defs[i]; i++) all[n++] = defs[i];
  all[n++] = cdef;
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = topo ? 0 : ranks;
  lo.topology = topo;
  if (!topo && hl && hl->nhosts > 1) { /* the plans for the job's layout (ring.lua in locality order) */
    lo.nnodes = hl->nhosts;
    lo.node_of = hl->blocks ? NULL : hl->node_of;
  }
  lo.defines = all;
  lo.ndefines = n;
  schedc_plan *p = NULL;
  if (schedc_plan_from_script(path, &lo, &p) != SCHEDC_OK) return NULL; /* not for this shape: skip */
  return p;
}

/* The shipped schedules' folder: where the library finds ring.lua (schedc_schedule_find:
 * $SCHEDC_SCHEDULE_PATH, then the installed share/schedc, in a build tree the source's
 * schedules/), else ./schedules. */
/* The fingerprint a topology file names (`fingerprint = "HEX"`, written by `schedc topo -o`: the
 * machine it describes), or 0: a hand-written file names none. */
static unsigned long long file_fingerprint(const char *path) {
  FILE *f = fopen(path, "r");
  char line[512];
  unsigned long long fp = 0;
  while (f && !fp && fgets(line, sizeof line, f)) {
    const char *p = line + strspn(line, " \t");
    if (sscanf(p, "fingerprint = \"%16llx\"", &fp) != 1) fp = 0;
  }
  if (f) fclose(f);
  return fp;
}

/* Every rank's host, gathered: the layout the plans are built for and the table is bound to (its
 * fingerprint: the rank count and each rank's host number, as the runtime computes it). */
static int learn_hosts(schedc_comm *c, hostlayout *hl) {
  int n = schedc_comm_nranks(c);
  int64_t mine = (int64_t)schedc_host_id(), *all = calloc((size_t)n, sizeof *all);
  hl->node_of = calloc((size_t)n, sizeof *hl->node_of);
  if (!all || !hl->node_of || schedc_allgather(&mine, all, 1, SCHEDC_I64, c, NULL) != SCHEDC_OK) {
    fprintf(stderr, "schedc tune: the ranks' hosts: %s\n", all && hl->node_of ? schedc_errmsg() : "out of memory");
    free(all);
    return -1;
  }
  hl->nhosts = 0;
  for (int r = 0; r < n; r++) {
    int q = 0;
    while (q < r && all[q] != all[r]) q++;
    hl->node_of[r] = q < r ? hl->node_of[q] : hl->nhosts++;
  }
  hl->blocks = n % hl->nhosts == 0;
  for (int r = 0; r < n && hl->blocks; r++) hl->blocks = hl->node_of[r] == r / (n / hl->nhosts);
  hl->fp = schedc_hosts_fingerprint(n, hl->node_of);
  free(all);
  return 0;
}

static const char *default_schedules(char *buf, size_t cap) {
  if (schedc_schedule_find("ring.lua", buf, cap) == SCHEDC_OK && strrchr(buf, '/')) {
    *strrchr(buf, '/') = 0;
    return buf;
  }
  return "schedules";
}

typedef struct tuneargs {
  const char *out, *topo, *dir, *backend;
  int ranks, model_only, keep, nsizes, out_given, iters;
  double margin;
  schedc_collective coll;
  schedc_comm *comm;
  const hostlayout *hl;
} tuneargs;
static int cli_tune_run(const tuneargs *ta, size_t *sizes);

int cli_tune(int argc, char **argv) {
  const char *out = "tuning", *topo = NULL, *dir = NULL, *backend = "shm";
  int ranks = 0, model_only = 0, keep = 2, nsizes = 0, out_given = 0, iters = 10;
  double margin = 1.25;
  size_t sizes[MAXSIZES];
  schedc_collective coll = SCHEDC_ALLREDUCE;
  enum { O_RANKS = 256, O_TOPOLOGY, O_MODEL_ONLY, O_BACKEND, O_KEEP, O_MARGIN, O_SCHEDULES, O_SIZES, O_ITERS };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},                 {"ranks", required_argument, NULL, O_RANKS},
    {"topology", required_argument, NULL, O_TOPOLOGY}, {"model-only", no_argument, NULL, O_MODEL_ONLY},
    {"backend", required_argument, NULL, O_BACKEND},  {"keep", required_argument, NULL, O_KEEP},
    {"margin", required_argument, NULL, O_MARGIN},    {"schedules", required_argument, NULL, O_SCHEDULES},
    {"sizes", required_argument, NULL, O_SIZES},      {"iters", required_argument, NULL, O_ITERS},
    {NULL, 0, NULL, 0},
  };
  cli_args a = {.cmd = "tune", .argc = argc, .argv = argv, .shortopts = "ho:", .longopts = longopts};
  const char *v;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    int bad = 0;
    switch (c) {
    case 'h':
      printf("usage: schedc tune --ranks N [--backend shm|threads] [--sizes 8,4K,...] [--keep K] [--margin M] [-o DIR]\n"
             "                   [--schedules DIR] [--iters I]\n"
             "       mpirun ... schedc tune --backend mpi [--sizes ...] [--keep K] [--margin M] [-o DIR] [--schedules DIR]\n"
             "       schedc tune --topology T --model-only [--sizes ...] [-o DIR]\n\n"
             "Measures this host (memcpy bandwidth alone and on all ranks at once, a + b bandwidth, per-step\n"
             "latency), predicts every shipped schedule x parameters with the cost model, times the K best\n"
             "per size (default 2) and any predicted within M x the best (default 1.25), I calls each (10)\n"
             "after 3 warm-up, then slice sizes\n"
             "for the winner at large sizes, and writes DIR/tuning.txt (size\n"
             "ranges -> plan, slice; load it with SCHEDC_TUNING=DIR/tuning.txt or `schedc bench --tuning`),\n"
             "the plan files, and DIR/host.lua (the measured links, for `schedc cost --links`).\n"
             "With --model-only the links come from the topology file and nothing runs (-o DIR writes the\n"
             "predicted table). Allreduce, f32 sum. The candidates come from --schedules DIR, else from the\n"
             "folder where `schedc check ring` finds the ring (see docs/cli.md, \"Schedules by name\").\n"
             "With --backend mpi every rank of an MPI launcher's job runs it: the ranks may span hosts; the\n"
             "link between hosts is measured, the candidates are built for the ranks' hosts, and rank 0\n"
             "writes the table, bound to that layout of hosts.\n");
      return EXIT_OK;
    case O_RANKS: bad = cli_opt_int(&a, v, 1, 65536, "a rank count from 1 to 65536", &ranks); break;
    case O_TOPOLOGY: topo = v; break;
    case O_MODEL_ONLY: model_only = 1; break;
    case O_BACKEND: backend = v; break;
    case O_KEEP: bad = cli_opt_int(&a, v, 1, 1000, "a count from 1 to 1000", &keep); break;
    case O_MARGIN:
      /* a factor >= 1: the seconds parser's rules (finite decimal, no sign or unit), then the bound */
      if (!(bad = cli_parse_seconds(v, 1e6, &margin) || margin < 1)) break;
      cli_usage_error(&a, "--margin '%s' is not a factor: a finite number >= 1", v);
      break;
    case 'o':
      out = v;
      out_given = 1;
      if ((bad = !*out)) cli_usage_error(&a, "-o '': an empty path names no folder (give a folder; it is created if missing)");
      break;
    case O_SCHEDULES: dir = v; break;
    case O_SIZES: bad = cli_opt_sizes(&a, v, sizes, MAXSIZES, &nsizes); break;
    case O_ITERS: bad = cli_opt_int(&a, v, 1, 1 << 20, "an iteration count from 1 to 2^20", &iters); break;
    case CLI_ARG: bad = 1; cli_usage_error(&a, "unexpected argument '%s' (see 'schedc tune --help')", v); break;
    default: bad = 1; break; /* CLI_BAD: said why */
    }
    if (bad) return EXIT_USAGE;
  }
  if (model_only && !topo) { fprintf(stderr, "schedc tune: --model-only needs --topology T (with a links table)\n"); return EXIT_USAGE; }
  int is_mpi = !strcmp(backend, "mpi");
  if (strcmp(backend, "shm") && strcmp(backend, "threads") && !is_mpi) { fprintf(stderr, "schedc tune: --backend '%s' (shm, threads or mpi)\n", backend); return EXIT_USAGE; }
  if (is_mpi && model_only) { fprintf(stderr, "schedc tune: --model-only runs nothing: no --backend mpi\n"); return EXIT_USAGE; }
  if (!model_only && !is_mpi && ranks < 1) { fprintf(stderr, "schedc tune: --ranks N is required\n"); return EXIT_USAGE; }
  /* mpi: this process is one rank of the launcher's job; the layout of hosts is learned here */
  schedc_comm *comm = NULL;
  hostlayout hl = {1, 1, NULL, 0};
  if (is_mpi) {
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    if (schedc_comm_init_mpi(NULL, &co, &comm) != SCHEDC_OK) { fprintf(stderr, "schedc tune: %s\n", schedc_errmsg()); return EXIT_REJECTED; }
    if (ranks && ranks != schedc_comm_nranks(comm)) {
      fprintf(stderr, "schedc tune: --ranks %d, but the MPI job has %d ranks\n", ranks, schedc_comm_nranks(comm));
      schedc_comm_free(comm);
      return EXIT_USAGE;
    }
    ranks = schedc_comm_nranks(comm);
    if (learn_hosts(comm, &hl) != 0) { schedc_comm_free(comm); free(hl.node_of); return EXIT_REJECTED; }
    quiet = schedc_comm_rank(comm) != 0;
  }
  int rc = cli_tune_run(&(tuneargs){out, topo, dir, backend, ranks, model_only, keep, nsizes, out_given, iters, margin,
                                    coll, comm, &hl}, sizes);
  schedc_comm_free(comm);
  free(hl.node_of);
  return rc;
}

/* The rest of `schedc tune`, its arguments read (and, under mpi, the job's hosts learned). */
static int cli_tune_run(const tuneargs *ta, size_t *sizes) {
  const char *out = ta->out, *topo = ta->topo, *dir = ta->dir, *backend = ta->backend;
  int ranks = ta->ranks, model_only = ta->model_only, keep = ta->keep, nsizes = ta->nsizes, out_given = ta->out_given;
  double margin = ta->margin;
  schedc_collective coll = ta->coll;
  schedc_comm *comm = ta->comm;
  const hostlayout *hl = ta->hl;
  char dirbuf[PATH_MAX];
  if (quiet && !freopen("/dev/null", "w", stdout)) return EXIT_REJECTED; /* rank 0 reports */
  if (keep < 1) keep = 1;
  if (!dir) dir = default_schedules(dirbuf, sizeof dirbuf);
  if (!nsizes) {
    for (size_t s = 8; s <= (64u << 20) && nsizes < MAXSIZES; s *= 8) sizes[nsizes++] = s;
    if (sizes[nsizes - 1] != (64u << 20)) sizes[nsizes++] = 64u << 20;
  }
  int be = strcmp(backend, "shm") ? SCHEDC_BACKEND_THREADS : SCHEDC_BACKEND_SHM;

  /* 1. the model: from the topology, or measured here */
  schedc_cost_model m = SCHEDC_COST_MODEL_INIT;
  if (model_only) {
    if (schedc_cost_model_load(topo, &m) != SCHEDC_OK) { fprintf(stderr, "schedc tune: %s\n", schedc_errmsg()); return EXIT_REJECTED; }
  } else {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (!quiet && comm) fprintf(stderr, "schedc tune: measuring the job's %d host%s (%d ranks, %ld cores here, backend mpi)\n", hl->nhosts, hl->nhosts > 1 ? "s" : "", ranks, ncpu);
    else if (!quiet) fprintf(stderr, "schedc tune: measuring this host (%d ranks, %ld cores, backend %s)\n", ranks, ncpu, backend);
    double per, tot;
    progress("memory bandwidth", 0, 3);
    if (measure_bw(1, 0, 64u << 20, &m.copy_gbps, &tot)) { fprintf(stderr, "schedc tune: out of memory\n"); return EXIT_REJECTED; }
    progress("memory bandwidth", 1, 3);
    measure_bw(1, 1, 64u << 20, &m.reduce_gbps, &tot);
    progress("memory bandwidth", 2, 3);
    int local0 = ranks; /* ranks on rank 0's host */
    if (comm) {
      /* every rank measured at once: each one's bandwidth beside the others', the slowest rank's
       * taken, and a host's total as that times its ranks */
      double mine[2] = {m.copy_gbps, m.reduce_gbps}, all[2];
      if (schedc_allreduce(mine, all, 2, SCHEDC_F64, SCHEDC_MIN, comm, NULL) != SCHEDC_OK) { fprintf(stderr, "schedc tune: %s\n", schedc_errmsg()); return EXIT_REJECTED; }
      m.copy_gbps = all[0];
      m.reduce_gbps = all[1];
      local0 = 0;
      for (int r = 0; r < ranks; r++) local0 += hl->node_of[r] == hl->node_of[0];
      tot = m.copy_gbps * local0;
      int64_t nc = ncpu, ncmin = ncpu; /* every rank predicts alike, so every rank times the same plans */
      if (schedc_allreduce(&nc, &ncmin, 1, SCHEDC_I64, SCHEDC_MIN, comm, NULL) == SCHEDC_OK) ncpu = (long)ncmin;
    } else {
      int par = ranks < ncpu ? ranks : (int)ncpu;
      measure_bw(par, 0, 64u << 20, &per, &tot);
    }
    progress("memory bandwidth", 3, 3);
    m.intra = (schedc_link){SCHEDC_LINK_SHM, 0, m.copy_gbps, tot};
    m.inter = m.intra;
    /* threads: the in-place receive buffer; mpi: the received temps written out once */
    m.local_passes = comm ? 1 : be == SCHEDC_BACKEND_SHM ? 2 : 0.5;
    m.cores_per_node = (int)ncpu;
    /* latency: a 1-step broadcast and the 2(n-1)-step ring at 8 bytes give alpha and the call cost */
    benchopts lo = {0};
    lo.ranks = ranks;
    lo.iters = 200;
    lo.warmup = 20;
    lo.nsizes = 1;
    lo.sizes[0] = 8;
    lo.dtype = SCHEDC_F32;
    lo.op = SCHEDC_SUM;
    double t1 = 0, t2 = 0, t3 = 0;
    int multi = comm && hl->nhosts > 1;
    progress("per-step latency", 0, 2 + multi);
    schedc_plan *bc = load_cand(dir, "direct.lua", (const char *[]){NULL}, ranks, NULL, hl, SCHEDC_BROADCAST), *ring = NULL;
    schedc_plan_builtin(SCHEDC_ALLREDUCE, ranks, 0, &ring);
    if (bc && ranks > 1) time_plan(&lo, bc, SCHEDC_BROADCAST, be, comm, &t1);
    progress("per-step latency", 1, 2 + multi);
    if (ring && ranks > 1) time_plan(&lo, ring, SCHEDC_ALLREDUCE, be, comm, &t2);
    progress("per-step latency", 2, 2 + multi);
    /* between hosts: rank 0 broadcasts 4 MiB to every rank at once, those on other hosts through
     * its host's one link, so that link's rate is their bytes over the time beyond the 8-byte call */
    if (multi && bc) {
      benchopts bo = lo;
      bo.iters = 5;
      bo.warmup = 1;
      bo.sizes[0] = 4u << 20;
      time_plan(&bo, bc, SCHEDC_BROADCAST, be, comm, &t3);
      progress("per-step latency", 3, 3);
    }
    schedc_plan_free(bc);
    schedc_plan_free(ring);
    int steps = 2 * (ranks - 1);
    m.intra.alpha_us = steps > 1 && t2 > t1 ? (t2 - t1) / (steps - 1) : 1.0;
    m.call_us = t1 > m.intra.alpha_us ? t1 - m.intra.alpha_us : 0.5;
    m.inter.alpha_us = m.intra.alpha_us;
    if (multi && t3 > t1) {
      double across = (double)(ranks - local0) * (4u << 20);
      m.inter.kind = SCHEDC_LINK_NET;
      m.inter.gbps = across / (t3 - t1) / 1e3;
      m.inter.node_gbps = m.inter.gbps; /* one link per host, whatever its ranks */
    }
  }
  cli_print_model(&m, model_only ? topo : comm ? "measured on the job's hosts" : "measured here");

  /* 2. candidates: shipped schedules x parameters that build for this shape */
  static const struct { const char *file; const char *defs[3]; } C[] = {
    {"ring.lua", {NULL}}, {"ring.lua", {"k=2", NULL}}, {"ring.lua", {"k=4", NULL}},
    {"direct.lua", {NULL}}, {"halving_doubling.lua", {NULL}},
    {"tree.lua", {NULL}}, {"tree.lua", {"shape=binomial", NULL}}, {"tree.lua", {"chunks=4", NULL}},
    {"hierarchical.lua", {NULL}},
  };
  cand *cs = calloc(MAXC, sizeof *cs);
  int nc = 0;
  for (size_t i = 0; i < sizeof C / sizeof C[0] && nc < MAXC; i++) {
    schedc_plan *p = load_cand(dir, C[i].file, C[i].defs, ranks, topo, hl, coll);
    if (!p) continue;
    cand *c = &cs[nc++];
    c->plan = p;
    snprintf(c->label, sizeof c->label, "%s%s%s", C[i].file, C[i].defs[0] ? " -D " : "", C[i].defs[0] ? C[i].defs[0] : "");
    for (int s = 0; s < nsizes; s++) schedc_plan_cost(p, &m, sizes[s], &c->pred[s]);
  }
  if (!nc) { fprintf(stderr, "schedc tune: no candidate schedule builds from %s (set --schedules DIR)\n", dir); free(cs); return EXIT_REJECTED; }
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(cs[0].plan, &in);
  int n = in.nranks;
  printf("# %d candidates from %s for %s on %d ranks\n", nc, dir, schedc_collective_name(coll), n);

  /* 3. per size: the K best by the model survive; time them (all sizes of a plan in one run) */
  int survive[MAXC] = {0}, best[MAXSIZES];
  size_t slice[MAXSIZES] = {0};
  for (int s = 0; s < nsizes; s++) {
    int order[MAXC];
    for (int c = 0; c < nc; c++) order[c] = c;
    for (int i = 0; i < nc; i++)
      for (int j = i + 1; j < nc; j++)
        if (cs[order[j]].pred[s] < cs[order[i]].pred[s]) { int t = order[i]; order[i] = order[j]; order[j] = t; }
    /* the K best, and any other the model puts within `margin` of the best: the model ties
     * variants it cannot tell apart (it gives no pipelining credit), so those are timed too */
    for (int k = 0; k < nc; k++)
      if (k < keep || cs[order[k]].pred[s] <= margin * cs[order[0]].pred[s]) survive[order[k]] = 1;
    best[s] = order[0];
  }
  if (!model_only) {
    benchopts o = {0};
    o.plain = 1; /* plans are ranked on the buffers most callers have */
    o.ranks = n;
    o.dtype = SCHEDC_F32;
    o.op = SCHEDC_SUM;
    o.nsizes = nsizes;
    memcpy(o.sizes, sizes, sizeof sizes[0] * (size_t)nsizes);
    o.iters = ta->iters; /* per size and survivor (10) */
    o.warmup = 3;
    int ns = 0, done = 0;
    for (int c = 0; c < nc; c++) ns += survive[c];
    for (int c = 0; c < nc; c++) {
      if (!survive[c]) continue;
      progress("timing survivors", done, ns);
      if (time_plan(&o, cs[c].plan, coll, be, comm, cs[c].meas)) { free(cs); return EXIT_REJECTED; }
      progress("timing survivors", ++done, ns);
    }
    for (int s = 0; s < nsizes; s++) {
      best[s] = -1;
      for (int c = 0; c < nc; c++)
        if (survive[c] && cs[c].meas[s] > 0 && (best[s] < 0 || cs[c].meas[s] < cs[best[s]].meas[s])) best[s] = c;
    }
    /* slices (pipelining granularity; never the bits) for the winner of each size >= 1 MiB */
    static const size_t SL[] = {64u << 10, 1u << 20};
    int nl = 0;
    for (int s = 0; s < nsizes; s++) nl += sizes[s] >= (1u << 20);
    int dl = 0;
    for (int s = 0; s < nsizes; s++) {
      if (sizes[s] < (1u << 20)) continue;
      progress("timing slice sizes", dl, nl);
      benchopts so = o;
      so.nsizes = 1;
      so.sizes[0] = sizes[s];
      for (size_t k = 0; k < sizeof SL / sizeof SL[0]; k++) {
        so.slice = SL[k];
        double t;
        if (time_plan(&so, cs[best[s]].plan, coll, be, comm, &t) == 0 && t < cs[best[s]].meas[s] * 0.97) {
          printf("# size %zu: %s is %.0f%% faster with %zu-byte slices\n", sizes[s], cs[best[s]].label,
                 100 * (1 - t / cs[best[s]].meas[s]), SL[k]);
          cs[best[s]].meas[s] = t;
          slice[s] = SL[k];
        }
      }
      progress("timing slice sizes", ++dl, nl);
    }
  }

  /* 4. report: prediction (and measurement) per size for every candidate; the choice */
  printf("#%11s", "size");
  for (int c = 0; c < nc; c++) printf(" %22.22s", cs[c].label);
  printf("  choice\n");
  for (int s = 0; s < nsizes; s++) {
    printf(" %11zu", sizes[s]);
    for (int c = 0; c < nc; c++) {
      char cell[48];
      if (cs[c].meas[s] > 0) snprintf(cell, sizeof cell, "%.1f/%.1f", cs[c].pred[s], cs[c].meas[s]);
      else snprintf(cell, sizeof cell, "%.1f", cs[c].pred[s]);
      printf(" %22s", cell);
    }
    printf("  %s\n", cs[best[s]].label);
  }
  printf("# cells: predicted us%s\n", model_only ? "" : " / measured us (survivors of the model's pruning)");
  if (!model_only) {
    double err = 0;
    int ne = 0;
    for (int s = 0; s < nsizes; s++)
      for (int c = 0; c < nc; c++)
        if (cs[c].meas[s] > 0) { err += (cs[c].pred[s] > cs[c].meas[s] ? cs[c].pred[s] / cs[c].meas[s] : cs[c].meas[s] / cs[c].pred[s]) - 1; ne++; }
    printf("# model error: mean |pred/meas - 1| over %d measured cells = %.0f%%\n", ne, ne ? 100 * err / ne : 0);
  }

  /* 5. the table: consecutive sizes with one choice form a range; boundaries halfway (geometric) */
  int rc = EXIT_OK;
  if (!quiet && (!model_only || out_given)) {
    if (cli_output_dir("tune", "-o", out)) { free(cs); return EXIT_REJECTED; }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tuning.txt", out);
    if (cli_check_output("tune", "-o", path, NULL, 0)) { free(cs); return EXIT_REJECTED; } /* a FIFO would block */
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "schedc tune: cannot write %s: %s\n", path, strerror(errno)); free(cs); return EXIT_REJECTED; }
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    fprintf(f, "schedc-tuning 1\n# written by schedc tune on %s: %s, %d ranks, %s, %s\n", date,
            schedc_collective_name(coll), n, model_only ? "model only" : "measured", model_only ? topo : backend);
    if (comm) /* the layout of hosts it was measured on: a communicator on another is refused */
      fprintf(f, "# %d host%s, ranks %s\nhosts %016llx\n", hl->nhosts, hl->nhosts > 1 ? "s" : "",
              hl->nhosts < 2 ? "all on one" : hl->blocks ? "in blocks" : "interleaved", (unsigned long long)hl->fp);
    schedc_topology *here = NULL; /* measured: the machine it was measured on (docs/topology.md) */
    unsigned long long tfp = 0;
    if (!model_only && schedc_topology_discover(&here) == SCHEDC_OK)
      fprintf(f, "topology %016llx\n", (unsigned long long)schedc_topology_fingerprint(here));
    else if (model_only && (tfp = file_fingerprint(topo)) != 0) /* predicted for the machine the file describes */
      fprintf(f, "topology %016llx\n", tfp);
    schedc_topology_free(here);
    size_t lo = 0;
    for (int s = 0; s < nsizes; s++) {
      if (s + 1 < nsizes && best[s + 1] == best[s] && slice[s + 1] == slice[s]) continue;
      char hi[32];
      if (s + 1 < nsizes) snprintf(hi, sizeof hi, "%zu", (size_t)((double)sizes[s] * 0.5 + (double)sizes[s + 1] * 0.5));
      else snprintf(hi, sizeof hi, "inf");
      cand *c = &cs[best[s]];
      cli_sbuf pf = {0}, full = {0}; /* the label as a file name: "ring.lua -D k=2" -> ring.lua_-D_k_2.plan */
      cli_sb_puts(&pf, c->label);
      for (char *q = pf.p; q && *q; q++) if (*q == ' ' || *q == '=' || *q == '/') *q = '_';
      cli_sb_puts(&pf, ".plan");
      cli_sb_printf(&full, "%s/%s", out, cli_sb_str(&pf));
      if (pf.oom || full.oom) { fprintf(stderr, "schedc tune: out of memory\n"); rc = EXIT_REJECTED; }
      else if (schedc_plan_save(c->plan, full.p) != SCHEDC_OK) { fprintf(stderr, "schedc tune: %s\n", schedc_errmsg()); rc = EXIT_REJECTED; }
      fprintf(f, "entry %s %d %zu %s %zu %s\n", schedc_collective_name(coll), n, lo, hi, slice[s], cli_sb_str(&pf));
      cli_sb_free(&pf);
      cli_sb_free(&full);
      lo = s + 1 < nsizes ? (size_t)strtoull(hi, NULL, 10) + 1 : 0;
    }
    if (!model_only) {
      fclose(f);
      snprintf(path, sizeof path, "%s/host.lua", out);
      f = cli_check_output("tune", "-o", path, NULL, 0) ? NULL : fopen(path, "w");
      if (f) {
        fprintf(f, "-- measured by schedc tune on %s (%s backend); for schedc cost --links\nreturn { links = {\n", date, backend);
        fprintf(f, "  intra = { kind = \"shm\", alpha_us = %.3f, gbps = %.3f, node_gbps = %.3f },\n", m.intra.alpha_us, m.intra.gbps, m.intra.node_gbps);
        fprintf(f, "  inter = { kind = \"%s\", alpha_us = %.3f, gbps = %.3f, node_gbps = %.3f },\n",
                m.inter.kind == SCHEDC_LINK_NET ? "net" : "shm", m.inter.alpha_us, m.inter.gbps, m.inter.node_gbps);
        fprintf(f, "  reduce_gbps = %.3f, copy_gbps = %.3f, local_passes = %.1f, call_us = %.3f, cores_per_node = %d,\n} }\n",
                m.reduce_gbps, m.copy_gbps, m.local_passes, m.call_us, m.cores_per_node);
      }
    }
    if (f) fclose(f);
    printf("# wrote %s/tuning.txt%s (use: SCHEDC_TUNING=%s/tuning.txt, or schedc bench --tuning %s/tuning.txt)\n", out,
           model_only ? "" : " and host.lua", out, out);
  }
  for (int c = 0; c < nc; c++) schedc_plan_free(cs[c].plan);
  free(cs);
  return rc;
}
