/*
 * test_cuda_mpi.c [net] — a process per GPU over MPI (schedc_comm_init_cuda_over with an MPI host
 * communicator), run under mpirun with the ranks on two pretend hosts (SCHEDC_HOST_ID: the
 * first half on one): the host exchanges go through MPI, payloads within a host through CUDA
 * IPC and between hosts through NCCL (emulated without a GPU). Results checked against values
 * computed here (small integers: every order of the sum is exact), with both checks on. Then
 * schedc_comm_init_env under mpirun: SCHEDC_BACKEND=cuda over its own MPI communicator, and the
 * mpi backend by default. Skipped without a device or without MPI.
 * `net`: the same without MPI, each rank started by `schedc launch` with MASTER_ADDR:MASTER_PORT:
 * the host communicator is net's (schedc_comm_init_env, SCHEDC_BACKEND=net), so the NCCL id
 * travels over the net communicator the rendezvous bootstrapped; then SCHEDC_BACKEND=cuda with
 * the ranks spanning hosts (LOCAL_WORLD_SIZE below the count): cuda over its own net communicator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "schedc/schedc.h"

/* schedc_comm_init_env under mpirun with SCHEDC_BACKEND=cuda makes its own MPI host
 * communicator: the pretend hosts count (so SCHEDC_CUDA_NET=ipc is refused across them, on every
 * rank), the GPU is OMPI_COMM_WORLD_LOCAL_RANK, and an allreduce crosses the hosts. */
static void env_cuda(int r, int n, const schedc_comm_opts *o, int net) {
  setenv("SCHEDC_BACKEND", "cuda", 1);
  char local[16];
  snprintf(local, sizeof local, "%d", n / 2);
  if (net) setenv("LOCAL_WORLD_SIZE", local, 1); /* two hosts, as torchrun says it: net under cuda */
  setenv("SCHEDC_CUDA_NET", "ipc", 1);
  schedc_comm *e = NULL;
  CHECK(schedc_comm_init_env(o, &e) == SCHEDC_EINVAL && !e);
  CHECK_CONTAINS(schedc_errmsg(), "SCHEDC_CUDA_NET=ipc, but the ranks are on 2 hosts");
  unsetenv("SCHEDC_CUDA_NET");
  CHECK(schedc_comm_init_env(o, &e) == SCHEDC_OK && e && schedc_comm_rank(e) == r && schedc_comm_nranks(e) == n);
  enum { COUNT = 777 };
  float h[COUNT];
  void *b = NULL;
  CHECK(e && schedc_cuda_alloc(e, sizeof h, &b) == SCHEDC_OK);
  for (int i = 0; i < COUNT; i++) h[i] = (float)(i % 5 * r);
  if (b) {
    CHECK(schedc_cuda_copy(e, b, h, sizeof h) == SCHEDC_OK);
    CHECK(schedc_allreduce(b, b, COUNT, SCHEDC_F32, SCHEDC_SUM, e, NULL) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(e, h, b, sizeof h) == SCHEDC_OK);
    CHECK(schedc_cuda_sync(e) == SCHEDC_OK);
    int bad = 0;
    for (int i = 0; i < COUNT; i++) bad += h[i] != (float)(i % 5 * n * (n - 1) / 2);
    CHECK(bad == 0);
    schedc_cuda_free(e, b);
  }
  schedc_comm_free(e); /* frees its MPI communicator too */
  unsetenv("SCHEDC_BACKEND");
}

/* Under mpirun without SCHEDC_BACKEND: the mpi backend (no job id needed), host memory. */
static void env_default(int r, int n) {
  schedc_comm *e = NULL;
  unsetenv("SCHEDC_JOB");
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_OK && e && schedc_comm_rank(e) == r);
  double x[3] = {r, 2.0 * r, 0.5};
  CHECK(e && schedc_allreduce(x, x, 3, SCHEDC_F64, SCHEDC_SUM, e, NULL) == SCHEDC_OK);
  CHECK(x[0] == n * (n - 1) / 2.0 && x[1] == n * (n - 1.0) && x[2] == 0.5 * n);
  schedc_comm_free(e);
}

