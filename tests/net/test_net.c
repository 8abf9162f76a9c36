/*
 * test_net.c — a backend's ranks as a job runs them (one communicator each, many calls in a row)
 * against the proven order, bit for bit: every rank checks its own result of every call against
 * the independent evaluation (ref.h) of the tree `schedc_plan_order` gives for it, over a sample
 * of the shipped schedules (every collective they build), dtypes, ops, odd and zero counts, in
 * place, and one call large enough for UCX's rendezvous. Then the layout-free orders: rank 0
 * prints the digest of a canonical allreduce (direct, and hierarchical over the layout's hosts,
 * order=canonical) and of an exact one (sum_exact, the communicator's default plan, which follows
 * the layout): the same line for every layout and backend (the script compares them).
 * Usage: test_net SCHEDULES_DIR BACKEND HxR [quick]
 *   HxR     H hosts of R ranks, in blocks (rank r on host r / R)
 *   BACKEND net: forked ranks from a schedc_uid_net id, each pretending to be on its host
 *           (SCHEDC_HOST_ID); threads, shm: the same calls on those backends; env: this process
 *           is one rank (schedc_comm_init_env: a launcher, the cluster or torchrun started it).
 * Exit 0 when every rank's every check passed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../cpu/ref.h"
#include "../plan_load.h"
#include "comm.h" /* env: which backend schedc_comm_init_env chose (c->be->name) */

static const char *g_dir;
static int g_hosts, g_quick;

/* Rank r's input in case k (ref.h's values, some ±0), from a seed every process derives alike. */
static void fill(schedc_dtype t, void *buf, size_t n, uint64_t k, int r) {
  uint64_t x = 0x9e3779b97f4a7c15ull * (k + 1) ^ (uint64_t)(r + 1) * 0xbf58476d1ce4e5b9ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    ref_input(t, buf, i, x, 1);
  }
}

static schedc_plan *load(const char *file, const char *const *extra, int coll, int n, int nodes, int root) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_dir, file);
  return tl_plan_defs(path, coll, n, nodes, extra, root);
}

static schedc_status call(schedc_comm *c, const schedc_plan *p, int coll, int root, schedc_dtype dt, schedc_op op,
                          const void *send, void *recv, size_t count) {
  switch (coll) {
  case SCHEDC_ALLREDUCE: return schedc_allreduce(send, recv, count, dt, op, c, p);
  case SCHEDC_REDUCE_SCATTER: return schedc_reduce_scatter(send, recv, count, dt, op, c, p);
  case SCHEDC_ALLGATHER: return schedc_allgather(send, recv, count, dt, c, p);
  case SCHEDC_BROADCAST: return schedc_broadcast(send, recv, count, dt, root, c, p);
  default: return schedc_reduce(send, recv, count, dt, op, root, c, p);
  }
}

