/*
 * verify.c — the verifier (see verify.h). One pass over the steps: every transfer of a step
 * first reads its source cell (the value before the step), then the writes are applied in the
 * order written. Cells hold hash-consed terms, so cross-rank identity is an id comparison and a
 * 1024-rank ring checks in well under a second: O(transfers + ranks * chunks * depth-free).
 * Out of memory anywhere (here, in the term store, in the diagnostics) ends the run with -1,
 * never with a verdict: a lost term, count, tree text or diagnostic would make one wrong.
 */
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define TREE_SHOW 160 /* characters of a tree quoted in a diagnostic */

typedef struct vstate {
  const sc_ir *ir;
  sc_diags *d;
  sc_terms *t;
  uint32_t *cell;    /* current term per (rank, chunk) */
  uint32_t *lastw;   /* transfer that last wrote the cell, or SC_TERM_NONE */
  uint32_t *wstamp;  /* step + 1 of the cell's last write */
  uint8_t *wkind;    /* kind of that write */
  uint32_t *vals;    /* per transfer of the current step: the value it read */
  uint32_t vcap;
  int oom;           /* set when a tree's text could not be made (its diagnostic is wrong) */
} vstate;

static void at_xfer(vstate *v, uint32_t xi, uint32_t *file, uint32_t *line) {
  if (xi != SC_TERM_NONE && xi < v->ir->nxfers) {
    *file = v->ir->xfers[xi].file;
    *line = v->ir->xfers[xi].line;
  } else {
    *file = v->ir->decl_file;
    *line = v->ir->decl_line;
  }
}

#define DIAG_AT(v, xi, ...)                          \
  do {                                               \
    uint32_t f_, l_;                                 \
    at_xfer((v), (xi), &f_, &l_);                    \
    sc_diags_add((v)->d, f_, l_, __VA_ARGS__);       \
  } while (0)

int sc_verify_cell_defined(const sc_ir *ir, uint32_t r, uint32_t c) {
  switch (ir->collective) {
  case SCHEDC_REDUCE_SCATTER: return c / sc_ir_block(ir) == r;
  case SCHEDC_REDUCE: return r == ir->root;
  default: return 1;
  }
}

/* Initial term of a cell, per the collective's precondition. */
static uint32_t initial(const sc_ir *ir, uint32_t r, uint32_t c) {
  switch (ir->collective) {
  case SCHEDC_ALLGATHER: return c / sc_ir_block(ir) == r ? r : SC_TERM_UNDEF;
  case SCHEDC_BROADCAST: return r == ir->root ? r : SC_TERM_UNDEF;
  default: return r;
  }
}

static int check_header(const sc_ir *ir, sc_diags *d) {
  int bad = 0;
  const char *cn = sc_ir_collective_name(ir->collective);
  if (!cn) { sc_diags_add(d, ir->decl_file, ir->decl_line, "unknown collective %d", ir->collective); return 1; }
  if (ir->nranks < 1 || ir->nranks > SC_IR_MAX_RANKS) {
    sc_diags_add(d, ir->decl_file, ir->decl_line, "rank count %u out of range [1, %u]", ir->nranks, SC_IR_MAX_RANKS);
    return 1;
  }
  if (ir->nchunks < 1 || ir->nchunks > SC_IR_MAX_CHUNKS ||
      (uint64_t)ir->nranks * ir->nchunks > SC_IR_MAX_CELLS) {
    sc_diags_add(d, ir->decl_file, ir->decl_line, "chunk count %u out of range for %u ranks", ir->nchunks, ir->nranks);
    return 1;
  }
  if ((ir->collective == SCHEDC_REDUCE_SCATTER || ir->collective == SCHEDC_ALLGATHER) &&
      ir->nchunks % ir->nranks) {
    sc_diags_add(d, ir->decl_file, ir->decl_line,
                 "%s needs chunks = k * nranks (got %u chunks for %u ranks)", cn, ir->nchunks, ir->nranks);
    bad = 1;
  }
  if (ir->root >= ir->nranks) {
    sc_diags_add(d, ir->decl_file, ir->decl_line, "root %u out of range [0, %u)", ir->root, ir->nranks);
    bad = 1;
  }
  for (uint32_t i = 0; i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    if (x->src >= ir->nranks || x->dst >= ir->nranks || x->chunk >= ir->nchunks || x->src == x->dst ||
        x->kind > SCHEDC_XFER_COPY || x->step >= ir->nsteps) {
      sc_diags_add(d, x->file, x->line, "malformed transfer %u -> %u of chunk %u in step %u", x->src, x->dst,
                   x->chunk, x->step);
      bad = 1;
    }
  }
  return bad;
}

