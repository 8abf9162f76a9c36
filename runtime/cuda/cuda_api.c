/*
 * cuda_api.c — the public CUDA code-generation API: a plan's kernel source for a rank (or all
 * ranks), with checksums or split across nodes exactly as the runtime emits it (the split from
 * the kernel-set layer, cuda_kset.c). Compilation is cuda_compile.c's.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cuda_emit.h"
#include "cuda_kset.h"
#include "err.h"
#include "opreg.h"
#include "plan.h"

schedc_status schedc_cuda_source(const schedc_plan *plan, int rank, schedc_dtype dtype, schedc_op op, char **source) {
  return schedc_cuda_source_v2(plan, rank, dtype, op, 0, source);
}

schedc_status schedc_cuda_source_v2(const schedc_plan *plan, int rank, schedc_dtype dtype, schedc_op op, int flags,
                                    char **source) {
  if (!source) return sc_err(SCHEDC_EINVAL, "source is NULL");
  int nodes = (flags >> 8) & 0xff;
  if ((flags & ~(SCHEDC_CUDA_SRC_CHECKSUMS | 0xff00)) || nodes == 1 || nodes > 64)
    return sc_err(SCHEDC_EINVAL, "flags 0x%x: use SCHEDC_CUDA_SRC_CHECKSUMS and SCHEDC_CUDA_SRC_NODES(K), K in 2..64",
                  (unsigned)flags);
  *source = NULL;
  if (!plan) return sc_err(SCHEDC_EINVAL, "plan is NULL");
  if (!schedc_dtype_name(dtype) || !schedc_op_name(op)) return sc_err(SCHEDC_EINVAL, "bad dtype or op");
  schedc_status ost = plan->ir.collective == SCHEDC_ALLGATHER || plan->ir.collective == SCHEDC_BROADCAST
                          ? SCHEDC_OK : sc_op_check_dtype(op, dtype, "schedc_cuda_source");
  if (ost != SCHEDC_OK) return ost;
  if (rank < -1 || rank >= (int)plan->ir.nranks)
    return sc_err(SCHEDC_EINVAL, "rank %d out of range [-1, %u)", rank, plan->ir.nranks);
  const sc_prog *prog = &plan->prog;
  int check = flags & SCHEDC_CUDA_SRC_CHECKSUMS;
  sc_split sp;
  uint32_t node[CU_MAX_RANKS];
  if (nodes && plan->ir.nranks <= CU_MAX_RANKS) sc_split_contiguous(node, (uint32_t)nodes, plan->ir.nranks);
  schedc_status st = nodes ? sc_cu_split_build(prog, &plan->ir, node, check, &sp) : SCHEDC_OK; /* as the runtime */
  if (st != SCHEDC_OK) return st;
  *source = sc_cuda_emit_split(&plan->ir, prog, rank, (int)dtype, (int)op, check, nodes ? &sp : NULL);
  if (nodes) sc_split_free(&sp);
  return *source ? SCHEDC_OK : sc_err(SCHEDC_ENOMEM, "out of memory emitting CUDA source");
}
