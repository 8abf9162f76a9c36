/*
 * terms.c — the hash-consed term store (see terms.h): insertion, exact leaf counting, the
 * balanced tree of the canonical order, and order-independent printing. All traversals use
 * explicit stacks: a hostile schedule can build very deep terms. Allocations go through
 * sc_alloc & co. and each failure reaches the caller as such; a failed insertion leaves the
 * store as it was.
 */
#include "terms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static int grow(sc_terms *t) {
  uint32_t ncap = t->cap ? t->cap * 2 : 1024;
  if (ncap < t->cap || ncap > UINT32_MAX - 4) return -1;
  uint32_t **arrs[] = {&t->a, &t->b, &t->size, &t->minleaf, &t->origin};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
    /* A failure part way leaves some arrays larger than cap: harmless, cap stays the bound. */
    uint32_t *p = sc_realloc(*arrs[i], (size_t)ncap * sizeof(uint32_t));
    if (!p) return -1;
    *arrs[i] = p;
  }
  t->cap = ncap;
  return 0;
}

static uint32_t hash2(uint32_t a, uint32_t b) {
  uint64_t k = ((uint64_t)a << 32) | b;
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return (uint32_t)k;
}

static int rehash(sc_terms *t) {
  uint32_t ncap = t->htcap ? t->htcap * 2 : 4096;
  uint32_t *ht = sc_calloc(ncap, sizeof *ht);
  if (!ht) return -1;
  for (uint32_t id = t->nleaves; id < t->n; id++) {
    uint32_t h = hash2(t->a[id], t->b[id]) & (ncap - 1);
    while (ht[h]) h = (h + 1) & (ncap - 1);
    ht[h] = id + 1;
  }
  free(t->ht);
  t->ht = ht;
  t->htcap = ncap;
  return 0;
}

int sc_terms_init(sc_terms *t, uint32_t nleaves) {
  memset(t, 0, sizeof *t);
  t->nleaves = nleaves;
  t->stamp = sc_calloc((size_t)nleaves + 1, sizeof *t->stamp);
  t->count = sc_calloc((size_t)nleaves + 1, sizeof *t->count);
  if (!t->stamp || !t->count || rehash(t)) goto oom;
  while (t->cap < nleaves + 1)
    if (grow(t)) goto oom;
  for (uint32_t r = 0; r < nleaves; r++) {
    t->a[r] = t->b[r] = SC_TERM_NONE;
    t->size[r] = 1;
    t->minleaf[r] = r;
    t->origin[r] = SC_TERM_NONE;
  }
  t->n = nleaves;
  return 0;
oom:
  sc_terms_free(t);
  return -1;
}

void sc_terms_free(sc_terms *t) {
  free(t->a); free(t->b); free(t->size); free(t->minleaf); free(t->origin);
  free(t->ht); free(t->stamp); free(t->count);
  memset(t, 0, sizeof *t);
}

/* Slot of (a, b) in the hash table: the entry holding it, or the empty slot ending its probe. */
static uint32_t slot(const sc_terms *t, uint32_t a, uint32_t b) {
  uint32_t mask = t->htcap - 1, h = hash2(a, b) & mask;
  for (uint32_t e; (e = t->ht[h]) != 0; h = (h + 1) & mask)
    if (t->a[e - 1] == a && t->b[e - 1] == b) break;
  return h;
}

