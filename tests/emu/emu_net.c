/*
 * emu_net.c — NCCL's grouped send/recv emulated for the emulated device (the test plugin
 * libschedc_emu.so, emu.c), so the path between nodes runs without a GPU: a message is a file in
 * the directory the rendezvous names (written atomically: a reader never sees half of one),
 * received in order per pair of ranks. Emulated device memory is host memory, so a transfer is
 * a read or write of the buffer once its stream has been joined.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "fileio.h"

typedef struct emu_net {
  char dir[128];
  int nranks, rank;
  double timeout_s;
  uint64_t *sent, *got; /* [nranks]: messages so far to / from each peer (their sequence numbers) */
} emu_net;

typedef struct net_op { int recv; emu_net *c; void *buf; size_t bytes; int peer; void *stream; } net_op;

/* The group being built by this thread (NCCL's groups are per thread too). */
static __thread net_op *ops;
static __thread size_t nops, capops;
static __thread int in_group;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static schedc_status en_load(int *version) {
  *version = 22800; /* behaves as the NCCL it stands for */
  return SCHEDC_OK;
}

static schedc_status en_unique_id(sc_netid *id) {
  static unsigned seq;
  memset(id, 0, sizeof *id);
  snprintf((char *)id->b, sizeof id->b, "/dev/shm/schedc-net-%d-%u-%llx", (int)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED),
           (unsigned long long)(now() * 1e9));
  if (mkdir((char *)id->b, 0700) && errno != EEXIST)
    return sc_emu_err(SCHEDC_EIO, "emulated NCCL: cannot create %s: %s", (char *)id->b, strerror(errno));
  return SCHEDC_OK;
}

static schedc_status en_init(const sc_netid *id, int nranks, int rank, double timeout_s, void **comm) {
  emu_net *c = calloc(1, sizeof *c);
  if (c) {
    c->sent = calloc((size_t)nranks, sizeof *c->sent);
    c->got = calloc((size_t)nranks, sizeof *c->got);
  }
  if (!c || !c->sent || !c->got) {
    if (c) { free(c->sent); free(c->got); }
    free(c);
    return sc_emu_err(SCHEDC_ENOMEM, "out of memory");
  }
  memcpy(c->dir, id->b, sizeof c->dir - 1);
  c->nranks = nranks;
  c->rank = rank;
  c->timeout_s = timeout_s;
  *comm = c;
  return SCHEDC_OK;
}

static void msg_path(const emu_net *c, int src, int dst, uint64_t seq, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%d-%d-%llu", c->dir, src, dst, (unsigned long long)seq);
}

static schedc_status en_group_start(void) {
  in_group++;
  return SCHEDC_OK;
}

static schedc_status add(int recv, void *comm, void *buf, size_t bytes, int peer, void *stream) {
  emu_net *c = comm;
  if (peer < 0 || peer >= c->nranks || peer == c->rank)
    return sc_emu_err(SCHEDC_EINTERNAL, "emulated NCCL: rank %d addressed peer %d of %d", c->rank, peer, c->nranks);
  if (nops == capops) {
    size_t cap = capops ? 2 * capops : 16;
    net_op *n = realloc(ops, cap * sizeof *n);
    if (!n) return sc_emu_err(SCHEDC_ENOMEM, "out of memory");
    ops = n;
    capops = cap;
  }
  ops[nops++] = (net_op){recv, c, buf, bytes, peer, stream};
  return SCHEDC_OK; /* outside a group an operation is a group of its own (en_send, en_recv) */
}

/* The group's operations once their streams' work before them is done: every send first (they
 * never block), then every receive, each waiting up to the timeout for its message. */
static schedc_status run_group(void) {
  schedc_status st = SCHEDC_OK;
  char path[256];
  for (size_t i = 0; i < nops; i++) sc_cudev_emu.sync(ops[i].stream);
  for (size_t i = 0; i < nops && st == SCHEDC_OK; i++) {
    net_op *o = &ops[i];
    if (o->recv) continue;
    msg_path(o->c, o->c->rank, o->peer, o->c->sent[o->peer]++, path, sizeof path);
    if (sc_write_atomic(path, o->buf, o->bytes))
      st = sc_emu_err(SCHEDC_EIO, "emulated NCCL: cannot write %s: %s", path, strerror(errno));
  }
  for (size_t i = 0; i < nops && st == SCHEDC_OK; i++) {
    net_op *o = &ops[i];
    if (!o->recv) continue;
    msg_path(o->c, o->peer, o->c->rank, o->c->got[o->peer]++, path, sizeof path);
    double t0 = now();
    unsigned us = 2;
    int fd;
    while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
      if (now() - t0 > o->c->timeout_s) {
        st = sc_emu_err(SCHEDC_ETIMEOUT, "emulated NCCL: rank %d waited more than %g s for a message from rank %d "
                    "(timeout; SCHEDC_TIMEOUT)", o->c->rank, o->c->timeout_s, o->peer);
        break;
      }
      usleep(us);
      if (us < 100) us *= 2;
    }
    if (fd < 0) break;
    struct stat sb;
    ssize_t n = fstat(fd, &sb) ? -1 : (size_t)sb.st_size == o->bytes ? read(fd, o->buf, o->bytes) : -2;
    close(fd);
    unlink(path);
    if (n == -2)
      st = sc_emu_err(SCHEDC_EINTERNAL, "emulated NCCL: rank %d expected %zu bytes from rank %d, the message has %lld",
                  o->c->rank, o->bytes, o->peer, (long long)sb.st_size);
    else if (n != (ssize_t)o->bytes)
      st = sc_emu_err(SCHEDC_EIO, "emulated NCCL: cannot read %s", path);
  }
  nops = 0;
  return st;
}

static schedc_status en_send(void *comm, const void *buf, size_t bytes, int peer, void *stream) {
  schedc_status st = add(0, comm, (void *)buf, bytes, peer, stream);
  return st == SCHEDC_OK && !in_group ? run_group() : st;
}

static schedc_status en_recv(void *comm, void *buf, size_t bytes, int peer, void *stream) {
  schedc_status st = add(1, comm, buf, bytes, peer, stream);
  return st == SCHEDC_OK && !in_group ? run_group() : st;
}

static schedc_status en_group_end(void) {
  if (in_group > 0 && --in_group == 0) return run_group();
  return SCHEDC_OK;
}

static schedc_status en_health(void *comm) {
  (void)comm;
  return SCHEDC_OK;
}

/* Messages to this rank that were never received go, and after a failure (abort: a peer may be
 * gone) also those this rank sent that are still there; the last rank out removes the directory. */
static void en_destroy(void *comm, int abort) {
  emu_net *c = comm;
  if (!c) return;
  char path[256];
  for (int q = 0; q < c->nranks; q++) {
    for (uint64_t s = c->got[q];; s++) {
      msg_path(c, q, c->rank, s, path, sizeof path);
      if (unlink(path)) break;
    }
    for (uint64_t s = c->sent[q]; abort && s-- > 0;) { /* newest first: the unreceived are the last */
      msg_path(c, c->rank, q, s, path, sizeof path);
      if (unlink(path)) break;
    }
  }
  rmdir(c->dir);
  free(c->sent);
  free(c->got);
  free(c);
}

const sc_cunet sc_cunet_emu = {"emulated NCCL", en_load, en_unique_id, en_init, en_group_start, en_send,
                               en_recv, en_group_end, en_health, en_destroy};
