/*
 * net_boot.c — the net backend's own rendezvous, for a unique id (schedc_uid_net: an ephemeral
 * port on rank 0's process, its address in the id, as ncclGetUniqueId's) and for MASTER_ADDR /
 * MASTER_PORT where no store serves that port (srun, a C program). Rank 0 listens; every other
 * rank connects and says who it is (job token, rank, count, host); rank 0 answers each round of
 * the allgather with every rank's bytes, or with the error that ends the job's bootstrap, which it
 * tells every rank that connects. The listener and the connections end with the bootstrap.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "net.h"
#include "params.h"

#define HELLO_MAGIC 0x53434e42u /* "SCNB" */
#define HELLO_VERSION 1u

/* A rank's first words to rank 0. */
typedef struct hello {
  uint32_t magic, version;
  uint64_t token;
  uint32_t rank, nranks;
  char host[SC_NET_HOSTNAME];
} hello;

/* ---- sockets with a deadline ---------------------------------------------------------------- */

static int wait_fd(int fd, short ev, double deadline) {
  for (;;) {
    double left = deadline - sc_now();
    if (left <= 0) { errno = ETIMEDOUT; return -1; }
    struct pollfd p = {fd, ev, 0};
    int r = poll(&p, 1, left > 1 ? 1000 : (int)(left * 1e3) + 1);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

int sc_boot_write(int fd, const void *buf, size_t len, double deadline) {
  const char *p = buf;
  while (len) {
    if (wait_fd(fd, POLLOUT, deadline)) return -1;
    ssize_t w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w < 0) return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

int sc_boot_read(int fd, void *buf, size_t len, double deadline) {
  char *p = buf;
  while (len) {
    if (wait_fd(fd, POLLIN, deadline)) return -1;
    ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return -1;
    if (r == 0) { errno = EPIPE; return -1; }
    p += r;
    len -= (size_t)r;
  }
  return 0;
}

schedc_status sc_boot_check_port(const sc_bootaddr *a) {
  char *end;
  long p = strtol(a->port, &end, 10);
  if (!*a->port || *end || p < 1 || p > 65535)
    return sc_err(SCHEDC_EINVAL, "net: the port of %s is '%s': a number from 1 to 65535", a->what, a->port);
  return SCHEDC_OK;
}

schedc_status sc_boot_connect(const sc_bootaddr *a, double deadline, int *out) {
  *out = -1;
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(a->host, a->port, &hints, &ai);
  if (rc) return sc_err(SCHEDC_EINVAL, "net: %s is '%s', which does not resolve (%s)", a->what, a->host, gai_strerror(rc));
  int err = 0;
  double t0 = sc_now();
  for (;;) {
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
      int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, p->ai_protocol);
      if (fd < 0) { err = errno; continue; }
      int r = connect(fd, p->ai_addr, p->ai_addrlen);
      if (r < 0 && errno == EINPROGRESS) {
        double until = sc_now() + 2.0 < deadline ? sc_now() + 2.0 : deadline;
        socklen_t l = sizeof r;
        if (wait_fd(fd, POLLOUT, until) == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &l) == 0) errno = r;
        else errno = ETIMEDOUT;
        r = errno ? -1 : 0;
      }
      if (r == 0) {
        freeaddrinfo(ai);
        *out = fd;
        return SCHEDC_OK;
      }
      err = errno;
      close(fd);
      if (err == ENETUNREACH || err == EAFNOSUPPORT) break; /* no route: waiting will not help */
    }
    if (err == ENETUNREACH || err == EAFNOSUPPORT || sc_now() + 0.1 > deadline) break;
    usleep(100000); /* rank 0 may not listen yet */
  }
  freeaddrinfo(ai);
  char me[SC_NET_HOSTNAME] = "";
  gethostname(me, sizeof me - 1);
  if (err == ECONNREFUSED)
    return sc_err(SCHEDC_ETIMEOUT, "net: nothing listens at %s (%s:%s): connection refused for %.3g s, on host %s: is "
                  "rank 0 running there, and the port the same on every rank?", a->what, a->host, a->port,
                  sc_now() - t0, me);
  if (err == ETIMEDOUT)
    return sc_err(SCHEDC_ETIMEOUT, "net: no answer from %s (%s:%s) within %.3g s, on host %s: the address is "
                  "unreachable from here, or filtered", a->what, a->host, a->port, sc_now() - t0, me);
  return sc_err(err == ENETUNREACH ? SCHEDC_EINVAL : SCHEDC_ETIMEOUT, "net: %s (%s:%s) cannot be reached from host %s: %s",
                a->what, a->host, a->port, me, strerror(err));
}

