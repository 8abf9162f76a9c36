/*
 * test_cuda_verify.c — digest verification on the cuda backend, on the emulated device (run with
 * SCHEDC_CUDA_PLUGIN naming tests/emu's plugin): one process driving every rank (virtual ranks, and one GPU per rank)
 * and a process per GPU (those two where there are 3 devices). A flipped bit in one rank's result (SCHEDC_INJECT=flipout:RANK) is
 * named, or repaired to the bits the test computes itself; clean runs raise no alarm; what this
 * backend cannot check (per-transfer checksums, payload flips) is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "forked.h"
#include "schedc/schedc.h"

enum { R = 3 };

/* Small integers in f32: every order of the sum is exact, so the test's own sum is the answer. */
static float val(int r, size_t i) { return (float)((i * 5 + (size_t)r * 7) % 13); }

/* What rank r must hold after collective `coll` of n elements (per rank for allgather), root 1. */
static float want(schedc_collective coll, size_t i) {
  if (coll == SCHEDC_ALLGATHER) return val((int)(i / 1000), i % 1000); /* n = 1000 per rank */
  if (coll == SCHEDC_BROADCAST) return val(1, i);
  return val(0, i) + val(1, i) + val(2, i);
}

static const schedc_collective colls[] = {SCHEDC_ALLREDUCE, SCHEDC_ALLGATHER, SCHEDC_BROADCAST};

/* Rank r's call of coll: its input copied to the device first. n = 1000 (per rank for allgather). */
static schedc_status issue(schedc_comm *c, int r, schedc_collective coll, void *in, void *out) {
  size_t n = 1000;
  float h[1000];
  for (size_t i = 0; i < n; i++) h[i] = val(r, i);
  if (schedc_cuda_copy(c, in, h, sizeof h) != SCHEDC_OK) return SCHEDC_EINTERNAL;
  switch (coll) {
  case SCHEDC_ALLGATHER: return schedc_allgather(in, out, n, SCHEDC_F32, c, NULL);
  case SCHEDC_BROADCAST: return schedc_broadcast(in, out, n, SCHEDC_F32, 1, c, NULL);
  default: return schedc_allreduce(in, out, n, SCHEDC_F32, SCHEDC_SUM, c, NULL);
  }
}

/* Elements of rank r's result that differ from the test's answer. */
static size_t wrong(schedc_comm *c, schedc_collective coll, void *out) {
  static float h[R * 1000];
  size_t n = coll == SCHEDC_ALLGATHER ? R * 1000 : 1000, bad = 0;
  if (schedc_cuda_copy(c, h, out, n * sizeof(float)) != SCHEDC_OK) return n;
  for (size_t i = 0; i < n; i++) bad += memcmp(&h[i], &(float){want(coll, i)}, sizeof(float)) != 0;
  return bad;
}

static void with_env(const char *inject, const char *repair) {
  if (inject) setenv("SCHEDC_INJECT", inject, 1);
  else unsetenv("SCHEDC_INJECT");
  if (repair) setenv("SCHEDC_REPAIR", repair, 1);
  else unsetenv("SCHEDC_REPAIR");
}

/* ---- one process drives every rank (flags: SCHEDC_CUDA_VIRTUAL or one GPU per rank) ---- */

static schedc_comm *gc[R];
static void *gin[R], *gout[R];

static void up(int flags, const schedc_comm_opts *o) {
  CHECK(schedc_comm_init_cuda(R, NULL, flags, o, gc) == SCHEDC_OK);
  for (int r = 0; r < R; r++)
    CHECK(schedc_cuda_alloc(gc[r], 4 * R * 1000, &gin[r]) == SCHEDC_OK && schedc_cuda_alloc(gc[r], 4 * R * 1000, &gout[r]) == SCHEDC_OK);
}

