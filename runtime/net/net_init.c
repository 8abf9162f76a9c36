/*
 * net_init.c — making a net communicator: the head, UCX, then an out-of-band allgather (the
 * bootstrap: a unique id's rendezvous, torch's store, or the caller's function) of every rank's
 * record — its host, process, plan and layout, and its UCX worker's address — after which every
 * rank holds the same table, reaches the same verdict on it, and connects to every peer.
 * schedc_comm_init_net, _oob, and schedc_comm_init_env's net (MASTER_ADDR / MASTER_PORT).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "err.h"
#include "fileio.h"
#include "hash.h"
#include "hosts.h"
#include "net.h"
#include "params.h"
#include "plan.h"

#define REC_MAGIC 0x53434e52u /* "SCNR" */
#define REC_VERSION 1u

/* A rank's record, the first round of the bootstrap; its UCX address is the second. */
typedef struct netrec {
  uint32_t magic, version, rank, nranks;
  uint32_t status;           /* 0, or the schedc_status this rank failed its set-up with */
  uint32_t addr_len;
  int32_t pid;
  uint32_t pad_;
  uint64_t host, plan_hash, layout, start;
  char hostname[SC_NET_HOSTNAME];
  char why[160];             /* status: this rank's message */
} netrec;

int sc_net_built(void) { return 1; }

static void my_record(const schedc_comm *c, netrec *m, size_t addr_len) {
  memset(m, 0, sizeof *m);
  m->magic = REC_MAGIC;
  m->version = REC_VERSION;
  m->rank = (uint32_t)c->rank;
  m->nranks = (uint32_t)c->nranks;
  m->addr_len = (uint32_t)addr_len;
  m->pid = (int32_t)getpid();
  m->host = sc_host_id();
  m->plan_hash = c->init_plan ? c->init_plan->hash : 0;
  m->layout = sc_comm_layout_word(c);
  m->start = sc_proc_start("/proc/self/stat");
  gethostname(m->hostname, sizeof m->hostname - 1);
}

/* The same verdict on every rank from the same table: the first rank whose record differs. */
static schedc_status check_records(schedc_comm *c, const netrec *all) {
  const netrec *m = &all[c->rank];
  for (int r = 0; r < c->nranks; r++) {
    const netrec *q = &all[r];
    if (q->magic != REC_MAGIC || q->version != REC_VERSION)
      return sc_err(SCHEDC_EINVAL, "net: rank %d's bootstrap record is not schedc's (version %u, this rank's %u): every "
                    "rank must run the same schedc", r, q->version, REC_VERSION);
    if (q->status)
      return sc_err(SCHEDC_EPEER, "net: rank %d (host %.*s) could not start: %.*s", r, SC_NET_HOSTNAME, q->hostname,
                    (int)sizeof q->why, q->why);
    if (q->nranks != m->nranks)
      return sc_err(SCHEDC_EINVAL, "net: the ranks disagree on their count: rank %d (host %.*s) was started with %u "
                    "ranks, rank %d with %u", r, SC_NET_HOSTNAME, q->hostname, q->nranks, c->rank, m->nranks);
    if (q->rank != (uint32_t)r)
      return sc_err(SCHEDC_EINVAL, "net: the record in rank %d's place says rank %u: two processes claim one rank", r,
                    q->rank);
    if (q->plan_hash != m->plan_hash)
      return sc_err(SCHEDC_EMISMATCH, "rank %d was initialised with plan %016llx but rank %d with plan %016llx", c->rank,
                    (unsigned long long)m->plan_hash, r, (unsigned long long)q->plan_hash);
    if (q->layout != m->layout) return sc_layout_mismatch(c, r, q->layout);
  }
  return SCHEDC_OK;
}

