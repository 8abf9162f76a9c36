/*
 * cuda_split.h — a plan's write groups cut into phases where data crosses nodes (ranks that
 * cannot map each other's memory): within a phase the kernels synchronise through counters as
 * usual; between phases the host moves each cross-node payload into a mirror slot of its reader
 * (or NCCL's grouped send/recv between hosts fills it). Shared by the code generator and
 * the runtime, which must agree on phases, slots and counts.
 */
#ifndef SC_CUDA_SPLIT_H
#define SC_CUDA_SPLIT_H

#include <stdint.h>

#include "prog.h"

/* One payload to move at a boundary: chunk `chunk` of rank src's working buffer, as it is after
 * phase `boundary` (-1: right after the copy-in), into mirror slot `slot` of rank dst. */
typedef struct sc_mirror_copy {
  int32_t boundary;
  uint32_t dst, slot, src, chunk;
} sc_mirror_copy;

typedef struct sc_split {
  uint32_t nphases;          /* launches per call, >= 1 */
  int32_t *phase;            /* [groups]: the launch that runs each group (prog->groups order) */
  uint32_t *wait_reads;      /* [groups]: WAR targets counting only same-node readers */
  uint32_t *final_reads;     /* [nranks * nchunks]: drain targets, same-node readers only */
  int32_t *slot;             /* [srcs]: mirror slot of a cross-node source in its reader, or -1 */
  uint32_t *nslots;          /* [nranks]: mirror slots of each rank */
  uint32_t maxslots;         /* max over ranks */
  sc_mirror_copy *copies;    /* by boundary, then reader */
  uint32_t ncopies;
} sc_split;

/* node[0..nranks): the ranks split into nnodes contiguous nodes, rank r on r * nnodes / nranks
 * (more nodes than ranks: every rank alone). The one rule for SCHEDC_CUDA_NODES and
 * SCHEDC_CUDA_SRC_NODES, for the code generator and the runtime alike. */
static inline void sc_split_contiguous(uint32_t *node, uint32_t nnodes, uint32_t nranks) {
  for (uint32_t r = 0; r < nranks; r++) node[r] = (uint32_t)((uint64_t)r * nnodes / nranks);
}

/* Cut prog for its ranks on nodes node[r] (node[r] for each of prog->nranks ranks: any map, e.g.
 * sc_split_contiguous's or the hosts of the ranks). A payload read across nodes is moved at the
 * boundary after the phase its writer published it in, so its reader runs at least one phase
 * later, and so does the writer's next overwrite of that cell. The input counts as published in
 * phase input_phase: -1 (moved right after the copy-in) or 0 (when its checksums, computed at
 * the kernel's entry, must travel with it). Returns 0, -1 (out of memory) or -2 (no consistent
 * phases: cannot happen for a verified plan). */
int sc_split_build(const sc_prog *prog, const uint32_t *node, int input_phase, sc_split *out);
void sc_split_free(sc_split *s);

#endif
