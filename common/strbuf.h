/*
 * strbuf.h — the library's one growable string (strbuf.c): appends, printf-style appends, and a
 * sticky out-of-memory flag, so a builder checks once at the end instead of after every append.
 * Memory comes from common/alloc.h (sc_realloc), so the tests' allocation failures reach it.
 */
#ifndef SC_STRBUF_H
#define SC_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

/* Start with SC_STRBUF_INIT (all zero). Invariants: p is NULL until the first byte is appended,
 * then NUL-terminated at p[len] within cap bytes; once oom is set (an allocation failed) every
 * later append does nothing, and p holds what was appended before. The owner frees p
 * (sc_strbuf_free), or takes it over (free() it then). */
typedef struct sc_strbuf {
  char *p;
  size_t len, cap;
  int oom;
} sc_strbuf;
#define SC_STRBUF_INIT {NULL, 0, 0, 0}

/* Append n bytes of s (which need not be NUL-terminated, and does not point into p). */
void sc_strbuf_add(sc_strbuf *b, const char *s, size_t n);
/* Append the string s. */
void sc_strbuf_puts(sc_strbuf *b, const char *s);
/* Append printf(fmt, ...); a formatting error sets oom too (the text would be incomplete). */
void sc_strbuf_printf(sc_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sc_strbuf_vprintf(sc_strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Append s as a JSON string, quotes included: '"', '\\' and control characters escaped, valid
 * UTF-8 kept, any other byte (not UTF-8: a path or a variable's value may hold one) as U+FFFD, so
 * the result is always valid JSON. */
void sc_strbuf_json(sc_strbuf *b, const char *s);
/* Free p and start over (oom cleared). */
void sc_strbuf_free(sc_strbuf *b);

#endif