static void down(void) {
  for (int r = 0; r < R; r++) schedc_cuda_free(gc[r], gin[r]), schedc_cuda_free(gc[r], gout[r]);
  for (int r = 0; r < R; r++) schedc_comm_free(gc[r]);
}

/* allreduce, allgather, broadcast: every call succeeds, every rank holds the test's bits */
static void three_right(void) {
  for (int k = 0; k < 3; k++) {
    for (int r = 0; r < R; r++) CHECK(issue(gc[r], r, colls[k], gin[r], gout[r]) == SCHEDC_OK);
    for (int r = 0; r < R; r++) CHECK(wrong(gc[r], colls[k], gout[r]) == 0);
  }
}

static void one_process(int flags) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = SCHEDC_VERIFY_DIGEST;

  /* clean: no alarm, every collective's bits right (reduce_scatter has no digest, runs as is) */
  with_env(NULL, NULL);
  up(flags, &o);
  three_right();
  for (int r = 0; r < R; r++) CHECK(schedc_reduce_scatter(gin[r], gout[r], 10, SCHEDC_F32, SCHEDC_SUM, gc[r], NULL) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(gc[0]) == SCHEDC_OK);
  down();

  /* the injection is real: without verification rank 1's result has one wrong element */
  with_env("flipout:1", NULL);
  up(flags, NULL);
  for (int r = 0; r < R; r++) CHECK(issue(gc[r], r, SCHEDC_ALLREDUCE, gin[r], gout[r]) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(gc[0]) == SCHEDC_OK);
  CHECK(wrong(gc[0], SCHEDC_ALLREDUCE, gout[0]) == 0 && wrong(gc[1], SCHEDC_ALLREDUCE, gout[1]) == 1 &&
        wrong(gc[2], SCHEDC_ALLREDUCE, gout[2]) == 0);
  down();

  /* digest: the launching call names rank 1; the group is then broken for every rank */
  up(flags, &o);
  CHECK(issue(gc[0], 0, SCHEDC_ALLGATHER, gin[0], gout[0]) == SCHEDC_OK);
  CHECK(issue(gc[1], 1, SCHEDC_ALLGATHER, gin[1], gout[1]) == SCHEDC_OK);
  CHECK(issue(gc[2], 2, SCHEDC_ALLGATHER, gin[2], gout[2]) == SCHEDC_ECORRUPT);
  CHECK_CONTAINS(schedc_errmsg(), "allgather: silent corruption: rank(s) 1 hold a result that differs from the majority (2 of 3 ranks agree");
  CHECK(schedc_cuda_sync(gc[0]) == SCHEDC_EPEER);
  CHECK_CONTAINS(schedc_errmsg(), "silent corruption: rank(s) 1");
  down();

  /* digest and repair (flipout on rank 2): every rank ends with the test's bits */
  with_env("flipout:2", "1");
  up(flags, &o);
  three_right();
  down();
  with_env(NULL, NULL);
}

/* ---- per-transfer checksums, one process ---- */

/* Where flip:SRC:STEP lands, read from the plan by the test: the lowest receiving rank of the
 * transfers out of SRC at STEP (-1: none, the call runs clean). */
static int flip_dst(const schedc_plan *p, int src, int step) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(p, &in);
  int d = -1;
  schedc_transfer t;
  for (long i = 0; i < in.ntransfers && schedc_plan_transfer(p, i, &t) == SCHEDC_OK; i++)
    if (t.src == src && t.step == step && t.dst != src && (d < 0 || t.dst < d)) d = t.dst;
  return d;
}

/* Every (rank, step) of the ring's allreduce flipped in turn: named on the transfer the plan
 * says, or clean where no transfer leaves that rank at that step; with repair, the test's bits. */
