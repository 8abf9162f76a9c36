/*
 * net_port.c — the `net` backend's port for the message executor (core/msgrun.h): each transfer a
 * UCX tagged message (tag: generation, kind, sender, call, step), a step's operations completed
 * against the call's deadline. A wait never hangs and always names someone: a lost connection or
 * a peer's failure notice ends it with SCHEDC_EPEER, a dead process on this host too, and the
 * deadline with SCHEDC_ETIMEOUT naming the rank and host awaited — unless that rank is still
 * heard from (it waits itself, for a rank further on), when this one waits on for its notice.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "net.h"

/* ---- posted operations ---------------------------------------------------------------------- */

static schedc_status post(schedc_comm *c, void *q, int peer, const char *what) {
  sc_net *n = c->be_data;
  if (UCS_PTR_IS_ERR(q)) { /* its endpoint failed already: told to every peer, so no wait lasts */
    const sc_netpeer *p = &n->peer[peer];
    schedc_status st = sc_err(SCHEDC_EPEER, "net: rank %d (host %s) could not %s rank %d on host %s (%s): that rank "
                              "failed or left, or its host or the link to it is down", c->rank,
                              n->peer[c->rank].hostname, what, peer, p->hostname,
                              ucs_status_string(p->lost ? (ucs_status_t)p->lost : UCS_PTR_STATUS(q)));
    sc_net_fail(c, st, schedc_errmsg());
    return st;
  }
  if (!q) return SCHEDC_OK; /* done at once */
  if (n->nreq == n->req_cap) {
    size_t cap = n->req_cap ? 2 * n->req_cap : 64;
    sc_netreq *r = realloc(n->reqs, cap * sizeof *r);
    if (!r) {
      ucp_request_cancel(n->worker, q);
      ucp_request_free(q);
      return sc_err(SCHEDC_ENOMEM, "out of memory");
    }
    n->reqs = r;
    n->req_cap = cap;
  }
  n->reqs[n->nreq++] = (sc_netreq){q, peer};
  return SCHEDC_OK;
}

static schedc_status post_recv(schedc_comm *c, int src, ucp_tag_t tag, void *buf, size_t bytes) {
  sc_net *n = c->be_data;
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  return post(c, ucp_tag_recv_nbx(n->worker, buf, bytes, tag, ~(ucp_tag_t)0, &rp), src, "receive from");
}

static schedc_status post_send(schedc_comm *c, int dst, ucp_tag_t tag, const void *buf, size_t bytes) {
  sc_net *n = c->be_data;
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  return post(c, ucp_tag_send_nbx(n->peer[dst].ep, buf, bytes, tag, &rp), dst, "send to");
}

/* End every posted operation (after a failure): cancelled, then released. */
void sc_net_drop_all(sc_net *n) {
  for (size_t i = 0; i < n->nreq; i++)
    if (ucp_request_check_status(n->reqs[i].req) == UCS_INPROGRESS) ucp_request_cancel(n->worker, n->reqs[i].req);
  sc_net_progress(n);
  for (size_t i = 0; i < n->nreq; i++) ucp_request_free(n->reqs[i].req);
  n->nreq = 0;
}

/* ---- waits ----------------------------------------------------------------------------------- */

/* Heartbeats, and how long a rank still heard from is waited for past the deadline: a fraction of
 * the timeout, between 50 ms and 1 s. */
static double beat_interval(const schedc_comm *c) {
  double b = c->timeout_s / 8;
  return b < 0.05 ? 0.05 : b > 1.0 ? 1.0 : b;
}

