/*
 * test_net_hostile.c — the net backend against peers that are not schedc's, careless calls, and a
 * communicator that a forked child inherits. A fake rank 0 (a thread of this test, behind a forged
 * schedc_uid_net id) answers rank 1's bootstrap with nothing, an HTTP error, a table whose record
 * in rank 1's place is not the one it sent, and a rank 0 record giving a 2 GiB UCX address: each a
 * named error with a real status within the timeout, no sanitizer report, no descriptor left. A
 * real rank 0 drops a connection that sends garbage and refuses another job's by name, and its job
 * still starts; a call with a bad rank count does not use up the id. After init each of two forked
 * ranks forks a child that calls on the communicator (refused, naming the fork) and frees it (as
 * Python's atexit does in a forked child): the parents' next calls still pass.
 * Usage: test_net_hostile (77 without the net backend).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

/* What a peer sees on the wire (runtime/net/net_boot.c's hello, net_init.c's record), as a
 * stranger would write it: the fake checks the record's length against it. */
typedef struct fake_hello {
  uint32_t magic, version;
  uint64_t token;
  uint32_t rank, nranks;
  char host[64];
} fake_hello;
typedef struct fake_rec {
  uint32_t magic, version, rank, nranks, status, addr_len;
  int32_t pid;
  uint32_t pad_;
  uint64_t host, plan_hash, layout, start;
  char hostname[64];
  char why[160];
} fake_rec;

enum { SILENT, HTTP, MISPLACED, HUGE_ADDR };
static const char *mode_name[] = {"silent", "http", "misplaced", "huge address"};

typedef struct fake { int lfd, mode, ok; } fake;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int wait_in(int fd, double s) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, (int)(s * 1e3)) == 1;
}