/* Close a connection whose peer may still be sending: ours shut first, theirs read to its end
 * (briefly), so the kernel never answers their late bytes with a reset that would discard the
 * reply they have not read yet. */
static void linger_close(int fd) {
  char sink[4096];
  shutdown(fd, SHUT_WR);
  double until = sc_now() + 1;
  while (wait_fd(fd, POLLIN, until) == 0 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {}
  close(fd);
}

/* ---- listening ------------------------------------------------------------------------------- */

/* A listening TCP socket on port (0: any), every address; IPv6 with IPv4 mapped where there is
 * IPv6. -1 with errno. */
static int listen_on(int port) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0;
  if (fd >= 0) {
    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof s6);
    s6.sin6_family = AF_INET6;
    s6.sin6_addr = in6addr_any;
    s6.sin6_port = htons((uint16_t)port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (struct sockaddr *)&s6, sizeof s6) == 0 && listen(fd, 512) == 0) return fd;
    int e = errno;
    close(fd);
    if (e == EADDRINUSE) { errno = e; return -1; }
  }
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in s4;
  memset(&s4, 0, sizeof s4);
  s4.sin_family = AF_INET;
  s4.sin_addr.s_addr = htonl(INADDR_ANY);
  s4.sin_port = htons((uint16_t)port);
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&s4, sizeof s4) == 0 && listen(fd, 512) == 0) return fd;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

/* Is one of host's addresses this machine's (one a socket can be bound to)? -1: it does not
 * resolve (errmsg set). */
static int is_local(const sc_bootaddr *a) {
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(a->host, NULL, &hints, &ai);
  if (rc) {
    sc_err(SCHEDC_EINVAL, "net: %s is '%s', which does not resolve (%s)", a->what, a->host, gai_strerror(rc));
    return -1;
  }
  int local = 0;
  for (struct addrinfo *p = ai; p && !local; p = p->ai_next) {
    int fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    local = bind(fd, p->ai_addr, p->ai_addrlen) == 0; /* port 0: only the address is tried */
    close(fd);
  }
  freeaddrinfo(ai);
  return local;
}

schedc_status sc_boot_listen(const sc_bootaddr *a, int *out) {
  *out = -1;
  char me[SC_NET_HOSTNAME] = "";
  gethostname(me, sizeof me - 1);
  int local = is_local(a);
  if (local < 0) return SCHEDC_EINVAL;
  if (!local)
    return sc_err(SCHEDC_EINVAL, "net: this process is rank 0, on host %s, but %s is '%s', an address of another "
                  "host: rank 0 must run where MASTER_ADDR points", me, a->what, a->host);
  int fd = listen_on(atoi(a->port));
  if (fd < 0 && errno == EADDRINUSE)
    return sc_err(SCHEDC_EINVAL, "net: port %s of host %s (%s) is taken: another job's bootstrap or another program "
                  "holds it; give each job its own MASTER_PORT", a->port, me, a->what);
  if (fd < 0) return sc_err(SCHEDC_EIO, "net: cannot listen on port %s of host %s (%s): %s", a->port, me, a->what, strerror(errno));
  *out = fd;
  return SCHEDC_OK;
}

/* ---- unique ids ------------------------------------------------------------------------------ */