schedc_status sc_net_complete(schedc_comm *c, const char *what, uint32_t step, double deadline) {
  sc_net *n = c->be_data;
  double start = sc_now(), beat = beat_interval(c), last_alive = start, hard = deadline + c->timeout_s;
  const sc_netpeer *me = &n->peer[c->rank];
  char at[24] = ""; /* where in the call, for messages */
  if (step != SC_NET_EXCHANGE) snprintf(at, sizeof at, " in step %u", step);
  for (unsigned idle = 0;;) {
    unsigned got = sc_net_progress(n);
    size_t left = 0, i;
    schedc_status st = SCHEDC_OK;
    int who = -1;
    for (i = 0; i < n->nreq; i++) {
      ucs_status_t s = ucp_request_check_status(n->reqs[i].req);
      if (s == UCS_INPROGRESS) {
        if (who < 0) who = n->reqs[i].peer;
        n->reqs[left++] = n->reqs[i];
        continue;
      }
      ucp_request_free(n->reqs[i].req);
      if (s != UCS_OK && st == SCHEDC_OK) {
        const sc_netpeer *p = &n->peer[n->reqs[i].peer];
        st = sc_err(SCHEDC_EPEER, "%s on rank %d (host %s)%s: the transfer with rank %d on host %s failed (%s)%s%s",
                    what, c->rank, me->hostname, at, p->rank, p->hostname, ucs_status_string(s),
                    n->failed ? ": " : "", n->failed ? n->why : "");
      }
    }
    n->nreq = left;
    if (st == SCHEDC_OK && !left) return SCHEDC_OK;
    double now = sc_now();
    if (st == SCHEDC_OK && n->failed) /* a peer's notice */
      st = sc_err(n->fail_st == SCHEDC_ETIMEOUT ? SCHEDC_ETIMEOUT : SCHEDC_EPEER, "%s on rank %d (host %s) stopped%s: %s",
                  what, c->rank, me->hostname, at, n->why);
    /* a lost connection to a rank awaited */
    for (i = 0; i < left && st == SCHEDC_OK; i++) {
      const sc_netpeer *p = &n->peer[n->reqs[i].peer];
      if (p->lost)
        st = sc_err(SCHEDC_EPEER, "%s on rank %d (host %s)%s: the connection to rank %d on host %s was lost "
                    "(%s): that rank failed or left, or its host or the link to it is down", what, c->rank,
                    me->hostname, at, p->rank, p->hostname, ucs_status_string((ucs_status_t)p->lost));
    }
    /* a peer on this host whose process is gone (its endpoint has no failure detection) */
    if (st == SCHEDC_OK && now - last_alive > 0.05) {
      last_alive = now;
      for (i = 0; i < left && st == SCHEDC_OK; i++) {
        const sc_netpeer *p = &n->peer[n->reqs[i].peer];
        if (!sc_net_alive(p))
          st = sc_err(SCHEDC_EPEER, "%s on rank %d (host %s)%s: rank %d (pid %d on host %s) died", what,
                      c->rank, me->hostname, at, p->rank, (int)p->pid, p->hostname);
      }
    }
    if (st == SCHEDC_OK && now > deadline) {
      const sc_netpeer *p = &n->peer[who];
      /* still heard from: it waits for someone else, whose failure it will name; wait for that */
      if (p->heard > now - 3 * beat && now < hard) deadline = now + beat;
      else
        st = sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d (host %s)%s: it waited for rank %d "
                    "on host %s%s", what, c->timeout_s, c->rank, me->hostname, at, who, p->hostname,
                    p->heard > 0 ? ", which stopped answering" : "");
    }
    if (st != SCHEDC_OK) {
      sc_net_drop_all(n);
      sc_net_fail(c, st, schedc_errmsg());
      return st;
    }
    if (now - start > beat && now - n->beat_at > beat) sc_net_beat(c); /* alive, waiting */
    if (got) idle = 0;
    else if (++idle > 256) sc_net_sleep(n, 0.005); /* nothing moved for a while: sleep on the worker */
  }
}

/* ---- the port --------------------------------------------------------------------------------- */

static int tag_kind(int kind) { return kind == SC_MSG_CRC ? SC_NT_CRC : SC_NT_DATA; }

