/*
 * comm.c — communicators (common part) and the five collectives: argument checks, choosing the
 * plan, preparing the working buffer (accumulation type), the entry barrier with its call check,
 * running the executor, and finishing (avg, rounding to the data type, copy out).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "comm.h"
#include "err.h"
#include "kernels.h"
#include "params.h"
#include "plan.h"

size_t sc_shared_size(uint32_t nranks, uint32_t ctr_per_rank) {
  size_t head = sizeof(sc_shared) + (size_t)nranks * sizeof(sc_slot);
  head = (head + 63) & ~(size_t)63;
  return head + (size_t)2 * SC_NKINDS * nranks * ctr_per_rank * sizeof(uint32_t);
}

void sc_shared_init(sc_shared *sh, uint32_t nranks, uint32_t ctr_per_rank) {
  memset(sh, 0, sc_shared_size(nranks, ctr_per_rank));
  sh->magic = SC_SHARED_MAGIC;
  sh->nranks = nranks;
  sh->ctr_per_rank = ctr_per_rank;
  size_t head = sizeof(sc_shared) + (size_t)nranks * sizeof(sc_slot);
  sh->ctr_off = (head + 63) & ~(size_t)63;
}

schedc_status sc_comm_new(int backend, int rank, int nranks, const void *optp, schedc_comm **out) {
  *out = NULL;
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  const schedc_comm_opts *opts = optp;
  if (opts) {
    if (opts->size < sizeof(size_t) || opts->size > sizeof o)
      return sc_err(SCHEDC_EINVAL, "opts->size is %zu; set it with SCHEDC_COMM_OPTS_INIT", opts->size);
    memcpy(&o, opts, opts->size);
  }
  if (nranks < 1 || nranks > 65536) return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, 65536]", nranks);
  if (rank < 0 || rank >= nranks) return sc_err(SCHEDC_EINVAL, "rank %d out of range [0, %d)", rank, nranks);
  if (o.timeout_s < 0) return sc_err(SCHEDC_EINVAL, "timeout_s %g is negative", o.timeout_s);
  schedc_comm *c = calloc(1, sizeof *c);
  if (!c || !(c->peer = calloc((size_t)nranks, sizeof *c->peer))) {
    free(c);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  c->backend = backend;
  c->rank = rank;
  c->nranks = nranks;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  c->oversubscribed = backend != SCHEDC_BACKEND_MPI && nranks > (ncpu > 0 ? ncpu : 1);
  /* the environment only where the options leave a setting to it (defaults: params.h) */
  c->timeout_s = o.timeout_s;
  c->slice_bytes = o.slice_bytes;
  schedc_status st = o.timeout_s > 0 ? SCHEDC_OK : sc_param_double(SC_P_SCHEDC_TIMEOUT, &c->timeout_s);
  if (st == SCHEDC_OK && !o.slice_bytes) st = sc_param_size(SC_P_SCHEDC_SLICE, &c->slice_bytes);
  int v = o.verify;
  if (st == SCHEDC_OK && !v) {
    static const int by_word[] = {SCHEDC_VERIFY_NONE, SCHEDC_VERIFY_DIGEST, SCHEDC_VERIFY_CHECKSUM, SCHEDC_VERIFY_FULL};
    int w = 0; /* SCHEDC_VERIFY's words, in the list's order */
    st = sc_param_enum(SC_P_SCHEDC_VERIFY, &w);
    v = by_word[w];
  }
  if (st != SCHEDC_OK) {
    free(c->peer);
    free(c);
    return st;
  }
  if (v != SCHEDC_VERIFY_NONE && v != SCHEDC_VERIFY_DIGEST && v != SCHEDC_VERIFY_CHECKSUM && v != SCHEDC_VERIFY_FULL) {
    free(c->peer);
    free(c);
    return sc_err(SCHEDC_EINVAL, "opts->verify %d: use SCHEDC_VERIFY_NONE, _DIGEST, _CHECKSUM or _FULL", o.verify);
  }
  c->verify = (v & SCHEDC_VERIFY_DIGEST ? SC_V_DIGEST : 0) | (v & SCHEDC_VERIFY_CHECKSUM ? SC_V_CHECKSUM : 0);
  int repair = 0; /* SCHEDC_REPAIR's words: 0, 1 */
  st = o.repair ? SCHEDC_OK : sc_param_enum(SC_P_SCHEDC_REPAIR, &repair);
  c->repair = o.repair || repair;
  if (st == SCHEDC_OK) st = sc_inject_parse(sc_param_str(SC_P_SCHEDC_INJECT), &c->inj);
  const char *tun = o.tuning ? o.tuning : sc_param_str(SC_P_SCHEDC_TUNING);
  if (st == SCHEDC_OK && tun && *tun) st = sc_tuning_load(tun, nranks, &c->tuning);
  if (st != SCHEDC_OK) {
    free(c->peer);
    free(c);
    return st;
  }
  *out = c;
  return SCHEDC_OK;
}

