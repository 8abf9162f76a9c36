/*
 * test_bitwise.c — the runtime against the proven order, bit for bit. For shipped schedules
 * (every collective they support) at 1..9 ranks, all dtypes and ops, odd and zero counts, in
 * place and out of place, and several slice sizes, every rank's output must equal the
 * independent evaluation (ref.h) of the tree `schedc show --order` prints for that rank.
 * Mode `flips`: with SCHEDC_VERIFY=full, a bit flipped in the payload of every transfer step of
 * every rank (SCHEDC_INJECT=flip:R:S:BIT) must fail the call on every rank naming the sender,
 * the receiver and the step (found here from the plan's transfer list); with repair, every rank
 * must end with the reference bits. Mode `verified`: the quick sweep with SCHEDC_VERIFY=full
 * (every clean call checked: no false alarm).
 * Modes `cuda` (virtual ranks on one GPU), `cuda-devices` (a GPU per rank, one process) and
 * `cuda-procs` (a forked process per GPU, buffers shared by CUDA IPC): the cuda backend's
 * generated kernels on the same sweep ([SKIP] without a device; the emulated GPU, SCHEDC_CUDA_PLUGIN
 * set to tests/emu's plugin, runs them on the host, on a smaller sweep since every kernel set is a
 * C++ compile). `cuda-hosts`: a
 * process per GPU over a CPU communicator (schedc_comm_init_cuda_over), the ranks pretending to
 * be on two hosts (SCHEDC_HOST_ID: the first half on one): IPC within a host, NCCL between.
 * A last argument `part=K/M` runs the K-th of M interleaved parts of the sweep's (ranks, schedule,
 * collective) configurations (in `flips`: of the injected flips), each with every dtype, op, count
 * and layout it has: every rank count and schedule still runs. The emulated modes that vary one path of the full `cuda` and
 * `cuda-devices` sweeps (processes, hosts, nodes, NCCL, verification) run a part, paying for the
 * kernels of that part only (each distinct kernel is a host compile); so do the CPU sweeps in the
 * ASan tree, whose release runs are whole (tests/README.md, "Where the time goes").
 * Usage: test_bitwise SCHEDULES_DIR [quick|shm|flips|verified|cuda|cuda-devices|cuda-procs|cuda-hosts] [part=K/M]
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "ref.h"

typedef struct job {
  schedc_comm *comm;
  const schedc_plan *plan;
  int coll, root;
  schedc_dtype dt;
  schedc_op op;
  size_t count;
  int inplace;
  void *in, *out;
  schedc_status st;
  char err[512];
} job;

/* The call itself, on whatever buffers the backend takes. */
static void call(job *j, const void *send, void *recv) {
  switch (j->coll) {
  case SCHEDC_ALLREDUCE: j->st = schedc_allreduce(send, recv, j->count, j->dt, j->op, j->comm, j->plan); break;
  case SCHEDC_REDUCE_SCATTER: j->st = schedc_reduce_scatter(send, recv, j->count, j->dt, j->op, j->comm, j->plan); break;
  case SCHEDC_ALLGATHER: j->st = schedc_allgather(send, recv, j->count, j->dt, j->comm, j->plan); break;
  case SCHEDC_BROADCAST: j->st = schedc_broadcast(send, recv, j->count, j->dt, j->root, j->comm, j->plan); break;
  default: j->st = schedc_reduce(send, recv, j->count, j->dt, j->op, j->root, j->comm, j->plan); break;
  }
  if (j->st) snprintf(j->err, sizeof j->err, "%s", schedc_errmsg());
}

/* In place: the offset of the input inside the output buffer (*ok = 0: not in place). */
static size_t inplace_offset(const job *j, int r, int *ok) {
  size_t es = schedc_dtype_size(j->dt);
  *ok = j->inplace && j->coll != SCHEDC_REDUCE_SCATTER;
  return j->coll == SCHEDC_ALLGATHER ? (size_t)r * j->count * es : 0;
}

