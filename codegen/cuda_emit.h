/*
 * cuda_emit.h — CUDA C++ for a plan, per rank: straight-line write groups (the executor's
 * lowering, codegen/prog.h) over a few device primitives (wait, copy, reduce chain, signal),
 * specialised for dtype, op and chunk layout, with 16-byte vector accesses. No headers: buffer
 * pointers, counters and sizes are kernel parameters (the block cuda_abi.h defines). Every group carries a comment with the file.lua:line that wrote it.
 */
#ifndef SC_CUDA_EMIT_H
#define SC_CUDA_EMIT_H

#include "cuda_abi.h"
#include "ir.h"
#include "cuda_split.h"
#include "prog.h"

/* The source for `rank`'s kernel `schedc_rank<R>(sc_args)`, or, when rank < 0, every rank's
 * code in one unit behind one kernel `schedc_all(sc_args, first, count)` (what the runtime
 * launches); plus the conversion kernels for f16/bf16 and avg. Exact ops (SCHEDC_SUM_EXACT,
 * AVG_EXACT; f32/f16/bf16) sum i64 and carry exact mode's three kernels instead (cuda_abi.h): the
 * same text for every one of those formats and both ops. malloc'd; NULL on OOM or bad dtype/op. */
char *sc_cuda_emit(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op);
/* The same with per-transfer checksums when `check` (SCHEDC_VERIFY=checksum): every published
 * version of a cell part carries a 64-bit sum of its elements, which each reader recomputes
 * from what it loads and compares before using it (docs/integrity.md). sc_args then has the
 * CHECK fields of cuda_abi.h: the sum tables, the injection and repair words. */
char *sc_cuda_emit_checked(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op, int check);
/* The same cut into phases across nodes (sp from sc_split_build; NULL: one phase): sc_args
 * then also has the SPLIT fields: the mirror tables, the slot stride and the launch's phase. */
char *sc_cuda_emit_split(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op, int check,
                         const sc_split *sp);

#endif
