/*
 * cuda_verify.c — digest verification on the cuda backend (docs/integrity.md): after allreduce,
 * allgather or broadcast each rank's result is drained, copied to the host and digested with the
 * CPU backends' digest; a rank that differs from the majority is named (SCHEDC_ECORRUPT) or, with
 * repair, given the majority's bits. Per-transfer checksums would need CRCs inside the generated
 * kernels: not available on this backend (refused at init).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_group.h"
#include "err.h"
#include "kernels.h"

schedc_status sc_cu_verify_setup(cu_group *g, const schedc_comm *c) {
  if (c->verify & SC_V_CHECKSUM)
    return sc_err(SCHEDC_EUNAVAIL, "verification '%s' is not available on the cuda backend: its per-transfer "
                  "checksums would have to be computed inside the kernels; use 'digest' (SCHEDC_VERIFY=digest, "
                  "SCHEDC_VERIFY_DIGEST)", c->verify & SC_V_DIGEST ? "full" : "checksum");
  if (c->inj.flip_rank >= 0)
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT flip:%d:%d (a transfer's payload) is not available on the cuda "
                  "backend, whose transfers are loads inside the kernels; flipout:RANK is", c->inj.flip_rank,
                  c->inj.flip_step);
  if (c->inj.kill_rank >= 0 || c->inj.delay_rank >= 0 || c->inj.jitter_us)
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT kill, delay and jitter act at the CPU executor's steps and are "
                  "not available on the cuda backend (its steps run inside the kernels); flipout:RANK is");
  g->digest = (c->verify & SC_V_DIGEST) != 0;
  g->repair = g->digest && c->repair;
  g->flipout = c->inj.flipout_rank;
  return SCHEDC_OK;
}

int sc_cu_same_bits(int coll) { return coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER || coll == SCHEDC_BROADCAST; }

schedc_status sc_cu_result_digest(cu_group *g, int s, int rank, size_t bytes, void *host, uint64_t *d) {
  const sc_cudev *dv = g->dv;
  unsigned char *dst = g->recv[s];
  schedc_status st = dv->select(g->dev[s]);
  if (st == SCHEDC_OK) st = dv->sync(g->stream[s]);
  if (st == SCHEDC_OK) st = sc_cu_err_status(g); /* a kernel that timed out left no result to judge */
  if (st == SCHEDC_OK && g->flipout == rank && bytes) { /* injected, as the CPU backends' flipout */
    size_t at = (size_t)((g->epoch >> CU_EPOCH_BITS) * 7919 % bytes);
    unsigned char b = 0;
    if ((st = dv->copy(&b, dst + at, 1, g->stream[s])) == SCHEDC_OK && (st = dv->sync(g->stream[s])) == SCHEDC_OK) {
      b ^= 0x10;
      st = dv->copy(dst + at, &b, 1, g->stream[s]);
    }
  }
  if (st == SCHEDC_OK && bytes) st = dv->copy(host, dst, bytes, g->stream[s]);
  if (st == SCHEDC_OK) st = dv->sync(g->stream[s]);
  if (st == SCHEDC_OK) *d = sc_verify_digest(NULL, host, bytes);
  return st;
}

schedc_status sc_cu_verify_slots(cu_group *g, const char *cn, size_t bytes) {
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return sc_err(SCHEDC_ENOMEM, "%s: out of memory for the digest of %zu bytes", cn, bytes);
  uint64_t dg[CU_MAX_RANKS];
  schedc_status st = SCHEDC_OK;
  for (int s = 0; s < g->n && st == SCHEDC_OK; s++) st = sc_cu_result_digest(g, s, s, bytes, host, &dg[s]);
  int nbad = 0, root = st == SCHEDC_OK && g->digest ? sc_digest_majority(dg, g->n, &nbad) : 0;
  /* repair: the majority's bits, device to device (every stream is drained), then digested again */
  for (int s = 0; s < g->n && st == SCHEDC_OK && nbad && g->repair; s++) {
    if (dg[s] == dg[root]) continue;
    uint64_t again = 0;
    if ((st = g->dv->select(g->dev[s])) == SCHEDC_OK && (st = g->dv->copy(g->recv[s], g->recv[root], bytes, g->stream[s])) == SCHEDC_OK) {
      int flip = g->flipout;
      g->flipout = -1; /* the repaired copy is clean, as the CPU backends' resend */
      st = sc_cu_result_digest(g, s, s, bytes, host, &again);
      g->flipout = flip;
    }
    if (st == SCHEDC_OK && again != dg[root]) st = sc_err(SCHEDC_ECORRUPT, "%s: repair failed on rank %d", cn, s);
  }
  free(host);
  if (st == SCHEDC_OK && nbad) st = sc_digest_outcome(cn, dg, g->n, -1, root, g->repair);
  return st;
}
