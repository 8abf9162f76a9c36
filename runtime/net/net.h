/*
 * net.h — the `net` backend (runtime/net/, built when UCX is found): ranks on any hosts, no MPI
 * launcher, bootstrapped from a unique id or a store (DESIGN.md §12). Transfers are UCX tagged
 * messages run by the message executor (core/msgrun.h); within a host UCX's shared-memory
 * transports carry them, between hosts its network ones. Internal to runtime/net/:
 *   net.c       the backend table, the port (tags, waits, failures named), free
 *   net_ucx.c   the UCX context, worker, endpoints, control messages (failure notices, heartbeats)
 *   net_shrink.c schedc_comm_shrink: the survivors' agreement over their connections, the new
 *               communicator made of the old one's UCX worker and the live peers' endpoints
 *   net_init.c  the bootstrap's records, schedc_comm_init_net / _oob, schedc_comm_init_env's net
 *   net_boot.c  the bootstrap's own TCP rendezvous (schedc_uid_net, MASTER_ADDR:MASTER_PORT)
 *   net_store.c a client of torch's TCPStore (torchrun's agent store at MASTER_ADDR:MASTER_PORT)
 */
#ifndef SC_NET_H
#define SC_NET_H

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

#include "comm.h"
#include "msgrun.h"

#define SC_NET_HOSTNAME 64
/* The longest UCX worker address a bootstrap record may give (a few hundred bytes over TCP and
 * shared memory; RDMA devices add tens each): a longer one is a peer's garbage, refused. */
#define SC_NET_ADDR_MAX 65536u

/* One peer of a communicator, as the bootstrap described it. */
typedef struct sc_netpeer {
  struct sc_net *net;        /* back pointer (the endpoint's error handler gets the peer) */
  int rank;
  ucp_ep_h ep;               /* NULL for this rank */
  uint64_t host;             /* sc_host_id */
  int same_host;             /* on this rank's host: shared memory, and its process is checked */
  int32_t pid;
  uint64_t start;            /* its process's start time (clock ticks after boot): pid reuse */
  char hostname[SC_NET_HOSTNAME];
  double heard;              /* sc_now() when a heartbeat of it last arrived (0: never) */
  int lost;                  /* the UCX status that ended its connection (0: none): it failed, its host or
                              * the link went down, or it closed its communicator (a wait for it fails) */
} sc_netpeer;

/* A posted operation of the current step (or exchange): the UCX request and its peer. */
typedef struct sc_netreq { void *req; int peer; } sc_netreq;

/* The backend's state (c->be_data). */
typedef struct sc_net {
  int pid;                   /* the process that made it: a fork's copy shares its sockets and UCX's
                              * segments, so a forked child never uses or releases them (net.c) */
  struct sc_net *orphan;     /* a fork's copies, kept (reachable) until that process exits */
  ucp_context_h ctx;
  ucp_worker_h worker;
  int efd;                   /* the worker's event fd (sleeping waits) */
  int nranks;
  sc_netpeer *peer;          /* [nranks] */
  sc_msgbufs bufs;
  sc_netreq *reqs; size_t nreq, req_cap;
  uint32_t gathers;          /* allgathers made in the current call (their tags) */
  uint64_t gather_seq;       /* the call they belong to */
  /* The first failure this rank learned: its own (a timeout, a lost peer) or a peer's notice.
   * Once set every wait ends with it. */
  int failed, told;          /* told: this rank's notice went out */
  schedc_status fail_st;
  char why[SC_FAILMSG];
  /* control messages' headers and the notice's text: UCX may still send them after the call that
   * posted them returned, so they live until the endpoints close */
  uint32_t am_hdr[3][3];
  char notice[SC_FAILMSG];
  double beat_at;            /* when this rank last sent heartbeats */
  /* Shrinks this worker has been through (net_shrink.c): a shrunk communicator takes over its
   * parent's worker, so every tag and control message carries the generation (mod 4) and one of
   * another generation (a late message of the old communicator) never matches nor breaks it. */
  uint32_t gen;
  ucp_ep_h *grave; int ngrave; /* endpoints to the ranks a shrink left out: closed with the worker */
} sc_net;

/* net_ucx.c — UCX. sc_net_ucx_open: context and worker, *addr (len bytes, released with
 * ucp_worker_release_address) this worker's address. sc_net_ucx_connect: an endpoint to every
 * peer from its address (err mode: peer failure detection between hosts; none within one, where
 * UCX's shared memory needs it so). sc_net_ucx_close: endpoints flushed (bounded), worker and
 * context released; safe on a partly made state. */
schedc_status sc_net_ucx_open(sc_net *n, ucp_address_t **addr, size_t *len);
schedc_status sc_net_ucx_connect(sc_net *n, int me, int nranks, const void *const *addrs);
void sc_net_ucx_close(sc_net *n, int nranks, int flush);
/* Progress the worker once through everything pending; returns how much happened. */
unsigned sc_net_progress(sc_net *n);
/* Sleep until the worker has an event or `seconds` pass (after progress found nothing). */
void sc_net_sleep(sc_net *n, double seconds);
/* Record this rank's failure (the first wins) and tell every peer once (best effort, not waited
 * for); the communicator is broken. */
void sc_net_fail(schedc_comm *c, schedc_status st, const char *msg);
/* Heartbeats to every peer (a rank that waits long says it is alive, so that a peer waiting for it
 * knows it is not the one that failed). */