schedc_status sc_comm_start(schedc_comm *c, const schedc_plan *plan) {
  sc_slot *me = &c->sh->slots[c->rank];
  me->init_hash = plan ? plan->hash : 0;
  atomic_store(&me->state, SC_ALIVE);
  schedc_status st = sc_barrier(c, "communicator init", sc_now() + c->timeout_s);
  if (st != SCHEDC_OK) return st;
  for (int r = 0; r < c->nranks; r++)
    if (c->sh->slots[r].init_hash != me->init_hash)
      return sc_err(SCHEDC_EMISMATCH, "rank %d was initialised with plan %016llx but rank %d with plan %016llx",
                    c->rank, (unsigned long long)me->init_hash, r, (unsigned long long)c->sh->slots[r].init_hash);
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
  for (int i = 0; i < c->nprog; i++) sc_prog_free(&c->progs[i].prog);
  sc_tuning_free(&c->tuning);
  free(c->scratch);
  free(c->temp);
  free(c->flipbuf);
  free(c->peer);
  free(c->broken_msg);
  free(c);
}

void schedc_comm_free(schedc_comm *c) {
  if (!c) return;
  if (c->tr && c->tr->destroy) c->tr->destroy(c);
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
  if (c->ndefplan == SC_DEFPLANS) { schedc_plan_free(c->defplan[0].plan); memmove(c->defplan, c->defplan + 1, sizeof c->defplan[0] * (SC_DEFPLANS - 1)); c->ndefplan--; }
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

static const sc_prog *get_prog(schedc_comm *c, const schedc_plan *plan) {
  for (int i = 0; i < c->nprog; i++)
    if (c->progs[i].plan == plan && c->progs[i].hash == plan->hash) return &c->progs[i].prog;
  if (c->nprog == SC_PROGCACHE) {
    sc_prog_free(&c->progs[0].prog);
    memmove(c->progs, c->progs + 1, sizeof c->progs[0] * (SC_PROGCACHE - 1));
    c->nprog--;
  }
  sc_progcache *e = &c->progs[c->nprog];
  c->flip.prog = NULL; /* cached programs moved: search the flip target again */
  if (sc_prog_build(&plan->ir, &e->prog)) return NULL;
  e->plan = plan;
  e->hash = plan->hash;
  c->nprog++;
  return &e->prog;
}

static schedc_status run_plan(schedc_comm *c, const char *cn, const sc_prog *prog, const schedc_plan *plan,
                              schedc_dtype acc, schedc_op op, size_t K, uint64_t seq);
static void load_in(schedc_dtype dtype, schedc_dtype acc, void *dst, const void *src, size_t n);
static void store_out(schedc_dtype dtype, schedc_dtype acc, void *dst, const void *src, size_t n);

/* Copy in: this rank's initial cells, before any peer may read them. */
static void copy_in(const schedc_comm *c, int coll, char *W, const void *sendbuf, size_t count, size_t K,
                    schedc_dtype dtype, schedc_dtype acc, int root) {
  size_t asz = schedc_dtype_size(acc);
  if (coll == SCHEDC_ALLGATHER) load_in(dtype, acc, W + (size_t)c->rank * count * asz, sendbuf, count);
  else if (coll != SCHEDC_BROADCAST || c->rank == root) load_in(dtype, acc, W, sendbuf, K);
}

/* Finish this rank's result: avg (once, in the accumulation type), rounding to the data type
 * once, copy out of the working buffer. flipout injection lands here, on the result; when the
 * digest is wanted and the result is copied as it is, the digest is computed by the copy. */
static void finish(schedc_comm *c, int coll, char *W, void *recvbuf, size_t count, size_t K,
                   schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root) {
  size_t asz = schedc_dtype_size(acc), lo, len;
  sc_result_part(coll, c->rank, root, count, K, &lo, &len);
  if (op == SCHEDC_AVG && sc_reduces(coll) && len) sc_divide(acc, W + lo * asz, len, c->nranks);
  c->have_digest = 0;
  if (sc_same_bits(coll) && !c->in_verify && (c->verify & SC_V_DIGEST) && acc == dtype && W + lo * asz != (char *)recvbuf) {
    sc_flipout(c, W + lo * asz, len * asz);
    c->digest = sc_verify_digest(recvbuf, W + lo * asz, len * asz);
    c->have_digest = 1;
    return;
  }
  if (len) store_out(dtype, acc, recvbuf, W + lo * asz, len);
  if (sc_same_bits(coll)) sc_flipout(c, recvbuf, len * schedc_dtype_size(dtype));
}
/* mpi.c, when built with MPI. */
schedc_status sc_mpi_collective(schedc_comm *c, const schedc_plan *plan, const char *cn, schedc_dtype acc,
                                schedc_op op, size_t K, char *W, uint32_t desc[8]) __attribute__((weak));
/* Is `flag` set on any rank? (MPI_Allreduce; leaves the scratch buffer alone.) */
schedc_status sc_mpi_any(schedc_comm *c, int flag, int *any) __attribute__((weak));

/* The MPI path: the working buffer is private scratch; the transport moves messages. */
static schedc_status mpi_collective(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                    schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                    const schedc_plan *plan, size_t K) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  if (!sc_mpi_collective) return sc_err(SCHEDC_EUNAVAIL, "%s: this build has no MPI transport", cn);
  int reduction = sc_reduces(coll);
  size_t asz = schedc_dtype_size(acc);
  char *W = sc_scratch(c, K * asz);
  if (!W && K) return SCHEDC_ENOMEM;
  uint32_t desc[8] = {(uint32_t)coll, (uint32_t)dtype, reduction ? (uint32_t)op : 0, (uint32_t)root,
                      (uint32_t)count, (uint32_t)((uint64_t)count >> 32), (uint32_t)plan->hash,
                      (uint32_t)(plan->hash >> 32)};
  /* A corrupted message cannot be fetched again once the step is over (the sender's cell moves
   * on), so with checksum repair the whole call runs again from the inputs, which the MPI path
   * leaves intact until finish. */
  schedc_status st;
  for (c->attempt = 0;; c->attempt++) {
    memset(&c->bad, 0, sizeof c->bad);
    copy_in(c, coll, W, sendbuf, count, K, dtype, acc, root);
    if ((st = sc_mpi_collective(c, plan, cn, acc, op, K, W, desc)) != SCHEDC_OK) break;
    if (!(c->verify & SC_V_CHECKSUM) || !c->repair || c->in_verify || c->attempt == 2) break;
    int rerun = 0;
    if ((st = sc_mpi_any(c, (int)c->bad.found, &rerun)) != SCHEDC_OK) break;
    if (!rerun) break;
  }
  c->attempt = 0;
  if (st != SCHEDC_OK) { c->broken = 1; return st; }
  finish(c, coll, W, recvbuf, count, K, dtype, acc, op, root);
  return SCHEDC_OK;
}

