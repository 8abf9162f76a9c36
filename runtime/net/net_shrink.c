/*
 * net_shrink.c — schedc_comm_shrink on the net backend. Hosts share no memory, so the survivors
 * agree by messages over the connections they already have, then the new communicator takes over
 * the old one's UCX worker and its endpoints to the members, renumbered in their old order.
 *
 * The agreement (docs/recovery.md "On net: an agreement by messages"). Each rank keeps a view:
 * every rank IN, SUSPECT (not heard within the timeout, or its connection lost: it may live behind
 * a link that is down; UCX 1.13 over TCP reports a killed peer as an endpoint timeout too) or DEAD
 * (its process is gone: a pid on this host that no longer runs, or a reset connection); views
 * travel, so a death seen on its own host is known to all. The coordinator is the lowest rank IN in a rank's view. Every rank
 * sends its view to its coordinator (VIEW) and waits; the coordinator merges the views of every
 * rank it holds IN (taking the worse state of each rank), marks those that did not send theirs
 * within the timeout SUSPECT, and proposes the result (DECIDE, numbered) to every rank not DEAD;
 * members acknowledge (ACK), and once every member has, the coordinator sends COMMIT and each
 * member leaves with the committed view. A member lost before acknowledging is marked and a new
 * proposal follows; a coordinator lost or silent past the timeout (heartbeats keep a busy one
 * waited for, up to three timeouts) is marked in its members' views, and each turns to the next
 * lowest rank IN. A rank a proposal leaves out gets SCHEDC_EPEER. Every rank's view only worsens,
 * so this ends after at most one round per rank.
 *
 * Why it cannot split. The new communicator is returned only after its first exchange, in which
 * every member presents the hash of the member list it committed, and all must be equal: a rank
 * is in one such exchange per shrink, so two survivors that leave with communicators either share
 * a member — who presented one list to both — and have the same list, or have disjoint lists. And
 * disjoint lists cannot both pass the quorum rule, which every member checks on the committed view:
 * the members must be more than half of the ranks not known DEAD. DEAD is a fact about processes
 * (not an opinion two sides of a broken link could differ on), so two disjoint groups would each
 * be over half of a set that holds both. A group that fails the rule (a network split down the
 * middle, a coordinator's commit cut short by its death) fails with SCHEDC_EPEER naming why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "hash.h"
#include "hosts.h"
#include "log.h"
#include "net.h"

enum { IN = 0, SUSPECT = 1, DEAD = 2 };             /* a rank in a view; only ever worsens */
enum { M_VIEW = 1, M_ACK = 2, M_DECIDE = 3, M_COMMIT = 4 };
enum { AGAIN = -1 };                                /* a member's coordinator is gone: next one */

/* A message: its header, then one state byte per old rank. */
typedef struct shmsg { uint32_t type, attempt, coord, nranks; } shmsg;

/* A posted receive from one rank (the coordinator: one per candidate; a member: its coordinator's). */
typedef struct rx {
  void *req;                 /* posted, or NULL */
  int ready;                 /* done when posted (the message had come): ucp_tag_recv_nbx returns NULL */
  unsigned char *buf;
} rx;

typedef struct agree {
  schedc_comm *c;
  sc_net *n;
  int N, me;
  unsigned char *st;         /* [N] this rank's view */
  rx *rx;                    /* [N] */
  size_t msz;                /* a message's bytes */
  struct tx { void *req; unsigned char *buf; int dst; } *tx; /* sends in flight, each its own buffer */
  int ntx, tx_cap;
  unsigned char *in;         /* the message got() returned last: its header, then the states */
  double alive_at;           /* when processes on this host were last checked */
} agree;

static const char *state_name(int s) { return s == DEAD ? "dead" : s == SUSPECT ? "not heard from" : "in"; }

/* Tags: to the coordinator (dir 0) or from it (1), per coordinator, so a message to one never
 * matches a wait on another. */
static ucp_tag_t tag(const agree *a, int src, int coord, int dir) {
  return sc_net_tag(a->n->gen, SC_NT_SHRINK, src, 0, (uint32_t)coord << 1 | (uint32_t)dir);
}

/* Mark the ranks this rank knows are gone: a lost connection, a process on this host not running.
 * Returns how many ranks left IN. */
