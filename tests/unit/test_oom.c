/*
 * test_oom.c — out of memory in the verifier is SCHEDC_ENOMEM, never a verdict. For each
 * schedule, and for the term store on its own, the n-th allocation fails (sc_alloc_fail_after)
 * for n = 1, 2, ... until a run completes without reaching it; every run must give either the
 * failure-free run's result exactly or, when the failure happened, out of memory. Run under
 * ASan too: a leak or bad access on any failure path fails the test there.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "alloc.h"
#include "dsl.h"
#include "plan.h"
#include "terms.h"

#define MAX_RUNS 100000 /* far above any case's allocation count: a guard against a runaway loop */

/* Load a schedule script (no failure armed: the DSL is not under test). 0 or -1. */
static int load(const char *dir, const char *file, uint32_t nranks, const char *define, sc_ir *ir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  const char *defs[1] = {define};
  sc_dsl_opts o = {nranks, 0, NULL, defs, define ? 1 : 0, 0, 0, 0, NULL};
  char *err = NULL;
  int st = sc_dsl_load(path, &o, ir, &err);
  if (st != SCHEDC_OK) fprintf(stderr, "%s: %s\n", path, err ? err : "?");
  free(err);
  return st == SCHEDC_OK ? 0 : -1;
}

/* What a run produced: the status, errmsg, and for a plan its hash, flag and every proven tree. */
typedef struct result {
  schedc_status st;
  char *msg;
  uint64_t hash;
  int canonical;
  char *trees; /* every (chunk, rank) tree, one per line */
} result;

static void result_free(result *r) {
  free(r->msg);
  free(r->trees);
  memset(r, 0, sizeof *r);
}

/* sc_plan_make on a copy of ir with the n-th allocation failing (n = 0: none). The hook is
 * disarmed again before anything else allocates, so only the verification is under test. */
static result make(const sc_ir *ir, unsigned long n, int *fired) {
  result r = {0};
  sc_ir copy;
  if (sc_ir_copy(&copy, ir)) { r.st = SCHEDC_EINTERNAL; return r; }
  schedc_plan *p = NULL;
  sc_alloc_fail_after(n);
  r.st = sc_plan_make(&copy, &p);
  *fired = sc_alloc_fail_fired();
  sc_alloc_fail_after(0);
  r.msg = strdup(schedc_errmsg());
  if (r.st != SCHEDC_OK) {
    if (p) r.st = SCHEDC_EINTERNAL; /* a failure leaves no plan */
    return r;
  }
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(p, &in);
  r.hash = in.hash;
  r.canonical = in.canonical;
  size_t cap = (size_t)in.nchunks * in.nranks * 1024 + 1, len = 0;
  r.trees = calloc(cap, 1);
  for (int c = 0; r.trees && c < in.nchunks; c++)
    for (int k = 0; k < in.nranks; k++) {
      long m = schedc_plan_order(p, c, k, r.trees + len, cap - len - 1);
      if (m < 0 || (size_t)m + 1 >= cap - len) { r.st = SCHEDC_EINTERNAL; break; }
      len += (size_t)m;
      r.trees[len++] = '\n';
    }
  schedc_plan_free(p);
  return r;
}

/* Equal results: for a plan every proven tree, for a failure the message (errmsg is only
 * defined after a failure). */
static int same(const result *a, const result *b) {
  if (a->st != b->st) return 0;
  if (a->st != SCHEDC_OK) return a->msg && b->msg && strcmp(a->msg, b->msg) == 0;
  return a->hash == b->hash && a->canonical == b->canonical && a->trees && b->trees && strcmp(a->trees, b->trees) == 0;
}

/* One schedule: the failure-free verdict must be `want` (and its message contain `says`), then
 * every injected failure must give that same result or SCHEDC_ENOMEM (when it fired: a failure
 * that fired and was absorbed is a check that may not have run). */
static void sweep(const char *what, const sc_ir *ir, schedc_status want, const char *says) {
  int fired;
  result ref = make(ir, 0, &fired);
  CHECK(!fired);
  CHECK(ref.st == want);
  if (says) CHECK_CONTAINS(ref.msg, says);
  int bad = 0;
  unsigned long n = 1;
  for (; n < MAX_RUNS && !bad; n++) {
    result r = make(ir, n, &fired);
    if (fired) {
      if (r.st != SCHEDC_ENOMEM || !strstr(r.msg, "out of memory")) {
        fprintf(stderr, "%s: allocation %lu failed, but the result is status %d: %.300s\n", what, n, (int)r.st, r.msg);
        bad = 1;
      }
    } else if (!same(&r, &ref)) {
      fprintf(stderr, "%s: allocation %lu was not reached, but the result differs: status %d: %.300s\n", what, n,
              (int)r.st, r.msg);
      bad = 1;
    }
    result_free(&r);
    if (!fired) break; /* the run completed before its n-th allocation: every point was tried */
  }
  CHECK(!bad);
  CHECK(n > 1 && n < MAX_RUNS);
  printf("%s: status %d; allocations 1..%lu failed in turn\n", what, (int)ref.st, n - 1);
  result_free(&ref);
}

