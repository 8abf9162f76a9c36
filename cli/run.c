/*
 * run.c — `schedc run` (execute a plan on N ranks: threads in this process, shm processes it
 * forks, the processes of an MPI launcher, or GPUs: cuda, one process or a process per GPU,
 * forked or under an MPI launcher). `schedc launch` is launch.c. Public API only.
 *
 * Buffers follow the "K-element buffer per rank" model: every rank has K elements (inputs from
 * DIR/rank<r>.bin or seeded random); the result is the rank's K-element buffer after the
 * collective (reduce_scatter: the rank's block holds the result, other blocks keep the input;
 * reduce: only the root's buffer changes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

typedef struct runopts {
  const char *file, *inputs, *outputs, *topology;
  int ranks, nodes, iters, check, backend, seed, verify, repair;
  long long count;
  double timeout;
  long long slice;
  schedc_dtype dtype;
  schedc_op op;
  int wire;                   /* --wire: SCHEDC_WIRE_* (docs/compression.md) */
  double topk;                /* --topk: the fraction each rank sends; 0: dense */
  const char **defines;
  int ndefines;
} runopts;

typedef struct rankres {
  int status;
  uint64_t digest;
  double seconds, max_abs, max_rel;
  int consistent;             /* every iteration gave the same digest */
  char err[480];
} rankres;

typedef struct runctx {
  const runopts *o;
  schedc_plan *plan;
  schedc_plan_info info;
  size_t K, esz;
  rankres *res;               /* [nranks], shared memory for shm */
} runctx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- inputs ----------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 27; x *= 0x94d049bb133111ebull; return x ^ (x >> 31);
}

static void gen_input(const runctx *x, int rank, void *buf) {
  for (size_t i = 0; i < x->K; i++) {
    uint64_t h = mix((uint64_t)x->o->seed * 0x9e3779b97f4a7c15ull ^ mix((uint64_t)rank << 40 ^ i));
    double v = ((double)(h >> 11) / 9007199254740992.0 - 0.5) * 2.0; /* [-1, 1) */
    switch (x->o->dtype) {
    case SCHEDC_F32: ((float *)buf)[i] = (float)v; break;
    case SCHEDC_F64: ((double *)buf)[i] = v; break;
    case SCHEDC_F16: { _Float16 f = (_Float16)(float)v; memcpy((char *)buf + 2 * i, &f, 2); break; }
    case SCHEDC_BF16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); ((uint16_t *)buf)[i] = (uint16_t)(u >> 16); break; }
    case SCHEDC_I32: ((int32_t *)buf)[i] = (int32_t)(h % 2001) - 1000; break;
    case SCHEDC_I64: ((int64_t *)buf)[i] = (int64_t)(h % 2000001) - 1000000; break;
    default: break;
    }
  }
}

static int load_input(const runctx *x, int rank, void *buf, char *err, size_t cap) {
  if (!x->o->inputs) { gen_input(x, rank, buf); return 0; }
  cli_sbuf sb = {0};
  const char *path = cli_sb_rank_file(&sb, x->o->inputs, rank, ".bin");
  FILE *f = path ? fopen(path, "rb") : NULL;
  int rc = 0;
  if (!f) {
    snprintf(err, cap, "cannot open %.300s: %s", path ? path : x->o->inputs, path ? strerror(errno) : "out of memory");
    rc = -1;
  } else {
    size_t want = x->K * x->esz, got = fread(buf, 1, want, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != want || extra) {
      snprintf(err, cap, "%.300s: expected %zu bytes (%zu %s elements), got %s%zu", path, want, x->K,
               schedc_dtype_name(x->o->dtype), extra ? "more than " : "", got);
      rc = -1;
    }
  }
  cli_sb_free(&sb);
  return rc;
}

static double elem(schedc_dtype t, const void *b, size_t i) {
  switch (t) {
  case SCHEDC_F32: return ((const float *)b)[i];
  case SCHEDC_F64: return ((const double *)b)[i];
  case SCHEDC_F16: { _Float16 h; memcpy(&h, (const char *)b + 2 * i, 2); return (double)(float)h; }
  case SCHEDC_BF16: { uint32_t u = (uint32_t)((const uint16_t *)b)[i] << 16; float f; memcpy(&f, &u, 4); return f; }
  case SCHEDC_I32: return ((const int32_t *)b)[i];
  case SCHEDC_I64: return (double)((const int64_t *)b)[i];
  default: return 0;
  }
}

/* Before any rank starts: every --inputs file DIR/rank<r>.bin is a regular file of exactly K
 * elements (a rank whose file is missing or short would fail alone and leave its peers waiting
 * for it until the timeout); every --outputs file is a new name or a regular file, and not an
 * input; the outputs folder exists (created with its parents). quiet: checks without messages
 * (the MPI ranks other than 0). 0, or -1 (after printing why). */
