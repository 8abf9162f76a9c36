/*
 * test_shortcuts.c — the executor's shortcuts around the working buffer (runtime/cpu/exec.c:
 * own cells read in the send buffer, unread result versions written straight into the receive
 * buffer) on plans whose cells move between the three places in unusual orders (tests/cpu/plans):
 * i32 sums, exact whatever the order, so any value read from the wrong place shows. Every
 * combination of in place / out of place, plain / schedc_mem_alloc buffers and SCHEDC_VERIFY
 * none / checksum / full, on shm processes; and reduce_scatter with recv == send (the layout that
 * broke the first version of the shortcuts: rank 1's block landed on send's block 0 while rank 1
 * still had to read it) on threads. Under digest verification the executor hashes the slices it
 * writes into the receive buffer and the copy out the rest: the digest so composed must equal the
 * sliced digest of the final receive buffer read afresh (sc_sliced_digest). All on the plan path
 * (SCHEDC_SMALL=0: small counts would take the small-message path). Usage: test_shortcuts PLANS_DIR
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "comm.h" /* the digest the call took (sc_coll_verified's sc_result) */
#include "schedc/schedc.h"

enum { N = 3, REPS = 3 };

static schedc_plan *load(const char *dir, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = N;
  schedc_plan *p = NULL;
  if (schedc_plan_from_script(path, &lo, &p) != SCHEDC_OK) fprintf(stderr, "%s: %s\n", path, schedc_errmsg());
  return p;
}

static int32_t input(int r, size_t i, int it) { return (int32_t)(r * 100000 + (int)i * 7 + it); }

/* One shm rank: REPS allreduces of `count` i32; the exit status is the number of wrong elements
 * (capped), 100+ for a failed call. mode bit 0: in place; bit 1: schedc_mem_alloc buffers. */
static int shm_rank(const schedc_plan *plan, int r, const char *job, size_t count, int mode, int verify) {
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.slice_bytes = 256; /* several slices per chunk */
  co.timeout_s = 30;
  co.verify = verify;
  schedc_comm *c;
  if (schedc_comm_init_shm(r, N, job, &co, &c) != SCHEDC_OK) { fprintf(stderr, "init: %s\n", schedc_errmsg()); return 101; }
  size_t bytes = count * 4 + 64;
  int32_t *send, *recv;
  void *a = NULL, *b = NULL;
  if (mode & 2) {
    if (schedc_mem_alloc(c, bytes, &a) != SCHEDC_OK || schedc_mem_alloc(c, bytes, &b) != SCHEDC_OK) return 103;
  } else {
    a = malloc(bytes);
    b = malloc(bytes);
  }
  send = a;
  recv = mode & 1 ? send : b;
  int bad = 0;
  for (int it = 0; it < REPS && bad < 99; it++) {
    for (size_t i = 0; i < count; i++) send[i] = input(r, i, it);
    if (!(mode & 1)) memset(recv, 0xab, count * 4);
    sc_result res;
    if (sc_coll_verified(c, SCHEDC_ALLREDUCE, send, recv, count, SCHEDC_I32, SCHEDC_SUM, 0, plan, &res) != SCHEDC_OK) {
      fprintf(stderr, "rank %d: %s\n", r, schedc_errmsg());
      return 102;
    }
    for (size_t i = 0; i < count; i++) {
      int64_t want = 0;
      for (int q = 0; q < N; q++) want += input(q, i, it);
      if (recv[i] != (int32_t)want && bad++ == 0)
        fprintf(stderr, "rank %d call %d element %zu: got %d, want %lld\n", r, it, i, recv[i], (long long)want);
      if (!(mode & 1) && send[i] != input(r, i, it) && bad++ == 0) /* out of place: send untouched */
        fprintf(stderr, "rank %d call %d: send[%zu] was changed\n", r, it, i);
    }
    if ((verify == SCHEDC_VERIFY_DIGEST || verify == SCHEDC_VERIFY_FULL) &&
        (res.dsl.K != count || res.digest != sc_sliced_digest(recv, &res.dsl)) && bad++ == 0)
      fprintf(stderr, "rank %d call %d: the digest taken in pieces (%016llx, %zu elements) is not the sliced digest "
              "of the result (%016llx)\n", r, it, (unsigned long long)res.digest, res.dsl.K,
              (unsigned long long)sc_sliced_digest(recv, &res.dsl));
  }
  if (!(mode & 2)) { free(a); free(b); }
  schedc_comm_free(c);
  return bad > 99 ? 99 : bad;
}