/* The bootstrap proper, on a made head with its UCX open (st: how that went, told to the peers). */
static schedc_status join(schedc_comm *c, sc_oob **op, schedc_status st, const ucp_address_t *addr, size_t len) {
  sc_oob *o = *op;
  sc_net *n = c->be_data;
  int N = c->nranks;
  double deadline = sc_now() + c->timeout_s;
  netrec mine, *all = calloc((size_t)N, sizeof *all);
  if (!all) return sc_err(SCHEDC_ENOMEM, "out of memory");
  my_record(c, &mine, st == SCHEDC_OK ? len : 0);
  if (st != SCHEDC_OK) { /* the peers learn why rather than wait for it */
    mine.status = (uint32_t)st;
    snprintf(mine.why, sizeof mine.why, "%s", schedc_errmsg());
  }
  schedc_status xs = o->allgather(o, &mine, all, sizeof mine, deadline);
  if (st != SCHEDC_OK || (st = xs) != SCHEDC_OK || (st = check_records(c, all)) != SCHEDC_OK) {
    free(all);
    return st;
  }
  /* the addresses: one round of the longest */
  size_t alen = 0;
  for (int r = 0; r < N; r++) alen = all[r].addr_len > alen ? all[r].addr_len : alen;
  char *addrs = calloc((size_t)N, alen), *mya = calloc(1, alen);
  const void **ap = malloc((size_t)N * sizeof *ap);
  uint64_t *ids = malloc((size_t)N * sizeof *ids);
  if (!addrs || !mya || !ap || !ids) st = sc_err(SCHEDC_ENOMEM, "out of memory");
  if (st == SCHEDC_OK) {
    memcpy(mya, addr, len);
    st = o->allgather(o, mya, addrs, alen, deadline);
  }
  for (int r = 0; r < N && st == SCHEDC_OK; r++) {
    sc_netpeer *p = &n->peer[r];
    p->net = n;
    p->rank = r;
    p->host = ids[r] = all[r].host;
    p->same_host = all[r].host == mine.host;
    p->pid = all[r].pid;
    p->start = all[r].start;
    memcpy(p->hostname, all[r].hostname, SC_NET_HOSTNAME);
    p->hostname[SC_NET_HOSTNAME - 1] = 0;
    ap[r] = addrs + (size_t)r * alen;
  }
  o->close(o); /* the bootstrap is over: its sockets and listener go */
  *op = NULL;
  if (st == SCHEDC_OK) st = sc_net_ucx_connect(n, c->rank, N, ap);
  if (st == SCHEDC_OK) st = sc_comm_set_hosts(c, ids);
  /* every endpoint carries a message before the communicator is handed out: a peer UCX cannot
   * reach (a firewall, an interface the others do not route to) is named here, not at a call */
  uint64_t one = 1, *got = st == SCHEDC_OK ? malloc((size_t)N * sizeof *got) : NULL;
  if (st == SCHEDC_OK && !got) st = sc_err(SCHEDC_ENOMEM, "out of memory");
  if (st == SCHEDC_OK) st = sc_net_port.allgather(c, "net: the first exchange over UCX", &one, got, sizeof one);
  free(got);
  free(addrs);
  free(mya);
  free(ap);
  free(ids);
  free(all);
  return st;
}

/* The head and UCX: *out (freed by the caller on failure) and st, UCX's verdict, which the
 * bootstrap still tells the peers. */
