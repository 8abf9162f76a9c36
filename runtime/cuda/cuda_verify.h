/*
 * cuda_verify.h — verification on a cuda group (cuda_verify.c), above the group (cuda_group.h)
 * beside the kernel-set cache: the settings, a result's digest, the one-process verdict over its
 * slots, and the checksum kernels' injection parameters and verdict. (A process per GPU takes
 * its digest verdict over the host exchange: cuda_proc.c.)
 */
#ifndef SC_CUDA_VERIFY_H
#define SC_CUDA_VERIFY_H

#include "cuda_group.h"

/* The comm's verification and injection settings into g->vf (payload flips without checksums,
 * kill, delay and jitter refused: SCHEDC_EUNAVAIL). */
schedc_status sc_cu_verify_setup(cu_group *g, const schedc_comm *c);
/* Slot s's result (bytes at dst, device memory of the slot) after its call of collective cn:
 * drain its stream; flip: apply flipout injection to it first (the CPU backends' flipout); then
 * copy it into host (bytes, the caller's) and digest it into *d. */
schedc_status sc_cu_result_digest(cu_group *g, const char *cn, int s, void *dst, size_t bytes, int flip, void *host,
                                  uint64_t *d);
/* One process driving every rank: digest every slot's result (recv[s], bytes each), compare,
 * repair from the majority or SCHEDC_ECORRUPT naming the ranks. */
schedc_status sc_cu_verify_slots(cu_group *g, const char *cn, void *const *recv, size_t bytes);
/* Checksum mode: the injection and repair fields of the parameter block. */
void sc_cu_args_check(const cu_group *g, cu_args *a, const sc_ir *ir);
/* Checksum mode, after every rank's kernel of the call has finished: the failure record as a
 * status (a corrupted transfer: SCHEDC_ECORRUPT naming it), and the warning for a transfer
 * repaired by reading it again (printed by its receiver: me, or any when me < 0). */
schedc_status sc_cu_check_verdict(cu_group *g, const char *cn, const sc_ir *ir, int me);

#endif
