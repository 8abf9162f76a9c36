/*
 * cuda_group.h — the bottom layer of the cuda communicator (docs/design.md, "The cuda backend in
 * layers"): the group (the state a cuda communicator's ranks share: devices, streams, buffers,
 * the kernels' failure record, the settings fixed at init; cuda_group.c) and the kernels'
 * parameter block (cuda_args.c). Nothing here knows a collective call: a call's arguments travel
 * as the core's sc_call and the phase loop's cu_call (cuda_phase.h). Layers above: the kernel
 * sets and verification (cuda_kset.h, cuda_verify.h), the phase loop (cuda_phase.h), the two
 * modes (cuda_modes.h). Internal to runtime/cuda.
 */
#ifndef SC_CUDA_GROUP_H
#define SC_CUDA_GROUP_H

#include <pthread.h>
#include <stdint.h>

#include "comm.h"
#include "cuda_abi.h"
#include "cuda_dev.h"
#include "cuda_split.h"
#include "plan.h"

#define CU_MAX_RANKS SC_CUDA_MAX_RANKS   /* the kernel parameter block's tables (cuda_abi.h) */
#define CU_MODULES 8
#define CU_EPOCH_BITS SC_CUDA_EPOCH_BITS /* versions and read counts per call stay below 2^20 */
#define CU_ERR_WORDS SC_CUDA_ERR_WORDS   /* the kernels' failure record, uint32 words */
#define CU_CELL_BYTES 24 /* counters per (cell, block): version, read count, checksum */

/* Kernels of one (plan, dtype, op): per slot, the module on its device and the functions. The
 * group holds the cache (ks[]); cuda_kset.c fills and frees it. */
typedef struct cu_kset {
  uint64_t key;
  sc_split split;            /* the phases across nodes (nnodes > 1), else nphases 0 */
  void **mod;                /* [n]; virtual: only [0] */
  void **run_fn;             /* [n]: schedc_all (one process) or schedc_rank<me> (a process per GPU) */
  void **widen, **narrow, **avg; /* [n], NULL where the plan has none */
  void **xstats, **xin, **xout; /* [n]: exact mode's kernels, or a wire's set's schedc_qstats, _qin, _qout
                                 * (cuda_abi.h); NULL in other sets */
} cu_kset;

/* The communicator's verification and injection settings, fixed at init (cuda_verify.c). */
typedef struct cu_checks {
  int digest, check, repair; /* digests after the call; per-transfer checksums (kernels emitted
                                with sc_seal / sc_check); repair on a mismatch */
  int flipout;               /* flipout:RANK injection (the result of that rank), -1: none */
  int flip_rank, flip_step;  /* flip:RANK:STEP injection (checksum mode), -1: none */
  long flip_bit;
} cu_checks;

/* Slots are the ranks this process drives: all N of them (me < 0), or only its own rank me in
 * slot 0 (n == 1). Arrays marked [n] are per slot. Everything here outlives calls: what one call
 * needs is in its sc_call and cu_call; the one-process mode's collection of its slots' calls is
 * that mode's own (collect, cuda_comm.c). */
typedef struct cu_group {
  const sc_cudev *dv;
  pthread_mutex_t mu;
  int n, N, me, virt, nblk, threads, refs, sms;
  char arch[16];
  double ticks;
  double timeout_s;
  int *dev;                  /* [n] */
  void **own_stream;         /* [n] created at init */
  void **stream;             /* [n] in use (user's or own) */
  void **ctr;                /* [n] counters: versions, then read counts, ctr_cells each */
  size_t ctr_bytes;          /* of each ctr[r]: 2 * ctr_cells * 8 */
  void **temp, **work;       /* [n] */
  size_t temp_bytes, work_bytes;
  void **mir;                /* [n] mirror slots of cross-node payloads (nnodes > 1) */
  void **xstat;              /* [n] exact mode: the 4 words of the grid's statistics (allocated at
                                the first exact call) */
  size_t mir_bytes;
  uint32_t *err;             /* [CU_ERR_WORDS]: the kernels' failure record (one process: on
                                dev[0]; a process per GPU: in rank 0's arena, mapped). [0] 1:
                                timeout, 2: corrupted transfer; [1..6] rank, step, peer, chunk,
                                sums; [8..14] the call's first repaired transfer (checksums) */
  uint64_t epoch;            /* calls launched: the kernels' counters start at epoch << CU_EPOCH_BITS */
  cu_kset ks[CU_MODULES];    /* the kernel-set cache (cuda_kset.c) */
  int nks;
  cu_checks vf;
  const struct sc_cunet *nt; /* a process per GPU with SCHEDC_CUDA_NET=nccl: what carries the payloads
                                between nodes (cuda_net.h), else NULL (peers' memory mapped) */
  void *net;                 /* its communicator (every rank of the group) */
  int nnodes;                /* nodes: SCHEDC_CUDA_NODES, or the hosts (schedc_comm_init_cuda_over); > 1: phases */
  uint32_t node[CU_MAX_RANKS]; /* [N] each rank's node (sc_split_contiguous, or by host) */
  char broken[SC_FAILMSG];
  /* The mode's: how its ranks meet and cross phase boundaries (a table of cuda_phase.h's cu_mode,
   * called by the phase loop), and its own state, opaque below it: the one-process mode's
   * collection (cuda_comm.c), the process-per-GPU mode's IPC state (cuda_proc.c). */
  const struct cu_mode *mode;
  struct cu_collect *collect;
  struct cu_proc *proc;
} cu_group;

