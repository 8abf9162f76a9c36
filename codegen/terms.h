/*
 * terms.h — hash-consed reduction trees. A term is a leaf (rank r's contribution, id r) or the
 * sum of two terms; a+b and b+a are the same term (IEEE +, *, min, max are commutative, only
 * association changes bits), so equal ids <=> equal trees. Terms are never freed one by one.
 */
#ifndef SC_TERMS_H
#define SC_TERMS_H

#include <stddef.h>
#include <stdint.h>

#define SC_TERM_UNDEF  UINT32_MAX        /* a cell holding no defined value */
#define SC_TERM_POISON (UINT32_MAX - 1)  /* the result of an already-reported error */
#define SC_TERM_NOMEM  (UINT32_MAX - 2)  /* out of memory: no term was made; never a cell's value */
#define SC_TERM_NONE   UINT32_MAX        /* no origin transfer */
/* Term ids are below SC_TERM_NOMEM, so the three markers are never ids. Every allocation goes
 * through common/alloc.h, and every failure is reported to the caller (SC_TERM_NOMEM, -1 or
 * SIZE_MAX below), never turned into an answer about a term. */

typedef struct sc_terms {
  uint32_t nleaves;
  uint32_t n, cap;
  uint32_t *a, *b;      /* children, a < b by id; leaves: SC_TERM_NONE */
  uint32_t *size;       /* leaves counted with multiplicity, saturating at UINT32_MAX */
  uint32_t *minleaf;
  uint32_t *origin;     /* index of the transfer that first built the term */
  uint32_t *ht;         /* open addressing: term id + 1, 0 = empty */
  uint32_t htcap;       /* power of two */
  uint32_t *stamp;      /* [nleaves] scratch for exact leaf counting */
  uint32_t *count;      /* [nleaves] */
  uint32_t epoch;
} sc_terms;

/* 0, or -1 out of memory (t then freed). */
int sc_terms_init(sc_terms *t, uint32_t nleaves);
void sc_terms_free(sc_terms *t);
/* The term x + y (commutative); SC_TERM_NOMEM when out of memory (or out of ids), the store
 * then unchanged. */
uint32_t sc_terms_sum(sc_terms *t, uint32_t x, uint32_t y, uint32_t origin);
/* Canonical balanced tree over leaves [lo, hi), lo < hi: the left subtree takes the largest
 * power of two strictly below the leaf count (so aligned power-of-two blocks are whole
 * subtrees). SC_TERM_NOMEM when out of memory. */
uint32_t sc_terms_balanced(sc_terms *t, uint32_t lo, uint32_t hi);

/* Exact leaf multiplicities of term id. Returns 1 when every leaf in `want` (a predicate over
 * leaf ids given as a bitmap-free range rule: all leaves when want_leaf == SC_TERM_NONE, else
 * exactly that one leaf) appears once and nothing else appears. Otherwise 0 and, if not NULL:
 * *dup = a leaf counted twice or more (or SC_TERM_NONE), *missing = a wanted leaf absent,
 * *extra = an unwanted leaf present. -1 when out of memory (the answer is unknown). */
int sc_terms_check(sc_terms *t, uint32_t id, uint32_t want_leaf, uint32_t *dup,
                   uint32_t *missing, uint32_t *extra);
/* Lowest sub-term of id whose two children are each duplicate-free but share a leaf: where a
 * double count was introduced. SC_TERM_NONE if id has no duplicate, SC_TERM_NOMEM when out of
 * memory. */
uint32_t sc_terms_first_dup(sc_terms *t, uint32_t id);

/* Write the tree as text ("(((r1+r2)+r3)+r0)"): children are printed larger first, then by
 * smallest leaf, so the text does not depend on the order the script wrote the operands.
 * Writes at most cap bytes (NUL included; "..." marks a cut when cap is small) and returns the
 * full length, like snprintf; SIZE_MAX when out of memory (buf then holds "" if cap > 0). */
size_t sc_terms_print(const sc_terms *t, uint32_t id, char *buf, size_t cap);

#endif