static void shm_sweep(const schedc_plan *plan) {
  const size_t counts[] = {2, 3, 64, 200, 1031};
  const int verifies[] = {SCHEDC_VERIFY_NONE, SCHEDC_VERIFY_CHECKSUM, SCHEDC_VERIFY_DIGEST, SCHEDC_VERIFY_FULL};
  for (int vi = 0; vi < 4; vi++)
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
      for (int mode = 0; mode < 4; mode++) {
        char job[64];
        snprintf(job, sizeof job, "shortcuts%d-%d-%zu-%d", (int)getpid(), vi, ci, mode);
        pid_t pid[N];
        for (int r = 0; r < N; r++)
          if ((pid[r] = fork()) == 0) _exit(shm_rank(plan, r, job, counts[ci], mode, verifies[vi]));
        int ok = 1;
        for (int r = 0; r < N; r++) {
          int ws;
          waitpid(pid[r], &ws, 0);
          ok &= WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
        }
        if (!ok)
          fprintf(stderr, "FAIL: verify %d, count %zu, %s, %s\n", verifies[vi], counts[ci],
                  mode & 1 ? "in place" : "out of place", mode & 2 ? "schedc_mem_alloc" : "malloc");
        CHECK(ok);
      }
}

typedef struct job { schedc_comm *c; const schedc_plan *p; int32_t *send, *recv; size_t count; schedc_status st; } job;
static void *rs_rank(void *arg) {
  job *j = arg;
  j->st = schedc_reduce_scatter(j->send, j->recv, j->count, SCHEDC_I32, SCHEDC_SUM, j->c, j->p);
  return NULL;
}

/* The sliced digest on the paths that compose it differently (threads, digest verification, the
 * built-in ring, plan path): avg (copied out, divided, then hashed), f16/bf16 (rounded, then
 * hashed), allgather and a broadcast's root and non-roots (no shortcuts), in and out of place,
 * and a flipout landing in whatever slice: on every rank the digest the call took must be the
 * sliced digest of its receive buffer, and the flipped rank's must differ (ECORRUPT everywhere). */
typedef struct djob {
  schedc_comm *c; int coll; schedc_dtype dt; schedc_op op; void *send, *recv; size_t count; schedc_status st;
  sc_result res;
} djob;
static void *digest_rank(void *arg) {
  djob *j = arg; /* broadcast from rank 1; allgather and broadcast move bits, so the op is sum */
  schedc_op op = j->coll == SCHEDC_ALLREDUCE ? j->op : SCHEDC_SUM;
  j->st = sc_coll_verified(j->c, j->coll, j->send, j->recv, j->count, j->dt, op, j->coll == SCHEDC_BROADCAST ? 1 : 0,
                           NULL, &j->res);
  return NULL;
}
static void digest_paths(void) {
  const struct { int coll; schedc_dtype dt; schedc_op op; } cases[] = {
      {SCHEDC_ALLREDUCE, SCHEDC_F32, SCHEDC_SUM}, {SCHEDC_ALLREDUCE, SCHEDC_F32, SCHEDC_AVG},
      {SCHEDC_ALLREDUCE, SCHEDC_F16, SCHEDC_SUM}, {SCHEDC_ALLREDUCE, SCHEDC_BF16, SCHEDC_AVG},
      {SCHEDC_ALLGATHER, SCHEDC_F32, SCHEDC_SUM}, {SCHEDC_BROADCAST, SCHEDC_F32, SCHEDC_SUM}};
  const size_t count = 5000; /* 20 KB of f32: past the small-message path */
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int inplace = 0; inplace < 2; inplace++)
      for (int flip = 0; flip < 2; flip++) {
        schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
        co.slice_bytes = 4096;
        co.timeout_s = 30;
        co.verify = SCHEDC_VERIFY_DIGEST;
        schedc_comm *comms[N];
        CHECK(schedc_comm_init_threads(N, &co, comms) == SCHEDC_OK);
        size_t es = schedc_dtype_size(cases[ci].dt), rn = cases[ci].coll == SCHEDC_ALLGATHER ? count * N : count;
        djob jobs[N];
        pthread_t th[N];
        for (int r = 0; r < N; r++) {
          if (flip) CHECK(sc_inject_parse("flipout:1", &comms[r]->inj) == SCHEDC_OK);
          char *recv = calloc(rn, es), *send = inplace ? recv : calloc(count, es);
          if (inplace && cases[ci].coll == SCHEDC_ALLGATHER) send = recv + (size_t)r * count * es;
          for (size_t i = 0; i < count * es; i++) send[i] = (char)(i * 7 + (size_t)r * 13 + 1) & 0x3f; /* no NaN/Inf bytes */
          jobs[r] = (djob){.c = comms[r], .coll = cases[ci].coll, .dt = cases[ci].dt, .op = cases[ci].op, .send = send,
                           .recv = recv, .count = count, .st = SCHEDC_OK};
        }
        for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, digest_rank, &jobs[r]);
        for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
        for (int r = 0; r < N; r++) {
          const sc_result *c = &jobs[r].res;
          int ok = jobs[r].st == (flip ? SCHEDC_ECORRUPT : SCHEDC_OK) && c->dsl.K == rn && c->dsl.esz == es &&
                   c->digest == sc_sliced_digest(jobs[r].recv, &c->dsl);
          if (!ok)
            fprintf(stderr, "digest paths: %s %s %s, %s, flipout %d, rank %d: status %d, digest %016llx vs sliced %016llx\n",
                    schedc_collective_name((schedc_collective)cases[ci].coll), schedc_dtype_name(cases[ci].dt),
                    schedc_op_name(cases[ci].op), inplace ? "in place" : "out of place", flip, r, (int)jobs[r].st,
                    (unsigned long long)c->digest, (unsigned long long)sc_sliced_digest(jobs[r].recv, &c->dsl));
          CHECK(ok);
        }
        if (flip) CHECK(jobs[1].res.digest != jobs[0].res.digest && jobs[0].res.digest == jobs[2].res.digest);
        for (int r = 0; r < N; r++) {
          if (!inplace) free(jobs[r].send);
          free(jobs[r].recv);
          schedc_comm_free(comms[r]);
        }
      }
}