static schedc_status start(int rank, int nranks, const schedc_comm_opts *opts, schedc_comm **out, ucp_address_t **addr,
                           size_t *len) {
  *out = NULL;
  schedc_comm *c;
  schedc_status st = sc_comm_new(&sc_net_backend, rank, nranks, opts, &c);
  if (st != SCHEDC_OK) return st;
  sc_net *n = calloc(1, sizeof *n);
  if (n) n->peer = calloc((size_t)nranks, sizeof *n->peer);
  if (!n || !n->peer) {
    if (n) free(n);
    sc_comm_release(c);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  n->nranks = nranks;
  n->efd = -1;
  c->be_data = n;
  *out = c;
  return sc_net_ucx_open(n, addr, len);
}

/* A made head whose bootstrap failed: its UCX address (start's) released, then the rest. */
static void abandon(schedc_comm *c, ucp_address_t *addr) {
  sc_net *n = c->be_data;
  if (addr) ucp_worker_release_address(n->worker, addr);
  c->broken = 1;
  schedc_comm_free(c);
}

/* A made head (start) bootstrapped over o, which is closed either way. */
static schedc_status finish(schedc_comm *c, schedc_status st, ucp_address_t *addr, size_t len, sc_oob *o,
                            schedc_comm **out) {
  st = join(c, &o, st, addr, len);
  if (o) o->close(o); /* it failed before the end */
  if (st != SCHEDC_OK) {
    abandon(c, addr);
    return st;
  }
  ucp_worker_release_address(((sc_net *)c->be_data)->worker, addr);
  *out = c;
  return SCHEDC_OK;
}

/* ---- the caller's allgather (schedc_comm_init_net_oob) ---- */

typedef struct fnoob {
  sc_oob base;
  schedc_oob_allgather fn;
  void *ctx;
} fnoob;

static schedc_status fn_allgather(sc_oob *o, const void *mine, void *all, size_t bytes, double deadline) {
  (void)deadline; /* the caller's function keeps its own */
  fnoob *f = (fnoob *)o;
  int rc = f->fn(f->ctx, mine, all, bytes);
  return rc == 0 ? SCHEDC_OK : sc_err(SCHEDC_EPEER, "net: the bootstrap's allgather (the caller's function) failed "
                                      "with %d on rank %d", rc, o->rank);
}
static void fn_close(sc_oob *o) { (void)o; }

schedc_status schedc_comm_init_net_oob(int rank, int nranks, schedc_oob_allgather allgather, void *ctx,
                                       const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!allgather) return sc_err(SCHEDC_EINVAL, "allgather is NULL");
  schedc_comm *c;
  ucp_address_t *addr = NULL;
  size_t len = 0;
  schedc_status st = start(rank, nranks, opts, &c, &addr, &len);
  if (!c) return st;
  fnoob f = {{fn_allgather, fn_close, rank, nranks}, allgather, ctx}; /* on the stack: close is a no-op */
  return finish(c, st, addr, len, &f.base, out);
}

/* ---- a unique id (schedc_uid_net's) ---- */

schedc_status schedc_comm_init_net(int rank, int nranks, const schedc_uid *id, const schedc_comm_opts *opts,
                                   schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!id) return sc_err(SCHEDC_EINVAL, "id is NULL");
  sc_bootaddr a;
  if (sc_boot_uid_addr(id->bytes, &a) != SCHEDC_OK) return SCHEDC_EINVAL;
  int lfd = -1;
  if (rank == 0 && (lfd = sc_boot_take_listener(id->bytes)) < 0)
    return sc_err(SCHEDC_EINVAL, "net: rank 0 must run in the process that made the id (schedc_uid_net), once: this "
                  "process holds no listener for it");
  schedc_comm *c;
  ucp_address_t *addr = NULL;
  size_t len = 0;
  schedc_status st = start(rank, nranks, opts, &c, &addr, &len);
  if (!c) {
    if (lfd >= 0) close(lfd);
    return st;
  }
  sc_oob *o = NULL;
  schedc_status bs = rank == 0 ? sc_boot_root(lfd, &a, nranks, &o) : sc_boot_client(&a, rank, nranks, sc_now() + c->timeout_s, &o);
  if (bs != SCHEDC_OK) {
    abandon(c, addr);
    return bs;
  }
  return finish(c, st, addr, len, o, out);
}

/* ---- schedc_comm_init_env's net: MASTER_ADDR / MASTER_PORT ---- */

/* The job as the launcher names it, for the rendezvous's token: ranks of another job that aim at
 * the same port are refused by name. 0 when none is set. */
