/*
 * ir.h — the schedule IR: a collective's header plus its transfers grouped into steps.
 * Built by dsl/ (or read from a plan file), consumed by the verifier, lowering and codegen.
 * Owns all its memory; holds no Lua value. Locations are (file index, line) of the user's call.
 */
#ifndef SC_IR_H
#define SC_IR_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"  /* sc_fnv (common/): the plan hash, plan files' seals, cache keys */
#include "names.h" /* the name tables (common/): codegen's spellings and dtype sizes */
#include "schedc/schedc.h"

/* Hard limits (also checked by the DSL with a clear message). */
#define SC_IR_MAX_RANKS  65536u
#define SC_IR_MAX_CHUNKS 65536u
#define SC_IR_MAX_CELLS  (1u << 25)   /* ranks * chunks: the verifier keeps a few words each */
#define SC_IR_MAX_XFERS  (1u << 26)
#define SC_IR_MAX_FILES  65535u

enum { SC_ORDER_ANY = 0, SC_ORDER_CANONICAL = 1 };

typedef struct sc_xfer {
  uint32_t src, dst, chunk;
  uint32_t step;
  uint32_t line;
  uint16_t file;     /* index into sc_ir.files */
  uint8_t kind;      /* schedc_xfer_kind */
  uint8_t pad_;
} sc_xfer;

typedef struct sc_ir {
  char *name;
  int collective;    /* schedc_collective */
  int order;         /* SC_ORDER_* */
  uint32_t nranks, nchunks, root;
  uint32_t nnodes;
  uint32_t *node_of; /* [nranks] */
  uint32_t nsteps;
  uint32_t *step_off;/* [nsteps + 1]: transfers of step s are xfers[step_off[s] .. step_off[s+1]) */
  sc_xfer *xfers;    /* sorted by step, stable in the order written */
  uint32_t nxfers, xcap;
  char **files;      /* user files named by locations; files[0] is the script itself */
  uint32_t nfiles;
  uint16_t decl_file;/* where schedule{} was called (for diagnostics with no transfer) */
  uint32_t decl_line;
} sc_ir;

/* Returns 0, or -1 on allocation failure. */
int sc_ir_init(sc_ir *ir);
void sc_ir_free(sc_ir *ir);
/* Append a transfer (step order is fixed by sc_ir_finish). 0, or -1 on OOM / limit. */
int sc_ir_add(sc_ir *ir, const sc_xfer *x);
/* Intern a file name; returns its index or -1 on OOM / too many files. */
int sc_ir_file(sc_ir *ir, const char *name);
/* Sort transfers by step (stable) and build step_off; nsteps must be set. 0 or -1 (OOM). */
int sc_ir_finish(sc_ir *ir);
/* Deep copy; 0 or -1 (OOM). */
int sc_ir_copy(sc_ir *dst, const sc_ir *src);
/* 64-bit content hash of everything that defines the plan's semantics and diagnostics. */
uint64_t sc_ir_hash(const sc_ir *ir);
/* Static spelling of a collective, or NULL (names.h's sc_collective_name). */
const char *sc_ir_collective_name(int c);
/* Chunk block of rank r for reduce_scatter / allgather: chunks [r*k, r*k+k), k = nchunks/nranks. */
static inline uint32_t sc_ir_block(const sc_ir *ir) { return ir->nchunks / ir->nranks; }

#endif
