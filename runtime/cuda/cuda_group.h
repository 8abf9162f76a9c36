/*
 * cuda_group.h — the state a cuda communicator's ranks share, and the steps of a collective that
 * both ways of running one use: one process driving every rank (cuda_comm.c) and one process per
 * GPU with the ranks' buffers shared by CUDA IPC (cuda_proc.c); both run a call through the one
 * phase loop (cuda_phase.c), which takes what differs as a cu_mode. Internal to runtime/.
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

/* Kernels of one (plan, dtype, op): per slot, the module on its device and the functions. */
typedef struct cu_kset {
  uint64_t key;
  sc_split split;            /* the phases across nodes (nnodes > 1), else nphases 0 */
  void **mod;                /* [n]; virtual: only [0] */
  void **run_fn;             /* [n]: schedc_all (one process) or schedc_rank<me> (a process per GPU) */
  void **widen, **narrow, **avg; /* [n], NULL where the plan has none */
} cu_kset;

/* Slots are the ranks this process drives: all N of them (me < 0), or only its own rank me in
 * slot 0 (n == 1). Arrays marked [n] are per slot. */
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
  uint32_t *err;             /* [CU_ERR_WORDS]: the kernels' failure record (one process: on
                                dev[0]; a process per GPU: in rank 0's arena, mapped). [0] 1:
                                timeout, 2: corrupted transfer; [1..6] rank, step, peer, chunk,
                                sums; [8..14] the call's first repaired transfer (checksums) */
  uint64_t epoch;
  cu_kset ks[CU_MODULES];
  int nks;
  /* the collective being collected (one process), or the current one (a process per GPU) */
  int narrived;
  uint8_t *arrived;          /* [n] */
  const void **send;         /* [n] */
  void **recv;               /* [n] */
  int coll, dtype, op, root;
  size_t count;
  uint64_t plan_hash;
  int digest, repair, flipout; /* verification (cuda_verify.c): digest on, repair on, flipout rank or -1 */
  int check;                 /* per-transfer checksums: kernels emitted with sc_seal / sc_check */
  const struct sc_cunet *nt; /* a process per GPU with SCHEDC_CUDA_NET=nccl: what carries the payloads
                                between nodes (cuda_net.h), else NULL (peers' memory mapped) */
  void *net;                 /* its communicator (every rank of the group) */
  int nnodes;                /* nodes: SCHEDC_CUDA_NODES, or the hosts (schedc_comm_init_cuda_over); > 1: phases */
  uint32_t node[CU_MAX_RANKS]; /* [N] each rank's node (sc_split_contiguous, or by host) */
  void **mir;                /* [n] mirror slots of cross-node payloads (nnodes > 1) */
  size_t mir_bytes;
  int flip_rank, flip_step;  /* flip:RANK:STEP injection (checksum mode), -1: none */
  long flip_bit;
  char broken[SC_FAILMSG];
  const struct cu_mode *mode; /* how this group's ranks meet and cross phase boundaries */
  struct cu_proc *proc;      /* a process per GPU: the IPC state (cuda_proc.c); NULL otherwise */
} cu_group;

/* The kernel parameter block of one call, filled by field (cuda_abi.h): at[f] is the word of
 * field f in this variant's block, or -1 where the variant has none (a write to it is dropped). */
typedef struct cu_args {
  int at[SC_ABI_NFIELDS];
  uint64_t P[SC_CUDA_ABI_MAX_WORDS];
} cu_args;
/* An all-zero block of N ranks and the variant (SC_ABI_CHECK, SC_ABI_SPLIT bits). */
void sc_cu_args_init(cu_args *a, int N, unsigned variant);
/* A scalar field; a table field's word for rank r. */
void sc_cu_arg(cu_args *a, sc_abi_field f, uint64_t v);
void sc_cu_arg_ptr(cu_args *a, sc_abi_field f, int r, const void *p);

/* One rank's device memory as this process addresses it (NULL: not addressed from here): the
 * working buffer, the temps, the counters (versions, then read counts, then sums: cells words
 * each) and the mirror slots (the slots, then their sums at the call's sum_off). */
typedef struct cu_mem { char *work, *temp, *ctr, *mir; } cu_mem;