/* The listeners of the ids this process made and has not used yet. */
#define MAX_IDS 64
static struct { unsigned char id[16]; int fd; } ids[MAX_IDS];
static int nids;
static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;

/* This host's IPv4 address for an id: SCHEDC_NET_IFNAME's, else the first interface's that is up
 * and not loopback, else the loopback's. 0 or SCHEDC_EINVAL. */
static schedc_status my_ipv4(struct in_addr *out) {
  const char *want = sc_param_str(SC_P_SCHEDC_NET_IFNAME);
  struct ifaddrs *ifs = NULL, *p;
  if (getifaddrs(&ifs) != 0) return sc_err(SCHEDC_EIO, "net: cannot list this host's interfaces: %s", strerror(errno));
  int found = 0;
  out->s_addr = htonl(INADDR_LOOPBACK);
  for (p = ifs; p && !found; p = p->ifa_next) {
    if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET || !(p->ifa_flags & IFF_UP)) continue;
    if (want ? strcmp(p->ifa_name, want) != 0 : (p->ifa_flags & IFF_LOOPBACK) != 0) continue;
    *out = ((struct sockaddr_in *)(void *)p->ifa_addr)->sin_addr;
    found = 1;
  }
  freeifaddrs(ifs);
  if (want && !found)
    return sc_err(SCHEDC_EINVAL, "net: SCHEDC_NET_IFNAME is '%s', which is no interface of this host that is up with an "
                  "IPv4 address", want);
  return SCHEDC_OK;
}

schedc_status schedc_uid_net(schedc_uid *id) {
  if (!id) return sc_err(SCHEDC_EINVAL, "id is NULL");
  memset(id, 0, sizeof *id);
  struct in_addr ip;
  schedc_status st = my_ipv4(&ip);
  if (st != SCHEDC_OK) return st;
  unsigned char tok[8];
  if (getrandom(tok, sizeof tok, 0) != (ssize_t)sizeof tok)
    return sc_err(SCHEDC_EIO, "net: no randomness for the id: %s", strerror(errno));
  int fd = listen_on(0);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return sc_err(SCHEDC_EIO, "net: cannot listen for the bootstrap: %s", strerror(e));
  }
  uint16_t port = ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port;
  id->bytes[0] = 'S';
  id->bytes[1] = 'N';
  memcpy(id->bytes + 2, &ip.s_addr, 4); /* network order */
  memcpy(id->bytes + 6, &port, 2);
  memcpy(id->bytes + 8, tok, 8);
  pthread_mutex_lock(&ids_lock);
  int room = nids < MAX_IDS;
  if (room) {
    memcpy(ids[nids].id, id->bytes, 16);
    ids[nids++].fd = fd;
  }
  pthread_mutex_unlock(&ids_lock);
  if (!room) {
    close(fd);
    return sc_err(SCHEDC_EUNAVAIL, "net: %d ids made in this process wait for their communicator: use one before making "
                  "more", MAX_IDS);
  }
  return SCHEDC_OK;
}

int sc_boot_take_listener(const unsigned char id[16]) {
  int fd = -1;
  pthread_mutex_lock(&ids_lock);
  for (int i = 0; i < nids && fd < 0; i++)
    if (!memcmp(ids[i].id, id, 16)) {
      fd = ids[i].fd;
      ids[i] = ids[--nids];
    }
  pthread_mutex_unlock(&ids_lock);
  return fd;
}

schedc_status sc_boot_uid_addr(const unsigned char id[16], sc_bootaddr *a) {
  memset(a, 0, sizeof *a);
  if (id[0] != 'S' || id[1] != 'N')
    return sc_err(SCHEDC_EINVAL, "net: the id was not made by schedc_uid_net (schedc_unique_id's ids are for shm)");
  struct in_addr ip;
  uint16_t port;
  memcpy(&ip.s_addr, id + 2, 4);
  memcpy(&port, id + 6, 2);
  inet_ntop(AF_INET, &ip, a->host, sizeof a->host);
  snprintf(a->port, sizeof a->port, "%u", (unsigned)ntohs(port));
  memcpy(&a->token, id + 8, 8);
  a->what = "the id's address (rank 0's, schedc_uid_net)";
  return SCHEDC_OK;
}

