/*
 * test_mem.c — schedc_mem_alloc / schedc_mem_free (issue 20, item 1): zero-copy shared buffers.
 *  - allreduce, allgather, broadcast, reduce (and reduce_scatter) with send and receive buffers
 *    from schedc_mem_alloc, in place and out of place, counts 0, 1, odd and large, f32 sum and
 *    avg, bf16 sum and avg (carried in f32: no zero copy there), give exactly the bytes of the
 *    same calls on malloc'd buffers, on threads (3 ranks) and on forked shm processes (2 and 4);
 *    an allreduce of integer-valued floats against its exact sum;
 *  - the zero-copy path is taken exactly where it applies (not by calls on the small-message
 *    path, at most SCHEDC_SMALL bytes, which go through the arrival lines): the head's mem_direct counter
 *    (runtime/core/comm.h, read here through the internal header) counts the calls whose working
 *    buffer was a region the peers read in place;
 *  - a region freed and another allocated (same address and fd number, likely) is read anew by
 *    the peers, not through a stale mapping;
 *  - argument errors: NULL comm/ptr, 0 bytes, a foreign pointer, an interior pointer, another
 *    communicator's, double free: SCHEDC_EINVAL with a message, nothing freed; the 65th live
 *    region: SCHEDC_ENOMEM;
 *  - schedc_comm_free releases live regions (shm: no memfd left open), nothing in /dev/shm.
 * `test_mem threads`: the threads part only (cpu.tsan.mem: ThreadSanitizer does not follow forks).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "comm.h" /* mem_direct: the calls that took the zero-copy path */
#include "schedc/schedc.h"

#define BAD(...) (fprintf(stderr, "[rank %d] ", me), fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), bad++)

static uint32_t hash32(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}
/* Values whose sum depends on the order it is taken in: mixed signs and magnitudes. */
static void fill(void *buf, schedc_dtype dt, size_t n, int rank, uint32_t salt) {
  for (size_t i = 0; i < n; i++) {
    uint32_t h = hash32((uint32_t)i * 2654435761u ^ (uint32_t)rank * 40503u ^ salt);
    float v = (float)((int)(h % 2000001u) - 1000000) / (float)(1u << (h >> 27));
    if (dt == SCHEDC_F32) ((float *)buf)[i] = v;
    else { uint32_t b; memcpy(&b, &v, 4); ((uint16_t *)buf)[i] = (uint16_t)(b >> 16); }
  }
}

typedef struct tcase { schedc_collective coll; schedc_dtype dt; schedc_op op; } tcase;
static const tcase CASES[] = {
  {SCHEDC_ALLREDUCE, SCHEDC_F32, SCHEDC_SUM}, {SCHEDC_ALLREDUCE, SCHEDC_F32, SCHEDC_AVG},
  {SCHEDC_ALLREDUCE, SCHEDC_BF16, SCHEDC_AVG}, {SCHEDC_ALLREDUCE, SCHEDC_BF16, SCHEDC_SUM},
  {SCHEDC_ALLGATHER, SCHEDC_F32, SCHEDC_SUM}, {SCHEDC_ALLGATHER, SCHEDC_BF16, SCHEDC_SUM},
  {SCHEDC_BROADCAST, SCHEDC_F32, SCHEDC_SUM}, {SCHEDC_REDUCE, SCHEDC_F32, SCHEDC_SUM},
  {SCHEDC_REDUCE, SCHEDC_BF16, SCHEDC_AVG}, {SCHEDC_REDUCE_SCATTER, SCHEDC_F32, SCHEDC_SUM},
};
static const size_t COUNTS[] = {0, 1, 7, 1000, 65537};
#define SMALL 1024 /* SCHEDC_SMALL for this test: count 1000 of f32 runs its plan, 7 does not */

/* One call; in place as each collective defines it. */
static schedc_status call(const tcase *t, schedc_comm *c, void *send, void *recv, size_t count, int root) {
  switch (t->coll) {
  case SCHEDC_ALLREDUCE: return schedc_allreduce(send, recv, count, t->dt, t->op, c, NULL);
  case SCHEDC_ALLGATHER: return schedc_allgather(send, recv, count, t->dt, c, NULL);
  case SCHEDC_BROADCAST: return schedc_broadcast(send, recv, count, t->dt, root, c, NULL);
  case SCHEDC_REDUCE: return schedc_reduce(send, recv, count, t->dt, t->op, root, c, NULL);
  default: return schedc_reduce_scatter(send, recv, count, t->dt, t->op, c, NULL);
  }
}

