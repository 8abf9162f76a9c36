/*
 * test_strbuf.c — common/strbuf.h, the library's one string builder: appends and printf-style
 * appends give exactly the text an independent snprintf into a fixed buffer gives, across many
 * growths; the text stays NUL-terminated; a failed allocation (the tests' hook in alloc.h) sets
 * oom, keeps the text before it and makes every later append a no-op; free starts over.
 */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "alloc.h"
#include "strbuf.h"

int main(void) {
  sc_strbuf b = SC_STRBUF_INIT;
  CHECK(b.p == NULL && b.len == 0);
  sc_strbuf_puts(&b, "");
  sc_strbuf_printf(&b, "%s", "");
  CHECK(b.p == NULL && b.len == 0 && !b.oom); /* nothing appended, nothing allocated */

  /* the same text built two ways: the builder, and snprintf into one big buffer */
  static char want[1 << 16];
  size_t w = 0;
  for (int i = 0; i < 2000; i++) {
    if (i % 3 == 0) {
      sc_strbuf_printf(&b, "%d:%s;", i, i % 2 ? "odd" : "even");
      w += (size_t)snprintf(want + w, sizeof want - w, "%d:%s;", i, i % 2 ? "odd" : "even");
    } else if (i % 3 == 1) {
      sc_strbuf_puts(&b, "abc");
      w += (size_t)snprintf(want + w, sizeof want - w, "abc");
    } else {
      sc_strbuf_add(&b, "xyz\n", 2); /* n bytes, not the string */
      w += (size_t)snprintf(want + w, sizeof want - w, "xy");
    }
    if (b.len != w || b.p[b.len] != 0 || b.cap <= b.len) break;
  }
  CHECK(!b.oom);
  CHECK(b.len == w);
  CHECK(b.p && memcmp(b.p, want, w + 1) == 0);

  /* out of memory: sticky, and the text before it kept */
  sc_strbuf_free(&b);
  CHECK(b.p == NULL && b.len == 0 && b.cap == 0 && !b.oom);
  sc_strbuf_puts(&b, "kept");
  size_t cap = b.cap;
  char big[256];
  memset(big, 'x', sizeof big);
  sc_alloc_fail_after(1); /* the next wrapped allocation fails: the growth below */
  sc_strbuf_add(&b, big, sizeof big);
  CHECK(sc_alloc_fail_fired());
  CHECK(b.oom);
  CHECK_EQ_STR(b.p, "kept");
  CHECK(b.cap == cap);
  sc_strbuf_puts(&b, "!"); /* fits, but oom is sticky */
  sc_strbuf_printf(&b, "%d", 7);
  CHECK_EQ_STR(b.p, "kept");
  sc_strbuf_free(&b);
  CHECK(!b.oom);
  sc_strbuf_printf(&b, "%s-%03d", "again", 5);
  CHECK_EQ_STR(b.p, "again-005");
  sc_strbuf_free(&b);
  return DONE();
}