static int check_io_paths(const runopts *o, int n, size_t K, size_t esz, int quiet, cli_sbuf *inb, cli_sbuf *outb) {
  const char *in, *out;
  for (int r = 0; o->inputs && r < n; r++) {
    if (!(in = cli_sb_rank_file(inb, o->inputs, r, ".bin"))) { fprintf(stderr, "schedc run: out of memory\n"); return -1; }
    int fd = open(in, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY); /* O_NONBLOCK: a FIFO must not block */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      if (!quiet) fprintf(stderr, "schedc run: --inputs '%s': cannot open %s: %s (each rank r reads DIR/rank<r>.bin)\n",
                          o->inputs, in, strerror(errno));
      if (fd >= 0) close(fd);
      return -1;
    }
    close(fd);
    if (!S_ISREG(st.st_mode) || (unsigned long long)st.st_size != (unsigned long long)(K * esz)) {
      if (!quiet) {
        if (!S_ISREG(st.st_mode)) fprintf(stderr, "schedc run: --inputs '%s': %s is not a regular file\n", o->inputs, in);
        else fprintf(stderr, "schedc run: --inputs '%s': %s is %llu bytes; rank %d needs %zu (--count %zu %s elements)\n",
                     o->inputs, in, (unsigned long long)st.st_size, r, K * esz, K, schedc_dtype_name(o->dtype));
      }
      return -1;
    }
  }
  if (!o->outputs) return 0;
  if (o->inputs) {
    struct stat si, so;
    if (stat(o->inputs, &si) == 0 && stat(o->outputs, &so) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
      if (!quiet) fprintf(stderr, "schedc run: --outputs '%s' is the --inputs folder '%s'; the results would replace "
                          "the inputs (give another folder)\n", o->outputs, o->inputs);
      return -1;
    }
  }
  for (int r = 0; r < n; r++) {
    out = cli_sb_rank_file(outb, o->outputs, r, ".bin");
    in = cli_sb_rank_file(inb, o->inputs ? o->inputs : "", r, ".bin");
    if (!out || !in) { fprintf(stderr, "schedc run: out of memory\n"); return -1; }
    const char *ins[1] = {o->inputs ? in : NULL};
    if (quiet) {
      struct stat st;
      if (stat(out, &st) == 0 && !S_ISREG(st.st_mode)) return -1;
    } else if (cli_check_output("run", "--outputs", out, ins, 1)) {
      return -1;
    }
  }
  return cli_output_dir("run", "--outputs", o->outputs); /* every MPI rank: its host may not share the folder */
}

static int check_io(const runopts *o, int n, size_t K, size_t esz, int quiet) {
  cli_sbuf inb = {0}, outb = {0};
  int rc = check_io_paths(o, n, K, esz, quiet, &inb, &outb);
  cli_sb_free(&inb);
  cli_sb_free(&outb);
  return rc;
}

/* SCHEDC_INJECT's kill:RANK:STEP and flip:RANK:STEP[:BIT] at a step the plan does not have
 * would never fire, and the run would pass the test it was meant to fail (the library checks
 * the ranks; only here is the plan known). 0, or -1 after printing why. */