/* One call on this rank, its result checked against the trees (every `stride`-th element). 0: ok. */
static int one_case(schedc_comm *c, const schedc_plan *plan, int coll, int root, schedc_dtype dt, schedc_op op,
                    size_t count, int inplace, size_t stride, uint64_t k, const char *label) {
  int n = schedc_comm_nranks(c), me = schedc_comm_rank(c);
  size_t es = schedc_dtype_size(dt);
  size_t K = coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER ? count * (size_t)n : count;
  size_t incount = coll == SCHEDC_ALLGATHER ? count : K, outcount = coll == SCHEDC_REDUCE_SCATTER ? count : K;
  void **inputs = calloc((size_t)n, sizeof *inputs); /* every rank's K-element view, for the reference */
  char *out = malloc(outcount * es + 1), *mine = malloc(incount * es + 1);
  for (int r = 0; r < n; r++) {
    inputs[r] = calloc(K + 1, es);
    char *at = (char *)inputs[r] + (coll == SCHEDC_ALLGATHER ? (size_t)r * count * es : 0);
    fill(dt, at, incount, k, r);
  }
  memcpy(mine, (char *)inputs[me] + (coll == SCHEDC_ALLGATHER ? (size_t)me * count * es : 0), incount * es);
  memset(out, 0xA5, outcount * es);
  const void *send = mine;
  if (inplace && coll != SCHEDC_REDUCE_SCATTER) { /* the input where the result goes */
    send = out + (coll == SCHEDC_ALLGATHER ? (size_t)me * count * es : 0);
    memcpy((char *)send, mine, incount * es);
  }
  int bad = 0;
  schedc_status st = call(c, plan, coll, root, dt, op, send, out, count);
  if (st != SCHEDC_OK) {
    fprintf(stderr, "%s: rank %d failed: %s\n", label, me, schedc_errmsg());
    bad = 1;
  }
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  char tree[4096];
  unsigned char want[8];
  for (int ch = 0; ch < in.nchunks && !bad && !(coll == SCHEDC_REDUCE && me != root); ch++) {
    if (schedc_plan_order(plan, ch, me, tree, sizeof tree) >= (long)sizeof tree) { bad = 1; break; }
    ref_expr e;
    if (!ref_parse(tree, &e)) { free(e.code); continue; } /* unspecified here */
    size_t lo = (size_t)((unsigned __int128)K * (unsigned)ch / (unsigned)in.nchunks);
    size_t hi = (size_t)((unsigned __int128)K * (unsigned)(ch + 1) / (unsigned)in.nchunks);
    for (size_t i = lo; i < hi && !bad; i += (i + stride < hi || i + 1 == hi) ? stride : hi - 1 - i) {
      ref_eval(&e, dt, op, n, (const void *const *)inputs, i, want);
      size_t oi = coll == SCHEDC_REDUCE_SCATTER ? i - (size_t)me * count : i;
      if (memcmp(out + oi * es, want, es) != 0) {
        fprintf(stderr, "%s: rank %d element %zu (chunk %d, tree %.200s): bits differ\n", label, me, i, ch, tree);
        bad = 1;
      }
    }
    free(e.code);
  }
  for (int r = 0; r < n; r++) free(inputs[r]);
  free(inputs);
  free(out);
  free(mine);
  return bad;
}

/* This rank's part of the sweep; rank 0 writes the layout-free digests into dig. Returns the
 * failures. Every rank makes the same calls in the same order. */
