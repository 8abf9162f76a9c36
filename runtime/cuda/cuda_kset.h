/*
 * cuda_kset.h — the kernel-set cache of a cuda group (cuda_kset.c), above the group
 * (cuda_group.h): per (plan, dtype, op, checksums, nodes) the emitted source compiled and loaded
 * once on every device the group uses; and the plan's split across nodes as those kernels have it.
 */
#ifndef SC_CUDA_KSET_H
#define SC_CUDA_KSET_H

#include "cuda_group.h"

/* The kernels for (plan, dtype, op), emitted, compiled and loaded once per group: the all-ranks
 * unit (schedc_all) when one process drives every rank, only this rank's code (schedc_rank<me>)
 * for a process per GPU. The oldest of CU_MODULES goes when the cache is full. */
schedc_status sc_cu_kset(cu_group *g, const schedc_plan *plan, int dtype, int op, cu_kset **out);
/* Every kernel set of the group (its streams drained first by the caller). */
void sc_cu_kcache_free(cu_group *g);
/* The plan split across the nodes node[r] as the kernels of a group are (checksums: the input
 * crosses after phase 0). SCHEDC_ENOMEM, SCHEDC_EINTERNAL. */
schedc_status sc_cu_split_build(const sc_prog *prog, const sc_ir *ir, const uint32_t *node, int check, sc_split *out);

#endif