/* ---- rank 0 ---------------------------------------------------------------------------------- */

typedef struct rootoob {
  sc_oob base;
  sc_bootaddr a;
  int lfd;
  int *conn;                 /* [nranks]: each rank's connection (-1: none yet; conn[0] unused) */
  char (*host)[SC_NET_HOSTNAME];
  int joined;                /* the first round's accepting is done */
} rootoob;

/* Reply to fd: status 0 and len bytes of data, or an error status and its message. */
static void reply(int fd, uint32_t status, const void *data, uint32_t len, double deadline) {
  uint32_t h[2] = {status, len};
  if (sc_boot_write(fd, h, sizeof h, deadline) == 0 && len) sc_boot_write(fd, data, len, deadline);
}

static void root_close(sc_oob *o) {
  rootoob *r = (rootoob *)o;
  if (r->lfd >= 0) close(r->lfd);
  r->lfd = -1;
  for (int q = 0; r->conn && q < o->nranks; q++)
    if (r->conn[q] >= 0) linger_close(r->conn[q]);
  free(r->conn);
  free(r->host);
  free(r);
}

/* Tell every connected rank the error that ends the bootstrap (given a moment of its own: the
 * bootstrap's deadline may have passed), and return it. */
static schedc_status root_fail(rootoob *r, schedc_status st, double deadline) {
  const char *msg = schedc_errmsg();
  double until = sc_now() + 2 > deadline ? sc_now() + 2 : deadline;
  for (int q = 1; q < r->base.nranks; q++)
    if (r->conn[q] >= 0) reply(r->conn[q], (uint32_t)st, msg, (uint32_t)strlen(msg), until);
  return st;
}

/* Accept until every rank has said hello (or the deadline). A connection that is not a schedc
 * rank is dropped; a rank of another job is refused by name; one that disagrees with this job
 * (its count, a rank taken) ends the bootstrap for all, and so that every rank learns why the
 * listener stays until each has connected and been told. */