/* 0, or -1 out of memory (cells then partly updated: the run is over). */
static int run_step(vstate *v, uint32_t s) {
  const sc_ir *ir = v->ir;
  uint32_t lo = ir->step_off[s], hi = ir->step_off[s + 1];
  /* Phase 1: every transfer reads the value its source had before the step. */
  for (uint32_t i = lo; i < hi; i++) {
    const sc_xfer *x = &ir->xfers[i];
    uint32_t val = v->cell[(size_t)x->src * ir->nchunks + x->chunk];
    if (val == SC_TERM_UNDEF) {
      DIAG_AT(v, i, "chunk %u on rank %u holds no value yet in step %u (read by the %s to rank %u)",
              x->chunk, x->src, s, x->kind == SCHEDC_XFER_COPY ? "copy" : "reduce", x->dst);
      val = SC_TERM_POISON;
    }
    v->vals[i - lo] = val;
  }
  /* Phase 2: writes in the order written. */
  for (uint32_t i = lo; i < hi; i++) {
    const sc_xfer *x = &ir->xfers[i];
    size_t c = (size_t)x->dst * ir->nchunks + x->chunk;
    uint32_t val = v->vals[i - lo];
    if (v->wstamp[c] == s + 1 && (v->wkind[c] == SCHEDC_XFER_COPY || x->kind == SCHEDC_XFER_COPY)) {
      DIAG_AT(v, i,
              "chunk %u on rank %u receives a copy and another write in step %u "
              "(per step a chunk takes one copy or any number of reduces)",
              x->chunk, x->dst, s);
      v->cell[c] = SC_TERM_POISON;
      v->lastw[c] = i;
      continue;
    }
    v->wstamp[c] = s + 1;
    v->wkind[c] = x->kind;
    if (x->kind == SCHEDC_XFER_COPY) {
      v->cell[c] = val;
    } else {
      uint32_t cur = v->cell[c];
      if (cur == SC_TERM_UNDEF) {
        DIAG_AT(v, i, "reduce into chunk %u on rank %u, which holds no value yet in step %u (use copy)",
                x->chunk, x->dst, s);
        v->cell[c] = SC_TERM_POISON;
      } else if (cur == SC_TERM_POISON || val == SC_TERM_POISON) {
        v->cell[c] = SC_TERM_POISON;
      } else {
        uint32_t sum = sc_terms_sum(v->t, cur, val, i);
        if (sum == SC_TERM_NOMEM) return -1; /* never stored: a cell holds an id, UNDEF or POISON */
        v->cell[c] = sum;
      }
    }
    v->lastw[c] = i;
  }
  return 0;
}

/* The tree's text for a diagnostic; out of memory marks the run (the text is then ""). */
static const char *tree_txt(vstate *v, uint32_t id, char *buf) {
  if (sc_terms_print(v->t, id, buf, TREE_SHOW) == SIZE_MAX) v->oom = 1;
  return buf;
}

/* Suffix for cells no transfer ever wrote (the diagnostic then points at schedule{}). */
static const char *never(const vstate *v, size_t cell) {
  return v->lastw[cell] == SC_TERM_NONE ? "; no transfer ever writes it" : "";
}

/* Check one cell against its expected content; returns 1 if it is right, 0 if not (reported),
 * -1 out of memory. */
