/*
 * net_ucx.c — the net backend's UCX: one context and worker per communicator, an endpoint per
 * peer, and the control messages beside the data (UCX active messages): a failure notice, which
 * a rank that fails sends every peer so that each names the first failure, and a heartbeat, which
 * a rank waiting long sends so that its peers know it is alive. Endpoints between hosts detect a
 * lost peer (UCX's peer failure mode: the error handler names it); within a host UCX's shared
 * memory transports need the mode off, so a peer there is checked by its process instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "dl.h"
#include "err.h"
#include "fileio.h"
#include "net.h"

enum { AM_NOTICE = 1, AM_BEAT = 2 };

/* A control message's header: what it is, who sent it, and the worker's generation it was sent in
 * (a shrunk communicator reuses the worker: a late notice of its parent must not break it). */
typedef struct amhdr { uint32_t kind, rank, gen; } amhdr;

const char *sc_net_ucs_str(int ucs_status) { return ucs_status_string((ucs_status_t)ucs_status); }

static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data, size_t length,
                          const ucp_am_recv_param_t *param) {
  sc_net *n = arg;
  amhdr h;
  if (header_length != sizeof h || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) return UCS_OK;
  memcpy(&h, header, sizeof h);
  if (h.gen != n->gen) return UCS_OK; /* another communicator's (ranks numbered otherwise) */
  /* only the bootstrap handed this worker's address out: the sender is a peer of this communicator */
  if (h.rank < (uint32_t)n->nranks) n->peer[h.rank].heard = sc_now();
  if (h.kind == AM_NOTICE && !n->failed) {
    size_t len = length < sizeof n->why - 1 ? length : sizeof n->why - 1;
    memcpy(n->why, data, len);
    n->why[len] = 0;
    n->fail_st = SCHEDC_EPEER;
    n->failed = 1;
  }
  return UCS_OK;
}

/* A lost connection to a peer on another host (UCX's peer failure detection; also a peer that
 * closed its communicator): recorded on the peer, an error for whoever waits for it. */
static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
  sc_net *n = arg; /* the peer by its endpoint: a shrink renumbers the peers, keeping their endpoints */
  for (int r = 0; n->peer && r < n->nranks; r++)
    if (n->peer[r].ep == ep && !n->peer[r].lost) n->peer[r].lost = (int)status;
}

schedc_status sc_net_ucx_open(sc_net *n, ucp_address_t **addr, size_t *len) {
  n->efd = -1;
  ucp_config_t *cfg = NULL;
  ucs_status_t s = ucp_config_read(NULL, NULL, &cfg);
  if (s != UCS_OK) return sc_err(SCHEDC_EIO, "net: UCX configuration: %s (check the UCX_* variables)", ucs_status_string(s));
  ucp_params_t pp;
  memset(&pp, 0, sizeof pp);
  pp.field_mask = UCP_PARAM_FIELD_FEATURES;
  pp.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  s = ucp_init(&pp, cfg, &n->ctx);
  ucp_config_release(cfg);
  if (s != UCS_OK) {
    n->ctx = NULL;
    return sc_err(SCHEDC_EIO, "net: UCX could not start (ucp_init: %s)", ucs_status_string(s));
  }
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED; /* one thread at a time, not always the one that made it */
  if ((s = ucp_worker_create(n->ctx, &wp, &n->worker)) != UCS_OK) {
    n->worker = NULL;
    return sc_err(SCHEDC_EIO, "net: UCX worker: %s", ucs_status_string(s));
  }
  if (ucp_worker_get_efd(n->worker, &n->efd) != UCS_OK) n->efd = -1; /* then waits only spin and nap */
  ucp_am_handler_param_t ap;
  memset(&ap, 0, sizeof ap);
  ap.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  ap.cb = on_am;
  ap.arg = n;
  for (unsigned id = AM_NOTICE; id <= AM_BEAT; id++) {
    ap.id = id;
    if ((s = ucp_worker_set_am_recv_handler(n->worker, &ap)) != UCS_OK)
      return sc_err(SCHEDC_EIO, "net: UCX active messages: %s", ucs_status_string(s));
  }
  if ((s = ucp_worker_get_address(n->worker, addr, len)) != UCS_OK)
    return sc_err(SCHEDC_EIO, "net: UCX worker address: %s", ucs_status_string(s));
  return SCHEDC_OK;
}