/* One collective as the phase loop runs it: sizes from sc_cu_call_init, memory from the mode. */
typedef struct cu_call {
  const sc_ir *ir;
  const sc_prog *prog;
  const cu_kset *k;          /* set by sc_cu_run */
  const sc_split *sp;        /* the phases across nodes (nnodes > 1), else NULL: one phase */
  schedc_dtype acc;
  size_t K, esz;             /* elements of the working buffer, bytes of one */
  uint32_t ntemp;            /* temp slots: the most any rank uses */
  size_t tile, tstride;      /* elements per tile and per (temp slot, block) (cuda_abi.h) */
  size_t mstride, sum_off;   /* split: elements per mirror slot; bytes from a mirror to its sums */
  size_t cells;              /* counter words per kind at each ctr: at least nchunks * nblk */
  cu_mem mem[CU_MAX_RANKS];  /* by rank */
  cu_args args;
} cu_call;

/* What differs between one process driving every rank and a process per GPU: how the ranks'
 * processes meet, how payloads cross a phase boundary and how the failure records agree. */
typedef struct cu_mode {
  /* A barrier of the group's processes, after each drained its slots (NULL: one process). */
  schedc_status (*rendezvous)(cu_group *g);
  /* The boundary after phase ph (-1: after the copy-in): every payload it moves into its mirror
   * slot. sc_cu_pull where the writers' memory is mapped here, else (NCCL) sends and receives. */
  schedc_status (*cross)(cu_group *g, const cu_call *c, int ph);
  /* Checksums, after the call's barrier: every rank's failure record alike (NULL: one record). */
  schedc_status (*share_record)(cu_group *g);
} cu_mode;

/* SCHEDC_CUDA_NET (how payloads cross nodes) as SC_NET_*; another value: SCHEDC_EINVAL naming it. */
enum { SC_NET_UNSET, SC_NET_IPC, SC_NET_NCCL };
schedc_status sc_cu_net_choice(uint64_t *net);
/* Block until `stream`'s work is done. With transfers between nodes in the stream (g->net), no
 * kernel timeout bounds it, so it polls, up to the timeout, and aborts the transfers after it:
 * SCHEDC_ETIMEOUT (or what the library reports) instead of a wait for a peer that is gone. */
schedc_status sc_cu_sync(cu_group *g, void *stream);
/* Record the failure for every rank of the group; returns st. */
schedc_status sc_cu_breaks(cu_group *g, schedc_status st);
/* SCHEDC_EPEER naming the failure that broke the group. */
schedc_status sc_cu_broken(const cu_group *g, const char *cn);
/* The kernels' failure record, read after the streams are drained (into rec[CU_ERR_WORDS] too,
 * when given): SCHEDC_ETIMEOUT naming rank, step and peer if a wait timed out, SCHEDC_ECORRUPT
 * naming the transfer if a checksum failed (its schedule line from ir, when given), else
 * SCHEDC_OK. */
schedc_status sc_cu_err_status(cu_group *g, const sc_ir *ir, uint32_t *rec);
/* The kernels for (plan, dtype, op), emitted, compiled and loaded once per group. */
schedc_status sc_cu_kset(cu_group *g, const schedc_plan *plan, const sc_prog *prog, int dtype, int op, cu_kset **out);

/* cuda_phase.c: one call. Init: its sizes (temps, tile, mirror stride; memory still unset).
 * Run: the parameter block from c->mem, then on every slot of this process the copy-in, the
 * plan's kernels once per phase with the mode's boundaries between them, the finish (avg,
 * narrowing, copy out) and, with checksums, the verdict; everything stream-ordered. */
void sc_cu_call_init(const cu_group *g, cu_call *c, const sc_ir *ir, const sc_prog *prog, schedc_dtype acc, size_t K);
size_t sc_cu_temp_bytes(const cu_group *g, const cu_call *c);
schedc_status sc_cu_run(cu_group *g, cu_call *c, const cu_kset *k);
/* The boundary by copies: after a barrier (a failure recorded by any kernel ends the call), each
 * process pulls the payloads its slots read from the writers' memory, then a second barrier
 * keeps the writers from overwriting them before every reader has them. */