/* Into / out of the working buffer: widen to the accumulation type, or copy the bits. */
static void load_in(schedc_dtype dtype, schedc_dtype acc, void *dst, const void *src, size_t n) {
  if (acc != dtype) sc_to_acc(dtype, dst, src, n);
  else if (dst != src && n) memmove(dst, src, n * schedc_dtype_size(dtype));
}
static void store_out(schedc_dtype dtype, schedc_dtype acc, void *dst, const void *src, size_t n) {
  if (acc != dtype) sc_from_acc(dtype, dst, src, n);
  else if (dst != src && n) memmove(dst, src, n * schedc_dtype_size(dtype));
}

/* The whole collective on this rank. `count` is the user's count argument. */
static schedc_status collective_run(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                schedc_dtype dtype, schedc_op op, int root, const schedc_plan *plan) {
  const char *cn = schedc_collective_name((schedc_collective)coll);
  if (!c) return sc_err(SCHEDC_EINVAL, "%s: comm is NULL", cn);
  if (c->broken) {
    int has = c->sh && atomic_load(&c->sh->failed) == 2;
    return sc_err(SCHEDC_EPEER, "%s: the communicator is broken by an earlier failure%s%s", cn, has ? ": " : "",
                  has ? c->sh->fail_msg : "");
  }
  if (!schedc_dtype_name(dtype)) return sc_err(SCHEDC_EINVAL, "%s: bad dtype %d", cn, (int)dtype);
  if (!schedc_op_name(op)) return sc_err(SCHEDC_EINVAL, "%s: bad op %d", cn, (int)op);
  if (root < 0 || root >= c->nranks) return sc_err(SCHEDC_EINVAL, "%s: root %d out of range [0, %d)", cn, root, c->nranks);
  int n = c->nranks, me = c->rank;
  int reduction = sc_reduces(coll);
  size_t K = coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER ? count * (size_t)n : count;
  if (count && (size_t)n > SIZE_MAX / count) return sc_err(SCHEDC_EINVAL, "%s: count %zu too large", cn, count);
  int needs_send = coll != SCHEDC_BROADCAST || me == root;
  int needs_recv = coll != SCHEDC_REDUCE || me == root;
  if (count && ((needs_send && !sendbuf) || (needs_recv && !recvbuf)))
    return sc_err(SCHEDC_EINVAL, "%s: %s is NULL", cn, needs_send && !sendbuf ? "sendbuf" : "recvbuf");
  c->call_slice = c->slice_bytes;
  if (!plan && !(plan = default_plan(c, coll, root, K * schedc_dtype_size(dtype), &c->call_slice)))
    return sc_err(SCHEDC_ENOMEM, "%s: no default plan", cn);
  const sc_ir *ir = &plan->ir;
  if (ir->nranks != (uint32_t)n)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' is for %u ranks, the communicator has %d", cn, ir->name, ir->nranks, n);
  if (ir->collective != coll)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' is a %s plan", cn, ir->name, sc_ir_collective_name(ir->collective));
  if ((coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE) && ir->root != (uint32_t)root)
    return sc_err(SCHEDC_EINVAL, "%s: plan '%s' has root %u, the call root %d", cn, ir->name, ir->root, root);
  const sc_prog *prog = get_prog(c, plan);
  if (!prog) return sc_err(SCHEDC_ENOMEM, "%s: out of memory compiling the plan", cn);
  if (!c->in_verify) c->file = ir->nfiles ? ir->files[0] : "?";

  /* Reductions run in the accumulation type; allgather and broadcast only move the bits. */
  schedc_dtype acc = reduction ? sc_acc_type(dtype) : dtype;
  size_t asz = schedc_dtype_size(acc);
  if (c->backend == SCHEDC_BACKEND_CUDA)
    return sc_cuda_collective(c, coll, sendbuf, recvbuf, count, dtype, acc, op, root, plan, prog, K);
  if (c->backend == SCHEDC_BACKEND_MPI) return mpi_collective(c, coll, sendbuf, recvbuf, count, dtype, acc, op, root, plan, K);
  /* Working buffer: the caller's receive buffer when it holds the whole result in the
   * accumulation type and the transport can share it; else a buffer of the transport's. */
  int direct = acc == dtype && (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST ||
                                (coll == SCHEDC_REDUCE && me == root));
  uint64_t seq = c->seq + 1;
  sc_slot *slot = &c->sh->slots[me];
  sc_desc *desc = &slot->d[seq & 1];
  char *W = c->tr->work(c, K * asz, direct ? recvbuf : NULL, desc);
  if (!W && K) return SCHEDC_ENOMEM;
  copy_in(c, coll, W, sendbuf, count, K, dtype, acc, root);
  memset(&c->bad, 0, sizeof c->bad);
  if ((c->verify & SC_V_CHECKSUM) && !c->in_verify && K) sc_exec_checksum_inputs(c, prog, acc, K, W, (int)(seq & 1));
  desc->coll = (uint32_t)coll;
  desc->dtype = (uint32_t)dtype;
  desc->op = reduction ? (uint32_t)op : 0;
  desc->root = (uint32_t)root;
  desc->count = count;
  desc->plan_hash = plan->hash;
  desc->slice = c->call_slice;
  desc->seq = seq;
  c->seq = seq;
  atomic_store(&slot->busy, 1u);
  schedc_status st = sc_barrier(c, cn, sc_now() + c->timeout_s);
  if (st == SCHEDC_OK) st = run_plan(c, cn, prog, plan, acc, op, K, seq);
  atomic_store(&slot->busy, 0u);
  if (st != SCHEDC_OK) {
    sc_quiesce(c);
    return st;
  }
  finish(c, coll, W, recvbuf, count, K, dtype, acc, op, root);
  return SCHEDC_OK;
}