int main(int argc, char **argv) {
  int net = argc > 1 && !strcmp(argv[1], "net");
  if (schedc_cuda_device_count() < 1) SKIP_NO_CUDA("no CUDA device (and no SCHEDC_CUDA_PLUGIN)");
  schedc_comm *host = NULL, *c = NULL;
  schedc_status st;
  if (net) { /* pretend hosts before the bootstrap: between them UCX goes over TCP */
    const char *sr = getenv("SCHEDC_RANK"), *sn = getenv("SCHEDC_NRANKS");
    setenv("SCHEDC_HOST_ID", sr && sn && 2 * atoi(sr) < atoi(sn) ? "net-host-a" : "net-host-b", 1);
    setenv("SCHEDC_BACKEND", "net", 1);
    st = schedc_comm_init_env(NULL, &host);
    unsetenv("SCHEDC_BACKEND");
    if (st == SCHEDC_EUNAVAIL) SKIP_TOOL("UCX", schedc_errmsg());
  } else {
    st = schedc_comm_init_mpi(NULL, NULL, &host);
    if (st == SCHEDC_EUNAVAIL) SKIP_TOOL("MPI", schedc_errmsg());
  }
  CHECK(st == SCHEDC_OK);
  if (st != SCHEDC_OK) { fprintf(stderr, "host communicator: %s\n", schedc_errmsg()); return DONE(); }
  int r = schedc_comm_rank(host), n = schedc_comm_nranks(host);
  if (!net) setenv("SCHEDC_HOST_ID", 2 * r < n ? "mpi-host-a" : "mpi-host-b", 1);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.verify = SCHEDC_VERIFY_FULL;
  o.timeout_s = 30;
  CHECK(schedc_comm_init_cuda_over(host, r, &o, &c) == SCHEDC_OK);
  enum { COUNT = 3001 };
  float *h = malloc(sizeof(float) * COUNT * (size_t)n), *out = malloc(sizeof(float) * COUNT * (size_t)n);
  void *b = NULL, *rb = NULL;
  CHECK(c && h && out && schedc_cuda_alloc(c, sizeof(float) * COUNT * (size_t)n, &b) == SCHEDC_OK &&
        schedc_cuda_alloc(c, sizeof(float) * COUNT * (size_t)n, &rb) == SCHEDC_OK);
  for (int it = 0; c && b && rb && it < 3; it++) { /* the same calls again: epochs, no regrow */
    for (int i = 0; i < COUNT; i++) h[i] = (float)(i % 11 + r + it);
    CHECK(schedc_cuda_copy(c, b, h, sizeof(float) * COUNT) == SCHEDC_OK);
    CHECK(schedc_allreduce(b, b, COUNT, SCHEDC_F32, SCHEDC_SUM, c, NULL) == SCHEDC_OK);
    CHECK(schedc_cuda_sync(c) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(c, out, b, sizeof(float) * COUNT) == SCHEDC_OK);
    int bad = 0;
    for (int i = 0; i < COUNT; i++) bad += out[i] != (float)(n * (i % 11 + it) + n * (n - 1) / 2);
    CHECK(bad == 0);
    /* allgather: rank q's block is q's input */
    CHECK(schedc_allgather(b, rb, COUNT, SCHEDC_F32, c, NULL) == SCHEDC_OK);
    CHECK(schedc_cuda_copy(c, out, rb, sizeof(float) * COUNT * (size_t)n) == SCHEDC_OK);
    bad = 0;
    for (int q = 0; q < n; q++)
      for (int i = 0; i < COUNT; i++) bad += out[(size_t)q * COUNT + i] != (float)(n * (i % 11 + it) + n * (n - 1) / 2);
    CHECK(bad == 0);
  }
  if (c) {
    schedc_cuda_free(c, b);
    schedc_cuda_free(c, rb);
  }
  free(h);
  free(out);
  schedc_comm_free(c);
  env_cuda(r, n, &o, net);
  if (!net) env_default(r, n);
  schedc_comm_free(host); /* after the communicator that borrows it */
  if (r == 0) printf("rank 0 of %d: allreduce and allgather across two hosts over %s and NCCL\n", n, net ? "net" : "MPI");
  return DONE();
}
