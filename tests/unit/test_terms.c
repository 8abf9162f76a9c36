/*
 * test_terms.c — unit tests of the hash-consed term store: commutativity, identity of equal
 * trees, exact leaf counting, locating a double count, canonical trees and printing.
 */
#include <stdlib.h>

#include "../check.h"
#include "terms.h"

static const char *pr(const sc_terms *t, uint32_t id) {
  static char buf[256];
  sc_terms_print(t, id, buf, sizeof buf);
  return buf;
}

int main(void) {
  sc_terms t;
  CHECK(sc_terms_init(&t, 8) == 0);
  uint32_t a = sc_terms_sum(&t, 1, 2, 10), b = sc_terms_sum(&t, 2, 1, 11);
  CHECK(a == b);                        /* a+b == b+a */
  CHECK(t.origin[a] == 10);             /* first builder is remembered */
  uint32_t c1 = sc_terms_sum(&t, a, 3, 0), c2 = sc_terms_sum(&t, 1, sc_terms_sum(&t, 2, 3, 0), 0);
  CHECK(c1 != c2);                      /* association is what differs */
  uint32_t ring0 = sc_terms_sum(&t, c1, 0, 0);
  CHECK_EQ_STR(pr(&t, ring0), "(((r1+r2)+r3)+r0)");
  CHECK_EQ_STR(pr(&t, sc_terms_sum(&t, 3, 0, 0)), "(r0+r3)");
  CHECK_EQ_STR(pr(&t, 5), "r5");
  CHECK_EQ_STR(pr(&t, SC_TERM_UNDEF), "-");

  /* exact counting */
  uint32_t dup, miss, extra;
  uint32_t all = sc_terms_balanced(&t, 0, 8);
  CHECK_EQ_STR(pr(&t, all), "(((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))");
  CHECK(sc_terms_check(&t, all, SC_TERM_NONE, &dup, &miss, &extra) == 1);
  CHECK(sc_terms_check(&t, ring0, SC_TERM_NONE, &dup, &miss, &extra) == 0);
  CHECK(miss == 4 && dup == SC_TERM_NONE);
  CHECK(sc_terms_check(&t, 3, 3, &dup, &miss, &extra) == 1);
  CHECK(sc_terms_check(&t, 3, 4, &dup, &miss, &extra) == 0 && miss == 4 && extra == 3);
  uint32_t d1 = sc_terms_sum(&t, a, 1, 42);            /* (r1+r2)+r1: counts r1 twice */
  uint32_t d2 = sc_terms_sum(&t, d1, 5, 43);
  CHECK(sc_terms_check(&t, d2, SC_TERM_NONE, &dup, &miss, &extra) == 0 && dup == 1);
  CHECK(sc_terms_first_dup(&t, d2) == d1);             /* blame where the duplicate arose */
  CHECK(sc_terms_first_dup(&t, all) == SC_TERM_NONE);

  /* canonical shapes for non-powers of two: left subtree = largest power of two below n */
  sc_terms t6;
  CHECK(sc_terms_init(&t6, 6) == 0);
  CHECK_EQ_STR(pr(&t6, sc_terms_balanced(&t6, 0, 6)), "(((r0+r1)+(r2+r3))+(r4+r5))");
  CHECK_EQ_STR(pr(&t6, sc_terms_balanced(&t6, 0, 3)), "((r0+r1)+r2)");
  CHECK_EQ_STR(pr(&t6, sc_terms_balanced(&t6, 2, 3)), "r2");

  /* exponential trees (x = x + x) neither hang the checker nor the printer */
  uint32_t x = 0;
  for (int i = 0; i < 60; i++) x = sc_terms_sum(&t6, x, x, (uint32_t)i);
  CHECK(t6.size[x] == UINT32_MAX);
  CHECK(sc_terms_check(&t6, x, SC_TERM_NONE, &dup, &miss, &extra) == 0 && dup == 0);
  char small[16];
  size_t len = sc_terms_print(&t6, x, small, sizeof small);
  CHECK(len >= sizeof small && strlen(small) == sizeof small - 1);

  /* many terms: the hash table grows and stays consistent */
  sc_terms big;
  CHECK(sc_terms_init(&big, 1000) == 0);
  uint32_t acc = 0;
  for (uint32_t r = 1; r < 1000; r++) acc = sc_terms_sum(&big, acc, r, r);
  uint32_t acc2 = 0;
  for (uint32_t r = 1; r < 1000; r++) acc2 = sc_terms_sum(&big, r, acc2, r);
  CHECK(acc == acc2);
  CHECK(sc_terms_check(&big, acc, SC_TERM_NONE, NULL, NULL, NULL) == 1);
  sc_terms_free(&big);
  sc_terms_free(&t6);
  sc_terms_free(&t);
  return DONE();
}
