/*
 * msgrun.c — the message executor (msgrun.h), shared by the mpi and net backends: per step,
 * receives into temps and sends from this rank's cells (the values before the step), all
 * completed, then this rank's writes in plan order — the step semantics, so the same bits as the
 * CPU executor's dataflow over shared memory. The transport is the backend's port.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "crc.h"
#include "err.h"
#include "kernels.h"
#include "msgrun.h"
#include "plan.h"

void sc_msgbufs_free(sc_msgbufs *b) {
  free(b->temp);
  free(b->crc);
  free(b->flip);
  memset(b, 0, sizeof *b);
}

static int grow(void **p, size_t *cap, size_t need) {
  if (need <= *cap) return 1;
  void *t = realloc(*p, need);
  if (!t) return 0;
  *p = t;
  *cap = need;
  return 1;
}

/* Every rank must make the same call: the agreements gathered, the first field that differs named
 * (core/agree.h: the words of every backend). The communicator is broken afterwards. */
static schedc_status agree(schedc_comm *c, const sc_call *k, const sc_msgport *port) {
  int n = c->nranks;
  sc_agreement mine, *all = malloc((size_t)n * sizeof *all);
  if (!all) return sc_err(SCHEDC_ENOMEM, "out of memory");
  sc_agreement_of(&mine, k, SC_PATH_PLAN);
  char what[64];
  snprintf(what, sizeof what, "%s's agreement", k->cn);
  schedc_status st = port->allgather(c, what, &mine, all, sizeof mine);
  for (int r = 0; r < n && st == SCHEDC_OK; r++) st = sc_agreement_check(k->cn, c->rank, &mine, r, &all[r]);
  free(all);
  if (st != SCHEDC_OK) c->broken = 1;
  return st;
}

/* One run (attempt: 0, then the reruns of a repair) of the plan over the private working buffer
 * W; the first corrupted transfer received into *bad. */
static schedc_status run(schedc_comm *c, const sc_call *call, char *W, int attempt, sc_corrupt *bad,
                         const sc_msgport *port, sc_msgbufs *b) {
  const schedc_plan *plan = call->plan;
  const char *cn = call->cn;
  schedc_dtype acc = call->acc;
  schedc_op op = call->op;
  size_t K = call->K;
  int me = c->rank;
  const sc_ir *ir = &plan->ir;
  size_t asz = schedc_dtype_size(acc), maxchunk = (K + ir->nchunks - 1) / ir->nchunks;
  if (maxchunk * asz > port->max_msg)
    return sc_err(SCHEDC_EINVAL, "%s: chunks of %zu bytes exceed %s's %zu bytes per message; use a plan with more "
                  "chunks", cn, maxchunk * asz, port->name, port->max_msg);
  double deadline = sc_now() + c->timeout_s;
  int check = sc_call_checks(call);
  int flip_step = c->inj.flip_rank == me && sc_call_injects(call) && attempt == 0 ? c->inj.flip_step : -1;
  int steps_inject = (c->be->caps & SC_CAP_INJECT_STEPS) && sc_call_injects(call);
  for (uint32_t s = 0; s <= ir->nsteps; s++) {
    /* SCHEDC_INJECT kill, delay, jitter at each step; kill also at the plan's end (a process dies
     * for real, as a crash would) */
    if (steps_inject && sc_inject_step(&c->inj, me, s, c->seq)) raise(SIGKILL);
    if (s == ir->nsteps) break;
    uint32_t lo = ir->step_off[s], hi = ir->step_off[s + 1], nin = 0;
    for (uint32_t i = lo; i < hi; i++) nin += ir->xfers[i].dst == (uint32_t)me;
    size_t need = (size_t)nin * maxchunk * asz;
    if (!grow(&b->temp, &b->temp_cap, need))
      return sc_err(SCHEDC_ENOMEM, "out of memory for %zu bytes of receive buffers", need);
    if (check && !grow((void **)&b->crc, &b->crc_cap, 2 * (size_t)(hi - lo) * sizeof *b->crc))
      return sc_err(SCHEDC_ENOMEM, "out of memory");
    schedc_status st = SCHEDC_OK;
    uint32_t k = 0;
    for (uint32_t i = lo; i < hi && st == SCHEDC_OK; i++) {
      const sc_xfer *x = &ir->xfers[i];
      size_t clo, chi;
      sc_chunk_range(K, ir->nchunks, x->chunk, &clo, &chi);
      size_t cnt = (chi - clo) * asz;
      if (!cnt) continue; /* an empty chunk: no message either way (both sides skip it alike) */
      uint32_t *crc = check ? &b->crc[2 * (i - lo)] : NULL;
      if (x->dst == (uint32_t)me) {
        st = port->recv(c, (int)x->src, s, SC_MSG_DATA, (char *)b->temp + (size_t)k++ * maxchunk * asz, cnt);
        if (check && st == SCHEDC_OK) st = port->recv(c, (int)x->src, s, SC_MSG_CRC, crc, sizeof *crc);
      } else if (x->src == (uint32_t)me) {
        const char *payload = W + clo * asz;
        if (check) *crc = sc_crc32c(payload, cnt);
        if ((int)s == flip_step && cnt > 0 && grow(&b->flip, &b->flip_cap, cnt)) {
          /* the injected link fault: the payload is corrupted after its CRC was computed */
          memcpy(b->flip, payload, cnt);
          sc_inject_flip(&c->inj, b->flip, cnt, cn, (int)x->dst, s);
          payload = b->flip;
          flip_step = -1; /* one transfer per call */
        }
        st = port->send(c, (int)x->dst, s, SC_MSG_DATA, payload, cnt);
        if (check && st == SCHEDC_OK) st = port->send(c, (int)x->dst, s, SC_MSG_CRC, crc, sizeof *crc);
      }
    }
    /* what was posted is completed (or ended) either way, so no operation outlives the step */
    schedc_status cs = port->complete(c, cn, s, deadline);
    if (st != SCHEDC_OK || (st = cs) != SCHEDC_OK) return st;
    /* Writes in plan order; consecutive reduces into one cell fold in one pass. */
    k = 0;
    for (uint32_t i = lo; i < hi; i++) {
      const sc_xfer *x = &ir->xfers[i];
      if (x->dst != (uint32_t)me) continue;
      size_t clo, chi;
      sc_chunk_range(K, ir->nchunks, x->chunk, &clo, &chi);
      if (chi == clo) continue; /* nothing was sent */
      char *in = (char *)b->temp + (size_t)k++ * maxchunk * asz;
      if (check) {
        uint32_t got = sc_crc32c(in, (chi - clo) * asz), want = b->crc[2 * (i - lo)];
        if (got != want) {
          sc_corrupt bc = {1, s, x->chunk, x->src, (uint32_t)me, x->line, got, want};
          if (!bad->found) *bad = bc;
          if (c->repair) sc_corrupt_warn(cn, &bc, ir->nfiles ? ir->files[x->file] : "?", "the call runs again");
        }
      }
      if (x->kind == SCHEDC_XFER_COPY) memcpy(W + clo * asz, in, (chi - clo) * asz);
      else {
        const void *srcs[1] = {in};
        sc_reduce_chain(acc, op, W + clo * asz, W + clo * asz, srcs, 1, chi - clo);
        sc_inject_arith(&c->inj, W + clo * asz, (chi - clo) * asz, cn, me, s, NULL); /* SCHEDC_INJECT arith */
      }
    }
  }
  return SCHEDC_OK;
}

