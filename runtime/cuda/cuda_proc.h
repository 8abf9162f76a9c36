/*
 * cuda_proc.h — the process-per-GPU mode's own state and the parts of it that its set-up
 * (cuda_proc_init.c, above it) uses: the host exchange, the release of a group, the two cu_mode
 * tables (cuda_proc.c). Internal to runtime/cuda.
 */
#ifndef SC_CUDA_PROC_H
#define SC_CUDA_PROC_H

#include "cuda_phase.h"

#define ARENA_HEAD 256 /* rank 0's arena starts with the kernels' failure record (err[4]) */

/* Arena layout, the same on every rank: [head][versions, read counts, sums: 24 bytes per cell]
 * [temps][working buffer][mirror slots (split across nodes)]. The three capacities only grow, and grow on every rank at the same
 * call (they follow from the call, which all ranks agree on), so the layout agrees too; a grown
 * arena is a fresh allocation, so its counters start at 0, below every epoch. */
typedef struct cu_proc {
  schedc_comm *boot;         /* CPU communicator of the same ranks (host side only): our shm one,
                                or the caller's (schedc_comm_init_cuda_over), borrowed */
  int own_boot;
  void *arena;
  size_t cells, temp_bytes, work_bytes, mir_bytes; /* capacities */
  void **base;               /* [N]: every rank's arena as mapped here (own: arena) */
  void *last_stream;         /* the stream of the last call (drained before a regrow) */
} cu_proc;

/* Host-side exchange over the bootstrap: every rank's `words` 64-bit words, in rank order, into
 * all (an internal call of the host communicator). */
schedc_status sc_cu_proc_exchange(cu_group *g, const uint64_t *mine, uint64_t *all, size_t words);
/* The group with this mode's state, in the order its parts depend on each other: the streams
 * drained, the kernels unloaded, the IPC mappings and the arena (after the peers unmapped it),
 * then the group. Keeps the caller's schedc_errmsg (cleanup on an error path must not replace
 * the reason). */
void sc_cu_proc_release(cu_group *g);
/* Peers' memory mapped (one host): the boundaries pulled between host barriers. With NCCL: sent
 * and received on the streams, and each node's failure record shared at the verdict. */
extern const cu_mode sc_cu_mode_ipc, sc_cu_mode_nccl;

#endif
