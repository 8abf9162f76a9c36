/*
 * check.h — the tiny assertion kit of the C tests: CHECK(cond) and CHECK_EQ_STR record a failure
 * with file:line and go on; DONE() prints "N passed, M failed" and returns the exit status.
 */
#ifndef SC_TEST_CHECK_H
#define SC_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int tc_pass, tc_fail;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (cond) tc_pass++;                                                    \
    else { tc_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                  \
  do {                                                                      \
    const char *a_ = (a), *b_ = (b);                                        \
    if (a_ && b_ && strcmp(a_, b_) == 0) tc_pass++;                         \
    else { tc_fail++; fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, b_ ? b_ : "(null)", a_ ? a_ : "(null)"); } \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                         \
  do {                                                                      \
    const char *h_ = (hay), *n_ = (needle);                                 \
    if (h_ && strstr(h_, n_)) tc_pass++;                                    \
    else { tc_fail++; fprintf(stderr, "%s:%d: expected to contain \"%s\", got \"%s\"\n", __FILE__, __LINE__, n_, h_ ? h_ : "(null)"); } \
  } while (0)

#define DONE()                                                              \
  (printf("%d passed, %d failed\n", tc_pass, tc_fail), tc_fail ? 1 : 0)

#endif