/* reduce_scatter on threads: recv apart (0), recv == send (1), recv == send + rank * count (2) */
static void rs_threads(const schedc_plan *plan, int layout) {
  const size_t count = 256;
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.slice_bytes = 256;
  co.timeout_s = 30;
  schedc_comm *comms[N];
  CHECK(schedc_comm_init_threads(N, &co, comms) == SCHEDC_OK);
  job jobs[N];
  pthread_t th[N];
  for (int r = 0; r < N; r++) {
    int32_t *send = malloc(count * N * 4), *recv = malloc(count * 4);
    for (size_t i = 0; i < count * N; i++) send[i] = input(r, i, 0);
    jobs[r] = (job){comms[r], plan, send, layout == 0 ? recv : layout == 1 ? send : send + (size_t)r * count, count,
                    SCHEDC_OK};
    if (layout) free(recv);
  }
  for (int r = 0; r < N; r++) pthread_create(&th[r], NULL, rs_rank, &jobs[r]);
  for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
  long bad = 0;
  for (int r = 0; r < N; r++) {
    CHECK(jobs[r].st == SCHEDC_OK);
    for (size_t i = 0; i < count && jobs[r].st == SCHEDC_OK; i++) {
      int64_t want = 0;
      for (int q = 0; q < N; q++) want += input(q, (size_t)r * count + i, 0);
      if (jobs[r].recv[i] != (int32_t)want && bad++ == 0)
        fprintf(stderr, "reduce_scatter layout %d: rank %d element %zu: got %d, want %lld\n", layout, r, i,
                jobs[r].recv[i], (long long)want);
    }
  }
  CHECK(bad == 0);
  for (int r = 0; r < N; r++) {
    if (!layout) free(jobs[r].recv);
    free(jobs[r].send);
    schedc_comm_free(comms[r]);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  setenv("SCHEDC_SMALL", "0", 1); /* the plan's transfers at every count */
  schedc_plan *moves = load(argv[1], "cells_move.lua"), *early = load(argv[1], "rs_early_block.lua");
  schedc_plan *local = load(argv[1], "local_final.lua");
  CHECK(moves && early && local);
  if (moves) shm_sweep(moves);
  if (local) shm_sweep(local);
  digest_paths();
  for (int layout = 0; early && layout < 3; layout++) rs_threads(early, layout);
  schedc_plan_free(moves);
  schedc_plan_free(early);
  schedc_plan_free(local);
  return DONE();
}