/* Run case t once over buffers made by `alloc` (0: malloc, 1: schedc_mem_alloc: send and receive
 * in one region, the receive buffer at an offset), leaving the receive buffer's bytes in out. */
static int run_case(schedc_comm *c, const tcase *t, size_t count, int inplace, int root, int zc, char *out,
                    size_t *outbytes) {
  int me = schedc_comm_rank(c), n = schedc_comm_nranks(c), bad = 0;
  size_t es = schedc_dtype_size(t->dt);
  size_t sendn = t->coll == SCHEDC_REDUCE_SCATTER ? count * (size_t)n : count;
  size_t recvn = t->coll == SCHEDC_ALLGATHER ? count * (size_t)n : count;
  size_t sb = sendn * es, rb = recvn * es, roff = (sb + 63 + 24) & ~(size_t)63; /* recv not at the start */
  char *region = NULL;
  if (zc) {
    if (schedc_mem_alloc(c, roff + rb + 1, (void **)&region) != SCHEDC_OK) {
      BAD("schedc_mem_alloc: %s", schedc_errmsg());
      return bad;
    }
  } else if (!(region = malloc(roff + rb + 1))) {
    return BAD("malloc");
  }
  char *send = region, *recv = region + roff;
  memset(recv, 0xab, rb);
  if (inplace && t->coll == SCHEDC_ALLGATHER) send = recv + (size_t)me * count * es;
  else if (inplace && t->coll != SCHEDC_REDUCE_SCATTER) send = recv;
  fill(send, t->dt, sendn, me, (uint32_t)count * 7u + (uint32_t)t->coll);
  uint64_t before = c->mem_direct;
  schedc_status st = call(t, c, send, recv, count, root);
  if (st != SCHEDC_OK) BAD("%s count %zu: %s", schedc_collective_name(t->coll), count, schedc_errmsg());
  /* the zero-copy path: where the result is carried in the data type (bf16 sums and avgs are
   * carried in f32; allgather and broadcast only move values) and lands in this rank's buffer */
  int moves = t->coll == SCHEDC_ALLGATHER || t->coll == SCHEDC_BROADCAST;
  /* ... and it runs its plan: a call of at most SCHEDC_SMALL bytes (set by main) in the accumulation
   * type works from the arrival lines and reads no buffer in place */
  size_t work_bytes = (t->coll == SCHEDC_REDUCE_SCATTER || t->coll == SCHEDC_ALLGATHER ? count * (size_t)n : count) *
                      (t->dt == SCHEDC_F32 || moves ? es : 4);
  int small = count && work_bytes <= SMALL;
  int direct = zc && !small && (t->dt == SCHEDC_F32 || moves) &&
               (t->coll == SCHEDC_ALLREDUCE || t->coll == SCHEDC_ALLGATHER || t->coll == SCHEDC_BROADCAST ||
                (t->coll == SCHEDC_REDUCE && me == root));
  if (c->mem_direct - before != (uint64_t)direct)
    BAD("%s %s count %zu zc %d: mem_direct went up by %llu, expected %d", schedc_collective_name(t->coll),
        schedc_dtype_name(t->dt), count, zc, (unsigned long long)(c->mem_direct - before), direct);
  memcpy(out, recv, rb);
  *outbytes = rb;
  if (zc) {
    if (schedc_mem_free(c, region) != SCHEDC_OK) BAD("schedc_mem_free: %s", schedc_errmsg());
  } else {
    free(region);
  }
  return bad;
}

