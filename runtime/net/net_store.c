/*
 * net_store.c — the bootstrap through torch's TCPStore: under torchrun (TORCHELASTIC_USE_AGENT_STORE)
 * MASTER_ADDR:MASTER_PORT is the agent's store, so the ranks exchange their records there rather
 * than take a port of their own. A client of the store's wire protocol (torch >= 2.0: a VALIDATE
 * handshake; SET, WAIT, GET, ADD, DELETE_KEY; keys and values as a 64-bit length and bytes). Each
 * round every rank sets PREFIX/ROUND/RANK and waits for and reads every other rank's; the last
 * rank to leave deletes the keys, so the agent's store keeps nothing of the bootstrap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "net.h"

/* torch/csrc/distributed/c10d/TCPStoreBackend.hpp's QueryType, its first entries (stable since
 * VALIDATE was put first), and the handshake's magic number. */
enum { Q_VALIDATE = 0, Q_SET = 1, Q_GET = 3, Q_ADD = 4, Q_WAIT = 6, Q_DELETE_KEY = 8 };
#define VALIDATION_MAGIC 0x3C85F7CEu

typedef struct storeoob {
  sc_oob base;
  sc_bootaddr a;
  int fd;
  char prefix[200];
  int rounds;                /* rounds made: the keys to delete */
  double t0;
} storeoob;

/* A request: the query type, then keys / values as 64-bit length + bytes, then an optional int64. */
static int put_str(char *buf, size_t *at, size_t cap, const void *s, size_t len) {
  uint64_t l = len;
  if (*at + sizeof l + len > cap) return -1;
  memcpy(buf + *at, &l, sizeof l);
  memcpy(buf + *at + sizeof l, s, len);
  *at += sizeof l + len;
  return 0;
}

static void key_of(const storeoob *s, int round, const char *who, char *key, size_t cap) {
  snprintf(key, cap, "%s/%d/%s", s->prefix, round, who);
}

static schedc_status lost(storeoob *s, const char *doing, double deadline) {
  (void)deadline;
  return sc_err(errno == ETIMEDOUT ? SCHEDC_ETIMEOUT : SCHEDC_EPEER, "net: torch's store at %s:%s %s while rank %d %s "
                "(torch older than 2.0 speaks another protocol)", s->a.host, s->a.port,
                errno == ETIMEDOUT ? "did not answer in time" : "closed the connection", s->base.rank, doing);
}

/* SET key = val. */
static schedc_status store_set(storeoob *s, const char *key, const void *val, size_t len, double deadline) {
  size_t cap = 1 + 16 + strlen(key) + len, at = 1;
  char *b = malloc(cap);
  if (!b) return sc_err(SCHEDC_ENOMEM, "out of memory");
  b[0] = Q_SET;
  put_str(b, &at, cap, key, strlen(key));
  put_str(b, &at, cap, val, len);
  int rc = sc_boot_write(s->fd, b, at, deadline);
  free(b);
  return rc ? lost(s, "published its record", deadline) : SCHEDC_OK;
}

/* WAIT for key, then GET it into val (exactly len bytes). */
static schedc_status store_get(storeoob *s, const char *key, int who, void *val, size_t len, double deadline) {
  char b[512];
  size_t at = 1;
  uint64_t one = 1, got = 0;
  b[0] = Q_WAIT;
  memcpy(b + at, &one, sizeof one);
  at += sizeof one;
  if (put_str(b, &at, sizeof b, key, strlen(key))) return sc_err(SCHEDC_EINVAL, "net: store key too long");
  unsigned char w = 0xff;
  if (sc_boot_write(s->fd, b, at, deadline) || sc_boot_read(s->fd, &w, 1, deadline)) {
    if (errno == ETIMEDOUT)
      return sc_err(SCHEDC_ETIMEOUT, "net: rank %d waited %.3g s in torch's store at %s:%s for rank %d's record, which "
                    "never came: rank %d is not running, or its WORLD_SIZE or MASTER_PORT differ", s->base.rank,
                    sc_now() - s->t0, s->a.host, s->a.port, who, who);
    return lost(s, "waited for a record", deadline);
  }
  if (w != 0) return sc_err(SCHEDC_EPEER, "net: torch's store at %s:%s cancelled rank %d's wait", s->a.host, s->a.port, s->base.rank);
  at = 1;
  b[0] = Q_GET;
  put_str(b, &at, sizeof b, key, strlen(key));
  if (sc_boot_write(s->fd, b, at, deadline) || sc_boot_read(s->fd, &got, sizeof got, deadline)) return lost(s, "read a record", deadline);
  if (got != len) return sc_err(SCHEDC_EINVAL, "net: rank %d's record in torch's store is %llu bytes, not %zu: another "
                                "schedc, or another program's key", who, (unsigned long long)got, len);
  if (sc_boot_read(s->fd, val, len, deadline)) return lost(s, "read a record", deadline);
  return SCHEDC_OK;
}