static int read_all(int fd, void *buf, size_t n) {
  for (char *p = buf; n;) {
    if (!wait_in(fd, 5)) return -1;
    ssize_t r = read(fd, p, n);
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static void write_all(int fd, const void *buf, size_t n) {
  for (const char *p = buf; n;) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

/* The fake rank 0: one connection, its hello and round-one record read, then the mode's answer;
 * it then reads until rank 1 closes (so its close is seen, not a reset). */
static void *fake_root(void *arg) {
  fake *f = arg;
  if (!wait_in(f->lfd, 10)) return NULL;
  int fd = accept(f->lfd, NULL, NULL);
  fake_hello h;
  uint32_t len = 0;
  fake_rec rec;
  if (fd < 0 || read_all(fd, &h, sizeof h) || read_all(fd, &len, sizeof len) || len != sizeof rec ||
      read_all(fd, &rec, sizeof rec)) {
    fprintf(stderr, "fake rank 0 (%s): no hello and %zu-byte record (got %u bytes): the mirror of the wire format "
            "in this test is stale\n", mode_name[f->mode], sizeof rec, len);
    if (fd >= 0) close(fd);
    return NULL;
  }
  f->ok = 1;
  if (f->mode == HTTP) {
    static const char http[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    write_all(fd, http, sizeof http - 1);
  } else if (f->mode == MISPLACED || f->mode == HUGE_ADDR) {
    fake_rec t[2] = {rec, rec};
    t[0].rank = 0;
    t[0].pid = rec.pid + 1;
    if (f->mode == MISPLACED) t[0].addr_len = t[1].addr_len = 1; /* rank 1's place: not what it sent */
    else t[0].addr_len = 0x7fffffffu;                              /* rank 0's address: 2 GiB */
    uint32_t hdr[2] = {0, (uint32_t)sizeof t};
    write_all(fd, hdr, sizeof hdr);
    write_all(fd, t, sizeof t);
  }
  char sink[256];
  while (wait_in(fd, 10) && read(fd, sink, sizeof sink) > 0) {}
  close(fd);
  return NULL;
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* the directory's own */
}

/* Rank 1 of 2 against the fake: the status, the message in *msg, the seconds taken. */
static schedc_status against_fake(int mode, double timeout, char *msg, size_t cap, double *secs) {
  fake f = {socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), mode, 0};
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  CHECK(f.lfd >= 0 && bind(f.lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(f.lfd, 4) == 0 &&
        getsockname(f.lfd, (struct sockaddr *)&a, &al) == 0);
  schedc_uid id; /* schedc_uid_net's layout: 'S' 'N', IPv4 address, port, 8 bytes of token */
  memset(&id, 0, sizeof id);
  id.bytes[0] = 'S';
  id.bytes[1] = 'N';
  memcpy(id.bytes + 2, &a.sin_addr.s_addr, 4);
  memcpy(id.bytes + 6, &a.sin_port, 2);
  memcpy(id.bytes + 8, "hostile!", 8);
  pthread_t t;
  pthread_create(&t, NULL, fake_root, &f);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = timeout;
  schedc_comm *c = NULL;
  double t0 = now_s();
  schedc_status st = schedc_comm_init_net(1, 2, &id, &o, &c);
  *secs = now_s() - t0;
  snprintf(msg, cap, "%s", schedc_errmsg());
  pthread_join(t, NULL);
  close(f.lfd);
  CHECK(f.ok);
  CHECK(c == NULL);
  if (c) schedc_comm_free(c);
  printf("%s: status %d (%s) in %.2f s: %s\n", mode_name[mode], st, schedc_status_str(st), *secs, msg);
  return st;
}

/* ---- a real rank 0 and strangers at its port ---------------------------------------------------- */

typedef struct job { schedc_uid id; int rank; schedc_status st; schedc_comm *c; } job;

static void *rank_thread(void *arg) {
  job *j = arg;
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 10;
  j->st = schedc_comm_init_net(j->rank, 2, &j->id, &o, &j->c);
  if (j->st) fprintf(stderr, "rank %d: %s\n", j->rank, schedc_errmsg());
  return NULL;
}

static int dial(const schedc_uid *id) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  memcpy(&a.sin_addr.s_addr, id->bytes + 2, 4);
  memcpy(&a.sin_port, id->bytes + 6, 2);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); fd = -1; }
  return fd;
}

static void strangers(void) {
  job j[2];
  CHECK(schedc_uid_net(&j[0].id) == SCHEDC_OK);
  j[1] = j[0];
  j[0].rank = 0;
  j[1].rank = 1;
  pthread_t t0, t1;
  pthread_create(&t0, NULL, rank_thread, &j[0]);
  int junk = dial(&j[0].id), other = dial(&j[0].id);
  CHECK(junk >= 0 && other >= 0);
  char garbage[sizeof(fake_hello)];
  memset(garbage, 'A', sizeof garbage);
  write_all(junk, garbage, sizeof garbage); /* not a schedc rank: dropped */
  fake_hello h;
  memset(&h, 0, sizeof h);
  h.magic = 0x53434e42u; /* "SCNB" */
  h.version = 1;
  h.token = 42; /* another job's */
  h.rank = 1;
  h.nranks = 2;
  snprintf(h.host, sizeof h.host, "elsewhere");
  write_all(other, &h, sizeof h);
  uint32_t ans[2] = {0, 0};
  char why[512] = "";
  CHECK(read_all(other, ans, sizeof ans) == 0 && ans[0] == SCHEDC_EINVAL && ans[1] < sizeof why &&
        read_all(other, why, ans[1]) == 0);
  CHECK_CONTAINS(why, "is the bootstrap of another job (its token differs): rank 1 of host elsewhere");
  pthread_create(&t1, NULL, rank_thread, &j[1]);
  pthread_join(t0, NULL);
  pthread_join(t1, NULL);
  close(junk);
  close(other);
  CHECK(j[0].st == SCHEDC_OK && j[1].st == SCHEDC_OK);
  for (int r = 0; r < 2; r++) schedc_comm_free(j[r].c);
}

/* ---- fork after init ---------------------------------------------------------------------------- */

/* One rank of two (own process): init, a call, a forked child that calls (refused) and frees, then
 * three more calls here. 0 when every check passed. */
static int forked_rank(int rank, const schedc_uid *id) {
  setenv("SCHEDC_HOST_ID", rank ? "b" : "a", 1); /* two pretend hosts: UCX over TCP */
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 3;
  schedc_comm *c = NULL;
  float x[1024];
  for (int i = 0; i < 1024; i++) x[i] = (float)(rank + 1);
  if (schedc_comm_init_net(rank, 2, id, &o, &c) != SCHEDC_OK ||
      schedc_allreduce(x, x, 1024, SCHEDC_F32, SCHEDC_SUM, c, NULL) != SCHEDC_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, schedc_errmsg());
    return 1;
  }
  fflush(NULL);
  pid_t kid = fork();
  if (kid == 0) {
    schedc_status st = schedc_allreduce(x, x, 1024, SCHEDC_F32, SCHEDC_SUM, c, NULL);
    int bad = st != SCHEDC_EINVAL || !strstr(schedc_errmsg(), "is a fork of it");
    if (bad) fprintf(stderr, "rank %d's forked child: status %d: %s\n", rank, st, schedc_errmsg());
    schedc_comm_free(c);
    /* _exit: the parent's UCX state stays in the child by design (net.c), and LeakSanitizer would
     * count UCX's objects that only its own mapped pools point to */
    _exit(bad ? 3 : 0);
  }
  int ws = -1, bad = 0;
  waitpid(kid, &ws, 0);
  if (!WIFEXITED(ws) || WEXITSTATUS(ws)) {
    fprintf(stderr, "rank %d's forked child ended with status %#x\n", rank, ws);
    bad = 1;
  }
  for (int k = 0; k < 3 && !bad; k++) {
    for (int i = 0; i < 1024; i++) x[i] = (float)(rank + 1);
    if (schedc_allreduce(x, x, 1024, SCHEDC_F32, SCHEDC_SUM, c, NULL) != SCHEDC_OK || x[0] != 3 || x[1023] != 3) {
      fprintf(stderr, "rank %d after the fork: %s (x[0] %g)\n", rank, schedc_errmsg(), x[0]);
      bad = 1;
    }
  }
  schedc_comm_free(c);
  return bad;
}

