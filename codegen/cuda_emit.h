/*
 * cuda_emit.h — CUDA C++ for a plan, per rank: straight-line write groups (the executor's
 * lowering, codegen/prog.h) over a few device primitives (wait, copy, reduce chain, signal),
 * specialised for dtype, op and chunk layout, with 16-byte vector accesses. No headers: buffer
 * pointers, counters and sizes are kernel parameters. Every group carries a comment with the file.lua:line that wrote it.
 */
#ifndef SC_CUDA_EMIT_H
#define SC_CUDA_EMIT_H

#include "ir.h"
#include "cuda_split.h"
#include "prog.h"

/* Blocks take tiles of a chunk in turn (sc_tile0 in the generated code): a tile is at most the
 * largest power of two of bytes within SC_CUDA_TILE_WINDOW / blocks, never under
 * SC_CUDA_TILE_MIN (a power of two); the runtime sizes the temp slots by the same rule
 * (sc_cu_layout). */
#define SC_CUDA_TILE_WINDOW 4194304
#define SC_CUDA_TILE_MIN 32768

/* The source for `rank`'s kernel `schedc_rank<R>(sc_args)`, or, when rank < 0, every rank's
 * code in one unit behind one kernel `schedc_all(sc_args, first, count)` (what the runtime
 * launches); plus the conversion kernels for f16/bf16 and avg. malloc'd; NULL on OOM or bad
 * dtype/op. */
char *sc_cuda_emit(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op);
/* The same with per-transfer checksums when `check` (SCHEDC_VERIFY=checksum): every published
 * version of a cell part carries a 64-bit sum of its elements, which each reader recomputes
 * from what it loads and compares before using it (docs/integrity.md). sc_args then ends with
 * the sum tables and the injection and repair words; the error record has 16 words. */
char *sc_cuda_emit_checked(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op, int check);
/* The same cut into phases across nodes (sp from sc_split_build; NULL: one phase): sc_args
 * then also holds the mirror tables, the slot stride and the phase of the launch. */
char *sc_cuda_emit_split(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op, int check,
                         const sc_split *sp);

#endif
