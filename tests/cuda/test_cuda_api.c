/*
 * test_cuda_api.c — the cuda communicator's contract on the emulated device (run with
 * SCHEDC_CUDA_PLUGIN naming tests/emu's plugin): bad init arguments named, a rank calling twice
 * before the others, ranks disagreeing (EMISMATCH, then the group is broken), a kernel wait past
 * the timeout reported by schedc_cuda_sync (ETIMEOUT naming rank and step), and the calls on a
 * CPU communicator refused. With a process per GPU (forked ranks, CUDA IPC): bad arguments, two
 * ranks on one GPU, disagreement, results across calls whose buffers grow (every regrow remaps
 * the peers), a peer process dying before and during a call (reported, never a hang), and
 * schedc_comm_init_env with SCHEDC_BACKEND=cuda.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "forked.h"
#include "schedc/schedc.h"

static void free_all(schedc_comm **c, int n) {
  for (int r = 0; r < n; r++) schedc_comm_free(c[r]);
}

/* ---- a process per GPU ---- */


static void same_gpu(int r) {
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_cuda_rank(r, 2, 0, job, NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "ranks 0 and 1 are on the same GPU");
  CHECK(c == NULL);
}

static void disagree(int r) {
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job, NULL, &c) == SCHEDC_OK);
  void *b = NULL;
  CHECK(schedc_cuda_alloc(c, 4096, &b) == SCHEDC_OK);
  CHECK(schedc_allreduce(b, b, 100 + (size_t)r, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), r ? "allreduce: rank 1 and rank 0 disagree on the count of call 1 (rank 1: 101; rank 0: 100)"
                                    : "allreduce: rank 0 and rank 1 disagree on the count of call 1 (rank 0: 100; rank 1: 101)");
  CHECK(schedc_allreduce(b, b, 100, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_EPEER);
  CHECK_CONTAINS(schedc_errmsg(), "broken by an earlier failure");
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
  /* a second group: the dtypes differ, and the message names them */
  char job2[80];
  snprintf(job2, sizeof job2, "%s-b", job);
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job2, NULL, &c) == SCHEDC_OK);
  CHECK(schedc_cuda_alloc(c, 4096, &b) == SCHEDC_OK);
  CHECK(schedc_allreduce(b, b, 100, r ? SCHEDC_BF16 : SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), r ? "rank 1 and rank 0 disagree on the dtype of call 1 (rank 1: bf16; rank 0: f32)"
                                    : "rank 0 and rank 1 disagree on the dtype of call 1 (rank 0: f32; rank 1: bf16)");
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
}

/* Small integers in f32: every order of the sum is exact, so a + b + c is the answer. */
static float val(int r, size_t i) { return (float)((i * 7 + (size_t)r * 3) % 11); }

static void grows(int r) {
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_cuda_rank(r, 3, r, job, NULL, &c) == SCHEDC_OK);
  size_t sizes[] = {1000, 10, 300000, 7, 300001};
  size_t max = 300001 * 3;
  float *h = malloc(max * sizeof *h), *out = malloc(max * sizeof *out);
  void *din = NULL, *dout = NULL;
  CHECK(schedc_cuda_alloc(c, max * sizeof(float), &din) == SCHEDC_OK);
  CHECK(schedc_cuda_alloc(c, max * sizeof(float), &dout) == SCHEDC_OK);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    int rs = k % 2 == 1; /* every other call a reduce_scatter of n per rank (3n in) */
    size_t nin = rs ? 3 * n : n;
    for (size_t i = 0; i < nin; i++) h[i] = val(r, i);
    CHECK(schedc_cuda_copy(c, din, h, nin * sizeof(float)) == SCHEDC_OK);
    schedc_status st = rs ? schedc_reduce_scatter(din, dout, n, SCHEDC_F32, SCHEDC_SUM, c, NULL)
                          : schedc_allreduce(din, dout, n, SCHEDC_F32, SCHEDC_SUM, c, NULL);
    CHECK(st == SCHEDC_OK);
    CHECK(schedc_cuda_sync(c) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(c, out, dout, n * sizeof(float)) == SCHEDC_OK);
    size_t bad = 0, lo = rs ? (size_t)r * n : 0;
    for (size_t i = 0; i < n; i++) bad += out[i] != val(0, lo + i) + val(1, lo + i) + val(2, lo + i);
    if (bad) fprintf(stderr, "rank %d call %zu (%zu elements): %zu wrong\n", r, k, n, bad);
    CHECK(bad == 0);
  }
  schedc_cuda_free(c, din);
  schedc_cuda_free(c, dout);
  free(h);
  free(out);
  schedc_comm_free(c);
}