static int note_gone(agree *a) {
  double now = sc_now();
  int check = now - a->alive_at > 0.02, left = 0;
  if (check) a->alive_at = now;
  for (int r = 0; r < a->N; r++) {
    const sc_netpeer *p = &a->n->peer[r];
    int was = a->st[r];
    if (r == a->me || was == DEAD) continue;
    if ((p->lost || check) && sc_net_lost_for_good(p)) a->st[r] = DEAD;
    else if (p->lost && was == IN) a->st[r] = SUSPECT;
    left += was == IN && a->st[r] != IN;
  }
  return left;
}

static int lowest_in(const agree *a) {
  for (int r = 0; r < a->N; r++)
    if (a->st[r] == IN) return r;
  return a->me;
}

/* Send one message to dst, not waited for (a dead peer's send may never complete): kept in a->tx
 * with its own buffer until reap() sees it done. */
static void send_msg(agree *a, int dst, int coord, int dir, uint32_t type, uint32_t attempt) {
  sc_netpeer *p = &a->n->peer[dst];
  if (!p->ep || p->lost) return;
  if (a->ntx == a->tx_cap) {
    int cap = a->tx_cap ? 2 * a->tx_cap : 16;
    struct tx *t = realloc(a->tx, (size_t)cap * sizeof *t);
    if (!t) return; /* (unsent: the waits see the silence) */
    a->tx = t;
    a->tx_cap = cap;
  }
  unsigned char *buf = malloc(a->msz);
  if (!buf) return;
  shmsg h = {type, attempt, (uint32_t)coord, (uint32_t)a->N};
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, a->st, (size_t)a->N);
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  void *q = ucp_tag_send_nbx(p->ep, buf, a->msz, tag(a, a->me, coord, dir), &rp);
  if (!UCS_PTR_IS_PTR(q)) { /* done, or its endpoint failed (the error handler marked it) */
    free(buf);
    return;
  }
  a->tx[a->ntx++] = (struct tx){q, buf, dst};
}

/* Release the sends that are done; with `wait` seconds, first wait (bounded) for those to ranks
 * still IN, then cancel every one left (sends to ranks out may never complete). */
static void reap(agree *a, double wait) {
  double until = sc_now() + wait;
  for (int pending = 1; wait > 0 && pending && sc_now() < until;) {
    sc_net_progress(a->n);
    pending = 0;
    for (int i = 0; i < a->ntx; i++)
      pending |= a->st[a->tx[i].dst] == IN && ucp_request_check_status(a->tx[i].req) == UCS_INPROGRESS;
  }
  int k = 0;
  for (int i = 0; i < a->ntx; i++) {
    if (ucp_request_check_status(a->tx[i].req) == UCS_INPROGRESS) {
      if (!wait) {
        a->tx[k++] = a->tx[i];
        continue;
      }
      ucp_request_cancel(a->n->worker, a->tx[i].req);
      sc_net_progress(a->n);
    }
    ucp_request_free(a->tx[i].req);
    free(a->tx[i].buf);
  }
  a->ntx = k;
}

static void cancel_rx(agree *a, int r) {
  if (!a->rx[r].req) return;
  if (ucp_request_check_status(a->rx[r].req) == UCS_INPROGRESS) ucp_request_cancel(a->n->worker, a->rx[r].req);
  sc_net_progress(a->n);
  ucp_request_free(a->rx[r].req);
  a->rx[r].req = NULL;
}

static schedc_status post_rx(agree *a, int src, int coord, int dir) {
  ucp_request_param_t rp;
  memset(&rp, 0, sizeof rp);
  void *q = ucp_tag_recv_nbx(a->n->worker, a->rx[src].buf, a->msz, tag(a, src, coord, dir), ~(ucp_tag_t)0, &rp);
  if (UCS_PTR_IS_ERR(q))
    return sc_err(SCHEDC_EIO, "schedc_comm_shrink: rank %d could not post a receive (%s)", a->me,
                  sc_net_ucs_str(UCS_PTR_STATUS(q)));
  a->rx[src].req = q;
  a->rx[src].ready = q == NULL;
  return SCHEDC_OK;
}

