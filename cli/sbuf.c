/*
 * sbuf.c — the CLI's string builder: printf-appends into a growing, always NUL-terminated buffer
 * (the CLI may not use the library's internal one). Out of memory is sticky: later appends do
 * nothing and cli_sb_str() returns what fitted, so a caller checks once, at the end.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Room for `more` bytes after len plus the terminator. 0, or -1 (oom set). */
static int grow(cli_sbuf *b, size_t more) {
  if (b->oom) return -1;
  if (b->len + more + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + more + 1) {
    if (cap > ((size_t)-1) / 2) { b->oom = 1; return -1; }
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (!p) { b->oom = 1; return -1; }
  b->p = p;
  b->cap = cap;
  return 0;
}

void cli_sb_printf(cli_sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256]; /* most appends fit: one formatting pass */
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || grow(b, (size_t)n)) return;
  if ((size_t)n < sizeof tmp) {
    memcpy(b->p + b->len, tmp, (size_t)n + 1);
  } else {
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

void cli_sb_puts(cli_sbuf *b, const char *s) {
  size_t n = strlen(s);
  if (grow(b, n)) return;
  memcpy(b->p + b->len, s, n + 1);
  b->len += n;
}

const char *cli_sb_rank_file(cli_sbuf *b, const char *dir, int rank, const char *ext) {
  b->len = 0;
  if (b->p) b->p[0] = 0;
  cli_sb_printf(b, "%s/rank%d%s", dir, rank, ext);
  return b->oom ? NULL : b->p;
}

const char *cli_sb_str(const cli_sbuf *b) { return b->p ? b->p : ""; }

void cli_sb_free(cli_sbuf *b) {
  free(b->p);
  *b = (cli_sbuf){0};
}
