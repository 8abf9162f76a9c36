/*
 * diag.h — verifier diagnostics: "file:line: message" records collected during a run, then
 * sorted by (file, line), de-duplicated and rendered into one text (several errors per run).
 */
#ifndef SC_DIAG_H
#define SC_DIAG_H

#include <stdint.h>

#include "ir.h"

#define SC_DIAG_KEEP 4096u  /* records kept; more are only counted */

typedef struct sc_diag {
  uint32_t file, line, seq;
  char *msg;
} sc_diag;

typedef struct sc_diags {
  sc_diag *v;
  uint32_t n, cap;
  uint32_t dropped;   /* records not kept (past SC_DIAG_KEEP or OOM) */
  int oom;            /* a record was lost to out of memory: the set is incomplete */
} sc_diags;

void sc_diags_init(sc_diags *d);
void sc_diags_free(sc_diags *d);
/* Add a diagnostic at (file, line); printf-style message without location. */
void sc_diags_add(sc_diags *d, uint32_t file, uint32_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline uint32_t sc_diags_count(const sc_diags *d) { return d->n + d->dropped; }
/* Sorted, de-duplicated text, at most max_lines lines plus a "... and N more" line.
 * Returns a malloc'd string (caller frees), or NULL out of memory, now or when a record was
 * lost (d->oom): never a partial text. */
char *sc_diags_render(sc_diags *d, const sc_ir *ir, uint32_t max_lines);

#endif