static schedc_status root_accept(rootoob *r, double deadline) {
  int N = r->base.nranks, heard = 1;
  double t0 = sc_now();
  schedc_status fatal = SCHEDC_OK;
  char why[SC_FAILMSG] = "";
  char me[SC_NET_HOSTNAME] = "";
  gethostname(me, sizeof me - 1);
  while (heard < N) {
    if (wait_fd(r->lfd, POLLIN, deadline)) break;
    int fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    hello h;
    double hd = sc_now() + 5 < deadline ? sc_now() + 5 : deadline; /* a silent connection waits no longer */
    if (sc_boot_read(fd, &h, sizeof h, hd) || h.magic != HELLO_MAGIC) { close(fd); continue; }
    h.host[SC_NET_HOSTNAME - 1] = 0;
    schedc_status st = SCHEDC_OK;
    int mine = 0; /* a rank of this job */
    if (h.token != r->a.token)
      st = sc_err(SCHEDC_EINVAL, "net: %s (%s:%s) is the bootstrap of another job (its token differs): rank %u of host "
                  "%s aims at the wrong address, or two jobs share it", r->a.what, r->a.host, r->a.port, h.rank, h.host);
    else if (h.version != HELLO_VERSION)
      mine = 1, st = sc_err(SCHEDC_EINVAL, "net: rank %u (host %s) runs another schedc (bootstrap version %u; rank 0's "
                            "%u)", h.rank, h.host, h.version, HELLO_VERSION);
    else if (h.nranks != (uint32_t)N)
      mine = 1, st = sc_err(SCHEDC_EINVAL, "net: the ranks disagree on their count: rank %u (host %s) was started with %u "
                            "ranks, rank 0 (host %s) with %d", h.rank, h.host, h.nranks, me, N);
    else if (h.rank == 0 || h.rank >= (uint32_t)N)
      mine = 1, st = sc_err(SCHEDC_EINVAL, "net: a process on host %s says it is rank %u of %d: rank 0 is on host %s, "
                            "the others are 1 to %d", h.host, h.rank, N, me, N - 1);
    else if (r->conn[h.rank] >= 0)
      mine = 1, st = sc_err(SCHEDC_EINVAL, "net: two processes say they are rank %u (on hosts %s and %s)", h.rank,
                            r->host[h.rank], h.host);
    if (st == SCHEDC_OK && fatal == SCHEDC_OK) {
      r->conn[h.rank] = fd;
      memcpy(r->host[h.rank], h.host, SC_NET_HOSTNAME);
      heard++;
      continue;
    }
    if (st != SCHEDC_OK && mine && fatal == SCHEDC_OK) {
      fatal = st;
      snprintf(why, sizeof why, "%s", schedc_errmsg());
      sc_err_str(fatal, why);
      root_fail(r, fatal, deadline); /* the ranks that joined already */
    }
    if (mine || fatal != SCHEDC_OK) heard++;
    if (st == SCHEDC_OK) sc_err_str(fatal, why); /* a good rank after the failure: told it */
    reply(fd, (uint32_t)(st != SCHEDC_OK ? st : fatal), schedc_errmsg(), (uint32_t)strlen(schedc_errmsg()), sc_now() + 2);
    linger_close(fd);
  }
  if (fatal != SCHEDC_OK) return sc_err_str(fatal, why);
  if (heard < N) {
    char miss[160] = "";
    size_t l = 0;
    for (int q = 1, k = 0; q < N && l + 12 < sizeof miss; q++)
      if (r->conn[q] < 0) l += (size_t)snprintf(miss + l, sizeof miss - l, "%s%d", k++ ? ", " : "", q);
    return root_fail(r, sc_err(SCHEDC_ETIMEOUT, "net: rank 0 (host %s) waited %.3g s at %s (%s:%s) for rank%s %s, which "
                               "never connected: not started, or another MASTER_ADDR / MASTER_PORT or id", me,
                               sc_now() - t0, r->a.what, r->a.host, r->a.port, N - heard > 1 ? "s" : "", miss), deadline);
  }
  return SCHEDC_OK;
}

static schedc_status root_allgather(sc_oob *o, const void *mine, void *all, size_t bytes, double deadline) {
  rootoob *r = (rootoob *)o;
  int N = o->nranks;
  schedc_status st;
  if (!r->joined) {
    r->joined = 1;
    if ((st = root_accept(r, deadline)) != SCHEDC_OK) return st;
  }
  memcpy(all, mine, bytes);
  for (int q = 1; q < N; q++) {
    uint32_t len = 0;
    char *dst = (char *)all + (size_t)q * bytes;
    if (sc_boot_read(r->conn[q], &len, sizeof len, deadline) || (len == bytes && sc_boot_read(r->conn[q], dst, bytes, deadline)))
      return root_fail(r, sc_err(errno == ETIMEDOUT ? SCHEDC_ETIMEOUT : SCHEDC_EPEER, "net: rank %d (host %s) %s during "
                                 "the bootstrap", q, r->host[q], errno == ETIMEDOUT ? "stopped answering" : "left"), deadline);
    if (len != bytes)
      return root_fail(r, sc_err(SCHEDC_EINVAL, "net: rank %d (host %s) sent %u bytes where rank 0 expects %zu: another "
                                 "schedc", q, r->host[q], len, bytes), deadline);
  }
  for (int q = 1; q < N; q++) reply(r->conn[q], 0, all, (uint32_t)(bytes * (size_t)N), deadline);
  return SCHEDC_OK;
}