/* Everything a rank checks on a working communicator (threads or shm). Returns failures. */
static int rank_body(schedc_comm *c) {
  int me = schedc_comm_rank(c), n = schedc_comm_nranks(c), bad = 0;
  size_t cap = 65537 * 4 * 4 + 64;
  char *a = malloc(cap), *b = malloc(cap);
  for (size_t ci = 0; ci < sizeof CASES / sizeof *CASES; ci++)
    for (size_t k = 0; k < sizeof COUNTS / sizeof *COUNTS; k++)
      for (int inplace = 0; inplace < 2; inplace++) {
        const tcase *t = &CASES[ci];
        int root = (int)(k % (size_t)n);
        size_t na = 0, nb = 0;
        bad += run_case(c, t, COUNTS[k], inplace, root, 0, a, &na);
        bad += run_case(c, t, COUNTS[k], inplace, root, 1, b, &nb);
        if (na != nb || memcmp(a, b, na) != 0)
          BAD("%s %s %s count %zu inplace %d: the schedc_mem_alloc buffers' result differs from malloc's",
              schedc_collective_name(t->coll), schedc_dtype_name(t->dt), schedc_op_name(t->op), COUNTS[k], inplace);
      }
  /* Independent evaluation: integer-valued floats, exact sums; in place in a region. */
  size_t cnt = 4099;
  float *x;
  if (schedc_mem_alloc(c, cnt * 4, (void **)&x) != SCHEDC_OK) BAD("schedc_mem_alloc: %s", schedc_errmsg());
  for (int round = 0; x && round < 3; round++) {
    for (size_t i = 0; i < cnt; i++) x[i] = (float)((me + 1) * (int)(i % 97) + round);
    if (schedc_allreduce(x, x, cnt, SCHEDC_F32, SCHEDC_SUM, c, NULL) != SCHEDC_OK) BAD("allreduce: %s", schedc_errmsg());
    for (size_t i = 0; i < cnt; i++)
      if (x[i] != (float)((int)(i % 97) * n * (n + 1) / 2 + round * n)) {
        BAD("exact sum: element %zu is %g", i, (double)x[i]);
        break;
      }
    /* A new region in the old one's place (address and fd number reused, likely): the peers
     * must read the new one, not a mapping they kept of the old. */
    if (schedc_mem_free(c, x) != SCHEDC_OK) BAD("schedc_mem_free: %s", schedc_errmsg());
    if (schedc_mem_alloc(c, cnt * 4, (void **)&x) != SCHEDC_OK) BAD("schedc_mem_alloc: %s", schedc_errmsg());
  }
  /* left allocated: schedc_comm_free releases it */
  free(a);
  free(b);
  return bad;
}

/* ---- threads ---- */
typedef struct targ { schedc_comm *c; int bad; } targ;
static void *thread_main(void *p) {
  targ *t = p;
  t->bad = rank_body(t->c);
  return NULL;
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}
/* Names in /dev/shm of the jobs this test ran (schedc-u<id in hex>-...): none may be left. */
static schedc_uid ids[4];
static int nids;
static int count_devshm(void) {
  DIR *d = opendir("/dev/shm");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    for (int i = 0; i < nids; i++) {
      char pre[64] = "schedc-u";
      for (size_t j = 0; j < sizeof ids[i].bytes; j++) snprintf(pre + 8 + 2 * j, 3, "%02x", ids[i].bytes[j]);
      n += strncmp(e->d_name, pre, strlen(pre)) == 0;
    }
  if (d) closedir(d);
  return n;
}

/* ---- shm: forked ranks; exit status: failures (capped) ---- */
static int shm_rank(int r, int n, const schedc_uid *id) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 60;
  schedc_comm *c;
  if (schedc_comm_init_shm_uid(r, n, id, &o, &c) != SCHEDC_OK) {
    fprintf(stderr, "[rank %d] init: %s\n", r, schedc_errmsg());
    return 100;
  }
  int fds = count_fds();
  int bad = rank_body(c);
  void *keep[3];
  for (int i = 0; i < 3; i++) schedc_mem_alloc(c, 1000, &keep[i]);
  if (count_fds() != fds + 4) { /* the body's last region and these three */
    fprintf(stderr, "[rank %d] %d fds open, expected %d\n", r, count_fds(), fds + 4);
    bad++;
  }
  schedc_comm_free(c); /* releases the four */
  int left = count_fds();
  if (left >= fds - (n - 1)) { /* the arena and the peers' fds went too */
    fprintf(stderr, "[rank %d] %d fds open after schedc_comm_free (%d before it had its regions)\n", r, left, fds);
    bad++;
  }
  return bad > 99 ? 99 : bad;
}

static void run_shm(int n) {
  schedc_uid id;
  CHECK(schedc_unique_id(&id) == SCHEDC_OK);
  ids[nids++] = id;
  pid_t pid[8];
  for (int r = 0; r < n; r++) {
    fflush(NULL);
    if ((pid[r] = fork()) == 0) _exit(shm_rank(r, n, &id));
  }
  for (int r = 0; r < n; r++) {
    int ws = 0;
    waitpid(pid[r], &ws, 0);
    if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) fprintf(stderr, "shm %d ranks: rank %d ended with %d\n", n, r, ws);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
}