/* ---- the group (cuda_group.c) ---- */

/* A group of n slots of N ranks (me: this process's rank, or -1 when it drives every rank); the
 * caller fills dev[] then calls sc_cu_group_setup (streams, blocks, nodes, the failure record). */
cu_group *sc_cu_group_alloc(const sc_cudev *dv, int n, int N, int me, int virt);
schedc_status sc_cu_group_setup(cu_group *g);
/* The group's memory and streams (after the layers above released theirs: the kernel sets, the
 * mode's state). Keeps the caller's schedc_errmsg. */
void sc_cu_group_free(cu_group *g);
/* SCHEDC_CUDA_NET (how payloads cross nodes) as SC_NET_*; another value: SCHEDC_EINVAL naming it. */
enum { SC_NET_UNSET, SC_NET_IPC, SC_NET_NCCL };
schedc_status sc_cu_net_choice(uint64_t *net);
/* Block until `stream`'s work is done. With transfers between nodes in the stream (g->net), no
 * kernel timeout bounds it, so it polls, up to the timeout, and aborts the transfers after it:
 * SCHEDC_ETIMEOUT (or what the library reports) instead of a wait for a peer that is gone. */
schedc_status sc_cu_sync(cu_group *g, void *stream);
/* Drain every slot's stream (all, even after a failure); the first failure. */
schedc_status sc_cu_sync_all(cu_group *g);
/* Record the failure for every rank of the group; returns st. */
schedc_status sc_cu_breaks(cu_group *g, schedc_status st);
/* SCHEDC_EPEER naming the failure that broke the group. */
schedc_status sc_cu_broken(const cu_group *g, const char *cn);
/* The kernels' failure record, read after the streams are drained (into rec[CU_ERR_WORDS] too,
 * when given): SCHEDC_ETIMEOUT naming rank, step and peer if a wait timed out, SCHEDC_ECORRUPT
 * naming the transfer if a checksum failed (the collective cn; its schedule line from ir, when
 * given), else SCHEDC_OK. */
schedc_status sc_cu_err_status(cu_group *g, const char *cn, const sc_ir *ir, uint32_t *rec);
/* The error for a corrupted transfer of collective cn from failure-record words w[0..5]
 * (receiver, step, sender, chunk, sums): its schedule line looked up in ir (when given); action:
 * the repair warning's last words instead of an error (then SCHEDC_OK). */
schedc_status sc_cu_corrupt(const char *cn, const uint32_t *w, const sc_ir *ir, const char *action);
/* The operation-table entries both modes share: why the group broke; schedc_mem_alloc refused
 * (device memory comes from schedc_cuda_alloc or the caller's allocator). */
const char *sc_cu_failure(schedc_comm *c);
schedc_status sc_cu_mem_alloc(schedc_comm *c, sc_memreg *r);
void sc_cu_mem_free(schedc_comm *c, sc_memreg *r);

/* ---- the kernels' parameter block (cuda_args.c) ---- */

/* The block of one call, filled by field (cuda_abi.h): at[f] is the word of field f in this
 * variant's block, or -1 where the variant has none (a write to it is dropped). */
typedef struct cu_args {
  int at[SC_ABI_NFIELDS];
  uint64_t P[SC_CUDA_ABI_MAX_WORDS];
} cu_args;
/* An all-zero block of N ranks and the variant (SC_ABI_CHECK, SC_ABI_SPLIT bits). */
void sc_cu_args_init(cu_args *a, int N, unsigned variant);
/* A scalar field; a table field's word for rank r. */
void sc_cu_arg(cu_args *a, sc_abi_field f, uint64_t v);
void sc_cu_arg_ptr(cu_args *a, sc_abi_field f, int r, const void *p);
/* Split across nodes: the elements per mirror slot (a chunk at its own offset modulo 16 bytes)
 * and the bytes of a rank's mirrors: the slots, then at *sum_off their sums (nblk words per slot). */
size_t sc_cu_mstride(size_t K, uint32_t nchunks, size_t esz);
size_t sc_cu_mir_bytes(size_t slots, size_t mstride, size_t esz, int nblk, size_t *sum_off);

#endif