schedc_status sc_boot_root(int listen_fd, const sc_bootaddr *a, int nranks, sc_oob **out) {
  rootoob *r = calloc(1, sizeof *r);
  if (r) {
    r->conn = malloc((size_t)nranks * sizeof *r->conn);
    r->host = calloc((size_t)nranks, sizeof *r->host);
  }
  if (!r || !r->conn || !r->host) {
    if (r) { free(r->conn); free(r->host); free(r); }
    close(listen_fd);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  for (int q = 0; q < nranks; q++) r->conn[q] = -1;
  r->base = (sc_oob){root_allgather, root_close, 0, nranks};
  r->a = *a;
  r->lfd = listen_fd;
  *out = &r->base;
  return SCHEDC_OK;
}

/* ---- the other ranks ------------------------------------------------------------------------- */

typedef struct clientoob {
  sc_oob base;
  sc_bootaddr a;
  int fd;
  double t0;                 /* when it connected */
} clientoob;

static void client_close(sc_oob *o) {
  clientoob *k = (clientoob *)o;
  close(k->fd);
  free(k);
}

static schedc_status client_allgather(sc_oob *o, const void *mine, void *all, size_t bytes, double deadline) {
  clientoob *k = (clientoob *)o;
  uint32_t len = (uint32_t)bytes, h[2];
  /* rank 0 answers by its own deadline, which may be a little after this rank's: a second more */
  if (sc_boot_write(k->fd, &len, sizeof len, deadline) || sc_boot_write(k->fd, mine, bytes, deadline) ||
      sc_boot_read(k->fd, h, sizeof h, deadline + 1)) {
    if (errno == ETIMEDOUT)
      return sc_err(SCHEDC_ETIMEOUT, "net: rank %d waited %.3g s for rank 0's answer at %s (%s:%s): some rank never "
                    "joined", o->rank, sc_now() - k->t0, k->a.what, k->a.host, k->a.port);
    return sc_err(SCHEDC_EPEER, "net: rank 0 (at %s:%s) closed the bootstrap before answering rank %d: it failed",
                  k->a.host, k->a.port, o->rank);
  }
  if (h[0]) { /* rank 0's refusal, in its words */
    char msg[SC_FAILMSG];
    uint32_t l = h[1] < sizeof msg - 1 ? h[1] : (uint32_t)sizeof msg - 1;
    if (sc_boot_read(k->fd, msg, l, sc_now() + 2)) l = 0;
    msg[l] = 0;
    return sc_err((schedc_status)h[0], "%s", l ? msg : "net: rank 0 refused this rank");
  }
  if (h[1] != bytes * (size_t)o->nranks || sc_boot_read(k->fd, all, h[1], deadline + 1))
    return sc_err(SCHEDC_EPEER, "net: rank 0's answer at %s:%s was cut short (%u bytes for %d ranks)", k->a.host,
                  k->a.port, h[1], o->nranks);
  return SCHEDC_OK;
}

schedc_status sc_boot_client(const sc_bootaddr *a, int rank, int nranks, double deadline, sc_oob **out) {
  int fd;
  schedc_status st = sc_boot_connect(a, deadline, &fd);
  if (st != SCHEDC_OK) return st;
  hello h;
  memset(&h, 0, sizeof h);
  h.magic = HELLO_MAGIC;
  h.version = HELLO_VERSION;
  h.token = a->token;
  h.rank = (uint32_t)rank;
  h.nranks = (uint32_t)nranks;
  gethostname(h.host, sizeof h.host - 1);
  clientoob *k = calloc(1, sizeof *k);
  if (!k || sc_boot_write(fd, &h, sizeof h, deadline)) {
    close(fd);
    free(k);
    return k ? sc_err(SCHEDC_EPEER, "net: %s (%s:%s) closed the connection at once", a->what, a->host, a->port)
             : sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  k->base = (sc_oob){client_allgather, client_close, rank, nranks};
  k->a = *a;
  k->fd = fd;
  k->t0 = sc_now();
  *out = &k->base;
  return SCHEDC_OK;
}
