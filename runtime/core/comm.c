/*
 * comm.c — the communicator head and the collectives' common part: options, argument checks,
 * choosing the plan (given, tuned or the built-in ring), the call descriptor, then the backend's
 * collective (c->be, chosen when the communicator was made) and, for results in host memory,
 * the integrity checks. Nothing here knows which backend it holds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builtin.h"
#include "comm.h"
#include "err.h"
#include "kernels.h"
#include "opreg.h"
#include "params.h"
#include "plan.h"

#define NDEFPLANS ((int)(sizeof ((schedc_comm *)0)->defplan / sizeof ((schedc_comm *)0)->defplan[0]))

double sc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Does an options struct of opts->size bytes hold the whole field that ends at `end`? */
#define HAS_FIELD(o, field) ((o)->size >= offsetof(schedc_comm_opts, field) + sizeof (o)->field)

schedc_status sc_comm_new(const sc_backend *be, int rank, int nranks, const schedc_comm_opts *opts,
                          schedc_comm **out) {
  *out = NULL;
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  if (opts) {
    if (opts->size < sizeof(size_t) || opts->size > sizeof o)
      return sc_err(SCHEDC_EINVAL, "opts->size is %zu; set it with SCHEDC_COMM_OPTS_INIT", opts->size);
    memcpy(&o, opts, opts->size); /* fields past opts->size keep their defaults */
  }
  if (nranks < 1 || nranks > 65536) return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, 65536]", nranks);
  if (rank < 0 || rank >= nranks) return sc_err(SCHEDC_EINVAL, "rank %d out of range [0, %d)", rank, nranks);
  if (o.timeout_s < 0) return sc_err(SCHEDC_EINVAL, "timeout_s %g is negative", o.timeout_s);
  /* the environment only where the options leave a setting to it (defaults: params.h) */
  double timeout_s = o.timeout_s;
  size_t slice_bytes = o.slice_bytes;
  schedc_status st = o.timeout_s > 0 ? SCHEDC_OK : sc_param_double(SC_P_SCHEDC_TIMEOUT, &timeout_s);
  if (st == SCHEDC_OK && !o.slice_bytes) st = sc_param_size(SC_P_SCHEDC_SLICE, &slice_bytes);
  int v = o.verify;
  if (st == SCHEDC_OK && !v) {
    static const int by_word[] = {SCHEDC_VERIFY_NONE, SCHEDC_VERIFY_DIGEST, SCHEDC_VERIFY_CHECKSUM, SCHEDC_VERIFY_FULL};
    int w = 0; /* SCHEDC_VERIFY's words, in the list's order */
    st = sc_param_enum(SC_P_SCHEDC_VERIFY, &w);
    v = by_word[w];
  }
  if (st != SCHEDC_OK) return st;
  if (v != SCHEDC_VERIFY_NONE && v != SCHEDC_VERIFY_DIGEST && v != SCHEDC_VERIFY_CHECKSUM && v != SCHEDC_VERIFY_FULL)
    return sc_err(SCHEDC_EINVAL, "opts->verify %d: use SCHEDC_VERIFY_NONE, _DIGEST, _CHECKSUM or _FULL", o.verify);
  int repair = 0; /* SCHEDC_REPAIR's words: 0, 1 */
  if (!o.repair && (st = sc_param_enum(SC_P_SCHEDC_REPAIR, &repair)) != SCHEDC_OK) return st;
  schedc_comm *c = calloc(1, sizeof *c);
  if (!c) return sc_err(SCHEDC_ENOMEM, "out of memory");
  c->be = be;
  c->rank = rank;
  c->nranks = nranks;
  c->timeout_s = timeout_s;
  c->slice_bytes = slice_bytes;
  c->init_plan = opts && HAS_FIELD(opts, plan) ? o.plan : NULL;
  c->verify = (v & SCHEDC_VERIFY_DIGEST ? SC_V_DIGEST : 0) | (v & SCHEDC_VERIFY_CHECKSUM ? SC_V_CHECKSUM : 0);
  c->repair = o.repair || repair;
  st = sc_inject_parse(sc_param_str(SC_P_SCHEDC_INJECT), &c->inj);
  if (st == SCHEDC_OK) st = sc_inject_check(&c->inj, nranks, be ? be->name : NULL);
  const char *tun = o.tuning ? o.tuning : sc_param_str(SC_P_SCHEDC_TUNING);
  if (st == SCHEDC_OK && tun && *tun) st = sc_tuning_load(tun, nranks, &c->tuning);
  if (st != SCHEDC_OK) {
    free(c);
    return st;
  }
  *out = c;
  return SCHEDC_OK;
}