/* After the entry barrier: check the call matches on every rank, map the peers, run. */
static schedc_status run_plan(schedc_comm *c, const char *cn, const sc_prog *prog, const schedc_plan *plan,
                              schedc_dtype acc, schedc_op op, size_t K, uint64_t seq) {
  int n = c->nranks, me = c->rank;
  const sc_ir *ir = &plan->ir;
  int parity = (int)(seq & 1);
  const sc_desc *slot = &c->sh->slots[me].d[parity];
  schedc_status st;
  for (int r = 0; r < n; r++) {
    const sc_desc *o = &c->sh->slots[r].d[parity];
    const char *what = o->coll != slot->coll ? "collective" : o->dtype != slot->dtype ? "dtype" : o->op != slot->op ? "op"
                       : o->root != slot->root ? "root" : o->count != slot->count ? "count"
                       : o->plan_hash != slot->plan_hash ? "plan" : o->slice != slot->slice ? "slice size" : NULL;
    if (o->seq != seq) what = "call sequence";
    if (what) {
      sc_fail(c, SC_ABORTED, "rank %d and rank %d disagree on the %s of call %llu", me, r, what, (unsigned long long)seq);
      const char *d1 = schedc_dtype_name((schedc_dtype)slot->dtype), *d2 = schedc_dtype_name((schedc_dtype)o->dtype);
      const char *c2 = schedc_collective_name((schedc_collective)o->coll);
      return sc_err(SCHEDC_EMISMATCH, "%s: rank %d and rank %d disagree on the %s of call %llu (rank %d: %s %s "
                    "count %llu plan %016llx; rank %d: %s %s count %llu plan %016llx)", cn, me, r, what,
                    (unsigned long long)seq, me, cn, d1, (unsigned long long)slot->count,
                    (unsigned long long)slot->plan_hash, r, c2 ? c2 : "?", d2 ? d2 : "?",
                    (unsigned long long)o->count, (unsigned long long)o->plan_hash);
    }
  }
  /* Counters: this call uses parity seq % 2; reset the other set for the next call (everyone
   * has finished the previous call, or they could not have passed the barrier). */
  size_t nctr = c->ctr_used[parity ^ 1]; /* only what that parity's last call touched */
  memset((void *)sc_ctr(c->sh, parity ^ 1, SC_VER, (uint32_t)me), 0, nctr * sizeof(uint32_t));
  memset((void *)sc_ctr(c->sh, parity ^ 1, SC_READS, (uint32_t)me), 0, nctr * sizeof(uint32_t));
  c->ctr_used[parity ^ 1] = 0;
  if (K == 0) return SCHEDC_OK; /* the call matched on every rank; there is nothing to move */
  if ((st = c->tr->map_peers(c, prog->rank[me].reads_from, parity)) != SCHEDC_OK) {
    sc_fail(c, SC_ABORTED, "rank %d could not map its peers' buffers", me);
    return st;
  }
  sc_execargs a = {prog, ir->nfiles ? ir->files[0] : "", cn, acc, op, K, parity};
  return sc_exec(c, &a);
}