static uint64_t job_token(void) {
  const char *sj = sc_param_str(SC_P_SLURM_JOB_ID), *ss = sc_param_str(SC_P_SLURM_STEP_ID);
  const char *tid = sc_param_str(SC_P_TORCHELASTIC_RUN_ID), *tr = sc_param_str(SC_P_TORCHELASTIC_RESTART_COUNT);
  const char *job = sc_param_str(SC_P_SCHEDC_JOB);
  uint64_t h = SC_FNV_INIT;
  if (job) return sc_fnv_str(sc_fnv_str(h, "job:"), job);
  if (sj) return sc_fnv_str(sc_fnv_str(sc_fnv_str(h, sj), "."), ss ? ss : "");
  if (tid && strcmp(tid, "none")) return sc_fnv_str(sc_fnv_str(sc_fnv_str(h, tid), "."), tr ? tr : "");
  return 0;
}

schedc_status sc_net_init_env(int rank, int nranks, const schedc_comm_opts *opts, schedc_comm **out) {
  *out = NULL;
  const char *host = sc_param_str(SC_P_MASTER_ADDR), *port = sc_param_str(SC_P_MASTER_PORT);
  if (!host || !port)
    return sc_err(SCHEDC_EINVAL, "net: %s is not set: the net backend's bootstrap is rank 0's address, MASTER_ADDR "
                  "and MASTER_PORT (torchrun sets them; under srun, export them)", !host ? "MASTER_ADDR" : "MASTER_PORT");
  const char *agent = sc_param_str(SC_P_TORCHELASTIC_USE_AGENT_STORE);
  int store = agent && !strcmp(agent, "True"); /* torchrun's agent serves its TCPStore there */
  sc_bootaddr a;
  memset(&a, 0, sizeof a);
  if (snprintf(a.host, sizeof a.host, "%s", host) >= (int)sizeof a.host || snprintf(a.port, sizeof a.port, "%s", port) >= (int)sizeof a.port)
    return sc_err(SCHEDC_EINVAL, "net: MASTER_ADDR or MASTER_PORT is too long");
  a.token = job_token();
  a.what = store ? "torchrun's store at MASTER_ADDR:MASTER_PORT" : "MASTER_ADDR:MASTER_PORT";
  schedc_status st = sc_boot_check_port(&a);
  if (st != SCHEDC_OK) return st;
  /* rank 0 takes the port before anything else can fail, so the others find it (or its refusal) */
  int lfd = -1;
  if (!store && rank == 0 && (st = sc_boot_listen(&a, &lfd)) != SCHEDC_OK) return st;
  schedc_comm *c;
  ucp_address_t *addr = NULL;
  size_t len = 0;
  st = start(rank, nranks, opts, &c, &addr, &len);
  if (!c) {
    if (lfd >= 0) close(lfd);
    return st;
  }
  sc_oob *o = NULL;
  schedc_status bs;
  double deadline = sc_now() + c->timeout_s;
  if (store) {
    /* keys no other communicator of the job uses: the run, its restart, and how many net
     * communicators this process made before (every rank makes them in the same order) */
    static _Atomic unsigned made;
    const char *tid = sc_param_str(SC_P_TORCHELASTIC_RUN_ID), *tr = sc_param_str(SC_P_TORCHELASTIC_RESTART_COUNT);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "/schedc/net/%.80s/%.16s/%u", tid ? tid : "-", tr ? tr : "0", atomic_fetch_add(&made, 1));
    bs = sc_store_oob(&a, prefix, rank, nranks, deadline, &o);
  } else {
    bs = rank == 0 ? sc_boot_root(lfd, &a, nranks, &o) : sc_boot_client(&a, rank, nranks, deadline, &o);
  }
  if (bs != SCHEDC_OK) {
    abandon(c, addr);
    return bs;
  }
  return finish(c, st, addr, len, o, out);
}