static int rank_body(schedc_comm *c, char *dig, size_t digcap, int *ncases) {
  int n = schedc_comm_nranks(c), me = schedc_comm_rank(c), H = g_hosts, failed = 0;
  enum { AR = 1 << SCHEDC_ALLREDUCE, RS = 1 << SCHEDC_REDUCE_SCATTER, AG = 1 << SCHEDC_ALLGATHER,
         BC = 1 << SCHEDC_BROADCAST, RD = 1 << SCHEDC_REDUCE };
  struct { const char *file; const char *defs[3]; int colls, nodes; } sch[] = {
    {"ring.lua", {NULL}, 0x1f, 0},
    {"ring.lua", {"k=2", "reverse=true", NULL}, AR | RS, 0},
    {"tree.lua", {"chunks=3", NULL}, AR | RD | BC, 0},
    {"tree.lua", {"shape=binomial", "chunks=2", NULL}, AR | RD, 0},
    {"direct.lua", {NULL}, 0x1f, 0},
    {"halving_doubling.lua", {NULL}, AR, 0},
    {"hierarchical.lua", {NULL}, AR | RS | AG, 1},
    {"direct.lua", {"order=canonical", NULL}, AR | RS | RD, 0},
  };
  struct { schedc_dtype dt; schedc_op op; } types[] = {
    {SCHEDC_F32, SCHEDC_SUM}, {SCHEDC_BF16, SCHEDC_AVG}, {SCHEDC_I64, SCHEDC_MIN}, {SCHEDC_F64, SCHEDC_PROD},
    {SCHEDC_F16, SCHEDC_MAX},
  };
  size_t counts[] = {0, 13, 1031};
  uint64_t k = 0;
  for (size_t si = 0; si < sizeof sch / sizeof sch[0]; si++)
    for (int coll = 0; coll < SCHEDC_COLLECTIVE_COUNT_; coll++) {
      if (!(sch[si].colls & (1 << coll))) continue;
      if (sch[si].nodes && (H < 2 || n % H)) continue;
      if (!strcmp(sch[si].file, "halving_doubling.lua") && (n & (n - 1))) continue;
      int root = coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE ? n / 2 : 0;
      schedc_plan *plan = load(sch[si].file, sch[si].defs, coll, n, sch[si].nodes ? H : 0, root);
      if (!plan) {
        fprintf(stderr, "rank %d: cannot load %s: %s\n", me, sch[si].file, schedc_errmsg());
        failed++;
        continue;
      }
      for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        int moves = coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST;
        if (moves != (types[ti].op == SCHEDC_MAX && types[ti].dt == SCHEDC_F16) && ti) continue; /* f32 sum always */
        if (g_quick && ti > 1) continue;
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
          for (int inplace = 0; inplace < (ci == 2 ? 2 : 1); inplace++) {
            char label[256];
            snprintf(label, sizeof label, "%s %s n=%d %s %s %s count=%zu%s", sch[si].file,
                     sch[si].defs[0] ? sch[si].defs[0] : "", n, schedc_collective_name((schedc_collective)coll),
                     schedc_dtype_name(types[ti].dt), schedc_op_name(types[ti].op), counts[ci], inplace ? " inplace" : "");
            (*ncases)++;
            failed += one_case(c, plan, coll, root, types[ti].dt, types[ti].op, counts[ci], inplace, 1, k++, label);
          }
      }
      schedc_plan_free(plan);
    }
  /* large: 4 MiB per rank, through UCX's rendezvous (shared memory and TCP alike); every 97th element checked */
  schedc_plan *ring = load("ring.lua", NULL, SCHEDC_ALLREDUCE, n, 0, 0);
  if (ring) {
    (*ncases)++;
    failed += one_case(c, ring, SCHEDC_ALLREDUCE, 0, SCHEDC_F32, SCHEDC_SUM, (size_t)1 << 20, 0, 97, k++, "ring 4 MiB");
    schedc_plan_free(ring);
  }
  /* layout-free orders: canonical plans, and exact mode under the default plan of the layout */
  size_t cnt = 4099;
  float *in = malloc(cnt * sizeof *in), *out = malloc(cnt * sizeof *out);
  const char *cano[] = {"order=canonical", NULL};
  schedc_plan *direct = load("direct.lua", cano, SCHEDC_ALLREDUCE, n, 0, 0);
  schedc_plan *hier = H > 1 && n % H == 0 ? load("hierarchical.lua", cano, SCHEDC_ALLREDUCE, n, H, 0) : NULL;
  struct { const char *name; const schedc_plan *p; schedc_op op; int need; } lf[] = {
    {"canonical", direct, SCHEDC_SUM, 1}, {"canonical", hier, SCHEDC_SUM, 0}, {"exact", NULL, SCHEDC_SUM_EXACT, 1},
  };
  size_t dl = 0;
  for (size_t i = 0; i < sizeof lf / sizeof lf[0]; i++) {
    if (!lf[i].p && lf[i].need && i < 2) { failed++; continue; }
    if (!lf[i].p && i < 2) continue; /* no hierarchical canonical plan for this layout */
    fill(SCHEDC_F32, in, cnt, 1000 + 0, me); /* the same inputs for every plan: one digest */
    schedc_status st = schedc_allreduce(in, out, cnt, SCHEDC_F32, lf[i].op, c, lf[i].p);
    (*ncases)++;
    if (st != SCHEDC_OK) {
      fprintf(stderr, "%s allreduce: rank %d failed: %s\n", lf[i].name, me, schedc_errmsg());
      failed++;
      continue;
    }
    if (me == 0 && dl < digcap)
      dl += (size_t)snprintf(dig + dl, digcap - dl, "digest %s %016llx\n", lf[i].name,
                             (unsigned long long)schedc_digest(out, cnt * sizeof *out));
  }
  schedc_plan_free(direct);
  schedc_plan_free(hier);
  free(in);
  free(out);
  return failed;
}

/* ---- backends ---- */

typedef struct result { int failed, cases, status; char dig[256], err[256]; } result;

static void as_rank(schedc_comm *c, schedc_status st, result *res) {
  if (st != SCHEDC_OK) {
    res->status = st;
    snprintf(res->err, sizeof res->err, "%s", schedc_errmsg());
    return;
  }
  res->failed = rank_body(c, res->dig, sizeof res->dig, &res->cases);
  schedc_comm_free(c);
}