/* Run, then the integrity checks (verify modes). */
static schedc_status collective(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                schedc_dtype dtype, schedc_op op, int root, const schedc_plan *plan) {
  schedc_status st = collective_run(c, coll, sendbuf, recvbuf, count, dtype, op, root, plan);
  if (st != SCHEDC_OK || c->backend == SCHEDC_BACKEND_CUDA) return st; /* stream-ordered: nothing to check yet */
  /* the result every rank holds alike (none for reduce_scatter and reduce) */
  size_t K = sc_same_bits(coll) ? sc_same_bits_elems(coll, count, c->nranks) : 0;
  return sc_integrity_check(c, schedc_collective_name((schedc_collective)coll), recvbuf, K * schedc_dtype_size(dtype),
                            sc_same_bits(coll));
}

schedc_status schedc_allreduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op,
                               schedc_comm *comm, const schedc_plan *plan) {
  return collective(comm, SCHEDC_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, plan);
}
schedc_status schedc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, schedc_dtype dtype,
                                    schedc_op op, schedc_comm *comm, const schedc_plan *plan) {
  return collective(comm, SCHEDC_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, plan);
}
schedc_status schedc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, schedc_dtype dtype,
                               schedc_comm *comm, const schedc_plan *plan) {
  return collective(comm, SCHEDC_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, SCHEDC_SUM, 0, plan);
}
schedc_status schedc_broadcast(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, int root,
                               schedc_comm *comm, const schedc_plan *plan) {
  return collective(comm, SCHEDC_BROADCAST, sendbuf, recvbuf, count, dtype, SCHEDC_SUM, root, plan);
}
schedc_status schedc_reduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op, int root,
                            schedc_comm *comm, const schedc_plan *plan) {
  return collective(comm, SCHEDC_REDUCE, sendbuf, recvbuf, count, dtype, op, root, plan);
}