/* rx[src] done with a well-formed message: its header (the states follow at a->in + sizeof *h);
 * re-posted for the next one (which may land at once: the message was copied out first). 0:
 * nothing (yet, or garbage dropped). */
static int got(agree *a, int src, int coord, int dir, shmsg *h) {
  ucs_status_t s = UCS_OK;
  if (a->rx[src].ready) a->rx[src].ready = 0;
  else {
    if (!a->rx[src].req || (s = ucp_request_check_status(a->rx[src].req)) == UCS_INPROGRESS) return 0;
    ucp_request_free(a->rx[src].req);
    a->rx[src].req = NULL;
  }
  memcpy(a->in, a->rx[src].buf, a->msz);
  memcpy(h, a->in, sizeof *h);
  int ok = s == UCS_OK && h->nranks == (uint32_t)a->N && h->coord == (uint32_t)coord;
  for (int r = 0; ok && r < a->N; r++) ok = a->in[sizeof *h + r] <= DEAD;
  if (s == UCS_OK || s == UCS_ERR_MESSAGE_TRUNCATED) post_rx(a, src, coord, dir); /* else its link is gone */
  return ok;
}

static double beat_interval(const schedc_comm *c) {
  double b = c->timeout_s / 8;
  return b < 0.05 ? 0.05 : b > 1.0 ? 1.0 : b;
}

/* Between polls: heartbeats (this rank is alive and in the agreement; sending them is also how a
 * dead peer across hosts is found: its host resets the connection), and a nap when idle. */
static void tick(agree *a, unsigned moved, unsigned *idle) {
  reap(a, 0);
  if (sc_now() - a->n->beat_at > beat_interval(a->c)) sc_net_beat(a->c);
  if (moved) *idle = 0;
  else if (++*idle > 64) sc_net_sleep(a->n, 0.002);
}

/* This rank coordinates: gather the views of the ranks it holds IN, then propose until every
 * member acknowledged, then commit. */
static schedc_status coordinate(agree *a) {
  int N = a->N, me = a->me;
  double T = a->c->timeout_s;
  unsigned char *have = calloc((size_t)N, 1);
  if (!have) return sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  schedc_status st = SCHEDC_OK;
  for (int r = 0; r < N && st == SCHEDC_OK; r++)
    if (r != me && a->st[r] != DEAD) st = post_rx(a, r, me, 0);
  shmsg h;
  unsigned idle = 0;
  /* the views */
  for (double deadline = sc_now() + T; st == SCHEDC_OK;) {
    unsigned moved = sc_net_progress(a->n);
    for (int r = 0; r < N; r++) {
      if (r == me || !got(a, r, me, 0, &h)) continue;
      moved++;
      if (h.type != M_VIEW || a->st[r] != IN) continue; /* a late one: that rank is out already */
      have[r] = 1;
      const unsigned char *v = a->in + sizeof h;
      for (int x = 0; x < N; x++)
        if (x != me && v[x] > a->st[x]) a->st[x] = v[x];
    }
    note_gone(a);
    int waiting = 0;
    for (int r = 0; r < N; r++) waiting += r != me && a->st[r] == IN && !have[r];
    if (!waiting) break;
    if (sc_now() > deadline) {
      for (int r = 0; r < N; r++)
        if (r != me && a->st[r] == IN && !have[r]) a->st[r] = SUSPECT;
      break;
    }
    tick(a, moved, &idle);
  }
  /* propose, until every member acknowledged the same proposal; what was proposed is what is
   * committed (a->st may learn more meanwhile: a rank out turning dead changes no member) */
  unsigned char *sent = malloc((size_t)N);
  if (!sent) st = sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  for (uint32_t attempt = 0; st == SCHEDC_OK; attempt++) {
    memcpy(sent, a->st, (size_t)N);
    for (int r = 0; r < N; r++)
      if (r != me && a->st[r] != DEAD) send_msg(a, r, me, 1, M_DECIDE, attempt);
    memset(have, 0, (size_t)N);
    int changed = 0;
    for (double deadline = sc_now() + T; !changed;) {
      unsigned moved = sc_net_progress(a->n);
      for (int r = 0; r < N; r++) {
        if (r == me || !got(a, r, me, 0, &h)) continue;
        moved++;
        if (h.type == M_ACK && h.attempt == attempt && a->st[r] == IN) have[r] = 1;
      }
      int waiting = 0;
      changed = note_gone(a) > 0; /* a member lost before the commit: propose again without it */
      for (int r = 0; r < N; r++) waiting += r != me && a->st[r] == IN && !have[r];
      if (!waiting && !changed) {
        for (int r = 0; r < N; r++)
          if (r != me && a->st[r] == IN) send_msg(a, r, me, 1, M_COMMIT, attempt);
        memcpy(a->st, sent, (size_t)N);
        free(sent);
        free(have);
        return SCHEDC_OK;
      }
      if (sc_now() > deadline) {
        for (int r = 0; r < N; r++)
          if (r != me && a->st[r] == IN && !have[r]) a->st[r] = SUSPECT;
        changed = 1;
      }
      tick(a, moved, &idle);
    }
  }
  free(sent);
  free(have);
  return st;
}