static schedc_comm_opts short_timeout(void) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 2;
  return o;
}

/* Rank 1 leaves without calling: rank 0's call fails at the host exchange, naming it. */
static void dies_before(int r) {
  schedc_comm *c = NULL;
  schedc_comm_opts o = short_timeout();
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job, &o, &c) == SCHEDC_OK);
  if (r == 1) _exit(0);
  void *b = NULL;
  CHECK(schedc_cuda_alloc(c, 4096, &b) == SCHEDC_OK);
  schedc_status st = schedc_allreduce(b, b, 100, SCHEDC_F32, SCHEDC_SUM, c, NULL);
  CHECK(st == SCHEDC_EPEER || st == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(schedc_errmsg(), "host exchange with the other ranks failed");
  CHECK_CONTAINS(schedc_errmsg(), "rank 1");
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
}

/* Rank 1 dies after the call's host rendezvous, before its kernel runs (the emulated device's
 * SCHEDC_EMU_EXIT_AT_LAUNCH): rank 0's kernel stops at the timeout and schedc_cuda_sync says
 * where it waited. */
static void dies_during(int r) {
  schedc_comm *c = NULL;
  schedc_comm_opts o = short_timeout();
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job, &o, &c) == SCHEDC_OK);
  size_t n = 1000;
  void *b = NULL;
  CHECK(schedc_cuda_alloc(c, n * sizeof(float), &b) == SCHEDC_OK);
  if (r == 1) setenv("SCHEDC_EMU_EXIT_AT_LAUNCH", "1", 1);
  CHECK(schedc_allreduce(b, b, n, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
  CHECK(r == 0); /* rank 1 never gets here */
  CHECK(schedc_cuda_sync(c) == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(schedc_errmsg(), "rank 0 waited more than 2 s at step 0 for rank 1");
  CHECK(schedc_allreduce(b, b, n, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_EPEER);
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
}

/* Rank 1's device memory runs out at a call that must grow the buffers (the emulated device's
 * SCHEDC_EMU_MAX_ALLOC): rank 1 fails with ENOMEM, rank 0 at once (not at the timeout) naming it. */
static void cannot_grow(int r) {
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job, NULL, &c) == SCHEDC_OK);
  size_t n = 1 << 16;
  void *b = NULL;
  CHECK(schedc_cuda_alloc(c, n * sizeof(float), &b) == SCHEDC_OK);
  CHECK(schedc_allreduce(b, b, 100, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(c) == SCHEDC_OK);
  if (r == 1) setenv("SCHEDC_EMU_MAX_ALLOC", "65536", 1);
  schedc_status st = schedc_allreduce(b, b, n, SCHEDC_F32, SCHEDC_SUM, c, NULL);
  if (r == 1) {
    CHECK(st == SCHEDC_ENOMEM);
    CHECK_CONTAINS(schedc_errmsg(), "out of memory");
  } else {
    CHECK(st == SCHEDC_EPEER);
    CHECK_CONTAINS(schedc_errmsg(), "rank 1 could not allocate its device memory");
  }
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
}

/* schedc_comm_init_env with SCHEDC_BACKEND=cuda: the rank's GPU from LOCAL_RANK (torchrun's). */
static void from_env(int r) {
  char v[16];
  snprintf(v, sizeof v, "%d", r);
  setenv("RANK", v, 1);
  setenv("LOCAL_RANK", v, 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("SCHEDC_JOB", job, 1);
  setenv("SCHEDC_BACKEND", "cuda", 1);
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_env(NULL, &c) == SCHEDC_OK);
  CHECK(c && schedc_comm_rank(c) == r && schedc_comm_nranks(c) == 2);
  float h[5] = {1, 2, 3, 4, (float)r}, out[5] = {0};
  void *b = NULL;
  CHECK(schedc_cuda_alloc(c, sizeof h, &b) == SCHEDC_OK);
  CHECK(schedc_cuda_copy(c, b, h, sizeof h) == SCHEDC_OK);
  CHECK(schedc_allreduce(b, b, 5, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(c) == SCHEDC_OK);
  CHECK(schedc_cuda_copy(c, out, b, sizeof out) == SCHEDC_OK);
  CHECK(out[0] == 2 && out[3] == 8 && out[4] == 1);
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
  setenv("LOCAL_RANK", "x", 1);
  CHECK(schedc_comm_init_env(NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "LOCAL_RANK='x' is not an integer");
}

/* A 2-rank allreduce of 1000 small integers (rank r's element i: i % 7 + 10 r; every order of
 * the sum is exact) into device buffer *b (allocated here), checked against the sum written
 * out here. */
static void small_allreduce(schedc_comm *c, int r, void **b) {
  float h[1000], out[1000];
  for (int i = 0; i < 1000; i++) h[i] = (float)(i % 7 + 10 * r);
  CHECK(schedc_cuda_alloc(c, sizeof h, b) == SCHEDC_OK);
  CHECK(schedc_cuda_copy(c, *b, h, sizeof h) == SCHEDC_OK);
  CHECK(schedc_allreduce(*b, *b, 1000, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
  CHECK(schedc_cuda_sync(c) == SCHEDC_OK);
  CHECK(schedc_cuda_copy(c, out, *b, sizeof out) == SCHEDC_OK);
  int bad = 0;
  for (int i = 0; i < 1000; i++) bad += out[i] != (float)(2 * (i % 7) + 10);
  CHECK(bad == 0);
}

/* SCHEDC_CUDA_NET: ranks that move payloads between nodes differently are refused at init,
 * naming the setting (one would send what the other never receives). */
static void net_disagree(int r) {
  if (r == 1) setenv("SCHEDC_CUDA_NET", "nccl", 1);
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job, NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "ranks 0 and 1 move payloads between nodes differently (rank 0: ipc, rank 1: nccl)");
  CHECK_CONTAINS(schedc_errmsg(), "set SCHEDC_CUDA_NET alike");
  CHECK(c == NULL);
}

/* Two ranks on two nodes through (emulated) NCCL; rank 1 dies after the call's host meeting,
 * having sent its input across but before its kernel: rank 0 waits for rank 1's next message
 * only up to the timeout, is told which rank it waited for, and the group is broken. Before
 * that, a clean call's bits. */
static void net_dies(int r) {
  setenv("SCHEDC_CUDA_NODES", "2", 1);
  setenv("SCHEDC_CUDA_NET", "nccl", 1);
  schedc_comm *c = NULL;
  schedc_comm_opts o = short_timeout();
  CHECK(schedc_comm_init_cuda_rank(r, 2, r, job, &o, &c) == SCHEDC_OK);
  void *b = NULL;
  small_allreduce(c, r, &b);
  if (r == 1) setenv("SCHEDC_EMU_EXIT_AT_LAUNCH", "1", 1);
  schedc_status st = schedc_allreduce(b, b, 1000, SCHEDC_F32, SCHEDC_SUM, c, NULL);
  CHECK(r == 0); /* rank 1 never gets here */
  if (st == SCHEDC_OK) st = schedc_cuda_sync(c); /* real NCCL: found by the stream's timed drain */
  CHECK(st == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(schedc_errmsg(), "waited more than 2 s for a message from rank 1");
  printf("net_dies: rank 0 was told: %s\n", schedc_errmsg());
  CHECK(schedc_allreduce(b, b, 1000, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_EPEER);
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
}

/* Over a CPU communicator on two (pretend) hosts: both ranks on device 0 is fine there (one GPU
 * per process per host), and a small allreduce crosses through (emulated) NCCL; SCHEDC_CUDA_NET=ipc
 * on one rank, or SCHEDC_CUDA_NODES, cannot apply across hosts: refused on every rank. */
static void two_hosts(int r) {
  setenv("SCHEDC_HOST_ID", r == 0 ? "x" : "y", 1);
  schedc_comm *host = NULL, *c = NULL;
  CHECK(schedc_comm_init_shm(r, 2, job, NULL, &host) == SCHEDC_OK);
  CHECK(schedc_comm_init_cuda_over(host, 0, NULL, &c) == SCHEDC_OK);
  CHECK(c && schedc_comm_rank(c) == r && schedc_comm_nranks(c) == 2);
  void *b = NULL;
  small_allreduce(c, r, &b);
  schedc_cuda_free(c, b);
  schedc_comm_free(c);
  if (r == 1) setenv("SCHEDC_CUDA_NET", "ipc", 1);
  CHECK(schedc_comm_init_cuda_over(host, 0, NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "rank 1 sets SCHEDC_CUDA_NET=ipc, but the ranks are on 2 hosts");
  unsetenv("SCHEDC_CUDA_NET");
  setenv("SCHEDC_CUDA_NODES", "2", 1);
  CHECK(schedc_comm_init_cuda_over(host, 0, NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_CUDA_NODES=2 emulates nodes on one host, but the ranks are on 2 hosts");
  unsetenv("SCHEDC_CUDA_NODES");
  CHECK(c == NULL);
  schedc_comm_free(host);
}

static void processes(void) {
  schedc_comm *c = NULL;
  CHECK(schedc_comm_init_cuda_rank(0, 1, 99, "capi", NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "CUDA device 99 out of range");
  CHECK(schedc_comm_init_cuda_rank(2, 2, 0, "capi", NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "rank 2 out of range");
  CHECK(schedc_comm_init_cuda_rank(0, 65, 0, "capi", NULL, &c) == SCHEDC_EINVAL);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = 3; /* not a verification mode (what the cuda backend verifies: test_cuda_verify.c) */
  CHECK(schedc_comm_init_cuda_rank(0, 1, 0, "capi", &o, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "opts->verify 3");
  CHECK(schedc_comm_init_cuda_rank(0, 2, 0, "bad job!", NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "job id 'bad job!'");
  CHECK(c == NULL);
  CHECK(in_processes(2, same_gpu));
  CHECK(in_processes(2, disagree));
  CHECK(in_processes(3, grows));
  CHECK(in_processes(2, dies_before));
  CHECK(in_processes(2, dies_during));
  CHECK(in_processes(2, cannot_grow));
  CHECK(in_processes(2, from_env));
  CHECK(in_processes(2, net_disagree));
  CHECK(in_processes(2, net_dies));
  CHECK(in_processes(2, two_hosts));
  CHECK(schedc_comm_init_cuda_over(NULL, 0, NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "host: NULL (a CPU communicator of the same ranks: shm, mpi or net)");
  setenv("SCHEDC_CUDA_NET", "tcp", 1);
  CHECK(schedc_comm_init_cuda_rank(0, 1, 0, "capi", NULL, &c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_CUDA_NET='tcp': ipc (peers map each other's device memory: one host) or nccl");
  schedc_comm *v[2] = {0}; /* one process: the same word, the same refusal */
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, v) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_CUDA_NET='tcp': ipc (peers map each other's device memory: one host) or nccl");
  CHECK(!v[0] && !v[1]);
  setenv("SCHEDC_CUDA_NET", "nccl", 1); /* NCCL is for a process per GPU */
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, v) == SCHEDC_EUNAVAIL);
  CHECK_CONTAINS(schedc_errmsg(), "one process driving every GPU has no other process to send to");
  unsetenv("SCHEDC_CUDA_NET");
}

int main(void) {
  if (schedc_cuda_device_count() < 1) SKIP_NO_CUDA("no CUDA device (and no SCHEDC_CUDA_PLUGIN)");
  schedc_comm *c[4] = {0};

  /* init: the offending argument is named */
  CHECK(schedc_comm_init_cuda(65, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "nranks 65 out of range");
  int devs[2] = {0, 0};
  CHECK(schedc_comm_init_cuda(2, devs, 0, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "both on device 0");
  devs[1] = 99;
  CHECK(schedc_comm_init_cuda(2, devs, 0, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "CUDA device 99 out of range");
  CHECK(schedc_comm_init_cuda(2, NULL, 4, NULL, c) == SCHEDC_EINVAL);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = 3;
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, &o, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "opts->verify 3");

  /* SCHEDC_CUDA_NODES (ranks split across emulated nodes): checked, and a small call's bits */
  setenv("SCHEDC_CUDA_NODES", "0", 1);
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_CUDA_NODES='0': a node count from 1 to 64");
  setenv("SCHEDC_CUDA_NODES", "2", 1);
  CHECK(schedc_comm_init_cuda(3, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) == SCHEDC_OK);
  schedc_comm *over = NULL; /* a cuda communicator is no host for another */
  CHECK(schedc_comm_init_cuda_over(c[0], 0, NULL, &over) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "host: a cuda communicator");
  CHECK(over == NULL);
  { /* three ranks, two nodes: the ring's bits (small integers: every order is exact) */
    void *b[3];
    float h[3][300], out[300];
    for (int r = 0; r < 3; r++) {
      for (int i = 0; i < 300; i++) h[r][i] = (float)((i + 7 * r) % 9);
      CHECK(schedc_cuda_alloc(c[r], sizeof h[r], &b[r]) == SCHEDC_OK);
      CHECK(schedc_cuda_copy(c[r], b[r], h[r], sizeof h[r]) == SCHEDC_OK);
    }
    for (int r = 0; r < 3; r++) CHECK(schedc_allreduce(b[r], b[r], 300, SCHEDC_F32, SCHEDC_SUM, c[r], NULL) == SCHEDC_OK);
    CHECK(schedc_cuda_sync(c[0]) == SCHEDC_OK);
    for (int r = 0; r < 3; r++) {
      CHECK(schedc_cuda_copy(c[r], out, b[r], sizeof out) == SCHEDC_OK);
      size_t bad = 0;
      for (int i = 0; i < 300; i++) bad += out[i] != h[0][i] + h[1][i] + h[2][i];
      CHECK(bad == 0);
      schedc_cuda_free(c[r], b[r]);
    }
    free_all(c, 3);
  }
  unsetenv("SCHEDC_CUDA_NODES");

  /* a CPU communicator is not a cuda one */
  schedc_comm *t[2];
  CHECK(schedc_comm_init_threads(2, NULL, t) == SCHEDC_OK);
  CHECK(schedc_cuda_set_stream(t[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "not a cuda communicator");
  CHECK(schedc_cuda_sync(t[0]) == SCHEDC_EINVAL);
  free_all(t, 2);

  /* twice before the others; then a disagreement breaks the group */
  CHECK(schedc_comm_init_cuda(2, NULL, SCHEDC_CUDA_VIRTUAL, NULL, c) == SCHEDC_OK);
  void *b0, *b1;
  CHECK(schedc_cuda_alloc(c[0], 4096, &b0) == SCHEDC_OK && schedc_cuda_alloc(c[1], 4096, &b1) == SCHEDC_OK);
  CHECK(schedc_allreduce(b0, b0, 100, SCHEDC_F32, SCHEDC_SUM, c[0], NULL) == SCHEDC_OK); /* enqueued: waits for rank 1 */
  CHECK(schedc_allreduce(b0, b0, 100, SCHEDC_F32, SCHEDC_SUM, c[0], NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "rank 0 already issued a allreduce");
  CHECK(schedc_allreduce(b1, b1, 101, SCHEDC_F32, SCHEDC_SUM, c[1], NULL) == SCHEDC_EMISMATCH);
  CHECK_CONTAINS(schedc_errmsg(), "allreduce: rank 1 and rank 0 disagree on the count of call 1 (rank 1: 101; rank 0: 100)");
  CHECK(schedc_allreduce(b1, b1, 100, SCHEDC_F32, SCHEDC_SUM, c[1], NULL) == SCHEDC_EPEER);
  CHECK_CONTAINS(schedc_errmsg(), "broken by an earlier failure");
  CHECK(schedc_cuda_sync(c[0]) == SCHEDC_EPEER);
  schedc_cuda_free(c[0], b0);
  schedc_cuda_free(c[1], b1);
  free_all(c, 2);

  /* a matched call works; a wait past a (tiny) timeout stops every kernel and is reported */
  o.verify = 0;
  o.timeout_s = 1e-9;
  CHECK(schedc_comm_init_cuda(4, NULL, SCHEDC_CUDA_VIRTUAL, &o, c) == SCHEDC_OK);
  void *b[4];
  for (int r = 0; r < 4; r++) CHECK(schedc_cuda_alloc(c[r], 1 << 20, &b[r]) == SCHEDC_OK);
  schedc_status st = SCHEDC_OK;
  for (int i = 0; i < 50 && st == SCHEDC_OK; i++) { /* a wait satisfied at its first look cannot time out */
    for (int r = 0; r < 4; r++) CHECK(schedc_allreduce(b[r], b[r], 200000, SCHEDC_F32, SCHEDC_SUM, c[r], NULL) == SCHEDC_OK);
    st = schedc_cuda_sync(c[0]);
  }
  CHECK(st == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(schedc_errmsg(), "waited more than");
  CHECK_CONTAINS(schedc_errmsg(), "at step");
  CHECK(schedc_allreduce(b[0], b[0], 10, SCHEDC_F32, SCHEDC_SUM, c[0], NULL) == SCHEDC_EPEER);
  for (int r = 0; r < 4; r++) schedc_cuda_free(c[r], b[r]);
  free_all(c, 4);
  if (schedc_cuda_device_count() >= 3) processes(); /* up to 3 processes, a GPU each */
  else printf("note: the process-per-GPU part needs 3 GPUs; this machine has %d\n", schedc_cuda_device_count());
  return DONE();
}
