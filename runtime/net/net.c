/*
 * net.c — the `net` backend's table: a collective run by the message executor over net_port.c's
 * port, the failure text, the free, and the shrink (net_shrink.c). Kept apart from the port so that
 * the shrink, which runs the port, and the table, which names the shrink, call no circle.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "net.h"

/* ---- the backend ------------------------------------------------------------------------------ */

static schedc_status n_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  sc_net *n = c->be_data;
  if (n->pid != (int)getpid()) /* its connections are the parent's: a message here would be theirs */
    return sc_err(SCHEDC_EINVAL, "%s on rank %d: this net communicator was made by process %d, and process %d is a "
                  "fork of it, whose copy shares the parent's connections: make a communicator in the child", k->cn,
                  c->rank, n->pid, (int)getpid());
  if (n->failed) { /* a failure this rank learned since its last call */
    c->broken = 1;
    return sc_err(n->fail_st, "%s: the communicator failed: %s", k->cn, n->why);
  }
  for (int r = 0; r < c->nranks; r++)
    if (n->peer[r].lost) {
      schedc_status st = sc_err(SCHEDC_EPEER, "%s on rank %d: the connection to rank %d on host %s was lost before the "
                                "call (%s): that rank failed or left, or its host or the link to it is down", k->cn,
                                c->rank, r, n->peer[r].hostname, ucs_status_string((ucs_status_t)n->peer[r].lost));
      sc_net_fail(c, st, schedc_errmsg());
      return st;
    }
  return sc_msg_collective(c, k, res, &sc_net_port, &n->bufs);
}

static const char *n_failure(schedc_comm *c) {
  sc_net *n = c->be_data;
  return n && n->failed ? n->why : NULL;
}

/* The UCX state a forked child inherited (freed there, as Python's atexit does): closing its
 * endpoints or destroying its worker would tear down the parent's connections (the same sockets;
 * UCX aborts on the parent's segments), so the child keeps it, reachable, until it exits. */
static sc_net *forked_copies;
static pthread_mutex_t forked_lock = PTHREAD_MUTEX_INITIALIZER;

static void n_free(schedc_comm *c) {
  sc_net *n = c->be_data;
  if (!n) return;
  c->be_data = NULL;
  if (n->pid != (int)getpid()) {
    sc_msgbufs_free(&n->bufs);
    pthread_mutex_lock(&forked_lock);
    n->orphan = forked_copies;
    forked_copies = n;
    pthread_mutex_unlock(&forked_lock);
    return;
  }
  if (n->worker) sc_net_drop_all(n);
  if (n->worker && n->gen) sc_net_drain(n, 0, 0); /* a shrunk one: its parent's late messages */
  sc_net_ucx_close(n, c->nranks, !c->broken && !n->failed);
  sc_msgbufs_free(&n->bufs);
  free(n->reqs);
  free(n->peer);
  free(n->grave);
  free(n);
}

/* schedc_mem_alloc: heap memory (messages copy anyway). Steps inject kill, delay and jitter.
 * Shrink: net_shrink.c (an agreement over the connections, then the old worker reused). */
const sc_backend sc_net_backend = {"net", SC_CAP_HOST_RESULT | SC_CAP_INJECT_STEPS | SC_CAP_EXACT | SC_CAP_HOSTS | SC_CAP_WIRE,
                                   n_collective, n_failure, n_free, sc_mem_host_alloc, sc_mem_host_free, sc_net_shrink};
