/*
 * cuda_verify.c — verification on the cuda backend (docs/integrity.md). Digests: after allreduce,
 * allgather or broadcast each rank's result is drained, copied to the host and digested with the
 * CPU backends' digest; a rank that differs from the majority is named (SCHEDC_ECORRUPT) or, with
 * repair, given the majority's bits. Checksums: the kernels check every transfer themselves
 * (codegen/cuda_emit.c); here, their injection and repair parameters and the verdict read from
 * the kernels' failure record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_group.h"
#include "err.h"
#include "kernels.h"
#include "ir.h"

schedc_status sc_cu_verify_setup(cu_group *g, const schedc_comm *c) {
  if (c->inj.flip_rank >= 0 && !(c->verify & SC_V_CHECKSUM))
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT flip:%d:%d needs checksum verification on the cuda backend "
                  "(SCHEDC_VERIFY=checksum or full): its transfers are loads inside the kernels, and only the "
                  "checking kernels can flip what one of them sees", c->inj.flip_rank, c->inj.flip_step);
  if (c->inj.kill_rank >= 0 || c->inj.delay_rank >= 0 || c->inj.jitter_us)
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT kill, delay and jitter act at the CPU executor's steps and are "
                  "not available on the cuda backend (its steps run inside the kernels); flipout:RANK is");
  g->digest = (c->verify & SC_V_DIGEST) != 0;
  g->check = (c->verify & SC_V_CHECKSUM) != 0;
  g->repair = (g->digest || g->check) && c->repair;
  g->flip_rank = c->inj.flip_rank;
  g->flip_step = c->inj.flip_step;
  g->flip_bit = c->inj.flip_bit;
  g->flipout = c->inj.flipout_rank;
  return SCHEDC_OK;
}

schedc_status sc_cu_result_digest(cu_group *g, int s, int rank, size_t bytes, void *host, uint64_t *d) {
  const sc_cudev *dv = g->dv;
  unsigned char *dst = g->recv[s];
  schedc_status st = dv->select(g->dev[s]);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, g->stream[s]);
  if (st == SCHEDC_OK) st = sc_cu_err_status(g, NULL, NULL); /* a kernel that timed out left no result to judge */
  if (st == SCHEDC_OK && g->flipout == rank && bytes) { /* injected, as the CPU backends' flipout */
    size_t at = (size_t)((g->epoch >> CU_EPOCH_BITS) * 7919 % bytes);
    unsigned char b = 0;
    if ((st = dv->copy(&b, dst + at, 1, g->stream[s])) == SCHEDC_OK && (st = sc_cu_sync(g, g->stream[s])) == SCHEDC_OK) {
      b ^= 0x10;
      st = dv->copy(dst + at, &b, 1, g->stream[s]);
    }
  }
  if (st == SCHEDC_OK && bytes) st = dv->copy(host, dst, bytes, g->stream[s]);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, g->stream[s]);
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

schedc_status sc_cu_corrupt(const cu_group *g, const uint32_t *w, const sc_ir *ir, const char *action) {
  sc_corrupt b = {2, w[1], w[3], w[2], w[0], 0, w[4], w[5]};
  const char *file = "?";
  for (uint32_t i = 0; ir && i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    if (x->step == b.step && x->src == b.src && x->dst == b.dst && x->chunk == b.chunk) {
      b.line = x->line;
      if (x->file < ir->nfiles) file = ir->files[x->file];
      break;
    }
  }
  const char *cn = g->coll >= 0 ? schedc_collective_name((schedc_collective)g->coll) : "cuda";
  if (!action) return sc_corrupt_error(cn, &b, file);
  sc_corrupt_warn(cn, &b, file, action);
  return SCHEDC_OK;
}

void sc_cu_args_check(const cu_group *g, cu_args *a, const sc_ir *ir) {
  long long dst = -1, chunk = -1;
  /* flip:RANK:STEP lands on the first transfer out of RANK at STEP to the lowest receiving rank,
   * as on shared memory; a (rank, step) with no transfer runs clean */
  for (uint32_t i = 0; g->flip_rank >= 0 && i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    if ((int)x->src == g->flip_rank && (int)x->step == g->flip_step && x->src != x->dst && (dst < 0 || x->dst < dst)) {
      dst = x->dst;
      chunk = x->chunk;
    }
  }
  sc_cu_arg(a, SC_ABI_flip_src, (uint64_t)(dst < 0 ? -1 : g->flip_rank));
  sc_cu_arg(a, SC_ABI_flip_dst, (uint64_t)dst);
  sc_cu_arg(a, SC_ABI_flip_step, (uint64_t)g->flip_step);
  sc_cu_arg(a, SC_ABI_flip_chunk, (uint64_t)chunk);
  sc_cu_arg(a, SC_ABI_flip_bit, (uint64_t)(long long)g->flip_bit); /* < 0: the middle of the part */
  sc_cu_arg(a, SC_ABI_repair, (uint64_t)g->repair);
}

schedc_status sc_cu_check_verdict(cu_group *g, const sc_ir *ir, int me) {
  uint32_t e[CU_ERR_WORDS];
  schedc_status st = sc_cu_err_status(g, ir, e);
  /* the call's first repaired transfer, told by its receiver */
  if (st == SCHEDC_OK && e[8] == (uint32_t)(g->epoch & 0xffffffffu) && (me < 0 || (int)e[9] == me))
    sc_cu_corrupt(g, e + 9, ir, "read again");
  return st;
}