schedc_status schedc_comm_init_env(const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  const char *r = sc_param_raw(SC_P_SCHEDC_RANK), *n = sc_param_raw(SC_P_SCHEDC_NRANKS);
  const char *job = sc_param_str(SC_P_SCHEDC_JOB);
  sc_param pr = SC_P_SCHEDC_RANK, pn = SC_P_SCHEDC_NRANKS; /* the pair read, for its messages */
  if (!r || !n) { r = sc_param_raw(pr = SC_P_RANK); n = sc_param_raw(pn = SC_P_WORLD_SIZE); }
  if (!r || !n) {
    r = sc_param_raw(pr = SC_P_OMPI_COMM_WORLD_RANK);
    n = sc_param_raw(pn = SC_P_OMPI_COMM_WORLD_SIZE);
  }
  if (!r || !n)
    return sc_err(SCHEDC_EINVAL, "no rank in the environment: set SCHEDC_RANK and SCHEDC_NRANKS (and SCHEDC_JOB), "
                                 "or start under torchrun (RANK, WORLD_SIZE) or mpirun");
  long long rank, nranks;
  schedc_status st = sc_param_parse_int(pr, r, &rank);
  if (st != SCHEDC_OK || (st = sc_param_parse_int(pn, n, &nranks)) != SCHEDC_OK) return st;
  /* under an MPI launcher, built with MPI: the mpi backend by default, and the cuda backend's
   * host exchanges over MPI (its ranks may then be on several hosts) */
  int mpi_launched = 0;
#ifdef SCHEDC_HAVE_MPI
  mpi_launched = pr == SC_P_OMPI_COMM_WORLD_RANK;
#endif
  int be = mpi_launched ? 1 : 0; /* SCHEDC_BACKEND's words: shm, mpi, cuda */
  if ((st = sc_param_enum(SC_P_SCHEDC_BACKEND, &be)) != SCHEDC_OK) return st;
  if (be == 1) return schedc_comm_init_mpi(NULL, opts, out);
  int cuda = be == 2;
  /* cuda: the GPU is SCHEDC_CUDA_DEVICE, else torchrun's LOCAL_RANK, else Open MPI's rank on
   * this host, else the rank */
  sc_param dp = SC_P_SCHEDC_CUDA_DEVICE;
  const char *dv = sc_param_raw(dp);
  if (!dv) dv = sc_param_raw(dp = SC_P_LOCAL_RANK);
  if (!dv) dv = sc_param_raw(dp = SC_P_OMPI_COMM_WORLD_LOCAL_RANK);
  long long device = rank;
  if (cuda && dv && (st = sc_param_parse_int(dp, dv, &device)) != SCHEDC_OK) return st;
  char jobbuf[64];
  const char *port = sc_param_str(SC_P_MASTER_PORT), *ompi = sc_param_str(SC_P_OMPI_MCA_orte_hnp_uri);
  if (!job) job = sc_param_str(SC_P_TORCHELASTIC_RUN_ID);
  if (!job && port) { snprintf(jobbuf, sizeof jobbuf, "port%s", port); job = jobbuf; }
  if (!job && ompi) { /* the job's number: the uri's leading digits */
    snprintf(jobbuf, sizeof jobbuf, "ompi%lu", (unsigned long)strtoul(ompi, NULL, 10));
    job = jobbuf;
  }
  if (cuda && mpi_launched) return sc_cu_init_env_mpi((int)device, opts, out);
  if (!job) return sc_err(SCHEDC_EINVAL, "no job id in the environment: set SCHEDC_JOB (the same on every rank)");
  if (cuda) return schedc_comm_init_cuda_rank((int)rank, (int)nranks, (int)device, job, opts, out);
  return schedc_comm_init_shm((int)rank, (int)nranks, job, opts, out);
}