typedef struct thr { schedc_comm *c; result *res; } thr;
static void *thread_rank(void *a) {
  thr *t = a;
  as_rank(t->c, SCHEDC_OK, t->res);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: test_net SCHEDULES_DIR net|threads|shm|env HxR [quick]\n"); return 2; }
  g_dir = argv[1];
  const char *be = argv[2];
  int R = 0;
  if (sscanf(argv[3], "%dx%d", &g_hosts, &R) != 2 || g_hosts < 1 || R < 1 || g_hosts * R > 64) {
    fprintf(stderr, "test_net: layout '%s': HxR, at most 64 ranks\n", argv[3]);
    return 2;
  }
  g_quick = argc > 4 && !strcmp(argv[4], "quick");
  int n = g_hosts * R;
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 60;
  if (!strcmp(be, "env")) { /* one rank of a job someone else started */
    result res = {0};
    schedc_comm *c = NULL;
    schedc_status st = schedc_comm_init_env(&co, &c);
    if (st == SCHEDC_OK && schedc_comm_nranks(c) != n) {
      fprintf(stderr, "test_net: layout %s but the job has %d ranks\n", argv[3], schedc_comm_nranks(c));
      return 2;
    }
    if (st == SCHEDC_OK) printf("backend %s\n", c->be->name); /* the one schedc_comm_init_env chose */
    as_rank(c, st, &res);
    if (res.status) { fprintf(stderr, "test_net: init: %s\n", res.err); return 1; }
    fputs(res.dig, stdout);
    printf("rank: %d cases, %d failed\n", res.cases, res.failed);
    return res.failed != 0;
  }
  result *res = mmap(NULL, (size_t)n * sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return 1;
  memset(res, 0, (size_t)n * sizeof *res);
  if (!strcmp(be, "threads")) {
    schedc_comm *comms[64];
    pthread_t th[64];
    thr t[64];
    if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) { fprintf(stderr, "init: %s\n", schedc_errmsg()); return 1; }
    for (int r = 0; r < n; r++) t[r] = (thr){comms[r], &res[r]}, pthread_create(&th[r], NULL, thread_rank, &t[r]);
    for (int r = 0; r < n; r++) pthread_join(th[r], NULL);
  } else if (!strcmp(be, "net") || !strcmp(be, "shm")) {
    /* rank 0 makes the id (for net: its process then holds the listener) and hands it to the
     * others through shared memory, as a job hands it round by any means */
    int net = !strcmp(be, "net");
    struct idbox { _Atomic int state; schedc_uid id; char err[256]; } *box =
        mmap(NULL, sizeof *box, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (box == MAP_FAILED) return 1;
    box->state = 0;
    pid_t pids[64];
    fflush(stdout);
    for (int r = 0; r < n; r++) {
      if ((pids[r] = fork()) == 0) {
        char hid[32];
        snprintf(hid, sizeof hid, "testhost%d", r / R);
        setenv("SCHEDC_HOST_ID", hid, 1);
        if (r == 0) {
          schedc_status st = net ? schedc_uid_net(&box->id) : schedc_unique_id(&box->id);
          if (st != SCHEDC_OK) snprintf(box->err, sizeof box->err, "%s", schedc_errmsg());
          box->state = st == SCHEDC_OK ? 1 : st == SCHEDC_EUNAVAIL ? 3 : 2;
        }
        for (int k = 0; k < 30000 && box->state == 0; k++) usleep(1000);
        if (box->state != 1) _exit(0);
        schedc_comm *c = NULL;
        as_rank(c, net ? schedc_comm_init_net(r, n, &box->id, &co, &c) : schedc_comm_init_shm_uid(r, n, &box->id, &co, &c),
                &res[r]);
        _exit(0);
      }
    }
    for (int r = 0; r < n; r++) {
      int ws = 0;
      waitpid(pids[r], &ws, 0);
      if (!WIFEXITED(ws) && !res[r].status) res[r].status = -1, snprintf(res[r].err, sizeof res[r].err, "died");
    }
    if (box->state == 3) SKIP_TOOL("UCX", "this build has no net backend (Debian: libucx-dev)");
    if (box->state != 1) {
      fprintf(stderr, "id: %s\n", box->err);
      return 1;
    }
  } else {
    fprintf(stderr, "test_net: backend '%s' (net, threads, shm, env)\n", be);
    return 2;
  }
  int cases = 0, failed = 0;
  for (int r = 0; r < n; r++) {
    if (res[r].status) { fprintf(stderr, "rank %d: %s\n", r, res[r].err); failed++; }
    cases += res[r].cases;
    failed += res[r].failed;
  }
  fputs(res[0].dig, stdout);
  printf("%s %s: %d calls checked on %d ranks, %d failed\n", be, argv[3], cases, n, failed);
  CHECK(failed == 0);
  CHECK(cases > 50 * n);
  munmap(res, (size_t)n * sizeof *res);
  return DONE();
}