/* This rank is a member under `coord`: its view to it, then its proposals acknowledged until one
 * is committed (SCHEDC_OK, a->st the committed view), this rank is left out (SCHEDC_EPEER), or the
 * coordinator is gone or silent (AGAIN, marked in a->st). */
static int follow(agree *a, int coord) {
  int N = a->N, me = a->me;
  double T = a->c->timeout_s, beat = beat_interval(a->c), start = sc_now(), deadline = start + T, hard = start + 3 * T;
  unsigned char *held = malloc((size_t)N);
  if (!held) return sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  schedc_status st = post_rx(a, coord, coord, 1);
  send_msg(a, coord, coord, 0, M_VIEW, 0);
  int64_t pending = -1;
  shmsg h;
  unsigned idle = 0;
  const sc_netpeer *cp = &a->n->peer[coord];
  while (st == SCHEDC_OK) {
    unsigned moved = sc_net_progress(a->n);
    if (got(a, coord, coord, 1, &h)) {
      moved++;
      deadline = sc_now() + T; /* it is alive and deciding */
      hard = deadline + 2 * T;
      if (h.type == M_DECIDE) {
        memcpy(held, a->in + sizeof h, (size_t)N);
        if (held[me] != IN) {
          free(held);
          return sc_err(SCHEDC_EPEER, "schedc_comm_shrink: rank %d was left out: the survivors' coordinator, rank %d "
                        "(host %s), did not hear from it within the timeout of %.3g s (it called schedc_comm_shrink "
                        "too late, or its link is down)", me, coord, cp->hostname, T);
        }
        pending = h.attempt;
        send_msg(a, coord, coord, 0, M_ACK, h.attempt);
      } else if (h.type == M_COMMIT && (int64_t)h.attempt == pending) {
        memcpy(a->st, held, (size_t)N);
        free(held);
        return SCHEDC_OK;
      }
    }
    note_gone(a);
    double now = sc_now();
    if (a->st[coord] != IN) break;
    if (now > deadline) {
      if (cp->heard > now - 3 * beat && now < hard) deadline = now + beat; /* busy: gathering, heard */
      else {
        a->st[coord] = SUSPECT;
        break;
      }
    }
    tick(a, moved, &idle);
  }
  free(held);
  cancel_rx(a, coord);
  return st == SCHEDC_OK ? AGAIN : (int)st;
}

/* The agreement: a->st ends as the committed view, or the status says why this rank has none. */
static schedc_status agree_on_members(agree *a) {
  /* A proposal here before this rank sent any view leaves it out: a coordinator proposes a rank IN
   * only after it had its view. (Its sender may have gone on, or ended since: this is how a rank
   * that comes too late learns it, as a thread learns it from its failed swap.) */
  sc_net_progress(a->n);
  for (int c = 0; c < a->N; c++) {
    ucp_tag_recv_info_t info;
    if (c != a->me && ucp_tag_probe_nb(a->n->worker, tag(a, c, c, 1), ~(ucp_tag_t)0, 0, &info)) {
      sc_net_drain(a->n, tag(a, c, c, 1) & SC_NET_GEN_MASK, SC_NET_GEN_MASK); /* nothing left unread */
      return sc_err(SCHEDC_EPEER, "schedc_comm_shrink: rank %d was left out: the survivors' coordinator, rank %d "
                    "(host %s), did not hear from it within the timeout of %.3g s and went on without it (it called "
                    "schedc_comm_shrink too late)", a->me, c, a->n->peer[c].hostname, a->c->timeout_s);
    }
  }
  sc_net_beat(a->c); /* at once: a peer on another host that died is found by its reset */
  for (int round = 0; round <= a->N; round++) {
    note_gone(a);
    int coord = lowest_in(a);
    if (coord == a->me) return coordinate(a);
    int r = follow(a, coord);
    if (r != AGAIN) return (schedc_status)r;
    sc_log(SCHEDC_LOG_INFO, "shrink: rank %d: coordinator %d is %s; turning to the next", a->me, coord,
           state_name(a->st[coord]));
  }
  return sc_err(SCHEDC_EINTERNAL, "schedc_comm_shrink: rank %d: no agreement after %d rounds", a->me, a->N + 1);
}