static schedc_status store_allgather(sc_oob *o, const void *mine, void *all, size_t bytes, double deadline) {
  storeoob *s = (storeoob *)o;
  char key[300], r[16];
  int round = s->rounds++;
  snprintf(r, sizeof r, "%d", o->rank);
  key_of(s, round, r, key, sizeof key);
  schedc_status st = store_set(s, key, mine, bytes, deadline);
  memcpy((char *)all + (size_t)o->rank * bytes, mine, bytes);
  for (int q = 0; q < o->nranks && st == SCHEDC_OK; q++) {
    if (q == o->rank) continue;
    snprintf(r, sizeof r, "%d", q);
    key_of(s, round, r, key, sizeof key);
    st = store_get(s, key, q, (char *)all + (size_t)q * bytes, bytes, deadline);
  }
  return st;
}

/* DELETE_KEY key (the answer, a count, read and dropped). */
static int store_del(storeoob *s, const char *key, double deadline) {
  char b[512];
  size_t at = 1;
  int64_t n;
  b[0] = Q_DELETE_KEY;
  if (put_str(b, &at, sizeof b, key, strlen(key))) return -1;
  return sc_boot_write(s->fd, b, at, deadline) || sc_boot_read(s->fd, &n, sizeof n, deadline) ? -1 : 0;
}

/* Leave: count this rank out (ADD); the last one out deletes every key of the bootstrap. */
static void store_close(sc_oob *o) {
  storeoob *s = (storeoob *)o;
  double deadline = sc_now() + 5;
  char key[300], b[512];
  size_t at = 1;
  int64_t add = 1, now = 0;
  key_of(s, 0, "left", key, sizeof key);
  b[0] = Q_ADD;
  if (s->rounds && put_str(b, &at, sizeof b, key, strlen(key)) == 0) {
    memcpy(b + at, &add, sizeof add);
    at += sizeof add;
    if (sc_boot_write(s->fd, b, at, deadline) == 0 && sc_boot_read(s->fd, &now, sizeof now, deadline) == 0 &&
        now == o->nranks) {
      for (int round = 0; round < s->rounds; round++)
        for (int q = 0; q < o->nranks; q++) {
          char r[16];
          snprintf(r, sizeof r, "%d", q);
          key_of(s, round, r, key, sizeof key);
          store_del(s, key, deadline);
        }
      key_of(s, 0, "left", key, sizeof key);
      store_del(s, key, deadline);
    }
  }
  close(s->fd);
  free(s);
}

schedc_status sc_store_oob(const sc_bootaddr *a, const char *prefix, int rank, int nranks, double deadline,
                           sc_oob **out) {
  int fd;
  schedc_status st = sc_boot_connect(a, deadline, &fd);
  if (st != SCHEDC_OK) return st;
  storeoob *s = calloc(1, sizeof *s);
  if (!s) {
    close(fd);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  s->base = (sc_oob){store_allgather, store_close, rank, nranks};
  s->a = *a;
  s->fd = fd;
  s->t0 = sc_now();
  snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
  unsigned char v[5] = {Q_VALIDATE};
  uint32_t magic = VALIDATION_MAGIC;
  memcpy(v + 1, &magic, sizeof magic);
  if (sc_boot_write(fd, v, sizeof v, deadline)) {
    st = lost(s, "said hello", deadline);
    close(fd);
    free(s);
    return st;
  }
  *out = &s->base;
  return SCHEDC_OK;
}