static void checksums_one_process(int flags) {
  schedc_plan *plan = NULL;
  CHECK(schedc_plan_builtin(SCHEDC_ALLREDUCE, R, 0, &plan) == SCHEDC_OK);
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = SCHEDC_VERIFY_FULL; /* clean: no alarm from either check */
  with_env(NULL, NULL);
  up(flags, &o);
  three_right();
  down();
  o.verify = SCHEDC_VERIFY_CHECKSUM;
  int named = 0;
  for (int src = 0; src < R; src++)
    for (int step = 0; step <= in.nsteps; step++) {
      char spec[32], want[96];
      snprintf(spec, sizeof spec, "flip:%d:%d", src, step);
      int d = flip_dst(plan, src, step);
      with_env(spec, NULL);
      up(flags, &o);
      schedc_status st = SCHEDC_OK;
      for (int r = 0; r < R; r++) st = issue(gc[r], r, SCHEDC_ALLREDUCE, gin[r], gout[r]);
      if (d < 0) {
        CHECK(st == SCHEDC_OK);
        for (int r = 0; r < R; r++) CHECK(wrong(gc[r], SCHEDC_ALLREDUCE, gout[r]) == 0);
      } else {
        snprintf(want, sizeof want, "the payload rank %d sent to rank %d at step %d", src, d, step);
        CHECK(st == SCHEDC_ECORRUPT);
        CHECK_CONTAINS(schedc_errmsg(), want);
        CHECK(schedc_cuda_sync(gc[0]) == SCHEDC_EPEER);
        CHECK_CONTAINS(schedc_errmsg(), want);
        named++;
      }
      down();
      if (d < 0) continue;
      with_env(spec, "1");
      up(flags, &o);
      three_right();
      down();
    }
  CHECK(named == 2 * (R - 1) * R); /* the ring: every rank sends at every step */
  with_env(NULL, NULL);
  schedc_plan_free(plan);
}

/* ---- a process per GPU ---- */

static schedc_comm *proc_comm(int r, int verify) {
  schedc_comm *c = NULL;
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = verify;
  o.timeout_s = 10;
  CHECK(schedc_comm_init_cuda_rank(r, R, r, job, &o, &c) == SCHEDC_OK);
  return c;
}

/* flipout:1 with digest: every rank's call reports rank 1, call after call (the group stays
 * usable: all ranks saw the same digests); reduce_scatter, without a digest, still runs. */
