/*
 * strbuf.c — the growable string of strbuf.h: doubles its capacity (at least 64 bytes), keeps
 * the text NUL-terminated after every append, and stops at the first failed allocation.
 */
#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* Room for n more bytes and the NUL; 0 (and oom set) when it cannot be had. */
static int reserve(sc_strbuf *b, size_t n) {
  if (b->oom) return 0;
  if (n > SIZE_MAX / 2 - b->len - 1) { b->oom = 1; return 0; }
  size_t need = b->len + n + 1;
  if (need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  char *p = sc_realloc(b->p, cap);
  if (!p) { b->oom = 1; return 0; }
  b->p = p;
  b->cap = cap;
  return 1;
}

void sc_strbuf_add(sc_strbuf *b, const char *s, size_t n) {
  if (!n || !reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

void sc_strbuf_puts(sc_strbuf *b, const char *s) { sc_strbuf_add(b, s, strlen(s)); }

void sc_strbuf_vprintf(sc_strbuf *b, const char *fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n < 0) { b->oom = 1; return; }
  if (!n || !reserve(b, (size_t)n)) return;
  vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  b->len += (size_t)n;
}

void sc_strbuf_printf(sc_strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sc_strbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

/* The length of the valid UTF-8 sequence at s (shortest form, no surrogates, at most U+10FFFF),
 * or 0. */
static size_t utf8_len(const unsigned char *s) {
  unsigned c = s[0], n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  if (!n || c > 0xf4) return 0;
  for (unsigned i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0; /* overlong; surrogate */
  if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0; /* overlong; > U+10FFFF */
  return n;
}

void sc_strbuf_json(sc_strbuf *b, const char *s) {
  const unsigned char *u = (const unsigned char *)s;
  sc_strbuf_add(b, "\"", 1);
  while (*u) {
    size_t n;
    if (*u == '"' || *u == '\\') sc_strbuf_printf(b, "\\%c", *u++);
    else if (*u < 0x20) sc_strbuf_printf(b, "\\u%04x", *u++);
    else if (*u < 0x80) sc_strbuf_add(b, (const char *)u++, 1);
    else if ((n = utf8_len(u))) { sc_strbuf_add(b, (const char *)u, n); u += n; }
    else { sc_strbuf_puts(b, "\\ufffd"); u++; }
  }
  sc_strbuf_add(b, "\"", 1);
}

void sc_strbuf_free(sc_strbuf *b) {
  free(b->p);
  *b = (sc_strbuf)SC_STRBUF_INIT;
}