/* Argument errors on any communicator. */
static void arg_errors(schedc_comm *c, schedc_comm *other, int live) {
  void *p = (void *)1, *q = NULL;
  CHECK(schedc_mem_alloc(NULL, 8, &p) == SCHEDC_EINVAL && p == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "comm is NULL");
  CHECK(schedc_mem_alloc(c, 8, NULL) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "ptr is NULL");
  CHECK(schedc_mem_alloc(c, 0, &p) == SCHEDC_EINVAL && p == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "bytes is 0");
  CHECK(schedc_mem_alloc(c, (size_t)-1, &p) == SCHEDC_ENOMEM && p == NULL);
  CHECK(schedc_mem_free(NULL, p) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "comm is NULL");
  CHECK(schedc_mem_free(c, NULL) == SCHEDC_OK);
  CHECK(schedc_mem_alloc(c, 100, &p) == SCHEDC_OK && p && ((uintptr_t)p & 63) == 0);
  CHECK(p && ((char *)p)[99] == 0);
  char *m = malloc(16);
  CHECK(schedc_mem_free(c, m) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "not a schedc_mem_alloc allocation of this communicator");
  free(m);
  CHECK(schedc_mem_free(c, (char *)p + 8) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "inside a region");
  if (other) {
    CHECK(schedc_mem_alloc(other, 100, &q) == SCHEDC_OK);
    CHECK(schedc_mem_free(c, q) == SCHEDC_EINVAL); /* another communicator's: still allocated */
    CHECK(schedc_mem_free(other, q) == SCHEDC_OK);
  }
  memset(p, 1, 100); /* still ours after the refusals */
  CHECK(schedc_mem_free(c, p) == SCHEDC_OK);
  CHECK(schedc_mem_free(c, p) == SCHEDC_EINVAL); /* double free */
  CHECK_CONTAINS(schedc_errmsg(), "freed already");
  /* at most 64 live (`live` of them already) */
  void *v[65];
  int got = 0;
  while (got < 65 && schedc_mem_alloc(c, 1, &v[got]) == SCHEDC_OK) got++;
  CHECK(got == 64 - live);
  CHECK_CONTAINS(schedc_errmsg(), "64 regions");
  CHECK(schedc_mem_free(c, v[10]) == SCHEDC_OK);
  CHECK(schedc_mem_alloc(c, 1, &v[10]) == SCHEDC_OK);
  for (int i = 0; i < 40; i++) CHECK(schedc_mem_free(c, v[i]) == SCHEDC_OK);
  /* the other 24 are schedc_comm_free's */
}

int main(int argc, char **argv) {
  int threads_only = argc > 1 && strcmp(argv[1], "threads") == 0; /* ThreadSanitizer: no forks */
  char small[16];
  snprintf(small, sizeof small, "%d", SMALL);
  setenv("SCHEDC_SMALL", small, 1);
  /* threads: 3 ranks */
  schedc_comm *tc[3];
  CHECK(schedc_comm_init_threads(3, NULL, tc) == SCHEDC_OK);
  pthread_t th[3];
  targ ta[3];
  for (int r = 0; r < 3; r++) {
    ta[r] = (targ){tc[r], 0};
    pthread_create(&th[r], NULL, thread_main, &ta[r]);
  }
  for (int r = 0; r < 3; r++) {
    pthread_join(th[r], NULL);
    CHECK(ta[r].bad == 0);
  }
  arg_errors(tc[0], tc[1], 1); /* rank_body left one region */
  for (int r = 0; r < 3; r++) schedc_comm_free(tc[r]);
  if (threads_only) return DONE();
  /* shm: one rank in this process for the argument errors (memfds closed by schedc_comm_free) */
  schedc_uid id;
  schedc_comm *sc = NULL;
  int fds = count_fds();
  CHECK(schedc_unique_id(&id) == SCHEDC_OK);
  ids[nids++] = id;
  CHECK(schedc_comm_init_shm_uid(0, 1, &id, NULL, &sc) == SCHEDC_OK);
  if (sc) {
    arg_errors(sc, NULL, 0);
    schedc_comm_free(sc);
  }
  CHECK(count_fds() == fds);
  run_shm(2);
  run_shm(4);
  CHECK(nids == 3 && count_devshm() == 0);
  return DONE();
}