void *sc_scratch(schedc_comm *c, size_t bytes) {
  if (bytes > c->scratch_cap) {
    void *p = realloc(c->scratch, bytes);
    if (!p) { sc_err(SCHEDC_ENOMEM, "out of memory for a %zu-byte working buffer", bytes); return NULL; }
    c->scratch = p;
    c->scratch_cap = bytes;
  }
  return c->scratch;
}

void sc_comm_release(schedc_comm *c) {
  for (int i = 0; i < c->ndefplan; i++) schedc_plan_free(c->defplan[i].plan);
  sc_tuning_free(&c->tuning);
  free(c->scratch);
  free(c);
}

void schedc_comm_free(schedc_comm *c) {
  if (!c) return;
  sc_mem_release_all(c); /* peers that mapped a region keep their mapping until they let it go */
  if (c->be_data) c->be->free(c);
  sc_comm_release(c);
}

int schedc_comm_rank(const schedc_comm *c) { return c ? c->rank : -1; }
int schedc_comm_nranks(const schedc_comm *c) { return c ? c->nranks : -1; }
uint64_t schedc_digest(const void *buf, size_t bytes) { return sc_digest64(buf, bytes); }

schedc_status schedc_plan_builtin(schedc_collective coll, int nranks, int root, schedc_plan **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (nranks < 1 || root < 0 || root >= nranks || !schedc_collective_name(coll))
    return sc_err(SCHEDC_EINVAL, "bad built-in plan request (collective %d, %d ranks, root %d)", (int)coll, nranks, root);
  sc_ir ir;
  if (sc_builtin_ring(&ir, (int)coll, (uint32_t)nranks, (uint32_t)root)) return sc_err(SCHEDC_ENOMEM, "out of memory");
  return sc_plan_make(&ir, out);
}

static const schedc_plan *default_plan(schedc_comm *c, int coll, int root, size_t bytes, size_t *slice) {
  const sc_tuneentry *e = sc_tuning_pick(&c->tuning, coll, root, bytes);
  if (e) {
    if (e->slice) *slice = e->slice;
    return e->plan;
  }
  for (int i = 0; i < c->ndefplan; i++)
    if (c->defplan[i].coll == coll && c->defplan[i].root == root) return c->defplan[i].plan;
  schedc_plan *p;
  if (schedc_plan_builtin((schedc_collective)coll, c->nranks, root, &p) != SCHEDC_OK) return NULL;
  if (c->ndefplan == NDEFPLANS) {
    schedc_plan_free(c->defplan[0].plan);
    memmove(c->defplan, c->defplan + 1, sizeof c->defplan[0] * (NDEFPLANS - 1));
    c->ndefplan--;
  }
  c->defplan[c->ndefplan].coll = coll;
  c->defplan[c->ndefplan].root = root;
  c->defplan[c->ndefplan++].plan = p;
  return p;
}

const schedc_plan *schedc_comm_default_plan(schedc_comm *c, schedc_collective coll, int root, size_t bytes) {
  if (!c) { sc_err(SCHEDC_EINVAL, "comm is NULL"); return NULL; }
  size_t slice = 0;
  const schedc_plan *p = default_plan(c, (int)coll, root, bytes, &slice);
  if (!p) sc_err(SCHEDC_EINVAL, "no default plan for %s root %d", schedc_collective_name(coll), root);
  return p;
}