static void *run_rank(void *arg) {
  job *j = arg;
  size_t es = schedc_dtype_size(j->dt);
  int r = schedc_comm_rank(j->comm), inplace;
  size_t off = inplace_offset(j, r, &inplace);
  const void *send = j->in;
  if (inplace) {
    send = (char *)j->out + off;
    memcpy((char *)send, j->in, j->count * es);
  }
  call(j, send, j->out);
  return NULL;
}

/* The cuda backend: device buffers, every rank's call issued from this thread, one sync. */
static void run_cuda(job *jobs, int n, size_t inbytes, size_t outbytes) {
  void *din[64], *dout[64];
  for (int r = 0; r < n; r++) {
    job *j = &jobs[r];
    CHECK(schedc_cuda_alloc(j->comm, inbytes + 16, &din[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_alloc(j->comm, outbytes + 16, &dout[r]) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(j->comm, din[r], j->in, inbytes) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(j->comm, dout[r], j->out, outbytes) == SCHEDC_OK);
  }
  for (int r = 0; r < n; r++) {
    job *j = &jobs[r];
    int inplace;
    size_t off = inplace_offset(j, schedc_comm_rank(j->comm), &inplace);
    const void *send = din[r];
    if (inplace) {
      send = (char *)dout[r] + off;
      CHECK(schedc_cuda_copy(j->comm, (char *)send, j->in, j->count * schedc_dtype_size(j->dt)) == SCHEDC_OK);
    }
    call(j, send, dout[r]);
  }
  schedc_status st = schedc_cuda_sync(jobs[0].comm);
  for (int r = 0; r < n; r++) {
    if (st != SCHEDC_OK && jobs[r].st == SCHEDC_OK) {
      jobs[r].st = st;
      snprintf(jobs[r].err, sizeof jobs[r].err, "sync: %s", schedc_errmsg());
    }
    CHECK(schedc_cuda_copy(jobs[r].comm, jobs[r].out, dout[r], outbytes) == SCHEDC_OK);
    schedc_cuda_free(jobs[r].comm, din[r]);
    schedc_cuda_free(jobs[r].comm, dout[r]);
  }
}

static int use_shm; /* ranks are forked processes on the shm backend */
static int use_cuda; /* 1: cuda virtual ranks on one device; 2: a device per rank; 3: a process per device */
static int use_hosts; /* cuda-hosts: the process per device over a shm communicator, on two pretend hosts */
static int use_procs; /* ranks are forked processes (shm, or cuda with a process per device) */
static size_t shm_slice;
static int g_verify, g_repair;     /* comm options of the flips / verified modes */
static const char *expect_err;     /* non-NULL: every rank must fail with ECORRUPT and this text */
static int case_no;

/* shm or a process per GPU: every rank a forked child with its own communicator; outputs come
 * back through a shared mapping. Returns after all children exit. */
static void run_processes(job *jobs, int n, size_t inbytes, size_t outbytes) {
  char *shared = mmap(NULL, (size_t)n * (outbytes + 8 + 512), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  char jobid[64];
  snprintf(jobid, sizeof jobid, "bw%d-%d", (int)getpid(), case_no++);
  pid_t *pids = calloc((size_t)n, sizeof *pids);
  for (int r = 0; r < n; r++) {
    pid_t p = fork();
    if (p == 0) {
      schedc_comm *comm;
      schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
      co.timeout_s = 60;
      co.slice_bytes = shm_slice;
      co.verify = g_verify;
      co.repair = g_repair;
      schedc_comm *host = NULL;
      schedc_status st = SCHEDC_OK;
      if (use_hosts) {
        char hid[16];
        snprintf(hid, sizeof hid, "host%d", 2 * r / n);
        setenv("SCHEDC_HOST_ID", hid, 1);
        schedc_comm_opts ho = SCHEDC_COMM_OPTS_INIT;
        ho.timeout_s = 60;
        if ((st = schedc_comm_init_shm(r, n, jobid, &ho, &host)) == SCHEDC_OK)
          st = schedc_comm_init_cuda_over(host, r, &co, &comm);
      } else {
        st = use_cuda ? schedc_comm_init_cuda_rank(r, n, r, jobid, &co, &comm)
                      : schedc_comm_init_shm(r, n, jobid, &co, &comm);
      }
      char *mine = shared + (size_t)r * (outbytes + 8 + 512);
      if (st == SCHEDC_OK) {
        jobs[r].comm = comm;
        if (use_cuda) run_cuda(&jobs[r], 1, inbytes, outbytes);
        else run_rank(&jobs[r]);
        st = jobs[r].st;
        if (st == SCHEDC_OK && tc_fail) { /* a CHECK failed in this child: its counts stay here */
          st = SCHEDC_EINTERNAL;
          snprintf(jobs[r].err, sizeof jobs[r].err, "a CHECK failed in rank %d's process (see stderr)", r);
        }
        memcpy(mine + 8 + 512, jobs[r].out, outbytes);
        schedc_comm_free(comm);
      }
      schedc_comm_free(host); /* after the communicator that borrows it */
      memcpy(mine, &st, sizeof st);
      snprintf(mine + 8, 512, "%s", jobs[r].err[0] ? jobs[r].err : schedc_errmsg());
      _exit(0);
    }
    pids[r] = p;
  }
  for (int r = 0; r < n; r++) waitpid(pids[r], NULL, 0);
  for (int r = 0; r < n; r++) {
    char *mine = shared + (size_t)r * (outbytes + 8 + 512);
    memcpy(&jobs[r].st, mine, sizeof jobs[r].st);
    snprintf(jobs[r].err, sizeof jobs[r].err, "%s", mine + 8);
    memcpy(jobs[r].out, mine + 8 + 512, outbytes);
  }
  free(pids);
  munmap(shared, (size_t)n * (outbytes + 8 + 512));
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

/* Inputs: mostly values of varied magnitude (so association matters), some ±0, inf, NaN. */
static void fill(schedc_dtype t, void *buf, size_t n, int specials) {
  for (size_t i = 0; i < n; i++) ref_input(t, buf, i, next(), specials ? 3 : 0);
}

static int mismatches_shown;

/* One collective call on all ranks; compares every defined element. Returns 0 if all match. */
static int run_case(schedc_comm **comms, int n, const schedc_plan *plan, int coll, int root, schedc_dtype dt,
                    schedc_op op, size_t count, int inplace, const char *label) {
  size_t es = schedc_dtype_size(dt);
  size_t K = coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER ? count * (size_t)n : count;
  size_t incount = coll == SCHEDC_ALLGATHER ? count : K, outcount = coll == SCHEDC_REDUCE_SCATTER ? count : K;
  job *jobs = calloc((size_t)n, sizeof *jobs);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  void **inputs = calloc((size_t)n, sizeof *inputs); /* full K-element view for the reference */
  int specials = dt == SCHEDC_F32 || dt == SCHEDC_F64;
  for (int r = 0; r < n; r++) {
    jobs[r] = (job){comms[r], plan, coll, root, dt, op, count, inplace, malloc(incount * es + 1), malloc(outcount * es + 1), 0, ""};
    fill(dt, jobs[r].in, incount, specials);
    memset(jobs[r].out, 0xA5, outcount * es);
    inputs[r] = calloc(K + 1, es);
    if (coll == SCHEDC_ALLGATHER) memcpy((char *)inputs[r] + (size_t)r * count * es, jobs[r].in, count * es);
    else memcpy(inputs[r], jobs[r].in, K * es);
  }
  if (use_procs) {
    run_processes(jobs, n, incount * es, outcount * es);
  } else if (use_cuda) {
    run_cuda(jobs, n, incount * es, outcount * es);
  } else {
    for (int r = 0; r < n; r++) pthread_create(&th[r], NULL, run_rank, &jobs[r]);
    for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  }
  int bad = 0;
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  char tree[4096];
  unsigned char want[8];
  for (int r = 0; r < n && expect_err && !bad; r++)
    if (jobs[r].st != SCHEDC_ECORRUPT || !strstr(jobs[r].err, expect_err)) {
      fprintf(stderr, "%s: rank %d: expected SCHEDC_ECORRUPT with \"%s\", got status %d: %s\n", label, r, expect_err,
              (int)jobs[r].st, jobs[r].err);
      bad = 1;
    }
  for (int r = 0; r < n && !bad && !expect_err; r++) {
    if (jobs[r].st != SCHEDC_OK) {
      fprintf(stderr, "%s: rank %d failed: %s\n", label, r, jobs[r].err);
      bad = 1;
      break;
    }
    if (coll == SCHEDC_REDUCE && r != root) continue;
    for (int c = 0; c < in.nchunks && !bad; c++) {
      if (schedc_plan_order(plan, c, r, tree, sizeof tree) >= (long)sizeof tree) { bad = 1; break; }
      ref_expr e;
      if (!ref_parse(tree, &e)) { free(e.code); continue; }
      size_t lo = (size_t)((unsigned __int128)K * (unsigned)c / (unsigned)in.nchunks);
      size_t hi = (size_t)((unsigned __int128)K * (unsigned)(c + 1) / (unsigned)in.nchunks);
      for (size_t i = lo; i < hi; i++) {
        ref_eval(&e, dt, op, n, (const void *const *)inputs, i, want);
        size_t oi = coll == SCHEDC_REDUCE_SCATTER ? i - (size_t)r * count : i;
        if (memcmp((char *)jobs[r].out + oi * es, want, es) != 0) {
          if (mismatches_shown++ < 5)
            fprintf(stderr, "%s: rank %d element %zu (chunk %d, tree %s): bits differ (got %02x%02x, want %02x%02x)\n", label, r, i, c, tree, ((unsigned char *)jobs[r].out)[oi * es + es - 1], ((unsigned char *)jobs[r].out)[oi * es + es - 2], want[es - 1], want[es - 2]);
          bad = 1;
          break;
        }
      }
      free(e.code);
    }
  }
  for (int r = 0; r < n; r++) { free(jobs[r].in); free(jobs[r].out); free(inputs[r]); }
  free(jobs); free(th); free(inputs);
  return bad;
}

static const char *coll_str(int c) { return schedc_collective_name((schedc_collective)c); }

static schedc_plan *load(const char *dir, const char *file, const char *const *extra, int coll, int n, int nodes) {
  char path[4096], cdef[64], rdef[32];
  int root = coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE ? n / 2 : 0;
  snprintf(path, sizeof path, "%s/%s", dir, file);
  snprintf(cdef, sizeof cdef, "collective=%s", coll_str(coll));
  snprintf(rdef, sizeof rdef, "root=%d", root);
  const char *defs[8];
  int nd = 0;
  for (int k = 0; extra[k]; k++) defs[nd++] = extra[k];
  defs[nd++] = cdef;
  defs[nd++] = rdef;
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = n;
  lo.nnodes = nodes;
  lo.defines = defs;
  lo.ndefines = nd;
  schedc_plan *plan = NULL;
  if (schedc_plan_from_script(path, &lo, &plan) != SCHEDC_OK)
    fprintf(stderr, "cannot load %s n=%d %s: %s\n", file, n, cdef, schedc_errmsg());
  return plan;
}

/* The receiver of the transfer a flip of (src, step) lands on: the lowest receiving rank. */
static int flip_receiver(const schedc_plan *plan, int src, int step) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  int dst = -1;
  for (long i = 0; i < in.ntransfers; i++) {
    schedc_transfer t;
    schedc_plan_transfer(plan, i, &t);
    if (t.src == src && t.step == step && (dst < 0 || t.dst < dst)) dst = t.dst;
  }
  return dst;
}

/* part=K/M, the last argument: the configurations c with c % M == K (flips: the injected flips) */
static int part_k = 0, part_m = 1;

static int flips(const char *dir) {
  enum { AR = 1 << SCHEDC_ALLREDUCE, RS = 1 << SCHEDC_REDUCE_SCATTER, AG = 1 << SCHEDC_ALLGATHER,
         BC = 1 << SCHEDC_BROADCAST, RD = 1 << SCHEDC_REDUCE };
  struct { const char *file; const char *defs[3]; int nodes, colls; } sch[] = {
    {"ring.lua", {NULL}, 0, 0x1f}, {"tree.lua", {NULL}, 0, AR | BC | RD},
    {"tree.lua", {"shape=binomial", NULL}, 0, AR | RD}, {"direct.lua", {NULL}, 0, 0x1f},
    {"halving_doubling.lua", {NULL}, 0, AR}, {"halving_doubling.lua", {NULL}, 0, RS | AG},
    {"hierarchical.lua", {NULL}, 2, AR | RS | AG},
  };
  int cases = 0, failed = 0, detected = 0;
  static char env[64], want[160];
  for (size_t si = 0; si < sizeof sch / sizeof sch[0]; si++)
    for (int n = 3; n <= 4; n++)
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if ((sch[si].nodes && n % 2) || !(sch[si].colls & (1 << coll))) continue;
        if (sch[si].colls == (RS | AG) && n != 4) continue; /* powers of two only */
        schedc_plan *plan = load(dir, sch[si].file, sch[si].defs, coll, n, sch[si].nodes);
        if (!plan) continue; /* a collective this schedule does not build */
        schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
        schedc_plan_get_info(plan, &in);
        int root = coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE ? n / 2 : 0;
        for (int r = 0; r < n; r++)
          for (int step = 0; step < in.nsteps; step++) {
            if ((r + step + coll + (int)si) % part_m != part_k) continue; /* a checkerboard: every rank, every step */
            int dst = flip_receiver(plan, r, step);
            unsigned bit = (unsigned)(r * 977 + step * 131 + coll * 29) % 4096;
            snprintf(env, sizeof env, "flip:%d:%d:%u", r, step, bit);
            setenv("SCHEDC_INJECT", env, 1);
            snprintf(want, sizeof want, "the payload rank %d sent to rank %d at step %d ", r, dst, step);
            for (int repair = 0; repair < 2; repair++) {
              char label[256];
              snprintf(label, sizeof label, "%s %s n=%d %s %s%s", sch[si].file, sch[si].defs[0] ? sch[si].defs[0] : "",
                       n, coll_str(coll), env, repair ? " repair" : "");
              schedc_comm *comms[16];
              schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
              co.timeout_s = 60;
              co.verify = SCHEDC_VERIFY_FULL;
              co.repair = repair;
              if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { failed++; continue; }
              expect_err = dst >= 0 && !repair ? want : NULL;
              cases++;
              detected += expect_err != NULL;
              schedc_dtype dt = (r + step) % 3 == 2 ? SCHEDC_BF16 : SCHEDC_F32;
              if (run_case(comms, n, plan, coll, root, dt, SCHEDC_SUM, 1031, 0, label)) failed++;
              expect_err = NULL;
              for (int k = 0; k < n; k++) schedc_comm_free(comms[k]);
            }
          }
        schedc_plan_free(plan);
      }
  unsetenv("SCHEDC_INJECT");
  printf("flips: %d cases (%d flips to detect; part %d of %d), %d failed\n", cases, detected, part_k, part_m, failed);
  CHECK(failed == 0);
  CHECK(detected > 200 / part_m);
  return DONE();
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_bitwise SCHEDULES_DIR [MODE] [part=K/M]\n"); return 2; }
  if (argc > 2 && !strncmp(argv[argc - 1], "part=", 5)) {
    if (sscanf(argv[argc - 1], "part=%d/%d", &part_k, &part_m) != 2 || part_m < 1 || part_k < 0 || part_k >= part_m) {
      fprintf(stderr, "test_bitwise: bad argument '%s' (part=K/M, 0 <= K < M)\n", argv[argc - 1]);
      return 2;
    }
    argc--;
  }
  int quick = argc > 2 && !strcmp(argv[2], "quick");
  SKIP_NO_SIMD();
  use_shm = argc > 2 && !strcmp(argv[2], "shm");
  if (argc > 2 && !strcmp(argv[2], "flips")) return flips(argv[1]);
  if (argc > 2 && !strcmp(argv[2], "verified")) { quick = 1; g_verify = SCHEDC_VERIFY_FULL; }
  if (use_shm) quick = 1;
  use_cuda = argc > 2 && !strcmp(argv[2], "cuda") ? 1 : argc > 2 && !strcmp(argv[2], "cuda-devices") ? 2
             : argc > 2 && (!strcmp(argv[2], "cuda-procs") || !strcmp(argv[2], "cuda-hosts")) ? 3 : 0;
  use_hosts = argc > 2 && !strcmp(argv[2], "cuda-hosts");
  use_procs = use_shm || use_cuda == 3;
  int emulated = getenv("SCHEDC_CUDA_PLUGIN") && *getenv("SCHEDC_CUDA_PLUGIN"); /* tests/emu/ */
  int ndev = use_cuda ? schedc_cuda_device_count() : 0;
  if (use_cuda && ndev < (use_cuda >= 2 ? 2 : 1))
    SKIP_NO_CUDA(use_cuda >= 2 ? "no CUDA devices (the emulator plugin, SCHEDC_CUDA_PLUGIN, runs the kernels on the host)"
                               : "no CUDA device (the emulator plugin, SCHEDC_CUDA_PLUGIN, runs the kernels on the host)");
  if (use_cuda) quick = 1;
  int config = -1;
  struct { const char *file; const char *defs[3]; int colls; int nodes2; } sch[] = {
    {"ring.lua", {NULL}, 0x1f, 0},
    {"ring.lua", {"k=2", "reverse=true", NULL}, 0x1f, 0},
    {"tree.lua", {"chunks=3", NULL}, (1 << SCHEDC_ALLREDUCE) | (1 << SCHEDC_REDUCE) | (1 << SCHEDC_BROADCAST), 0},
    {"tree.lua", {"shape=binomial", "chunks=2", NULL}, (1 << SCHEDC_ALLREDUCE) | (1 << SCHEDC_REDUCE), 0},
    {"direct.lua", {NULL}, 0x1f, 0},
    {"halving_doubling.lua", {NULL}, 1 << SCHEDC_ALLREDUCE, 0},
    {"hierarchical.lua", {NULL}, (1 << SCHEDC_ALLREDUCE) | (1 << SCHEDC_REDUCE_SCATTER) | (1 << SCHEDC_ALLGATHER), 1},
    {"direct.lua", {"order=canonical", NULL}, (1 << SCHEDC_ALLREDUCE) | (1 << SCHEDC_REDUCE_SCATTER) | (1 << SCHEDC_REDUCE), 0},
    {"hierarchical.lua", {"order=canonical", NULL}, (1 << SCHEDC_ALLREDUCE) | (1 << SCHEDC_REDUCE_SCATTER), 1},
  };
  size_t counts[] = {0, 1, 13, 1031};
  size_t slices[] = {256, 4096, 1 << 20};
  int cases = 0, failed = 0;
  for (int n = 1; n <= (quick ? 5 : 9) && (use_cuda < 2 || n <= ndev); n++) {
    for (size_t si = 0; si < sizeof sch / sizeof sch[0]; si++) {
      if (sch[si].nodes2 && n % 2) continue;
      if (sch[si].nodes2 && sch[si].defs[0] && ((n / 2) & (n / 2 - 1))) continue; /* canonical: aligned power-of-two nodes */
      for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
        if (!(sch[si].colls & (1 << coll))) continue;
        if (++config % part_m != part_k) continue;
        int root = coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE ? n / 2 : 0;
        char path[4096], cdef[64], rdef[32];
        snprintf(path, sizeof path, "%s/%s", argv[1], sch[si].file);
        snprintf(cdef, sizeof cdef, "collective=%s", coll_str(coll));
        snprintf(rdef, sizeof rdef, "root=%d", root);
        const char *defs[6];
        int nd = 0;
        for (int k = 0; sch[si].defs[k]; k++) defs[nd++] = sch[si].defs[k];
        defs[nd++] = cdef;
        defs[nd++] = rdef;
        schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
        lo.nranks = n;
        lo.nnodes = sch[si].nodes2 ? 2 : 0;
        lo.defines = defs;
        lo.ndefines = nd;
        schedc_plan *plan;
        if (schedc_plan_from_script(path, &lo, &plan) != SCHEDC_OK) {
          fprintf(stderr, "cannot load %s n=%d %s: %s\n", sch[si].file, n, cdef, schedc_errmsg());
          failed++;
          continue;
        }
        for (size_t sl = 0; sl < sizeof slices / sizeof slices[0]; sl++) {
          schedc_comm *comms[16];
          schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
          co.slice_bytes = shm_slice = slices[sl];
          co.timeout_s = 60;
          co.verify = g_verify;
          if (use_shm && sl == 2) continue;
          if (use_cuda && sl > 0) continue; /* no slices on the GPU: blocks split the chunks */
          if (use_cuda && !use_procs) CHECK(schedc_comm_init_cuda(n, NULL, use_cuda == 1 ? SCHEDC_CUDA_VIRTUAL : 0, &co, comms) == SCHEDC_OK);
          else if (!use_procs) CHECK(schedc_comm_init_threads(n, &co, comms) == SCHEDC_OK);
          for (int dt = 0; dt < SCHEDC_DTYPE_COUNT_; dt++) {
            int reduction = coll != SCHEDC_ALLGATHER && coll != SCHEDC_BROADCAST;
            for (int op = 0; op < (reduction ? SCHEDC_OP_COUNT_ : 1); op++) {
              /* every op for f32, bf16 and i32; sum and max elsewhere; one slice size for the rest */
              if (op != SCHEDC_SUM && op != SCHEDC_MAX && dt != SCHEDC_F32 && dt != SCHEDC_BF16 && dt != SCHEDC_I32) continue;
              if (sl > 0 && (dt != SCHEDC_F32 || op != SCHEDC_SUM)) continue;
              int subset = (dt == SCHEDC_F32 && op == SCHEDC_SUM) || (dt == SCHEDC_BF16 && op == SCHEDC_AVG) ||
                           (dt == SCHEDC_I64 && op == SCHEDC_MIN) || (dt == SCHEDC_F16 && !reduction);
              if (use_shm && !subset) continue;
              /* cuda: every (plan, dtype, op) is a compile (NVRTC, or the host compiler when
               * emulated): f32 sum everywhere, the subset on ring and direct at 3 ranks, and on
               * a real GPU every dtype and op on the ring at 4 ranks */
              if (use_cuda && !(dt == SCHEDC_F32 && op == SCHEDC_SUM) && !(subset && n == 3 && (si == 0 || si == 4)) &&
                  !(!emulated && n == 4 && si == 0))
                continue;
              for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
                for (int inplace = 0; inplace < 2; inplace++) {
                  if (inplace && ci != 3) continue;
                  if (use_shm && ci < 2 && n > 2) continue;
                  char label[256];
                  snprintf(label, sizeof label, "%s %s n=%d %s %s %s count=%zu slice=%zu%s", sch[si].file,
                           sch[si].defs[0] ? sch[si].defs[0] : "", n, coll_str(coll),
                           schedc_dtype_name((schedc_dtype)dt), schedc_op_name((schedc_op)op), counts[ci], slices[sl],
                           inplace ? " inplace" : "");
                  cases++;
                  if (run_case(comms, n, plan, coll, root, (schedc_dtype)dt, (schedc_op)op, counts[ci], inplace, label)) failed++;
                }
              }
            }
          }
          if (!use_procs) for (int r = 0; r < n; r++) schedc_comm_free(comms[r]);
        }
        schedc_plan_free(plan);
      }
    }
  }
  printf("bitwise: %d cases (part %d of %d), %d failed\n", cases, part_k, part_m, failed);
  CHECK(failed == 0);
  CHECK(cases > 100 / part_m);
  return DONE();
}