schedc_status sc_net_ucx_connect(sc_net *n, int me, int nranks, const void *const *addrs) {
  for (int r = 0; r < nranks; r++) {
    sc_netpeer *p = &n->peer[r];
    if (r == me) continue;
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof ep);
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = addrs[r];
    /* UCX 1.13 keeps its shared-memory transports out of endpoints in peer failure mode, so
     * within a host the mode is off (the peer's process is watched instead: sc_net_alive) */
    ep.err_mode = p->same_host ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
    if (!p->same_host) {
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_handler.cb = on_ep_error;
      ep.err_handler.arg = n;
    }
    ucs_status_t s = ucp_ep_create(n->worker, &ep, &p->ep);
    if (s != UCS_OK) {
      p->ep = NULL;
      return sc_err(SCHEDC_EPEER, "net: rank %d could not make an endpoint to rank %d on host %s (%s)", me, r,
                    p->hostname, ucs_status_string(s));
    }
  }
  return SCHEDC_OK;
}

unsigned sc_net_progress(sc_net *n) {
  unsigned k = 0, got;
  while ((got = ucp_worker_progress(n->worker)) != 0) k += got;
  return k;
}

void sc_net_sleep(sc_net *n, double seconds) {
  if (n->efd < 0 || ucp_worker_arm(n->worker) != UCS_OK) { /* UCS_ERR_BUSY: events are pending */
    if (n->efd < 0) usleep(50);
    return;
  }
  struct pollfd pf = {n->efd, POLLIN, 0};
  int ms = (int)(seconds * 1e3);
  poll(&pf, 1, ms < 1 ? 1 : ms);
}

int sc_net_alive(const sc_netpeer *p) {
  if (!p->same_host || p->pid <= 0) return 1;
  if (kill(p->pid, 0) != 0 && errno == ESRCH) return 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)p->pid);
  unsigned long long st = sc_proc_start(path);
  if (st && p->start && st != p->start) return 0; /* the pid now names another process */
  /* a zombie has not been reaped yet but is dead */
  char buf[1024];
  const char *rest = sc_proc_stat_rest(path, buf, sizeof buf);
  return !(rest && (rest[0] == 'Z' || rest[0] == 'X'));
}

int sc_net_lost_for_good(const sc_netpeer *p) {
  /* a reset is its host's kernel answering for a process that exited; a timeout or an
   * unreachable peer may be a link down with the process alive behind it */
  return p->lost == UCS_ERR_CONNECTION_RESET || !sc_net_alive(p);
}

/* Send a control message to every peer; not waited for (an eager message, copied by UCX or kept
 * in n until the endpoints close). */
static void tell_all(schedc_comm *c, uint32_t kind, const void *data, size_t len) {
  sc_net *n = c->be_data;
  uint32_t *h = n->am_hdr[kind];
  h[0] = kind;
  h[1] = (uint32_t)c->rank;
  h[2] = n->gen;
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_AM_SEND_FLAG_EAGER;
  for (int r = 0; r < c->nranks; r++) {
    if (!n->peer[r].ep) continue;
    void *q = ucp_am_send_nbx(n->peer[r].ep, kind, h, sizeof(amhdr), data, len, &rp);
    if (UCS_PTR_IS_PTR(q)) ucp_request_free(q); /* released by UCX when it completes */
  }
}

void sc_net_fail(schedc_comm *c, schedc_status st, const char *msg) {
  sc_net *n = c->be_data;
  c->broken = 1;
  if (!n->failed) {
    snprintf(n->why, sizeof n->why, "%s", msg);
    n->fail_st = st;
    n->failed = 1;
  }
  if (n->told) return;
  n->told = 1;
  /* the first failure this rank knows, as its message names it (where it began), to every peer */
  snprintf(n->notice, sizeof n->notice, "%s", n->why);
  tell_all(c, AM_NOTICE, n->notice, strlen(n->notice));
  sc_net_progress(n);
}

void sc_net_beat(schedc_comm *c) {
  sc_net *n = c->be_data;
  n->beat_at = sc_now();
  tell_all(c, AM_BEAT, NULL, 0);
}