/* The arguments of a call checked and its descriptor filled. `count` is the user's count. */
static schedc_status make_call(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                               schedc_dtype dtype, schedc_op op, int root, const schedc_plan *plan, unsigned flags,
                               sc_call *k) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  if (!c) return sc_err(SCHEDC_EINVAL, "%s: comm is NULL", cn);
  if (c->broken) {
    const char *why = c->be->failure ? c->be->failure(c) : NULL;
    return sc_err(SCHEDC_EPEER, "%s: the communicator is broken by an earlier failure%s%s", cn, why ? ": " : "",
                  why ? why : "");
  }
  if (!schedc_dtype_name(dtype)) return sc_err(SCHEDC_EINVAL, "%s: bad dtype %d", cn, (int)dtype);
  if (!schedc_op_name(op)) return sc_err(SCHEDC_EINVAL, "%s: bad op %d%s", cn, (int)op, op >= SCHEDC_OP_CUSTOM_BASE ?
                                         " (a custom operator already freed, or never made by schedc_op_create)" : "");
  schedc_status st;
  if (sc_reduces(coll) && (st = sc_op_check_dtype(op, dtype, cn)) != SCHEDC_OK) return st;
  if (root < 0 || root >= c->nranks) return sc_err(SCHEDC_EINVAL, "%s: root %d out of range [0, %d)", cn, root, c->nranks);
  int n = c->nranks, me = c->rank;
  size_t K = coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER ? count * (size_t)n : count;
  if (count && (size_t)n > SIZE_MAX / count) return sc_err(SCHEDC_EINVAL, "%s: count %zu too large", cn, count);
  int needs_send = coll != SCHEDC_BROADCAST || me == root;
  int needs_recv = coll != SCHEDC_REDUCE || me == root;
  if (count && ((needs_send && !sendbuf) || (needs_recv && !recvbuf)))
    return sc_err(SCHEDC_EINVAL, "%s: %s is NULL", cn, needs_send && !sendbuf ? "sendbuf" : "recvbuf");
  size_t slice = c->slice_bytes;
  if (!plan && !(plan = default_plan(c, coll, root, K * schedc_dtype_size(dtype), &slice)))
    return sc_err(SCHEDC_ENOMEM, "%s: no default plan", cn);
  const sc_ir *ir = &plan->ir;
  if (ir->nranks != (uint32_t)n)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' is for %u ranks, the communicator has %d", cn, ir->name, ir->nranks, n);
  if (ir->collective != coll)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' is a %s plan", cn, ir->name, sc_ir_collective_name(ir->collective));
  if ((coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE) && ir->root != (uint32_t)root)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' has root %u, the call root %d", cn, ir->name, ir->root, root);
  /* Reductions run in the accumulation type; allgather and broadcast only move the bits. */
  int reduction = sc_reduces(coll);
  *k = (sc_call){coll, cn, sendbuf, recvbuf, count, K, dtype, reduction ? sc_acc_type(dtype) : dtype,
                 reduction ? op : SCHEDC_SUM, root, plan, &plan->prog, slice, flags, 0, sc_call_checks_word(c, flags)};
  const sc_opdef *custom = reduction ? sc_opreg_get(op) : NULL;
  if (custom) k->op_hash = custom->hash;
  if (!(flags & SC_CALL_NOVERIFY)) c->file = ir->nfiles ? ir->files[0] : "?";
  return SCHEDC_OK;
}

const char *sc_checks_name(uint32_t checks, char *buf, size_t cap) {
  const char *v = (checks & 3) == 3 ? "full" : checks & SC_V_DIGEST ? "digest" : checks & SC_V_CHECKSUM ? "checksum"
                                                                                                    : "none";
  snprintf(buf, cap, "SCHEDC_VERIFY=%s%s", v, checks & 4 ? " with repair" : "");
  return buf;
}

schedc_status sc_coll(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                      schedc_op op, int root, const schedc_plan *plan, unsigned flags) {
  sc_call k;
  schedc_status st = make_call(c, coll, send, recv, count, dtype, op, root, plan, flags, &k);
  if (st == SCHEDC_OK) st = c->be->collective(c, &k);
  if (st != SCHEDC_OK || (flags & SC_CALL_NOVERIFY) || !(c->be->caps & SC_CAP_HOST_RESULT)) return st;
  /* the result every rank holds alike (none for reduce_scatter and reduce) */
  size_t K = sc_same_bits(coll) ? sc_same_bits_elems(coll, count, c->nranks) : 0;
  return sc_integrity_check(c, k.cn, recv, K * schedc_dtype_size(dtype), sc_same_bits(coll));
}

schedc_status schedc_allreduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op,
                               schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll(comm, SCHEDC_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, plan, 0);
}
schedc_status schedc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, schedc_dtype dtype,
                                    schedc_op op, schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll(comm, SCHEDC_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, plan, 0);
}
schedc_status schedc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, schedc_dtype dtype,
                               schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll(comm, SCHEDC_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, SCHEDC_SUM, 0, plan, 0);
}
schedc_status schedc_broadcast(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, int root,
                               schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll(comm, SCHEDC_BROADCAST, sendbuf, recvbuf, count, dtype, SCHEDC_SUM, root, plan, 0);
}
schedc_status schedc_reduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op, int root,
                            schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll(comm, SCHEDC_REDUCE, sendbuf, recvbuf, count, dtype, op, root, plan, 0);
}