static void names_rank1(int r) {
  with_env("flipout:1", NULL);
  schedc_comm *c = proc_comm(r, SCHEDC_VERIFY_DIGEST);
  void *in = NULL, *out = NULL;
  CHECK(schedc_cuda_alloc(c, 4 * R * 1000, &in) == SCHEDC_OK && schedc_cuda_alloc(c, 4 * R * 1000, &out) == SCHEDC_OK);
  for (int k = 0; k < 3; k++) {
    CHECK(issue(c, r, colls[k], in, out) == SCHEDC_ECORRUPT);
    CHECK_CONTAINS(schedc_errmsg(), "silent corruption: rank(s) 1 hold a result that differs from the majority (2 of 3 ranks agree");
    CHECK_CONTAINS(schedc_errmsg(), "this rank's is");
    if (r != 1) CHECK(wrong(c, colls[k], out) == 0);
  }
  CHECK(schedc_reduce_scatter(in, out, 10, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(c) == SCHEDC_OK);
  schedc_cuda_free(c, in);
  schedc_cuda_free(c, out);
  schedc_comm_free(c);
}

/* With the given verification, injection and repair settings: every call succeeds and every
 * rank ends with the test's bits. */
static void all_right(int r, int verify, const char *inject, const char *repair) {
  with_env(inject, repair);
  schedc_comm *c = proc_comm(r, verify);
  void *in = NULL, *out = NULL;
  CHECK(schedc_cuda_alloc(c, 4 * R * 1000, &in) == SCHEDC_OK && schedc_cuda_alloc(c, 4 * R * 1000, &out) == SCHEDC_OK);
  for (int k = 0; k < 3; k++) {
    CHECK(issue(c, r, colls[k], in, out) == SCHEDC_OK);
    CHECK(wrong(c, colls[k], out) == 0);
  }
  schedc_cuda_free(c, in);
  schedc_cuda_free(c, out);
  schedc_comm_free(c);
}

/* flipout:2 with digest and repair: repaired, call after call. */
static void repairs_rank2(int r) { all_right(r, SCHEDC_VERIFY_DIGEST, "flipout:2", "1"); }

/* flip:1:2 with checksums: every rank reports the same transfer; with repair (and the digest
 * too: full), the test's bits on every rank. */
static void checksums_procs(int r) {
  schedc_plan *plan = NULL;
  CHECK(schedc_plan_builtin(SCHEDC_ALLREDUCE, R, 0, &plan) == SCHEDC_OK);
  char want[96];
  snprintf(want, sizeof want, "corrupted transfer: the payload rank 1 sent to rank %d at step 2", flip_dst(plan, 1, 2));
  schedc_plan_free(plan);
  with_env("flip:1:2", NULL);
  schedc_comm *c = proc_comm(r, SCHEDC_VERIFY_CHECKSUM);
  void *in = NULL, *out = NULL;
  CHECK(schedc_cuda_alloc(c, 4 * R * 1000, &in) == SCHEDC_OK && schedc_cuda_alloc(c, 4 * R * 1000, &out) == SCHEDC_OK);
  CHECK(issue(c, r, SCHEDC_ALLREDUCE, in, out) == SCHEDC_ECORRUPT);
  CHECK_CONTAINS(schedc_errmsg(), want);
  schedc_cuda_free(c, in);
  schedc_cuda_free(c, out);
  schedc_comm_free(c);
  strcat(job, "-r");
  all_right(r, SCHEDC_VERIFY_FULL, "flip:1:2", "1");
}

/* Over a shm communicator with rank 2 on another (pretend) host: flip:1:2 corrupts what rank 2
 * loads from rank 1, which crossed hosts through (emulated) NCCL; rank 2's host sees it in its
 * failure record, ranks 0 and 1 get it through the host exchange: every rank names the same
 * transfer. With repair and the digest, every rank the test's bits. */
static void checksums_hosts(int r) {
  setenv("SCHEDC_HOST_ID", r < 2 ? "a" : "b", 1);
  schedc_comm *host = NULL;
  CHECK(schedc_comm_init_shm(r, R, job, NULL, &host) == SCHEDC_OK);
  for (int repair = 0; repair < 2; repair++) {
    with_env("flip:1:2", repair ? "1" : NULL);
    schedc_comm *c = NULL;
    schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
    o.verify = repair ? SCHEDC_VERIFY_FULL : SCHEDC_VERIFY_CHECKSUM;
    o.timeout_s = 10;
    CHECK(schedc_comm_init_cuda_over(host, r, &o, &c) == SCHEDC_OK);
    void *in = NULL, *out = NULL;
    CHECK(schedc_cuda_alloc(c, 4 * R * 1000, &in) == SCHEDC_OK && schedc_cuda_alloc(c, 4 * R * 1000, &out) == SCHEDC_OK);
    schedc_status st = issue(c, r, SCHEDC_ALLREDUCE, in, out);
    if (repair) {
      CHECK(st == SCHEDC_OK);
      CHECK(wrong(c, SCHEDC_ALLREDUCE, out) == 0);
    } else {
      CHECK(st == SCHEDC_ECORRUPT);
      CHECK_CONTAINS(schedc_errmsg(), "corrupted transfer: the payload rank 1 sent to rank 2 at step 2");
    }
    schedc_cuda_free(c, in);
    schedc_cuda_free(c, out);
    schedc_comm_free(c);
  }
  with_env(NULL, NULL);
  schedc_comm_free(host);
}

/* A group (job id + suffix) whose rank 0 runs with verify0 and SCHEDC_CUDA_NODES=nodes0 (NULL:
 * unset) and the others with verify and no split: its first call is EMISMATCH naming `what`. */
static void disagrees(int r, const char *suffix, int verify0, int verify, const char *nodes0, const char *what) {
  char saved[64];
  snprintf(saved, sizeof saved, "%s", job);
  strcat(job, suffix);
  if (r == 0 && nodes0) setenv("SCHEDC_CUDA_NODES", nodes0, 1);
  schedc_comm *c = proc_comm(r, r == 0 ? verify0 : verify);
  unsetenv("SCHEDC_CUDA_NODES");
  void *in = NULL, *out = NULL;
  CHECK(schedc_cuda_alloc(c, 4 * R * 1000, &in) == SCHEDC_OK && schedc_cuda_alloc(c, 4 * R * 1000, &out) == SCHEDC_OK);
  CHECK(issue(c, r, SCHEDC_ALLREDUCE, in, out) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), what);
  schedc_cuda_free(c, in);
  schedc_cuda_free(c, out);
  schedc_comm_free(c);
  snprintf(job, sizeof job, "%s", saved);
}

