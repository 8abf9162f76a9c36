/*
 * names.h — the name tables of schedc.h's X-macro lists, built once (names.c): status messages,
 * collective, dtype and op spellings and dtype sizes. Every layer reads them here: codegen
 * through these accessors (it needs only common/ and libc), the public schedc_*_name,
 * schedc_dtype_size and schedc_*_parse functions (also names.c) are thin wrappers.
 */
#ifndef SC_NAMES_H
#define SC_NAMES_H

#include <stddef.h>

/* Static spelling of a collective, dtype or op ("allreduce", "bf16", "max"); NULL out of range. */
const char *sc_collective_name(int c);
const char *sc_dtype_name(int dtype);
const char *sc_op_name(int op);
/* Bytes per element of a dtype; 0 out of range. */
size_t sc_dtype_size(int dtype);

/* The integer types a quantized call carries on its wire (SCHEDC_WIRE_Q8, _Q16; runtime/core/
 * quant.h): working types only, never a caller's dtype (sc_dtype_name is NULL for them), outside
 * the public list; sc_dtype_size knows their sizes, so the executors size and move them as any
 * working type. */
enum { SC_DT_Q8 = 64, SC_DT_Q16 = 65 };
/* The ops the cuda backend keys and emits a quantized call's kernels by (codegen/cuda_emit.c: the
 * working type is the wire's integers, summed with wrapping adds; the format and avg are kernel
 * parameters): below SCHEDC_OP_CUSTOM_BASE, outside every public op. */
enum { SC_OP_Q8 = 136, SC_OP_Q16 = 144 };
static inline int sc_op_wire(int op) { return op == SC_OP_Q8 ? 8 : op == SC_OP_Q16 ? 16 : 0; }
/* Static spelling of a wire format ("default", "q8", "q16"); NULL out of range. */
const char *sc_wire_name(int wire);
/* Static message of a status ("invalid argument"); NULL out of range. */
const char *sc_status_msg(int st);

#endif
