/*
 * cuda_phase.h — one collective as a cuda group runs it (cuda_phase.c), above the kernel sets and
 * verification: the call's sizes and memory (cu_call), the parameter block filled from them, then
 * per slot copy in, the plan's kernels once per phase with the mode's boundary between phases,
 * finish and the checksum verdict. Both modes (cuda_modes.h) run their calls through it and give
 * what differs between them as a cu_mode table.
 */
#ifndef SC_CUDA_PHASE_H
#define SC_CUDA_PHASE_H

#include "names.h"
#include "cuda_kset.h"
#include "cuda_verify.h"
#include "exact.h"

/* One rank's device memory as this process addresses it (NULL: not addressed from here): the
 * working buffer, the temps, the counters (versions, then read counts, then sums: cells words
 * each) and the mirror slots (the slots, then their sums at the call's sum_off). */
typedef struct cu_mem { char *work, *temp, *ctr, *mir; } cu_mem;

/* One collective as the phase loop runs it, on the stack of the call that launches it: the core's
 * descriptor (the same on every rank, checked by the mode), this process's slots' buffers, sizes
 * from sc_cu_call_init, memory from the mode. */
typedef struct cu_call {
  const sc_call *call;       /* coll, cn, count, dtype, acc, op, root, plan, prog, K */
  const void *send[CU_MAX_RANKS]; /* by slot: the caller's buffers (device memory) */
  void *recv[CU_MAX_RANKS];
  const sc_ir *ir;
  const sc_prog *prog;
  const cu_kset *k;          /* set by sc_cu_run */
  const sc_split *sp;        /* the phases across nodes (nnodes > 1), else NULL: one phase */
  size_t esz;                /* bytes of one element of the working buffer (call->acc) */
  uint32_t ntemp;            /* temp slots: the most any rank uses */
  size_t tile, tstride;      /* elements per tile and per (temp slot, block) (cuda_abi.h) */
  size_t mstride, sum_off;   /* split: elements per mirror slot; bytes from a mirror to its sums */
  size_t cells;              /* counter words per kind at each ctr: at least nchunks * nblk */
  cu_mem mem[CU_MAX_RANKS];  /* by rank */
  cu_args args;
  sc_exact ex;               /* exact mode (call->ex.mode SC_EXACT_CALL): the call's grid, set by the
                                mode (sc_cu_exact_words, then the exchange) before sc_cu_run */
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

/* Exact mode: the grid's words (exact.h's sc_exact_stats words, leaves 1) of this process's slots'
 * inputs, the largest of each over the slots: a kernel over each slot's input on its stream
 * (cuda_abi.h's schedc_xstats), the stream drained, four words read back. The modes exchange
 * them between processes (a max: any order) and make the grid with sc_exact_grid. The host waits
 * for the stream here: an exact call is not only enqueued when it returns. */
schedc_status sc_cu_exact_words(cu_group *g, const cu_call *c, const cu_kset *k, int64_t w[SC_EXACT_WORDS]);
/* The op an exact or quantized call's kernel set is keyed and emitted by: exact mode's op, or a
 * wire's (names.h SC_OP_Q8, SC_OP_Q16; a wire's words come from schedc_qstats, its grid from
 * sc_quant_grid, quant.h). */
static inline int sc_cu_exact_kop(const sc_exact *ex) {
  return ex->wire == SCHEDC_WIRE_Q8 ? SC_OP_Q8 : ex->wire == SCHEDC_WIRE_Q16 ? SC_OP_Q16 : ex->op;
}
/* SCHEDC_EUNAVAIL when the plan has too many steps or transfers for the kernels' counters. */
schedc_status sc_cu_call_fits(const sc_call *k);
/* The call's sizes (temps, tile, mirror stride; memory and buffers still unset). */
void sc_cu_call_init(const cu_group *g, cu_call *c, const sc_call *k);
size_t sc_cu_temp_bytes(const cu_group *g, const cu_call *c);
/* The parameter block from c->mem, then on every slot of this process the copy-in, the plan's
 * kernels once per phase with the mode's boundaries between them, the finish (avg, narrowing,
 * copy out) and, with checksums, the verdict; everything stream-ordered. */
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

#endif
