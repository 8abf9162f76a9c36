/*
 * diag.c — collecting, sorting and rendering verifier diagnostics (see diag.h). Out of memory
 * is recorded (d->oom) and reported by the renderer, never rendered as a shorter list.
 */
#include "diag.h"
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void sc_diags_init(sc_diags *d) { memset(d, 0, sizeof *d); }

void sc_diags_free(sc_diags *d) {
  for (uint32_t i = 0; i < d->n; i++) free(d->v[i].msg);
  free(d->v);
  memset(d, 0, sizeof *d);
}

void sc_diags_add(sc_diags *d, uint32_t file, uint32_t line, const char *fmt, ...) {
  if (d->n >= SC_DIAG_KEEP) { d->dropped++; return; }
  if (d->n == d->cap) {
    uint32_t ncap = d->cap ? d->cap * 2 : 16;
    sc_diag *p = sc_realloc(d->v, ncap * sizeof *p);
    if (!p) { d->dropped++; d->oom = 1; return; }
    d->v = p;
    d->cap = ncap;
  }
  va_list ap;
  va_start(ap, fmt);
  char *msg = NULL;
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0) { d->dropped++; return; } /* an encoding error: counted, like one past the cap */
  if (!(msg = sc_alloc((size_t)k + 1))) { d->dropped++; d->oom = 1; return; }
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)k + 1, fmt, ap);
  va_end(ap);
  d->v[d->n] = (sc_diag){file, line, d->n, msg};
  d->n++;
}

static int cmp_diag(const void *pa, const void *pb) {
  const sc_diag *a = pa, *b = pb;
  if (a->file != b->file) return a->file < b->file ? -1 : 1;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  int c = strcmp(a->msg, b->msg);
  if (c) return c;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

char *sc_diags_render(sc_diags *d, const sc_ir *ir, uint32_t max_lines) {
  if (d->oom) return NULL;
  qsort(d->v, d->n, sizeof *d->v, cmp_diag);
  sc_strbuf b = SC_STRBUF_INIT;
  uint32_t shown = 0, unique = 0;
  for (uint32_t i = 0; i < d->n; i++) {
    if (i && d->v[i].file == d->v[i - 1].file && d->v[i].line == d->v[i - 1].line &&
        strcmp(d->v[i].msg, d->v[i - 1].msg) == 0)
      continue;
    unique++;
    if (shown >= max_lines) continue;
    const char *file = d->v[i].file < ir->nfiles ? ir->files[d->v[i].file] : "?";
    sc_strbuf_printf(&b, "%s%s:%u: %s", b.len ? "\n" : "", file, d->v[i].line, d->v[i].msg);
    shown++;
  }
  uint32_t more = unique - shown + d->dropped;
  /* the count tells that more is wrong: never dropped (out of memory fails the whole render) */
  if (more) sc_strbuf_printf(&b, "\n... and %u more error%s", more, more == 1 ? "" : "s");
  if (!b.p && !b.oom && (b.p = sc_alloc(1)) != NULL) b.p[0] = 0; /* nothing to say: "", never NULL */
  if (b.oom || !b.p) {
    sc_strbuf_free(&b);
    return NULL; /* NULL means out of memory */
  }
  return b.p;
}