static int check_cell(vstate *v, uint32_t r, uint32_t c, uint32_t want_leaf) {
  const sc_ir *ir = v->ir;
  size_t k = (size_t)r * ir->nchunks + c;
  uint32_t id = v->cell[k], dup, missing, extra;
  char tb[TREE_SHOW];
  if (id == SC_TERM_POISON) return 0;
  if (id == SC_TERM_UNDEF) {
    if (want_leaf == SC_TERM_NONE)
      DIAG_AT(v, v->lastw[k], "chunk %u on rank %u ends with no value (expected the reduction of all ranks)%s", c,
              r, never(v, k));
    else
      DIAG_AT(v, v->lastw[k], "chunk %u on rank %u ends with no value (expected rank %u's data)%s", c, r, want_leaf,
              never(v, k));
    return 0;
  }
  int ok = sc_terms_check(v->t, id, want_leaf, &dup, &missing, &extra);
  if (ok) return ok;
  if (dup != SC_TERM_NONE) {
    /* Blame the transfer that first added a contribution twice, and name the rank it wrote. */
    uint32_t at = sc_terms_first_dup(v->t, id);
    if (at == SC_TERM_NOMEM) return -1;
    uint32_t xi = at == SC_TERM_NONE ? v->lastw[k] : v->t->origin[at];
    uint32_t where = xi != SC_TERM_NONE && xi < ir->nxfers ? ir->xfers[xi].dst : r;
    DIAG_AT(v, xi, "chunk %u on rank %u counts rank %u twice", c, where, dup);
  } else if (want_leaf != SC_TERM_NONE) {
    DIAG_AT(v, v->lastw[k], "chunk %u on rank %u should hold rank %u's data but holds %s%s", c, r, want_leaf,
            tree_txt(v, id, tb), never(v, k));
  } else if (missing != SC_TERM_NONE) {
    /* Blame the transfer that built the incomplete sum (a copy only moved it). */
    DIAG_AT(v, id >= v->t->nleaves ? v->t->origin[id] : v->lastw[k], "chunk %u on rank %u misses the contribution of rank %u (ends with %s)%s", c, r,
            missing, tree_txt(v, id, tb), never(v, k));
  }
  return 0;
}

/* The end-of-run checks; 0, or -1 out of memory. Every check that applies runs: none is
 * skipped for want of memory (that would accept what it rejects). */
static int check_final(vstate *v, sc_verified *out) {
  const sc_ir *ir = v->ir;
  uint32_t n = ir->nranks, C = ir->nchunks, k = sc_ir_block(ir);
  int reduction = ir->collective != SCHEDC_ALLGATHER && ir->collective != SCHEDC_BROADCAST;
  uint32_t canon = SC_TERM_UNDEF; /* UNDEF: no canonical order to check */
  if (reduction && ir->order == SC_ORDER_CANONICAL && (canon = sc_terms_balanced(v->t, 0, n)) == SC_TERM_NOMEM)
    return -1;
  char t1[TREE_SHOW], t2[TREE_SHOW];
  for (uint32_t c = 0; c < C; c++) {
    uint32_t holder = 0;
    if (ir->collective == SCHEDC_REDUCE_SCATTER) holder = c / k;
    else if (ir->collective == SCHEDC_REDUCE) holder = ir->root;
    out->holder[c] = holder;
    uint32_t want = SC_TERM_NONE;
    if (ir->collective == SCHEDC_ALLGATHER) want = c / k;
    if (ir->collective == SCHEDC_BROADCAST) want = ir->root;
    /* The defining rank first, then every other rank that must (or does) hold the result. */
    uint32_t ref = v->cell[(size_t)holder * C + c];
    int ref_ok = check_cell(v, holder, c, want);
    if (ref_ok < 0) return -1;
    if (ref_ok && canon != SC_TERM_UNDEF && ref != canon) {
      DIAG_AT(v, ref >= v->t->nleaves ? v->t->origin[ref] : v->lastw[(size_t)holder * C + c],
              "chunk %u on rank %u is %s, but order = \"canonical\" requires %s; rotated chains such as a "
              "ring's cannot be canonical (direct.lua, hierarchical.lua on aligned nodes, "
              "halving_doubling.lua on a power of two and tree.lua -D shape=binomial can, with -D order=canonical)",
              c, holder, tree_txt(v, ref, t1), tree_txt(v, canon, t2));
    }
    for (uint32_t r = 0; r < n; r++) {
      if (r == holder) continue;
      size_t cell = (size_t)r * C + c;
      uint32_t id = v->cell[cell];
      if (id == ref) continue; /* the same tree: the same verdict, reported once at the holder */
      if (sc_verify_cell_defined(ir, r, c)) {
        int ok = check_cell(v, r, c, want);
        if (ok < 0) return -1;
        if (!ok || !ref_ok) continue;
      } else {
        /* Unspecified cell: only a complete result must agree with the defining rank's. */
        if (!ref_ok || id >= v->t->n || !reduction) continue;
        int full = sc_terms_check(v->t, id, SC_TERM_NONE, NULL, NULL, NULL);
        if (full < 0) return -1;
        if (!full) continue;
      }
      DIAG_AT(v, v->lastw[cell],
              "chunk %u: rank %u ends with %s but rank %u with %s (association differs, so the ranks "
              "would get different bits)",
              c, r, tree_txt(v, id, t1), holder, tree_txt(v, ref, t2));
    }
  }
  return v->oom ? -1 : 0;
}