uint32_t sc_terms_sum(sc_terms *t, uint32_t x, uint32_t y, uint32_t origin) {
  uint32_t a = x < y ? x : y, b = x < y ? y : x;
  uint32_t h = slot(t, a, b);
  if (t->ht[h]) return t->ht[h] - 1;
  /* Room first (ids, arrays, a table at most half full after the insertion), so that a failure
   * returns before anything changed. Running out of ids counts as out of memory. */
  if (t->n >= SC_TERM_NOMEM) return SC_TERM_NOMEM;
  if (t->n == t->cap && grow(t)) return SC_TERM_NOMEM;
  if ((uint64_t)(t->n + 1 - t->nleaves) * 2 > t->htcap) {
    if (rehash(t)) return SC_TERM_NOMEM;
    h = slot(t, a, b);
  }
  uint32_t id = t->n++;
  t->a[id] = a;
  t->b[id] = b;
  uint64_t sz = (uint64_t)t->size[a] + t->size[b];
  t->size[id] = sz > UINT32_MAX ? UINT32_MAX : (uint32_t)sz;
  t->minleaf[id] = t->minleaf[a] < t->minleaf[b] ? t->minleaf[a] : t->minleaf[b];
  t->origin[id] = origin;
  t->ht[h] = id + 1;
  return id;
}

uint32_t sc_terms_balanced(sc_terms *t, uint32_t lo, uint32_t hi) {
  if (hi - lo == 1) return lo;
  uint32_t left = 1;
  while (left * 2 < hi - lo) left *= 2; /* largest power of two below the leaf count */
  uint32_t mid = lo + left;
  uint32_t l = sc_terms_balanced(t, lo, mid);
  if (l == SC_TERM_NOMEM) return l;
  uint32_t r = sc_terms_balanced(t, mid, hi);
  if (r == SC_TERM_NOMEM) return r;
  return sc_terms_sum(t, l, r, SC_TERM_NONE);
}

/* Count the leaves of id into t->count (valid where stamp == epoch). Returns 0 if some leaf
 * reached count 2 (stops early: *dup set), 1 otherwise, -1 out of memory (the counts are then
 * partial and mean nothing). Terms larger than nleaves always hold a duplicate, found by the
 * walk before it gets large. */
static int count_leaves(sc_terms *t, uint32_t id, uint32_t *dup) {
  if (++t->epoch == 0) { memset(t->stamp, 0, t->nleaves * sizeof *t->stamp); t->epoch = 1; }
  uint32_t stack_small[256], *stack = stack_small, cap = 256, sp = 0;
  int ok = 1;
  stack[sp++] = id;
  while (sp) {
    uint32_t x = stack[--sp];
    if (x < t->nleaves) {
      if (t->stamp[x] != t->epoch) { t->stamp[x] = t->epoch; t->count[x] = 0; }
      if (++t->count[x] > 1) { if (dup) *dup = x; ok = 0; break; }
      continue;
    }
    if (sp + 2 > cap) {
      uint32_t ncap = cap * 2;
      uint32_t *ns = sc_alloc((size_t)ncap * sizeof *ns);
      if (!ns) { ok = -1; break; }
      memcpy(ns, stack, sp * sizeof *ns);
      if (stack != stack_small) free(stack);
      stack = ns;
      cap = ncap;
    }
    stack[sp++] = t->b[x];
    stack[sp++] = t->a[x];
  }
  if (stack != stack_small) free(stack);
  return ok;
}

int sc_terms_check(sc_terms *t, uint32_t id, uint32_t want_leaf, uint32_t *dup,
                   uint32_t *missing, uint32_t *extra) {
  if (dup) *dup = SC_TERM_NONE;
  if (missing) *missing = SC_TERM_NONE;
  if (extra) *extra = SC_TERM_NONE;
  if (id >= t->n) return 0;
  int ok = count_leaves(t, id, dup);
  if (ok < 0) return -1;
  /* Missing / extra leaves are reported from the part counted so far when a duplicate stopped
   * the walk early; the duplicate is the primary diagnostic then. */
  for (uint32_t r = 0; r < t->nleaves; r++) {
    int has = t->stamp[r] == t->epoch && t->count[r] > 0;
    int want = want_leaf == SC_TERM_NONE || want_leaf == r;
    if (want && !has) { if (missing && *missing == SC_TERM_NONE) *missing = r; ok = 0; }
    if (!want && has) { if (extra && *extra == SC_TERM_NONE) *extra = r; ok = 0; }
  }
  return ok == 1;
}