void sc_net_beat(schedc_comm *c);
/* Is peer r's process alive? (Only known for ranks on this host; 1 otherwise.) */
int sc_net_alive(const sc_netpeer *p);
/* Did the lost connection to p end because its process is gone for certain (its host reset the
 * connection: the process exited), rather than unheard of (a link down, a stall)? */
int sc_net_lost_for_good(const sc_netpeer *p);
/* Receive and drop the queued messages whose tag matches tag under mask (bounded: a large one from
 * a dead rank is cancelled): a shrunk worker's late messages of the old generation, so that none
 * holds memory or is left unread when the worker closes. */
void sc_net_drain(sc_net *n, ucp_tag_t tag, ucp_tag_t mask);

/* Tags: the worker's generation (2 bits), what a message is (2), its sender, the call (low 16 bits)
 * and the step or exchange. */
enum { SC_NT_DATA = 0, SC_NT_CRC = 1, SC_NT_GATHER = 2, SC_NT_SHRINK = 3 };
#define SC_NET_GEN_MASK ((ucp_tag_t)3 << 62)
static inline ucp_tag_t sc_net_tag(uint32_t gen, int kind, int src, uint64_t seq, uint32_t step) {
  return (ucp_tag_t)(gen & 3u) << 62 | (ucp_tag_t)(kind & 3) << 60 | (ucp_tag_t)((uint32_t)src & 0xfffffu) << 40 |
         (ucp_tag_t)(seq & 0xffffu) << 24 | (ucp_tag_t)(step & 0xffffffu);
}

/* net.c — the backend table, and the waits the bootstrap's exchanges share with the calls. */
extern const sc_backend sc_net_backend;
extern const sc_msgport sc_net_port;
/* Complete the posted operations (n->reqs) by deadline: SCHEDC_ETIMEOUT / SCHEDC_EPEER naming
 * `what` (a call's name), the step (SC_NET_EXCHANGE: none, an exchange of the ranks' words),
 * this rank and the rank (and host) awaited. */
#define SC_NET_EXCHANGE UINT32_MAX
schedc_status sc_net_complete(schedc_comm *c, const char *what, uint32_t step, double deadline);
/* The UCX status of a request's failure in words, for messages. */
const char *sc_net_ucs_str(int ucs_status);
/* Cancel and release every posted operation (after a failure). */
void sc_net_drop_all(sc_net *n);

/* net_shrink.c — the backend's shrink slot (backend.h). */
schedc_status sc_net_shrink(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out);

/* ---- the bootstrap ------------------------------------------------------------------------- */

/* An out-of-band allgather of `bytes` per rank (into all[r * bytes]), made some rounds in a row:
 * the bootstrap's only need. Its implementations: the own rendezvous (net_boot.c), torch's store
 * (net_store.c), a caller's function (schedc_comm_init_net_oob). */
typedef struct sc_oob {
  schedc_status (*allgather)(struct sc_oob *o, const void *mine, void *all, size_t bytes, double deadline);
  void (*close)(struct sc_oob *o); /* release it and all it holds (sockets, listener): nothing left */
  int rank, nranks;
} sc_oob;

/* net_init.c — a net communicator from an oob (closed before this returns, success or failure). */
schedc_status sc_net_init_oob(int rank, int nranks, sc_oob *o, const schedc_comm_opts *opts, schedc_comm **out);

/* net_boot.c — the own rendezvous: rank 0 listens and gathers, the others connect. */
typedef struct sc_bootaddr {
  char host[256];            /* rank 0's address or name, as given */
  char port[8];
  uint64_t token;            /* the job: ranks with another token are another job's, refused */
  const char *what;          /* where the address came from, for messages ("MASTER_ADDR:MASTER_PORT") */
} sc_bootaddr;
/* rank 0: serve on listen_fd (taken: the oob closes it); the others: connect to a by deadline. */
schedc_status sc_boot_root(int listen_fd, const sc_bootaddr *a, int nranks, sc_oob **out);
schedc_status sc_boot_client(const sc_bootaddr *a, int rank, int nranks, double deadline, sc_oob **out);
/* A port that is a number in [1, 65535]: SCHEDC_EINVAL naming a->what otherwise. */
schedc_status sc_boot_check_port(const sc_bootaddr *a);
/* rank 0 under MASTER_ADDR / MASTER_PORT: a listening socket on that port (any address), after
 * checking that a->host is this host's. SCHEDC_EINVAL saying why not (the port is taken). */
schedc_status sc_boot_listen(const sc_bootaddr *a, int *fd);
/* A unique id's rendezvous address (SCHEDC_EINVAL: not an id of schedc_uid_net). */
schedc_status sc_boot_uid_addr(const unsigned char id[16], sc_bootaddr *a);
/* schedc_uid_net's listener, taken from this process's list by its id: the fd, or -1. */
int sc_boot_take_listener(const unsigned char id[16]);
/* A TCP connection to a->host:a->port by deadline, retried while nothing listens yet: the fd, or
 * the status with errmsg naming the address, where it came from and why. */
schedc_status sc_boot_connect(const sc_bootaddr *a, double deadline, int *fd);
/* All of buf to / from fd by deadline (0 / -1 with errno; ETIMEDOUT at the deadline, EPIPE at the
 * peer's close). */
int sc_boot_write(int fd, const void *buf, size_t len, double deadline);
int sc_boot_read(int fd, void *buf, size_t len, double deadline);

/* net_store.c — the oob over torch's TCPStore at a (keys under prefix). */
schedc_status sc_store_oob(const sc_bootaddr *a, const char *prefix, int rank, int nranks, double deadline,
                           sc_oob **out);

#endif