static void sweep_file(const char *dir, const char *file, uint32_t nranks, const char *define, schedc_status want,
                       const char *says) {
  sc_ir ir;
  char what[256];
  snprintf(what, sizeof what, "%s on %u ranks%s%s", file, nranks, define ? " -D " : "", define ? define : "");
  CHECK(load(dir, file, nranks, define, &ir) == 0);
  sweep(what, &ir, want, says);
  sc_ir_free(&ir);
}

/* A plan file's IR with a transfer to a rank that does not exist: rejected by the header checks,
 * before any cell exists. */
static void sweep_malformed(void) {
  sc_ir ir;
  sc_ir_init(&ir);
  ir.name = strdup("t");
  ir.collective = SCHEDC_ALLREDUCE;
  ir.nranks = 2;
  ir.nchunks = 1;
  ir.nsteps = 1;
  sc_xfer x = {.src = 0, .dst = 5, .chunk = 0, .step = 0, .line = 100, .file = 0, .kind = SCHEDC_XFER_REDUCE};
  CHECK(ir.name && sc_ir_file(&ir, "t.lua") == 0 && sc_ir_add(&ir, &x) == 0 && sc_ir_finish(&ir) == 0);
  sweep("a malformed transfer", &ir, SCHEDC_EVERIFY, "t.lua:100: malformed transfer 0 -> 5");
  sc_ir_free(&ir);
}

/* ---- the term store on its own ----------------------------------------------------------------
 * A store of L leaves with the terms that make every traversal leave its fixed-size start: a
 * 300-deep term whose walk keeps a sibling pending per level (count_leaves' stack beyond 256,
 * sc_terms_print's beyond 64), the duplicate above it (sc_terms_first_dup), the balanced tree
 * (sc_terms_balanced) and enough sums to grow the arrays three times and the hash table once. */
enum { L = 601, DEEP = 300 };

typedef struct tres {
  int oom;                         /* some call said out of memory (the walk stopped there) */
  int invalid;                     /* some call gave neither a term nor out of memory */
  uint32_t deep, dup_at, balanced, last;
  int check;
  size_t printed;
  char text[64];
} tres;

/* A term id from the store: 1 to go on; else the walk stops, marking out of memory or (any
 * other non-id, which later calls must never be given) an invalid answer. */
static int term_ok(tres *r, const sc_terms *t, uint32_t id) {
  if (id < t->n) return 1;
  if (id == SC_TERM_NOMEM) r->oom = 1;
  else r->invalid = 1;
  return 0;
}

static tres term_walk(void) {
  tres r = {0};
  sc_terms t;
  if (sc_terms_init(&t, L)) { r.oom = 1; return r; }
  /* x = (..((r0 + (r1+r2)) + (r3+r4)) ..): each (r2k-1 + r2k) is made after the term it joins,
   * so it is the larger id, the child a walk leaves pending. */
  uint32_t x = 0, n0 = 0;
  int go = 1;
  for (uint32_t k = 1; k <= DEEP && go; k++) {
    n0 = t.n;
    uint32_t s = sc_terms_sum(&t, 2 * k - 1, 2 * k, k);
    if ((go = term_ok(&r, &t, s))) {
      n0 = t.n;
      go = term_ok(&r, &t, x = sc_terms_sum(&t, x, s, k));
    }
  }
  if (r.oom) CHECK(t.n == n0); /* a failed insertion changes nothing */
  r.deep = x;
  if (go) {
    r.check = sc_terms_check(&t, x, SC_TERM_NONE, NULL, NULL, NULL);
    go = !(r.oom = r.check < 0);
  }
  if (go) {
    uint32_t d = sc_terms_sum(&t, x, 0, 0); /* r0 twice */
    if ((go = term_ok(&r, &t, d)) && (go = term_ok(&r, &t, r.dup_at = sc_terms_first_dup(&t, d))))
      CHECK(r.dup_at == d);
  }
  if (go) {
    r.printed = sc_terms_print(&t, x, r.text, sizeof r.text);
    go = !(r.oom = r.printed == SIZE_MAX);
    if (r.oom) CHECK(r.text[0] == 0);
  }
  if (go) go = term_ok(&r, &t, r.balanced = sc_terms_balanced(&t, 0, L));
  for (uint32_t i = 0; i + 5 < L && go; i++)
    for (uint32_t g = 2; g <= 5 && go; g++) {
      n0 = t.n;
      go = term_ok(&r, &t, r.last = sc_terms_sum(&t, i, i + g, 0));
      if (r.oom) {
        /* Nothing changed, and the store still works: the same sum now (the failure happens
         * once) is the next id, found again by lookup in either order. */
        CHECK(t.n == n0);
        uint32_t again = sc_terms_sum(&t, i + g, i, 0);
        CHECK(again == n0 && sc_terms_sum(&t, i, i + g, 0) == again);
        CHECK(sc_terms_check(&t, again, SC_TERM_NONE, NULL, NULL, NULL) == 0);
      }
    }
  sc_terms_free(&t);
  return r;
}