int main(void) {
  schedc_uid probe;
  if (schedc_uid_net(&probe) == SCHEDC_EUNAVAIL) SKIP_TOOL("UCX", "this build has no net backend (Debian: libucx-dev)");
  int base = open_fds();
  char msg[1024];
  double secs;

  /* a rank 0 that never answers: the timeout, naming where it waited */
  CHECK(against_fake(SILENT, 1, msg, sizeof msg, &secs) == SCHEDC_ETIMEOUT);
  CHECK_CONTAINS(msg, "rank 1 waited");
  CHECK(secs < 4);
  base = open_fds() < base ? base : open_fds(); /* (UCX's first context may keep a descriptor of its own) */
  /* something else at the port: an HTTP server's answer is no status of schedc's */
  CHECK(against_fake(HTTP, 5, msg, sizeof msg, &secs) == SCHEDC_EPEER);
  CHECK_CONTAINS(msg, "with bytes that are not schedc's bootstrap (50545448 where a status goes)");
  CHECK(secs < 4);
  /* a table whose rank-1 record is not rank 1's (an address of 1 byte): refused, not copied */
  CHECK(against_fake(MISPLACED, 5, msg, sizeof msg, &secs) == SCHEDC_EINVAL);
  CHECK_CONTAINS(msg, "holds another record in rank 1's place than the one it sent");
  CHECK(secs < 4);
  /* rank 0's record claims a 2 GiB address: refused at once, nothing allocated or sent for it */
  CHECK(against_fake(HUGE_ADDR, 5, msg, sizeof msg, &secs) == SCHEDC_EINVAL);
  CHECK_CONTAINS(msg, "rank 0's bootstrap record gives a UCX address of 2147483647 bytes");
  CHECK(secs < 4);
  int fds = open_fds();
  if (fds != base) fprintf(stderr, "descriptors: %d before, %d after the fakes\n", base, fds);
  CHECK(fds == base);

  strangers();

  /* a careless call on rank 0 (a rank count of -3) is refused and leaves the id usable */
  schedc_uid one_id;
  schedc_comm *solo = NULL;
  schedc_comm_opts so = SCHEDC_COMM_OPTS_INIT;
  so.timeout_s = 5;
  CHECK(schedc_uid_net(&one_id) == SCHEDC_OK);
  CHECK(schedc_comm_init_net(0, -3, &one_id, &so, &solo) == SCHEDC_EINVAL && solo == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "nranks -3 out of range");
  CHECK(schedc_comm_init_net(0, 1, &one_id, &so, &solo) == SCHEDC_OK);
  if (!solo) fprintf(stderr, "the id after a refused call: %s\n", schedc_errmsg());
  schedc_comm_free(solo);

  schedc_uid id;
  CHECK(schedc_uid_net(&id) == SCHEDC_OK);
  fflush(NULL);
  pid_t one = fork();
  if (one == 0) exit(forked_rank(1, &id));
  int bad0 = forked_rank(0, &id), ws = -1;
  waitpid(one, &ws, 0);
  CHECK(bad0 == 0);
  CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  return DONE();
}
