/*
 * cuda_verify.c — verification on the cuda backend (docs/integrity.md). Digests: after allreduce,
 * allgather or broadcast each rank's result is drained, copied to the host and digested with the
 * CPU backends' digest; a rank that differs from the majority is named (SCHEDC_ECORRUPT) or, with
 * repair, given the majority's bits. Checksums: the kernels check every transfer themselves
 * (codegen/cuda_device.cuh); here, their injection and repair parameters and the verdict read from
 * the kernels' failure record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_verify.h"
#include "err.h"
#include "ir.h"
#include "kernels.h"

schedc_status sc_cu_verify_setup(cu_group *g, const schedc_comm *c) {
  if (c->inj.flip_rank >= 0 && !(c->verify & SC_V_CHECKSUM))
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT flip:%d:%d needs checksum verification on the cuda backend "
                  "(SCHEDC_VERIFY=checksum or full): its transfers are loads inside the kernels, and only the "
                  "checking kernels can flip what one of them sees", c->inj.flip_rank, c->inj.flip_step);
  if (c->inj.kill_rank >= 0 || c->inj.delay_rank >= 0 || c->inj.jitter_us)
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT kill, delay and jitter act at the CPU executor's steps and are "
                  "not available on the cuda backend (its steps run inside the kernels); flipout:RANK is");
  cu_checks *v = &g->vf;
  v->digest = (c->verify & SC_V_DIGEST) != 0;
  v->check = (c->verify & SC_V_CHECKSUM) != 0;
  v->repair = (v->digest || v->check) && c->repair;
  v->flip_rank = c->inj.flip_rank;
  v->flip_step = c->inj.flip_step;
  v->flip_bit = c->inj.flip_bit;
  v->flipout = c->inj.flipout_rank;
  return SCHEDC_OK;
}

schedc_status sc_cu_result_digest(cu_group *g, const char *cn, int s, void *dst, size_t bytes, int flip, void *host,
                                  uint64_t *d) {
  const sc_cudev *dv = g->dv;
  unsigned char *res = dst;
  schedc_status st = dv->select(g->dev[s]);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, g->stream[s]);
  if (st == SCHEDC_OK) st = sc_cu_err_status(g, cn, NULL, NULL); /* a kernel that timed out left no result to judge */
  if (st == SCHEDC_OK && flip && bytes) { /* injected, as the CPU backends' flipout */
    size_t at = (size_t)((g->epoch >> CU_EPOCH_BITS) * 7919 % bytes);
    unsigned char b = 0;
    if ((st = dv->copy(&b, res + at, 1, g->stream[s])) == SCHEDC_OK && (st = sc_cu_sync(g, g->stream[s])) == SCHEDC_OK) {
      b ^= 0x10;
      st = dv->copy(res + at, &b, 1, g->stream[s]);
    }
  }
  if (st == SCHEDC_OK && bytes) st = dv->copy(host, res, bytes, g->stream[s]);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, g->stream[s]);
  if (st == SCHEDC_OK) *d = sc_verify_digest(NULL, host, bytes);
  return st;
}

schedc_status sc_cu_verify_slots(cu_group *g, const char *cn, void *const *recv, size_t bytes) {
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return sc_err(SCHEDC_ENOMEM, "%s: out of memory for the digest of %zu bytes", cn, bytes);
  uint64_t rec[CU_MAX_RANKS * SC_VREC_WORDS], dg[CU_MAX_RANKS];
  const cu_checks *v = &g->vf;
  const sc_corrupt none = {0}; /* the checksum kernels' verdict came before (sc_cu_check_verdict) */
  schedc_status st = SCHEDC_OK;
  for (int s = 0; s < g->n && st == SCHEDC_OK; s++) {
    st = sc_cu_result_digest(g, cn, s, recv[s], bytes, v->flipout == s, host, &dg[s]);
    sc_vrec_pack(rec + (size_t)s * SC_VREC_WORDS, dg[s], &none);
  }
  /* the core's verdict on every slot's record, this process speaking for all ranks */
  int fix = -1;
  if (st == SCHEDC_OK && v->digest) st = sc_verdict(cn, NULL, rec, g->n, -1, 1, v->repair, dg, &fix);
  /* repair: the majority's bits, device to device (every stream is drained), then digested again;
   * the repaired copy is clean, as the CPU backends' resend (no flipout on it) */
  for (int s = 0; s < g->n && st == SCHEDC_OK && fix >= 0; s++) {
    if (dg[s] == dg[fix]) continue;
    uint64_t again = 0;
    if ((st = g->dv->select(g->dev[s])) == SCHEDC_OK && (st = g->dv->copy(recv[s], recv[fix], bytes, g->stream[s])) == SCHEDC_OK)
      st = sc_cu_result_digest(g, cn, s, recv[s], bytes, 0, host, &again);
    if (st == SCHEDC_OK) st = sc_repaired(cn, s, again, dg[fix]);
  }
  free(host);
  if (st == SCHEDC_OK && fix >= 0) st = sc_digest_outcome(cn, dg, g->n, -1, fix, 1);
  return st;
}

void sc_cu_args_check(const cu_group *g, cu_args *a, const sc_ir *ir) {
  const cu_checks *v = &g->vf;
  long long dst = -1, chunk = -1;
  /* flip:RANK:STEP lands on the first transfer out of RANK at STEP to the lowest receiving rank,
   * as on shared memory; a (rank, step) with no transfer runs clean */
  for (uint32_t i = 0; v->flip_rank >= 0 && i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    if ((int)x->src == v->flip_rank && (int)x->step == v->flip_step && x->src != x->dst && (dst < 0 || x->dst < dst)) {
      dst = x->dst;
      chunk = x->chunk;
    }
  }
  sc_cu_arg(a, SC_ABI_flip_src, (uint64_t)(dst < 0 ? -1 : v->flip_rank));
  sc_cu_arg(a, SC_ABI_flip_dst, (uint64_t)dst);
  sc_cu_arg(a, SC_ABI_flip_step, (uint64_t)v->flip_step);
  sc_cu_arg(a, SC_ABI_flip_chunk, (uint64_t)chunk);
  sc_cu_arg(a, SC_ABI_flip_bit, (uint64_t)(long long)v->flip_bit); /* < 0: the middle of the part */
  sc_cu_arg(a, SC_ABI_repair, (uint64_t)v->repair);
}

schedc_status sc_cu_check_verdict(cu_group *g, const char *cn, const sc_ir *ir, int me) {
  uint32_t e[CU_ERR_WORDS];
  schedc_status st = sc_cu_err_status(g, cn, ir, e);
  /* the call's first repaired transfer, told by its receiver */
  if (st == SCHEDC_OK && e[8] == (uint32_t)(g->epoch & 0xffffffffu) && (me < 0 || (int)e[9] == me))
    sc_cu_corrupt(cn, e + 9, ir, "read again");
  return st;
}