schedc_status sc_cu_pull(cu_group *g, const cu_call *c, int ph);
/* Copy m of a boundary: the payload in its writer's working buffer and its place in the reader's
 * mirror slot; with checksums the writer's sums of the chunk's parts, which travel with it, and
 * where they land (NULL where that rank's memory is not addressed from here). */
typedef struct cu_xfer { char *from, *to; size_t bytes; char *sfrom, *sto; size_t sbytes; } cu_xfer;
cu_xfer sc_cu_xfer(const cu_group *g, const cu_call *c, const sc_mirror_copy *m);
/* Drain every slot's stream, then meet the group's other processes (the mode's rendezvous). */
schedc_status sc_cu_barrier(cu_group *g);
/* Drain every slot's stream (all, even after a failure); the first failure. */
schedc_status sc_cu_sync_all(cu_group *g);

/* cuda_comm.c: the collective on a cuda communicator (after the core's argument checks). */
schedc_status sc_cuda_collective(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                 schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                 const schedc_plan *plan, const sc_prog *prog, size_t K);
/* cuda_proc.c: a collective of a process-per-GPU group (called with g->mu held), and the
 * release of its IPC state. */
schedc_status sc_cu_proc_collective(cu_group *g, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                    schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                    const schedc_plan *plan, const sc_prog *prog, size_t K);
void sc_cu_proc_free(cu_group *g);
/* cuda_comm.c: a group of n slots with its streams; the caller fills dev[] first through
 * sc_cu_group_alloc, then calls sc_cu_group_setup. One process driving every rank: its mode. */
cu_group *sc_cu_group_alloc(const sc_cudev *dv, int n, int N, int me, int virt);
schedc_status sc_cu_group_setup(cu_group *g);
void sc_cu_group_free(cu_group *g);
extern const sc_backend sc_cuda_backend;
extern const cu_mode sc_cu_mode_host;

/* cuda_verify.c: digest verification. Setup takes the comm's verification and injection
 * settings (checksums and payload flips refused: SCHEDC_EUNAVAIL). */
schedc_status sc_cu_verify_setup(cu_group *g, const schedc_comm *c);
/* Slot s (rank r) after its call: drain its stream, apply flipout injection to its result
 * (bytes at recv[s]), copy the result into host (bytes, the caller's) and digest it. */
schedc_status sc_cu_result_digest(cu_group *g, int s, int rank, size_t bytes, void *host, uint64_t *d);
/* One process driving every rank: digest every slot's result, compare, repair or SCHEDC_ECORRUPT. */
schedc_status sc_cu_verify_slots(cu_group *g, const char *cn, size_t bytes);
/* The error for a corrupted transfer from failure-record words w[0..5] (receiver, step, sender,
 * chunk, sums): its schedule line looked up in ir (when given); action: the repair warning's
 * last words instead of an error (then SCHEDC_OK). */
schedc_status sc_cu_corrupt(const cu_group *g, const uint32_t *w, const sc_ir *ir, const char *action);
/* The plan split across the nodes node[r] as the kernels of this group are (checksums: the input
 * crosses after phase 0). SCHEDC_ENOMEM, SCHEDC_EINTERNAL. */
schedc_status sc_cu_split_build(const sc_prog *prog, const sc_ir *ir, const uint32_t *node, int check, sc_split *out);
/* Split across nodes: the elements per mirror slot (a chunk at its own offset modulo 16 bytes)
 * and the bytes of a rank's mirrors: the slots, then at *sum_off their sums (nblk words per slot). */
size_t sc_cu_mstride(size_t K, uint32_t nchunks, size_t esz);
size_t sc_cu_mir_bytes(size_t slots, size_t mstride, size_t esz, int nblk, size_t *sum_off);
/* Checksum mode: the injection and repair fields of the parameter block. */
void sc_cu_args_check(const cu_group *g, cu_args *a, const sc_ir *ir);
/* Checksum mode, after every rank's kernel of the call has finished: the failure record as a
 * status (a corrupted transfer: SCHEDC_ECORRUPT naming it), and the warning for a transfer
 * repaired by reading it again (printed by its receiver: me, or any when me < 0). */
schedc_status sc_cu_check_verdict(cu_group *g, const sc_ir *ir, int me);

#endif