/* "1 (dead), 3 (not heard from)" into buf: the ranks out of the view. */
static void out_list(const agree *a, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int r = 0; r < a->N && len + 32 < cap; r++)
    if (a->st[r] != IN) len += (size_t)snprintf(buf + len, cap - len, "%s%d (%s)", len ? ", " : "", r, state_name(a->st[r]));
}

/* The new communicator: the old one's worker and its members' endpoints, renumbered; the old head
 * keeps a state that only refuses calls. Then its first exchange proves every link and that every
 * member committed this list. */
static schedc_status regroup(schedc_comm *c, agree *a, const schedc_comm_opts *opts, schedc_comm **out) {
  sc_net *n = a->n;
  int N = a->N, k = 0;
  int *members = malloc((size_t)N * sizeof *members), *newrank = malloc((size_t)N * sizeof *newrank);
  uint64_t *ids = malloc((size_t)N * sizeof *ids);
  sc_netpeer *peer = calloc((size_t)N, sizeof *peer);
  ucp_ep_h *grave = calloc((size_t)N + (size_t)n->ngrave, sizeof *grave);
  sc_net *husk = calloc(1, sizeof *husk);
  if (!members || !newrank || !ids || !peer || !grave || !husk) {
    free(members), free(newrank), free(ids), free(peer), free(grave), free(husk);
    return sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  }
  uint64_t h = sc_fnv_str(SC_FNV_INIT, "net-shrink");
  for (int r = 0; r < N; r++) {
    newrank[r] = a->st[r] == IN ? k : -1;
    if (newrank[r] >= 0) members[k++] = r, h = (h ^ (uint64_t)r) * 0x100000001b3ull;
  }
  h = (h ^ (uint64_t)N) * 0x100000001b3ull;
  sc_inject inj;
  sc_inject_remap(&c->inj, newrank, N, &inj);
  schedc_comm *nc = NULL;
  schedc_status st = sc_comm_new_inj(c->be, newrank[a->me], k, opts, &inj, &nc);
  if (st != SCHEDC_OK) {
    free(members), free(newrank), free(ids), free(peer), free(grave), free(husk);
    return st;
  }
  /* the transport moves: peers renumbered, the others' endpoints kept until the worker closes */
  if (n->ngrave) memcpy(grave, n->grave, (size_t)n->ngrave * sizeof *grave);
  int ngrave = n->ngrave;
  for (int r = 0; r < N; r++) {
    if (newrank[r] < 0) {
      if (n->peer[r].ep) grave[ngrave++] = n->peer[r].ep;
      continue;
    }
    sc_netpeer *p = &peer[newrank[r]];
    *p = n->peer[r];
    p->rank = newrank[r];
    p->heard = 0;
    ids[newrank[r]] = p->host;
  }
  free(n->peer);
  free(n->grave);
  n->peer = peer;
  n->grave = grave;
  n->ngrave = ngrave;
  n->nranks = k;
  uint32_t oldgen = n->gen++;
  n->failed = n->told = 0;
  n->fail_st = SCHEDC_OK;
  n->why[0] = 0;
  n->gathers = 0;
  n->gather_seq = UINT64_MAX;
  n->beat_at = 0;
  husk->pid = n->pid;
  husk->efd = -1;
  husk->failed = 1;
  husk->fail_st = SCHEDC_EINVAL;
  snprintf(husk->why, sizeof husk->why, "rank %d shrank it (schedc_comm_shrink): use the communicator that gave, and "
           "free this one", c->rank);
  c->be_data = husk;
  c->broken = 1;
  nc->be_data = n;
  nc->parent = members;
  st = sc_comm_set_hosts(nc, ids);
  uint64_t *all = st == SCHEDC_OK ? malloc((size_t)k * sizeof *all) : NULL;
  if (st == SCHEDC_OK && !all) st = sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  if (st == SCHEDC_OK)
    st = sc_net_port.allgather(nc, "schedc_comm_shrink: the new communicator's first exchange", &h, all, sizeof h);
  for (int i = 0; i < k && st == SCHEDC_OK; i++)
    if (all[i] != h)
      st = sc_err(SCHEDC_EINTERNAL, "schedc_comm_shrink: rank %d (old rank %d) committed another member list than "
                  "rank %d (old rank %d): the agreement split (a bug)", newrank[a->me], a->me, i, members[i]);
  if (st != SCHEDC_OK) {
    char msg[SC_FAILMSG];
    snprintf(msg, sizeof msg, "%s", schedc_errmsg());
    schedc_comm_free(nc);
    st = sc_err(st, "schedc_comm_shrink: rank %d agreed on %d members but could not make their communicator: %s",
                a->me, k, msg);
  } else {
    sc_net_drain(n, (ucp_tag_t)(oldgen & 3u) << 62, SC_NET_GEN_MASK); /* the old one's late messages */
    *out = nc;
  }
  free(all);
  free(newrank);
  free(ids);
  return st;
}