void sc_net_drain(sc_net *n, ucp_tag_t tag, ucp_tag_t mask) {
  for (int i = 0; i < 4096; i++) {
    ucp_tag_recv_info_t info;
    ucp_tag_message_h m = ucp_tag_probe_nb(n->worker, tag, mask, 1, &info);
    if (!m) return;
    void *buf = malloc(info.length ? info.length : 1);
    if (!buf) return;
    ucp_request_param_t rp;
    memset(&rp, 0, sizeof rp);
    void *q = ucp_tag_msg_recv_nbx(n->worker, buf, info.length, m, &rp);
    double until = sc_now() + 0.5; /* a large one from a rank that died may never complete */
    while (UCS_PTR_IS_PTR(q) && ucp_request_check_status(q) == UCS_INPROGRESS && sc_now() < until) sc_net_progress(n);
    if (UCS_PTR_IS_PTR(q)) {
      if (ucp_request_check_status(q) == UCS_INPROGRESS) {
        ucp_request_cancel(n->worker, q);
        sc_net_progress(n);
      }
      ucp_request_free(q);
    }
    free(buf);
  }
}

/* Close endpoints now (forced, bounded): those to the ranks shrinks left out. */
static void close_eps(sc_net *n, ucp_ep_h *eps, int count) {
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  for (int i = 0; i < count; i++) {
    if (!eps[i]) continue;
    void *x = ucp_ep_close_nbx(eps[i], &rp);
    eps[i] = NULL;
    double until = sc_now() + 1.0;
    while (UCS_PTR_IS_PTR(x) && ucp_request_check_status(x) == UCS_INPROGRESS && sc_now() < until) sc_net_progress(n);
    if (UCS_PTR_IS_PTR(x)) ucp_request_free(x);
  }
}

void sc_net_ucx_close(sc_net *n, int nranks, int flush) {
  if (n->worker && n->ngrave) close_eps(n, n->grave, n->ngrave); /* a shrink's left-out ranks' */
  if (n->worker) {
    /* every endpoint closed at once; flushed (what was sent reaches its peer) unless the
     * communicator broke, bounded either way */
    void **q = calloc((size_t)nranks, sizeof *q);
    ucp_request_param_t rp;
    memset(&rp, 0, sizeof rp);
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = flush ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    for (int r = 0; n->peer && r < nranks; r++) {
      if (!n->peer[r].ep) continue;
      void *x = ucp_ep_close_nbx(n->peer[r].ep, &rp);
      n->peer[r].ep = NULL;
      if (UCS_PTR_IS_PTR(x)) {
        if (q) q[r] = x;
        else ucp_request_free(x);
      }
    }
    double until = sc_now() + (flush ? 5.0 : 1.0);
    for (int pending = 1; q && pending && sc_now() < until;) {
      sc_net_progress(n);
      pending = 0;
      for (int r = 0; r < nranks; r++) {
        if (!q[r]) continue;
        if (ucp_request_check_status(q[r]) == UCS_INPROGRESS) pending = 1;
        else { ucp_request_free(q[r]); q[r] = NULL; }
      }
      if (pending) usleep(100);
    }
    for (int r = 0; q && r < nranks; r++)
      if (q[r]) ucp_request_free(q[r]); /* UCX releases it when the worker goes */
    free(q);
    ucp_worker_destroy(n->worker);
    n->worker = NULL;
  }
  if (n->ctx) ucp_cleanup(n->ctx);
  n->ctx = NULL;
}

/* `schedc info`'s rows (backends.h): the backend, and the UCX it was linked with (the file it runs
 * on, ucp_get_version: the library's own numbers, which may differ from the headers'). */
void sc_net_backend_probe(sc_probe *p) {
  p->built = p->found = 1;
  snprintf(p->why, sizeof p->why, "any hosts over UCX, bootstrapped from torchrun's or SLURM's variables, a unique id "
           "or a store");
}

void sc_ucx_probe(sc_probe *p) {
  unsigned maj = 0, min = 0, rel = 0;
  p->built = 1;
  ucp_get_version(&maj, &min, &rel);
  snprintf(p->version, sizeof p->version, "%u.%u.%u", maj, min, rel);
  p->found = 1; /* linked in: this code runs, so it is here */
  sc_dl_addr_path((const void *)(uintptr_t)ucp_get_version, p->path, sizeof p->path);
}