static schedc_status n_recv(schedc_comm *c, int src, uint32_t step, int kind, void *buf, size_t bytes) {
  const sc_net *n = c->be_data;
  return post_recv(c, src, sc_net_tag(n->gen, tag_kind(kind), src, c->seq, step), buf, bytes);
}

static schedc_status n_send(schedc_comm *c, int dst, uint32_t step, int kind, const void *buf, size_t bytes) {
  const sc_net *n = c->be_data;
  return post_send(c, dst, sc_net_tag(n->gen, tag_kind(kind), c->rank, c->seq, step), buf, bytes);
}

static schedc_status n_complete(schedc_comm *c, const char *coll, uint32_t step, double deadline) {
  return sc_net_complete(c, coll, step, deadline);
}

/* Every rank's bytes to every rank (a call's agreement, a repair's vote: a few words). Up to
 * SMALL_GATHER ranks each sends its bytes to every other at once (one round: n - 1 messages each);
 * beyond, Bruck's allgather: ceil(log2 n) rounds, in round k each rank sends the 2^k blocks it
 * holds (its own and the next ranks') to rank - 2^k, so a call's agreement costs O(n log n)
 * messages in all instead of O(n^2). Tags: the gather's number in the call and the round. */
enum { SMALL_GATHER = 8 };
static schedc_status n_allgather(schedc_comm *c, const char *what, const void *mine, void *all, size_t bytes) {
  sc_net *n = c->be_data;
  if (n->gather_seq != c->seq) n->gather_seq = c->seq, n->gathers = 0;
  uint32_t g = n->gathers++ << 8;
  int N = c->nranks, me = c->rank;
  double deadline = sc_now() + c->timeout_s;
  schedc_status st = SCHEDC_OK;
  if (N <= SMALL_GATHER) {
    memcpy((char *)all + (size_t)me * bytes, mine, bytes);
    for (int r = 0; r < N && st == SCHEDC_OK; r++)
      if (r != me) st = post_recv(c, r, sc_net_tag(n->gen, SC_NT_GATHER, r, c->seq, g), (char *)all + (size_t)r * bytes, bytes);
    for (int r = 0; r < N && st == SCHEDC_OK; r++)
      if (r != me) st = post_send(c, r, sc_net_tag(n->gen, SC_NT_GATHER, me, c->seq, g), mine, bytes);
    schedc_status cs = sc_net_complete(c, what, SC_NET_EXCHANGE, deadline);
    return st != SCHEDC_OK ? st : cs;
  }
  /* Bruck: tmp[i] holds rank (me + i) % N's block once i < the blocks gathered so far */
  char *tmp = malloc((size_t)N * bytes);
  if (!tmp) return sc_err(SCHEDC_ENOMEM, "out of memory");
  memcpy(tmp, mine, bytes);
  uint32_t k = 0;
  for (int have = 1; have < N && st == SCHEDC_OK; have *= 2, k++) {
    int cnt = have < N - have ? have : N - have, to = (me - have + N) % N, from = (me + have) % N;
    st = post_recv(c, from, sc_net_tag(n->gen, SC_NT_GATHER, from, c->seq, g | k), tmp + (size_t)have * bytes, (size_t)cnt * bytes);
    if (st == SCHEDC_OK) st = post_send(c, to, sc_net_tag(n->gen, SC_NT_GATHER, me, c->seq, g | k), tmp, (size_t)cnt * bytes);
    schedc_status cs = sc_net_complete(c, what, SC_NET_EXCHANGE, deadline);
    if (st == SCHEDC_OK) st = cs;
  }
  for (int i = 0; i < N && st == SCHEDC_OK; i++) memcpy((char *)all + (size_t)((me + i) % N) * bytes, tmp + (size_t)i * bytes, bytes);
  free(tmp);
  return st;
}

/* UCX's messages have no size limit of their own; a chunk is at most the whole buffer. */
const sc_msgport sc_net_port = {"the net transport", (size_t)-1, n_recv, n_send, n_complete, n_allgather};