schedc_status sc_net_shrink(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out) {
  sc_net *n = c->be_data;
  if (n->pid != (int)getpid())
    return sc_err(SCHEDC_EINVAL, "schedc_comm_shrink on rank %d: this net communicator was made by process %d, and "
                  "process %d is a fork of it: make a communicator in the child", c->rank, n->pid, (int)getpid());
  if (!n->worker) /* a husk: shrunk already (comm.c refuses that first) */
    return sc_err(SCHEDC_EINVAL, "schedc_comm_shrink: rank %d: %s", c->rank, n->why);
  sc_net_drop_all(n); /* what the failed call left posted */
  agree a = {.c = c, .n = n, .N = c->nranks, .me = c->rank, .st = calloc((size_t)c->nranks, 1),
             .rx = calloc((size_t)c->nranks, sizeof(rx)), .msz = sizeof(shmsg) + (size_t)c->nranks};
  a.in = malloc(a.msz);
  int ok = a.st && a.rx && a.in;
  for (int r = 0; ok && r < a.N; r++) ok = (a.rx[r].buf = malloc(a.msz)) != NULL;
  schedc_status st = ok ? agree_on_members(&a) : sc_err(SCHEDC_ENOMEM, "schedc_comm_shrink: out of memory");
  for (int r = 0; a.rx && r < a.N; r++) cancel_rx(&a, r);
  if (a.st) reap(&a, 0.5); /* the last proposal or commit on its way to each member */
  free(a.tx);
  if (st == SCHEDC_OK) {
    int k = 0, dead = 0;
    for (int r = 0; r < a.N; r++) k += a.st[r] == IN, dead += a.st[r] == DEAD;
    char outs[256];
    out_list(&a, outs, sizeof outs);
    if (2 * k <= a.N - dead)
      st = sc_err(SCHEDC_EPEER, "schedc_comm_shrink: rank %d: only %d of the %d ranks not known dead agreed to go on "
                  "(out: %s): ranks not heard from may be alive behind a broken link, and a group that is not more "
                  "than half of them could be one side of a split; restart the job from a checkpoint", c->rank, k,
                  a.N - dead, outs);
    else {
      if (c->rank == lowest_in(&a))
        sc_log(SCHEDC_LOG_INFO, "shrink: %d of %d ranks go on; out: %s", k, a.N, outs[0] ? outs : "none");
      st = regroup(c, &a, opts, out);
    }
  }
  for (int r = 0; a.rx && r < a.N; r++) free(a.rx[r].buf);
  free(a.rx);
  free(a.st);
  free(a.in);
  return st;
}