static void sweep_terms(void) {
  tres ref = term_walk();
  CHECK(!ref.oom && !ref.invalid && ref.check == 1 && ref.printed > sizeof ref.text);
  int bad = 0;
  unsigned long n = 1;
  for (; n < MAX_RUNS && !bad; n++) {
    sc_alloc_fail_after(n);
    tres r = term_walk();
    int fired = sc_alloc_fail_fired();
    sc_alloc_fail_after(0);
    /* A failure absorbed, one reported that did not happen, or an answer that is neither. */
    bad = fired != r.oom || r.invalid;
    if (!fired && (r.deep != ref.deep || r.check != ref.check || r.dup_at != ref.dup_at || r.printed != ref.printed ||
                   strcmp(r.text, ref.text) || r.balanced != ref.balanced || r.last != ref.last))
      bad = 1;
    if (bad)
      fprintf(stderr, "term store: allocation %lu: failed %d, out of memory said %d, invalid answer %d\n", n, fired,
              r.oom, r.invalid);
    if (!fired) break;
  }
  CHECK(!bad);
  CHECK(n > 1 && n < MAX_RUNS);
  printf("term store: allocations 1..%lu failed in turn\n", n - 1);
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: test_oom SCHEDULES_DIR FAILS_DIR\n"); return 2; }
  const char *sched = argv[1], *fails = argv[2];
  sweep_terms();
  /* Accepted: a ring, the canonical halving_doubling; a 64-rank ring grows the term arrays and
   * rehashes while the steps run (where a lost sum once read as "holds no value"). */
  sweep_file(sched, "ring.lua", 8, NULL, SCHEDC_OK, NULL);
  sweep_file(sched, "halving_doubling.lua", 8, "order=canonical", SCHEDC_OK, NULL);
  sweep_file(sched, "ring.lua", 64, NULL, SCHEDC_OK, NULL);
  /* Rejected: a ring declared canonical. On 32 ranks the term arrays are exactly full when the
   * balanced tree is built (32 leaves + 32 * 31 sums = 1024), so its first sum allocates: the
   * failure that once skipped the canonical check and accepted the ring. 64 ranks give more
   * diagnostics than are shown ("... and 14 more errors"). */
  sweep_file(sched, "ring.lua", 8, "order=canonical", SCHEDC_EVERIFY, "order = \"canonical\" requires");
  sweep_file(sched, "ring.lua", 32, "order=canonical", SCHEDC_EVERIFY, "order = \"canonical\" requires");
  sweep_file(sched, "ring.lua", 64, "order=canonical", SCHEDC_EVERIFY, "and 14 more errors");
  /* Every other kind of rejection (blame of a double count, trees quoted in messages, reads of
   * cells that legitimately hold no value). */
  sweep_file(fails, "double_count.lua", 3, NULL, SCHEDC_EVERIFY, "counts rank 1 twice");
  sweep_file(fails, "missing_contribution.lua", 4, NULL, SCHEDC_EVERIFY, "misses the contribution");
  sweep_file(fails, "assoc_differs.lua", 4, NULL, SCHEDC_EVERIFY, "association differs");
  sweep_file(fails, "copy_conflict.lua", 3, NULL, SCHEDC_EVERIFY, "receives a copy and another write");
  sweep_file(fails, "never_written.lua", 3, NULL, SCHEDC_EVERIFY, "no transfer ever writes it");
  sweep_file(fails, "reduce_undefined.lua", 2, NULL, SCHEDC_EVERIFY, "holds no value");
  sweep_file(fails, "undefined_read.lua", 3, NULL, SCHEDC_EVERIFY, "holds no value");
  sweep_malformed();
  return DONE();
}
