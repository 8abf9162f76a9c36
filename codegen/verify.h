/*
 * verify.h — symbolic execution of a schedule's steps: proves the collective's postcondition
 * (every contribution exactly once), cross-rank identity of the reduction trees, defined reads,
 * non-conflicting writes and, when declared, the canonical order (DESIGN.md §3, §4).
 */
#ifndef SC_VERIFY_H
#define SC_VERIFY_H

#include "diag.h"
#include "ir.h"
#include "terms.h"

typedef struct sc_verified {
  sc_terms terms;
  uint32_t *final;    /* [nranks * nchunks]: term of (rank r, chunk c) at r * nchunks + c */
  uint32_t *holder;   /* [nchunks]: rank whose tree defines the chunk's result */
} sc_verified;

/* Returns 0 when the schedule is proven (out filled; free with sc_verified_free), 1 when it is
 * rejected (diagnostics in d, out freed), -1 out of memory anywhere in the run (out freed; d
 * may hold part of the diagnostics): then neither verdict, since a check that could not run
 * proves nothing either way. */
int sc_verify(const sc_ir *ir, sc_verified *out, sc_diags *d);
void sc_verified_free(sc_verified *v);
/* Whether the postcondition defines chunk c on rank r (the cells `show --order` prints). */
int sc_verify_cell_defined(const sc_ir *ir, uint32_t r, uint32_t c);

#endif