uint32_t sc_terms_first_dup(sc_terms *t, uint32_t id) {
  uint32_t d;
  if (id < t->nleaves) return SC_TERM_NONE;
  int k = count_leaves(t, id, &d);
  if (k != 0) return k < 0 ? SC_TERM_NOMEM : SC_TERM_NONE;
  /* Descend into a child that itself has a duplicate; stop where neither does. */
  for (;;) {
    uint32_t a = t->a[id], b = t->b[id];
    if (a >= t->nleaves && (k = count_leaves(t, a, &d)) <= 0) {
      if (k < 0) return SC_TERM_NOMEM;
      id = a;
      continue;
    }
    if (b >= t->nleaves && (k = count_leaves(t, b, &d)) <= 0) {
      if (k < 0) return SC_TERM_NOMEM;
      id = b;
      continue;
    }
    return id;
  }
}

/* Print order of the children of a sum: larger first, then smaller min-leaf, then id. */
static void ordered(const sc_terms *t, uint32_t id, uint32_t *first, uint32_t *second) {
  uint32_t a = t->a[id], b = t->b[id];
  int a_first;
  if (t->size[a] != t->size[b]) a_first = t->size[a] > t->size[b];
  else if (t->minleaf[a] != t->minleaf[b]) a_first = t->minleaf[a] < t->minleaf[b];
  else a_first = a < b;
  *first = a_first ? a : b;
  *second = a_first ? b : a;
}

typedef struct outbuf { char *buf; size_t cap, len; } outbuf;

static void put(outbuf *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++, o->len++)
    if (o->len + 1 < o->cap) o->buf[o->len] = s[i];
}

size_t sc_terms_print(const sc_terms *t, uint32_t id, char *buf, size_t cap) {
  outbuf o = {buf, cap, 0};
  if (id == SC_TERM_UNDEF || id == SC_TERM_POISON || id >= t->n) {
    put(&o, "-", 1);
  } else {
    /* Stack of (term, state): state 0 = open, 1 = between children, 2 = close. */
    size_t scap = 64, sp = 0;
    uint64_t *stack = sc_alloc(scap * sizeof *stack);
    if (!stack) goto oom;
    stack[sp++] = (uint64_t)id << 2;
    while (sp) {
      uint64_t e = stack[--sp];
      uint32_t x = (uint32_t)(e >> 2);
      unsigned st = (unsigned)(e & 3);
      if (x < t->nleaves) {
        char tmp[16];
        int k = snprintf(tmp, sizeof tmp, "r%u", x);
        put(&o, tmp, (size_t)k);
        continue;
      }
      /* Output beyond cap is only counted; stop walking huge (duplicate-laden) trees once the
       * caller's buffer is full and the count no longer matters. */
      if (cap && o.len > cap + 64) { put(&o, "...", 3); break; }
      uint32_t f, s;
      ordered(t, x, &f, &s);
      if (sp + 2 > scap) {
        uint64_t *ns = sc_realloc(stack, scap * 2 * sizeof *ns);
        if (!ns) { free(stack); goto oom; }
        stack = ns;
        scap *= 2;
      }
      if (st == 0) {
        put(&o, "(", 1);
        stack[sp++] = ((uint64_t)x << 2) | 1;
        stack[sp++] = (uint64_t)f << 2;
      } else if (st == 1) {
        put(&o, "+", 1);
        stack[sp++] = ((uint64_t)x << 2) | 2;
        stack[sp++] = (uint64_t)s << 2;
      } else {
        put(&o, ")", 1);
      }
    }
    free(stack);
  }
  if (cap) {
    size_t end = o.len < cap ? o.len : cap - 1;
    buf[end] = 0;
    if (o.len >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
  }
  return o.len;
oom: /* no partial text: a cut tree would read as a different tree */
  if (cap) buf[0] = 0;
  return SIZE_MAX;
}