/* Clean, with digest: no alarm. Then groups whose ranks verify or split differently (they would
 * run kernels that do not fit together): EMISMATCH. */
static void clean_then_disagree(int r) {
  all_right(r, SCHEDC_VERIFY_DIGEST, NULL, NULL);
  disagrees(r, "-b", SCHEDC_VERIFY_DIGEST, SCHEDC_VERIFY_NONE, NULL, "disagree on the verification");
  disagrees(r, "-c", SCHEDC_VERIFY_CHECKSUM, SCHEDC_VERIFY_NONE, NULL, "disagree on the verification");
  disagrees(r, "-d", SCHEDC_VERIFY_NONE, SCHEDC_VERIFY_NONE, "2", "disagree on the nodes (SCHEDC_CUDA_NODES)");
}

int main(void) {
  int ndev = schedc_cuda_device_count();
  if (ndev < 1) SKIP_NO_CUDA("no CUDA device (and no SCHEDC_CUDA_PLUGIN)");
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;

  /* what this backend cannot do is refused, saying what it can */
  o.verify = SCHEDC_VERIFY_DIGEST;
  with_env("flip:1:2", NULL);
  CHECK(schedc_comm_init_cuda(R, NULL, SCHEDC_CUDA_VIRTUAL, &o, gc) == SCHEDC_EUNAVAIL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_INJECT flip:1:2 needs checksum verification on the cuda backend");
  with_env("delay:0:100", NULL);
  CHECK(schedc_comm_init_cuda(R, NULL, SCHEDC_CUDA_VIRTUAL, NULL, gc) == SCHEDC_EUNAVAIL);
  CHECK_CONTAINS(schedc_errmsg(), "kill, delay and jitter act at the CPU executor's steps");
  with_env(NULL, NULL);
  CHECK(gc[0] == NULL);

  one_process(SCHEDC_CUDA_VIRTUAL);
  checksums_one_process(SCHEDC_CUDA_VIRTUAL);
  setenv("SCHEDC_CUDA_NODES", "2", 1); /* rank 2 on another node: its payloads and their sums staged */
  checksums_one_process(SCHEDC_CUDA_VIRTUAL);
  unsetenv("SCHEDC_CUDA_NODES");
  if (ndev >= R) { /* a GPU per rank (on a lent machine with one GPU: virtual ranks only) */
    one_process(0);
    checksums_one_process(0);
    CHECK(in_processes(R, checksums_procs));
    CHECK(in_processes(R, names_rank1));
    CHECK(in_processes(R, repairs_rank2));
    CHECK(in_processes(R, clean_then_disagree));
    CHECK(in_processes(R, checksums_hosts));
  } else {
    printf("a GPU per rank and a process per GPU not run: %d device(s), %d needed\n", ndev, R);
  }
  return DONE();
}