static int check_inject_steps(const char *file, int nsteps) {
  const char *spec = NULL;
  if (schedc_param_get("SCHEDC_INJECT", &spec) != SCHEDC_OK || !spec) return 0;
  for (const char *p = spec; *p;) {
    size_t len = strcspn(p, ",");
    long rank, step;
    char kind[8];
    int k = 0;
    if (len < 64) {
      char item[64];
      memcpy(item, p, len);
      item[len] = 0;
      if (sscanf(item, "%5[a-z]:%ld:%ld%n", kind, &rank, &step, &k) == 3 && (!strcmp(kind, "kill") || !strcmp(kind, "flip")) &&
          step >= nsteps) {
        fprintf(stderr, "schedc run: SCHEDC_INJECT %s: step %ld is past the plan's last step (%s has steps 0 to %d): "
                "the fault would never happen\n", item, step, file, nsteps - 1);
        return -1;
      }
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

/* ---- one rank ----------------------------------------------------------------------------- */

static int defined_elem(const runctx *x, int rank, size_t i) {
  int n = x->info.nranks;
  switch (x->info.collective) {
  case SCHEDC_REDUCE_SCATTER: return i / (x->K / (size_t)n) == (size_t)rank;
  case SCHEDC_REDUCE: return rank == x->info.root;
  default: return 1;
  }
}

/* float64 reference of element i: the op over all ranks' inputs in rank order. */
static double reference(const runctx *x, void *const *ins, size_t i) {
  int n = x->info.nranks;
  schedc_collective c = x->info.collective;
  if (c == SCHEDC_ALLGATHER) return elem(x->o->dtype, ins[i / (x->K / (size_t)n)], i);
  if (c == SCHEDC_BROADCAST) return elem(x->o->dtype, ins[x->info.root], i);
  double acc = elem(x->o->dtype, ins[0], i);
  for (int r = 1; r < n; r++) {
    double v = elem(x->o->dtype, ins[r], i);
    switch (x->o->op) {
    case SCHEDC_PROD: acc *= v; break;
    case SCHEDC_MIN: acc = v < acc ? v : acc; break;
    case SCHEDC_MAX: acc = v > acc ? v : acc; break;
    default: acc += v; break;
    }
  }
  return x->o->op == SCHEDC_AVG || x->o->op == SCHEDC_AVG_EXACT ? acc / n : acc;
}

static uint64_t rank_digest(const runctx *x, int rank, const char *buf);
static void rank_results(runctx *x, int rank, const char *buf);

/* One rank's call of the collective on buf (and in, the input, for reduce_scatter). */
static schedc_status rank_call(const runctx *x, schedc_comm *comm, int rank, const char *in, char *buf) {
  const runopts *o = x->o;
  size_t blk = x->K / (size_t)x->info.nranks, es = x->esz, K = x->K;
  if (o->wire || o->topk > 0) { /* compressed (docs/compression.md): the calls with options */
    schedc_call_opts co = SCHEDC_CALL_OPTS_INIT;
    co.wire = o->wire;
    co.topk = o->topk;
    switch (x->info.collective) {
    case SCHEDC_ALLREDUCE: return schedc_allreduce_v2(buf, buf, K, o->dtype, o->op, comm, x->plan, &co);
    case SCHEDC_REDUCE_SCATTER:
      return schedc_reduce_scatter_v2(in, buf + (size_t)rank * blk * es, blk, o->dtype, o->op, comm, x->plan, &co);
    case SCHEDC_REDUCE: return schedc_reduce_v2(buf, buf, K, o->dtype, o->op, x->info.root, comm, x->plan, &co);
    default: break; /* allgather, broadcast: refused before any rank starts */
    }
  }
  switch (x->info.collective) {
  case SCHEDC_ALLREDUCE: return schedc_allreduce(buf, buf, K, o->dtype, o->op, comm, x->plan);
  case SCHEDC_REDUCE_SCATTER: return schedc_reduce_scatter(in, buf + (size_t)rank * blk * es, blk, o->dtype, o->op, comm, x->plan);
  case SCHEDC_ALLGATHER: return schedc_allgather(buf + (size_t)rank * blk * es, buf, blk, o->dtype, comm, x->plan);
  case SCHEDC_BROADCAST: return schedc_broadcast(buf, buf, K, o->dtype, x->info.root, comm, x->plan);
  default: return schedc_reduce(buf, buf, K, o->dtype, o->op, x->info.root, comm, x->plan);
  }
}

static void rank_main(runctx *x, schedc_comm *comm, int rank) {
  rankres *rr = &x->res[rank];
  const runopts *o = x->o;
  size_t K = x->K, es = x->esz;
  char *in = malloc(K * es + 1), *buf = malloc(K * es + 1);
  if (!in || !buf) { snprintf(rr->err, sizeof rr->err, "out of memory"); rr->status = SCHEDC_ENOMEM; goto out; }
  if (load_input(x, rank, in, rr->err, sizeof rr->err)) { rr->status = SCHEDC_EIO; goto out; }
  rr->consistent = 1;
  double t0 = 0;
  for (int it = 0; it < o->iters; it++) {
    memcpy(buf, in, K * es);
    if (it == 1 || o->iters == 1) t0 = now_s(); /* the first of several iterations is warm-up */
    schedc_status st = rank_call(x, comm, rank, in, buf);
    if (st != SCHEDC_OK) {
      rr->status = st;
      snprintf(rr->err, sizeof rr->err, "%s", schedc_errmsg());
      goto out;
    }
    uint64_t d = rank_digest(x, rank, buf);
    if (it > 0 && d != rr->digest) rr->consistent = 0;
    rr->digest = d;
  }
  rr->seconds = (now_s() - t0) / (o->iters > 1 ? o->iters - 1 : 1);
  rank_results(x, rank, buf);
out:
  free(in);
  free(buf);
}

/* The digest of the part of buf the collective defines on this rank. */
static uint64_t rank_digest(const runctx *x, int rank, const char *buf) {
  schedc_collective coll = x->info.collective;
  size_t blk = x->K / (size_t)x->info.nranks;
  size_t lo = coll == SCHEDC_REDUCE_SCATTER ? (size_t)rank * blk : 0;
  size_t len = coll == SCHEDC_REDUCE_SCATTER ? blk : (coll == SCHEDC_REDUCE && rank != x->info.root ? 0 : x->K);
  return schedc_digest(buf + lo * x->esz, len * x->esz);
}

/* After the last iteration: --outputs and --check for one rank's buffer. */
static void rank_results(runctx *x, int rank, const char *buf) {
  rankres *rr = &x->res[rank];
  const runopts *o = x->o;
  int n = x->info.nranks;
  size_t K = x->K, es = x->esz;
  if (o->outputs) {
    cli_sbuf sb = {0};
    const char *path = cli_sb_rank_file(&sb, o->outputs, rank, ".bin");
    FILE *f = path ? fopen(path, "wb") : NULL;
    int failed = !f || fwrite(buf, 1, K * es, f) != K * es;
    if (f && fclose(f)) failed = 1;
    if (failed) {
      snprintf(rr->err, sizeof rr->err, "cannot write %.300s: %s", path ? path : o->outputs, path ? strerror(errno) : "out of memory");
      rr->status = SCHEDC_EIO;
    }
    cli_sb_free(&sb);
    if (failed) return;
  }
  if (o->check) {
    void **ins = calloc((size_t)n, sizeof *ins);
    int ok = ins != NULL;
    for (int r = 0; ok && r < n; r++) ok = (ins[r] = malloc(K * es + 1)) && !load_input(x, r, ins[r], rr->err, sizeof rr->err);
    for (size_t i = 0; ok && i < K; i++) {
      if (!defined_elem(x, rank, i)) continue;
      double ref = reference(x, ins, i), got = elem(o->dtype, buf, i), e = fabs(got - ref);
      /* relative to the magnitude summed (sums cancel, so |ref| alone can be ~0) */
      double scale = fabs(ref);
      int avg = o->op == SCHEDC_AVG || o->op == SCHEDC_AVG_EXACT;
      if (o->op == SCHEDC_SUM || o->op == SCHEDC_SUM_EXACT || avg) {
        scale = 0;
        for (int r = 0; r < n; r++) scale += fabs(elem(o->dtype, ins[r], i));
        if (avg) scale /= n;
      }
      if (e > rr->max_abs) rr->max_abs = e;
      if (scale > 0 && e / scale > rr->max_rel) rr->max_rel = e / scale;
    }
    for (int r = 0; ins && r < n; r++) free(ins[r]);
    free(ins);
  }
}

/* ---- backends --------------------------------------------------------------------------- */

/* cuda: this thread drives ranks [lo, hi) (comms[r - lo] is rank r's): every rank of a
 * one-process group, or its own rank in a process per GPU. Buffers on the ranks' devices; an
 * iteration is every rank's call plus one schedc_cuda_sync (the copies in and out are not
 * timed). On failure each rank's result says why; returns nothing. */
static void cuda_ranks(runctx *x, schedc_comm **comms, int lo, int hi) {
  int k = hi - lo;
  size_t bytes = x->K * x->esz;
  char **in = calloc((size_t)k, sizeof *in), **host = calloc((size_t)k, sizeof *host);
  char **din = calloc((size_t)k, sizeof *din), **dbuf = calloc((size_t)k, sizeof *dbuf);
  schedc_status st = in && host && din && dbuf ? SCHEDC_OK : SCHEDC_ENOMEM;
  for (int i = 0; i < k && st == SCHEDC_OK; i++) {
    int r = lo + i;
    x->res[r].consistent = 1;
    if (!(in[i] = malloc(bytes + 1)) || !(host[i] = malloc(bytes + 1))) st = SCHEDC_ENOMEM;
    else if (load_input(x, r, in[i], x->res[r].err, sizeof x->res[r].err)) st = SCHEDC_EIO;
    else if ((st = schedc_cuda_alloc(comms[i], bytes, (void **)&din[i])) == SCHEDC_OK &&
             (st = schedc_cuda_alloc(comms[i], bytes, (void **)&dbuf[i])) == SCHEDC_OK)
      st = schedc_cuda_copy(comms[i], din[i], in[i], bytes);
    if (st != SCHEDC_OK && !x->res[r].err[0]) snprintf(x->res[r].err, sizeof x->res[r].err, "%s", schedc_errmsg());
    if (st != SCHEDC_OK) x->res[r].status = st;
  }
  double total = 0;
  for (int it = 0; it < x->o->iters && st == SCHEDC_OK; it++) {
    for (int i = 0; i < k && st == SCHEDC_OK; i++) st = schedc_cuda_copy(comms[i], dbuf[i], in[i], bytes);
    double t0 = now_s();
    for (int i = 0; i < k && st == SCHEDC_OK; i++) {
      if ((st = rank_call(x, comms[i], lo + i, din[i], dbuf[i])) != SCHEDC_OK) {
        x->res[lo + i].status = st;
        snprintf(x->res[lo + i].err, sizeof x->res[lo + i].err, "%s", schedc_errmsg());
      }
    }
    if (st == SCHEDC_OK && (st = schedc_cuda_sync(comms[0])) != SCHEDC_OK) {
      x->res[lo].status = st;
      snprintf(x->res[lo].err, sizeof x->res[lo].err, "%s", schedc_errmsg());
    }
    if (it > 0 || x->o->iters == 1) total += now_s() - t0; /* the first of several is warm-up */
    for (int i = 0; i < k && st == SCHEDC_OK; i++) {
      if ((st = schedc_cuda_copy(comms[i], host[i], dbuf[i], bytes)) != SCHEDC_OK) break;
      uint64_t d = rank_digest(x, lo + i, host[i]);
      if (it > 0 && d != x->res[lo + i].digest) x->res[lo + i].consistent = 0;
      x->res[lo + i].digest = d;
    }
  }
  for (int i = 0; i < k; i++) {
    int r = lo + i;
    if (st == SCHEDC_OK) {
      x->res[r].seconds = total / (x->o->iters > 1 ? x->o->iters - 1 : 1);
      rank_results(x, r, host[i]);
    } else if (!x->res[r].status) {
      /* its call returned before the one that launched the group failed: the group's failure,
       * which its sync reports, is this rank's too */
      x->res[r].status = SCHEDC_EPEER;
      int told = schedc_cuda_sync(comms[i]) != SCHEDC_OK;
      snprintf(x->res[r].err, sizeof x->res[r].err, "%s", told ? schedc_errmsg() : "not run: another rank failed");
    }
    if (din && din[i]) schedc_cuda_free(comms[i], din[i]);
    if (dbuf && dbuf[i]) schedc_cuda_free(comms[i], dbuf[i]);
    if (in) free(in[i]);
    if (host) free(host[i]);
  }
  free(in); free(host); free(din); free(dbuf);
}

/* cuda, one process: every rank's communicator here. */
static int run_cuda(runctx *x, const schedc_comm_opts *co, int virt) {
  int n = x->info.nranks;
  schedc_comm **comms = calloc((size_t)n, sizeof *comms);
  schedc_status st = comms ? schedc_comm_init_cuda(n, NULL, virt ? SCHEDC_CUDA_VIRTUAL : 0, co, comms) : SCHEDC_ENOMEM;
  if (st != SCHEDC_OK) {
    fprintf(stderr, "schedc run: %s\n", comms ? schedc_errmsg() : "out of memory");
    free(comms);
    return -1;
  }
  cuda_ranks(x, comms, 0, n);
  for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
  free(comms);
  return 0;
}
/* cuda, a process per GPU: this forked process's own rank (cli_spawn made its communicator). */
static void run_cuda_rank_cb(void *ctx, schedc_comm *comm, int rank) { cuda_ranks(ctx, &comm, rank, rank + 1); }

static void run_rank_cb(void *ctx, schedc_comm *comm, int rank) { rank_main(ctx, comm, rank); }
static void run_failed_cb(void *ctx, int rank, const char *why) {
  runctx *x = ctx;
  if (x->res[rank].status == 0) x->res[rank].status = SCHEDC_EPEER;
  if (!x->res[rank].err[0] || strstr(why, "process died")) snprintf(x->res[rank].err, sizeof x->res[rank].err, "%s", why);
}

static schedc_comm_opts comm_opts(const runctx *x) {
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = x->o->timeout;
  co.slice_bytes = (size_t)x->o->slice;
  co.plan = x->plan;
  co.verify = x->o->verify;
  co.repair = x->o->repair;
  return co;
}

/* ---- report ----------------------------------------------------------------------------- */

static int run_launched(const runopts *o);
static int report(runctx *x) {
  int n = x->info.nranks, failed = 0, agree = 1, consistent = 1;
  schedc_collective c = x->info.collective;
  int same = c == SCHEDC_ALLREDUCE || c == SCHEDC_ALLGATHER || c == SCHEDC_BROADCAST;
  double tmax = 0, eabs = 0, erel = 0;
  for (int r = 0; r < n; r++) {
    rankres *rr = &x->res[r];
    if (rr->status) {
      printf("rank %d: error: %s\n", r, rr->err[0] ? rr->err : schedc_status_str((schedc_status)rr->status));
      failed++;
      continue;
    }
    if (c == SCHEDC_REDUCE && r != x->info.root) printf("rank %d: (not the root)\n", r);
    else printf("rank %d: digest %016llx\n", r, (unsigned long long)rr->digest);
    if (same && rr->digest != x->res[0].digest) agree = 0;
    consistent &= rr->consistent;
    if (rr->seconds > tmax) tmax = rr->seconds;
    if (rr->max_abs > eabs) eabs = rr->max_abs;
    if (rr->max_rel > erel) erel = rr->max_rel;
  }
  if (failed) {
    printf("%d of %d ranks failed\n", failed, n);
    return EXIT_REJECTED;
  }
  if (same) printf("all %d ranks agree: %s\n", n, agree ? "yes" : "NO");
  else printf("(%s: each rank holds its own result; digests are not compared)\n", schedc_collective_name(c));
  if (x->o->iters > 1) printf("%d iterations, identical bits every time: %s\n", x->o->iters, consistent ? "yes" : "NO");
  printf("time per iteration: %.1f us (slowest rank)\n", tmax * 1e6);
  if (x->o->check)
    printf("error vs float64 reference: max abs %.3g, max rel %.3g (relative to the sum of |inputs| for sum/avg)\n", eabs, erel);
  return agree && consistent ? EXIT_OK : EXIT_REJECTED;
}

/* ---- command line ------------------------------------------------------------------------ */

static void run_usage(FILE *f) {
  fprintf(f,
          "usage: schedc run FILE|PLAN --ranks N [--nodes M] [--topology T] [--count K] [--dtype T] [--op OP]\n"
          "                  [--backend threads|shm|mpi|net|cuda [--virtual|--processes|--mpi]] [--inputs DIR]\n"
          "                  [--outputs DIR] [--slice BYTES] [--exact | --wire q8|q16 | --topk F]\n"
          "                  [--iters I] [--timeout S] [--seed S] [--check] [--verify MODE [--repair]] [-D k=v]...\n\n"
          "Run the plan on N ranks (CPU or GPU) and print each rank's 64-bit digest and whether all ranks agree.\n"
          "  --count K      elements per rank buffer (default 1048576)\n"
          "  --dtype T      f32 (default), f64, f16, bf16, i32, i64\n"
          "  --op OP        sum (default), prod, min, max, avg, or FILE.c:NAME (a custom operator, docs/ops.md)\n"
          "  --exact        exact mode: --op sum or avg as sum_exact / avg_exact (f32, f16, bf16): the same\n"
          "                 bits for every plan and backend (docs/determinism.md)\n"
          "  --wire W       q8 or q16: --op sum or avg (f32, f16, bf16) summed as 8- or 16-bit integers on\n"
          "                 one grid: the same bits for every plan and backend (docs/compression.md)\n"
          "  --topk F       allreduce: each rank sends its F * count largest elements (F in (0, 1], or P%%),\n"
          "                 summed exactly (docs/compression.md)\n"
          "  --backend B    threads (default; ranks are threads), shm (forks N processes), mpi (start\n"
          "                 with mpirun -np N; N comes from MPI), net (start each rank with torchrun --no-python,\n"
          "                 srun or schedc launch: RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS and MASTER_ADDR,\n"
          "                 MASTER_PORT; any hosts, no MPI), cuda (a GPU per rank, driven by this process)\n"
          "  --virtual      with cuda: all N ranks on one GPU\n"
          "  --processes    with cuda: forks a process per GPU (rank r on GPU r; buffers shared by CUDA IPC)\n"
          "  --mpi          with cuda: the processes of an MPI launcher (mpirun -np N), a GPU each\n"
          "                 (OMPI_COMM_WORLD_LOCAL_RANK), on one or more hosts: the host exchanges over\n"
          "                 MPI, payloads between hosts through NCCL\n"
          "  --inputs DIR   read DIR/rank<r>.bin (K little-endian elements); default: seeded random\n"
          "  --outputs DIR  write each rank's final K-element buffer to DIR/rank<r>.bin\n"
          "  --slice BYTES  pipelining slice (never changes bits)\n"
          "  --iters I      repeat I times (the first is warm-up); all must give the same bits\n"
          "  --check        report the error against a float64 reference\n"
          "  --verify MODE  digest: compare a digest of every result across ranks (SCHEDC_ECORRUPT names\n"
          "                 the ranks that differ from the majority); checksum: a CRC32C on every transfer,\n"
          "                 checked by its receiver (names step, sender, receiver); full: both; exact:\n"
          "                 with --exact, only the check that the result's integers sum to the inputs'\n"
          "                 (digest and checksum include it); none\n"
          "  --repair       a corrupted transfer is sent again; a differing result is re-broadcast from\n"
          "                 the majority\n"
          "Exit status: 0 all ranks agree, 1 a rank failed or ranks disagree, 2 usage error.\n");
}


/* --wire and --topk take the plan's collective? 1 (said why, unless quiet) if not: --wire reduces
 * (allreduce, reduce_scatter, reduce), --topk is an allreduce. */
static int compress_refused(const runopts *o, schedc_collective c, int quiet) {
  if (!o->wire && !(o->topk > 0)) return 0;
  if (c == SCHEDC_ALLREDUCE || (o->wire && (c == SCHEDC_REDUCE_SCATTER || c == SCHEDC_REDUCE))) return 0;
  if (!quiet)
    fprintf(stderr, "schedc run: %s takes an allreduce%s plan, not %s\n", o->wire ? "--wire" : "--topk",
            o->wire ? ", reduce_scatter or reduce" : "", schedc_collective_name(c));
  return 1;
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

int cli_run(int argc, char **argv) {
  enum { O_RANKS = 256, O_NODES, O_TOPOLOGY, O_COUNT, O_DTYPE, O_OP, O_BACKEND, O_VIRTUAL, O_PROCESSES, O_MPI,
         O_INPUTS, O_OUTPUTS, O_SLICE, O_ITERS, O_SEED, O_TIMEOUT, O_CHECK, O_REPAIR, O_VERIFY, O_EXACT, O_WIRE,
         O_TOPK };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},              {"ranks", required_argument, NULL, O_RANKS},
    {"nodes", required_argument, NULL, O_NODES},   {"topology", required_argument, NULL, O_TOPOLOGY},
    {"count", required_argument, NULL, O_COUNT},   {"dtype", required_argument, NULL, O_DTYPE},
    {"op", required_argument, NULL, O_OP},         {"backend", required_argument, NULL, O_BACKEND},
    {"virtual", no_argument, NULL, O_VIRTUAL},     {"processes", no_argument, NULL, O_PROCESSES},
    {"mpi", no_argument, NULL, O_MPI},             {"inputs", required_argument, NULL, O_INPUTS},
    {"outputs", required_argument, NULL, O_OUTPUTS}, {"slice", required_argument, NULL, O_SLICE},
    {"iters", required_argument, NULL, O_ITERS},   {"seed", required_argument, NULL, O_SEED},
    {"timeout", required_argument, NULL, O_TIMEOUT}, {"check", no_argument, NULL, O_CHECK},
    {"repair", no_argument, NULL, O_REPAIR},       {"verify", required_argument, NULL, O_VERIFY},
    {"exact", no_argument, NULL, O_EXACT},         {"wire", required_argument, NULL, O_WIRE},
    {"topk", required_argument, NULL, O_TOPK},
    {NULL, 0, NULL, 0},
  };
  runopts o = {0};
  o.iters = 1;
  o.count = 1 << 20;
  o.seed = 1;
  o.dtype = SCHEDC_F32;
  o.op = SCHEDC_SUM;
  o.defines = calloc((size_t)argc + 1, sizeof *o.defines);
  int rc = EXIT_USAGE;
  const char *backend = "threads";
  int virt = 0, procs = 0, over_mpi = 0, exact = 0;
  if (!o.defines) return EXIT_REJECTED;
  cli_args a = {.cmd = "run", .argc = argc, .argv = argv, .shortopts = "hD:", .longopts = longopts};
  const char *v;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    int bad = 0;
    switch (c) {
    case 'h': run_usage(stdout); rc = EXIT_OK; goto done;
    case O_RANKS: bad = cli_opt_int(&a, v, 1, 65536, "a rank count from 1 to 65536", &o.ranks); break;
    case O_NODES: bad = cli_opt_int(&a, v, 1, 65536, "a node count from 1 to 65536", &o.nodes); break;
    case O_TOPOLOGY: o.topology = v; break;
    case O_COUNT:
      bad = cli_opt_count(&a, v, 0, 1LL << 34, "an element count from 0 to 2^34 (digits, K, M or G suffix)", &o.count);
      break;
    case O_DTYPE: if ((bad = schedc_dtype_parse(v, &o.dtype) != SCHEDC_OK)) cli_usage_error(&a, "%s", schedc_errmsg()); break;
    case O_OP: if ((bad = cli_op_parse(v, &o.op) != 0)) cli_usage_error(&a, "%s", schedc_errmsg()); break;
    case O_BACKEND: backend = v; break;
    case O_VIRTUAL: virt = 1; break;
    case O_PROCESSES: procs = 1; break;
    case O_MPI: over_mpi = 1; break;
    case O_INPUTS:
      if ((bad = !*v)) cli_usage_error(&a, "--inputs '' names no folder: give the folder of rank<r>.bin");
      o.inputs = v;
      break;
    case O_OUTPUTS:
      if ((bad = !*v)) cli_usage_error(&a, "--outputs '' names no folder: give a folder (it is created if missing)");
      o.outputs = v;
      break;
    case O_SLICE:
      bad = cli_opt_count(&a, v, 1, 1LL << 34, "a byte count from 1 to 2^34 (digits, K, M or G suffix)", &o.slice);
      break;
    case O_ITERS: bad = cli_opt_int(&a, v, 1, 1 << 24, "an iteration count from 1 to 2^24", &o.iters); break;
    case O_SEED: bad = cli_opt_int(&a, v, 0, 1 << 30, "a seed from 0 to 2^30", &o.seed); break;
    case O_TIMEOUT:
      bad = cli_opt_seconds(&a, v, 1e9, "a number of seconds: a finite number > 0 and <= 1e9 (no unit)", &o.timeout);
      break;
    case O_CHECK: o.check = 1; break;
    case O_REPAIR: o.repair = 1; break;
    case O_EXACT: exact = 1; break;
    case O_WIRE: bad = cli_opt_wire(&a, v, &o.wire); break;
    case O_TOPK: bad = cli_opt_topk(&a, v, &o.topk); break;
    case O_VERIFY:
      if (!strcmp(v, "digest")) o.verify = SCHEDC_VERIFY_DIGEST;
      else if (!strcmp(v, "checksum")) o.verify = SCHEDC_VERIFY_CHECKSUM;
      else if (!strcmp(v, "full")) o.verify = SCHEDC_VERIFY_FULL;
      else if (!strcmp(v, "exact")) o.verify = SCHEDC_VERIFY_EXACT;
      else if (!strcmp(v, "none")) o.verify = SCHEDC_VERIFY_NONE;
      else bad = 1, cli_usage_error(&a, "--verify '%s' (choose none, digest, checksum, full or exact)", v);
      break;
    case 'D': bad = cli_opt_define(&a, v, o.defines, &o.ndefines); break;
    case CLI_ARG:
      if ((bad = o.file != NULL)) cli_usage_error(&a, "unexpected argument '%s'", v);
      o.file = v;
      break;
    default: bad = 1; break; /* CLI_BAD: said why */
    }
    if (bad) goto done;
  }
  if (!o.file) { fprintf(stderr, "schedc run: missing FILE (see 'schedc run --help')\n"); goto done; }
  if (exact && cli_exact_op(&o.op, "run")) goto done;
  if ((exact && (o.wire || o.topk > 0)) || (o.wire && o.topk > 0)) {
    fprintf(stderr, "schedc run: --exact, --wire and --topk exclude each other\n");
    goto done;
  }
  if (!strcmp(backend, "threads")) o.backend = SCHEDC_BACKEND_THREADS;
  else if (!strcmp(backend, "shm")) o.backend = SCHEDC_BACKEND_SHM;
  else if (!strcmp(backend, "mpi")) o.backend = SCHEDC_BACKEND_MPI;
  else if (!strcmp(backend, "cuda")) o.backend = SCHEDC_BACKEND_CUDA;
  else if (!strcmp(backend, "net")) o.backend = SCHEDC_BACKEND_NET;
  else { fprintf(stderr, "schedc run: --backend '%s' (choose threads, shm, mpi, net or cuda)\n", backend); goto done; }
  if ((virt || procs || over_mpi) && o.backend != SCHEDC_BACKEND_CUDA) {
    fprintf(stderr, "schedc run: %s needs --backend cuda\n", virt ? "--virtual" : procs ? "--processes" : "--mpi");
    goto done;
  }
  if (virt + procs + over_mpi > 1) {
    fprintf(stderr, "schedc run: --virtual, --processes and --mpi exclude each other\n");
    goto done;
  }
  if (o.backend == SCHEDC_BACKEND_MPI || o.backend == SCHEDC_BACKEND_NET || over_mpi) {
    rc = run_launched(&o);
    goto done;
  }
  runctx x = {&o, NULL, SCHEDC_PLAN_INFO_INIT, 0, 0, NULL};
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = o.ranks;
  lo.nnodes = o.nodes;
  lo.topology = o.topology;
  lo.defines = o.defines;
  lo.ndefines = o.ndefines;
  schedc_status st = schedc_plan_open(o.file, &lo, &x.plan);
  if (st != SCHEDC_OK) {
    fprintf(stderr, "%s\n", schedc_errmsg());
    rc = st == SCHEDC_EINVAL ? EXIT_USAGE : EXIT_REJECTED;
    goto done;
  }
  schedc_plan_get_info(x.plan, &x.info);
  int n = x.info.nranks;
  x.K = (size_t)o.count;
  x.esz = schedc_dtype_size(o.dtype);
  if ((x.info.collective == SCHEDC_REDUCE_SCATTER || x.info.collective == SCHEDC_ALLGATHER) && x.K % (size_t)n) {
    fprintf(stderr, "schedc run: --count %lld must be a multiple of %d ranks for %s\n", o.count, n,
            schedc_collective_name(x.info.collective));
    schedc_plan_free(x.plan);
    goto done;
  }
  if (compress_refused(&o, x.info.collective, 0)) {
    schedc_plan_free(x.plan);
    goto done;
  }
  if (check_io(&o, n, x.K, x.esz, 0) || check_inject_steps(o.file, x.info.nsteps)) {
    schedc_plan_free(x.plan);
    goto done;
  }
  x.res = mmap(NULL, (size_t)n * sizeof *x.res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (x.res == MAP_FAILED) { perror("schedc run: mmap"); schedc_plan_free(x.plan); rc = EXIT_REJECTED; goto done; }
  /* for the banner only: the cuda communicator's init refuses a malformed value itself */
  const char *nodes = NULL, *net = NULL;
  if (!strcmp(backend, "cuda") && schedc_param_get("SCHEDC_CUDA_NODES", &nodes) != SCHEDC_OK) nodes = NULL;
  if (schedc_param_get("SCHEDC_CUDA_NET", &net) != SCHEDC_OK) net = NULL;
  cli_sbuf banner = {0};
  cli_sb_printf(&banner, "# %s '%s': %s, %d ranks, %d chunks, %lld x %s, op %s, backend %s", o.file, x.info.name,
                schedc_collective_name(x.info.collective), n, x.info.nchunks, o.count, schedc_dtype_name(o.dtype),
                schedc_op_name(o.op), backend);
  if (o.wire) cli_sb_printf(&banner, ", wire %s", schedc_wire_name((schedc_wire)o.wire));
  if (o.topk > 0) cli_sb_printf(&banner, ", top-k %g", o.topk);
  if (virt) cli_sb_puts(&banner, " (virtual ranks on one GPU)");
  if (procs) cli_sb_puts(&banner, " (a process per GPU)");
  if (nodes && *nodes && strcmp(nodes, "1")) { /* staged across nodes; between processes maybe by NCCL */
    cli_sb_printf(&banner, ", staged across SCHEDC_CUDA_NODES=%s", nodes);
    if (procs && net && !strcmp(net, "nccl")) cli_sb_puts(&banner, " through NCCL (SCHEDC_CUDA_NET=nccl)");
  }
  printf("%s\n", cli_sb_str(&banner));
  cli_sb_free(&banner);
  fflush(stdout);
  schedc_comm_opts co = comm_opts(&x);
  cli_ranks cb = {&x, procs ? run_cuda_rank_cb : run_rank_cb, run_failed_cb};
  int r = o.backend == SCHEDC_BACKEND_CUDA && !procs ? run_cuda(&x, &co, virt) : cli_spawn(o.backend, n, &co, &cb, "run");
  rc = r ? EXIT_REJECTED : report(&x);
  munmap(x.res, (size_t)n * sizeof *x.res);
  schedc_plan_free(x.plan);
done:
  free(o.defines);
  return rc;
}

/* cuda over MPI: this process's GPU (its rank on this host, from Open MPI, else its rank), the
 * host exchanges on `host` (the MPI communicator), buffers on the GPU. */
static void run_cuda_over(runctx *x, schedc_comm *host, int me) {
  const char *lr = NULL;
  schedc_status st = schedc_param_get("OMPI_COMM_WORLD_LOCAL_RANK", &lr); /* checked: atoi reads a valid one */
  int dev = lr ? atoi(lr) : me;
  schedc_comm_opts co = comm_opts(x);
  schedc_comm *c = NULL;
  if (st == SCHEDC_OK) st = schedc_comm_init_cuda_over(host, dev, &co, &c);
  if (st != SCHEDC_OK) {
    x->res[me].status = st;
    snprintf(x->res[me].err, sizeof x->res[me].err, "%s", schedc_errmsg());
    return;
  }
  cuda_ranks(x, &c, me, me + 1);
  schedc_comm_free(c);
}

/* A launcher's processes: this process is one rank of the MPI job (schedc initialises MPI
 * itself; with --backend cuda --mpi, a process per GPU over it) or of a net job (torchrun's or
 * srun's variables). Results are gathered to every rank with schedc_allgather, so the CLI needs
 * no MPI header. */
static int run_launched(const runopts *o) {
  schedc_comm *comm;
  int cuda = o->backend == SCHEDC_BACKEND_CUDA, net = o->backend == SCHEDC_BACKEND_NET;
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = o->timeout;
  co.slice_bytes = (size_t)o->slice;
  co.verify = cuda ? SCHEDC_VERIFY_NONE : o->verify; /* with cuda the cuda communicator verifies */
  co.repair = cuda ? 0 : o->repair;
  schedc_status st = cli_comm_launched(net ? SCHEDC_BACKEND_NET : SCHEDC_BACKEND_MPI, &co, &comm);
  if (st != SCHEDC_OK) { fprintf(stderr, "schedc run: %s\n", schedc_errmsg()); return EXIT_USAGE; }
  int n = schedc_comm_nranks(comm), me = schedc_comm_rank(comm), rc = EXIT_REJECTED;
  runctx x = {o, NULL, SCHEDC_PLAN_INFO_INIT, (size_t)o->count, schedc_dtype_size(o->dtype), NULL};
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = n;
  lo.nnodes = o->nodes;
  lo.topology = o->topology;
  lo.defines = o->defines;
  lo.ndefines = o->ndefines;
  if (o->ranks && o->ranks != n) {
    if (me == 0) fprintf(stderr, "schedc run: --ranks %d but %s started %d processes\n", o->ranks, net ? "the launcher" : "MPI", n);
    schedc_comm_free(comm);
    return EXIT_USAGE;
  }
  if (schedc_plan_open(o->file, &lo, &x.plan) != SCHEDC_OK) {
    if (me == 0) fprintf(stderr, "%s\n", schedc_errmsg());
    schedc_comm_free(comm);
    return EXIT_REJECTED;
  }
  schedc_plan_get_info(x.plan, &x.info);
  if ((x.info.collective == SCHEDC_REDUCE_SCATTER || x.info.collective == SCHEDC_ALLGATHER) && x.K % (size_t)n) {
    if (me == 0) fprintf(stderr, "schedc run: --count %lld must be a multiple of %d ranks\n", o->count, n);
    schedc_plan_free(x.plan);
    schedc_comm_free(comm);
    return EXIT_USAGE;
  }
  if (check_io(o, n, x.K, x.esz, me != 0) || compress_refused(o, x.info.collective, me != 0)) { /* every process: all refuse */
    schedc_plan_free(x.plan);
    schedc_comm_free(comm);
    return EXIT_USAGE;
  }
  x.res = calloc((size_t)n, sizeof *x.res);
  if (cuda) run_cuda_over(&x, comm, me);
  else rank_main(&x, comm, me);
  rankres mine = x.res[me];
  st = schedc_allgather(&mine, x.res, sizeof mine / 4, SCHEDC_I32, comm, NULL);
  if (st != SCHEDC_OK) {
    printf("rank %d: error: %s\n", me, mine.status ? mine.err : schedc_errmsg());
  } else if (me == 0) {
    printf("# %s '%s': %s, %d ranks, %d chunks, %lld x %s, op %s, backend %s", o->file, x.info.name,
           schedc_collective_name(x.info.collective), n, x.info.nchunks, o->count, schedc_dtype_name(o->dtype),
           schedc_op_name(o->op), cuda ? "cuda (a process per GPU over MPI)" : net ? "net" : "mpi");
    if (o->wire) printf(", wire %s", schedc_wire_name((schedc_wire)o->wire));
    if (o->topk > 0) printf(", top-k %g", o->topk);
    printf("\n");
    rc = report(&x);
  } else {
    rc = EXIT_OK;
  }
  free(x.res);
  schedc_plan_free(x.plan);
  schedc_comm_free(comm);
  return rc;
}