void sc_verified_free(sc_verified *v) {
  if (!v) return;
  sc_terms_free(&v->terms);
  free(v->final);
  free(v->holder);
  memset(v, 0, sizeof *v);
}

int sc_verify(const sc_ir *ir, sc_verified *out, sc_diags *d) {
  memset(out, 0, sizeof *out);
  uint32_t before = sc_diags_count(d);
  if (check_header(ir, d)) return d->oom ? -1 : 1;
  size_t cells = (size_t)ir->nranks * ir->nchunks;
  vstate v = {.ir = ir, .d = d, .t = &out->terms};
  uint32_t maxstep = 0;
  for (uint32_t s = 0; s < ir->nsteps; s++)
    if (ir->step_off[s + 1] - ir->step_off[s] > maxstep) maxstep = ir->step_off[s + 1] - ir->step_off[s];
  int rc = -1;
  v.cell = sc_alloc(cells * sizeof *v.cell);
  v.lastw = sc_alloc(cells * sizeof *v.lastw);
  v.wstamp = sc_calloc(cells, sizeof *v.wstamp);
  v.wkind = sc_calloc(cells, 1);
  v.vals = sc_alloc(((size_t)maxstep + 1) * sizeof *v.vals);
  out->holder = sc_alloc((size_t)ir->nchunks * sizeof *out->holder);
  if (!v.cell || !v.lastw || !v.wstamp || !v.wkind || !v.vals || !out->holder ||
      sc_terms_init(&out->terms, ir->nranks))
    goto done;
  for (uint32_t r = 0; r < ir->nranks; r++)
    for (uint32_t c = 0; c < ir->nchunks; c++) {
      v.cell[(size_t)r * ir->nchunks + c] = initial(ir, r, c);
      v.lastw[(size_t)r * ir->nchunks + c] = SC_TERM_NONE;
    }
  for (uint32_t s = 0; s < ir->nsteps; s++)
    if (run_step(&v, s)) goto done;
  if (check_final(&v, out)) goto done;
  /* A diagnostic lost to out of memory: the verdict (or its message) would be wrong. */
  if (d->oom) goto done;
  out->final = v.cell;
  v.cell = NULL;
  rc = sc_diags_count(d) != before;
done:
  free(v.cell);
  free(v.lastw);
  free(v.wstamp);
  free(v.wkind);
  free(v.vals);
  if (rc != 0) sc_verified_free(out);
  return rc;
}