/* Is `flag` set on any rank? (An allgather; leaves the working buffer alone.) */
static schedc_status any_rank(schedc_comm *c, const char *cn, int flag, int *any, const sc_msgport *port) {
  int32_t mine = flag, *all = malloc((size_t)c->nranks * sizeof *all);
  if (!all) return sc_err(SCHEDC_ENOMEM, "out of memory");
  char what[64];
  snprintf(what, sizeof what, "%s's repair vote", cn);
  schedc_status st = port->allgather(c, what, &mine, all, sizeof mine);
  *any = 0;
  for (int r = 0; r < c->nranks && st == SCHEDC_OK; r++) *any |= all[r] != 0;
  free(all);
  return st;
}

schedc_status sc_msg_collective(schedc_comm *c, const sc_call *k, sc_result *res, const sc_msgport *port, sc_msgbufs *b) {
  size_t asz = schedc_dtype_size(k->acc);
  char *W = sc_scratch(c, k->K * asz);
  if (!W && k->K) return SCHEDC_ENOMEM;
  schedc_status st = agree(c, k, port);
  if (st != SCHEDC_OK) goto failed;
  /* A corrupted message cannot be fetched again once the step is over (the sender's cell moves
   * on), so with checksum repair the whole call runs again from the inputs, which the message
   * path leaves intact until the result is copied out. */
  for (int attempt = 0;; attempt++) {
    memset(&res->bad, 0, sizeof res->bad);
    sc_work_in(c, k, W);
    if ((st = run(c, k, W, attempt, &res->bad, port, b)) != SCHEDC_OK) break;
    if (!sc_call_checks(k) || !sc_call_repairs(k) || attempt == 2) break;
    int rerun = 0;
    if ((st = any_rank(c, k->cn, (int)res->bad.found, &rerun, port)) != SCHEDC_OK) break;
    if (!rerun) break;
  }
failed:
  if (st != SCHEDC_OK) {
    /* SCHEDC_INJECT kill: a rank named dies when its call fails before its kill step (a peer's
     * death reached it first, in the agreement or a step), as the CPU executor's ranks do: else
     * it would live on into a shrink and die in the group that shrink made */
    if ((c->be->caps & SC_CAP_INJECT_STEPS) && sc_call_fail_dies(k) && sc_inject_kill_step(&c->inj, c->rank) >= 0)
      raise(SIGKILL);
    c->broken = 1;
    return st;
  }
  sc_work_out(c, k, W, res);
  return SCHEDC_OK;
}
