/*
 * test_verify.c — the verifier on IR built directly (as a plan file would deliver it): step
 * semantics (reads see the value before the step; writes apply in order), and each rejection.
 */
#include <stdlib.h>

#include "../check.h"
#include "verify.h"

typedef struct { uint32_t step, kind, src, dst, chunk; } X;

static sc_ir make(int coll, uint32_t n, uint32_t C, const X *xs, int nx) {
  sc_ir ir;
  sc_ir_init(&ir);
  ir.name = strdup("t");
  ir.collective = coll;
  ir.nranks = n;
  ir.nchunks = C;
  sc_ir_file(&ir, "t.lua");
  for (int i = 0; i < nx; i++) {
    sc_xfer x = {.src = xs[i].src, .dst = xs[i].dst, .chunk = xs[i].chunk, .step = xs[i].step,
                 .line = (uint32_t)(100 + i), .file = 0, .kind = (uint8_t)xs[i].kind};
    sc_ir_add(&ir, &x);
    if (xs[i].step + 1 > ir.nsteps) ir.nsteps = xs[i].step + 1;
  }
  sc_ir_finish(&ir);
  return ir;
}

/* Verify; returns the rendered diagnostics ("" if accepted) and the tree of (r, c) in tree. */
static char *run(sc_ir *ir, uint32_t r, uint32_t c, char *tree, size_t cap) {
  sc_verified v;
  sc_diags d;
  sc_diags_init(&d);
  int rc = sc_verify(ir, &v, &d);
  char *msg = rc ? sc_diags_render(&d, ir, 50) : strdup("");
  if (rc == 0) {
    sc_terms_print(&v.terms, v.final[r * ir->nchunks + c], tree, cap);
    sc_verified_free(&v);
  } else {
    snprintf(tree, cap, "rejected");
  }
  sc_diags_free(&d);
  sc_ir_free(ir);
  return msg;
}

enum { R = SCHEDC_XFER_REDUCE, CP = SCHEDC_XFER_COPY };

int main(void) {
  char tree[256];
  char *m;
  /* pairwise exchange in one step: both read the other's old value */
  X pair[] = {{0, R, 0, 1, 0}, {0, R, 1, 0, 0}};
  sc_ir ir = make(SCHEDC_ALLREDUCE, 2, 1, pair, 2);
  m = run(&ir, 1, 0, tree, sizeof tree);
  CHECK_EQ_STR(m, "");
  CHECK_EQ_STR(tree, "(r0+r1)");
  free(m);

  /* a chain inside one step does not see the first write: 0->1, 1->2 gives rank 2 (r1+r2) */
  X chain[] = {{0, R, 0, 1, 0}, {0, R, 1, 2, 0}, {1, R, 0, 2, 0}, {2, CP, 2, 0, 0}, {2, CP, 2, 1, 0}};
  ir = make(SCHEDC_ALLREDUCE, 3, 1, chain, 5);
  m = run(&ir, 2, 0, tree, sizeof tree);
  CHECK_EQ_STR(m, "");
  CHECK_EQ_STR(tree, "((r1+r2)+r0)");
  free(m);

  /* a parent receiving two children in one step: (own + first) + second */
  X par[] = {{0, R, 3, 0, 0}, {0, R, 1, 0, 0}, {0, R, 2, 0, 0}, {1, CP, 0, 1, 0}, {1, CP, 0, 2, 0}, {1, CP, 0, 3, 0}};
  ir = make(SCHEDC_ALLREDUCE, 4, 1, par, 6);
  m = run(&ir, 2, 0, tree, sizeof tree);
  CHECK_EQ_STR(tree, "(((r0+r3)+r1)+r2)");
  free(m);

  /* copy and reduce into the same cell in one step */
  X conf[] = {{0, CP, 0, 1, 0}, {0, R, 0, 1, 0}};
  ir = make(SCHEDC_BROADCAST, 2, 1, conf, 2);
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "t.lua:101: chunk 0 on rank 1 receives a copy and another write in step 0");
  free(m);

  /* undefined read (allgather: rank 1 holds only chunk 1) */
  X und[] = {{0, CP, 1, 0, 0}};
  ir = make(SCHEDC_ALLGATHER, 2, 2, und, 1);
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "t.lua:100: chunk 0 on rank 1 holds no value yet in step 0 (read by the copy to rank 0)");
  free(m);

  /* reduce into an undefined cell */
  X und2[] = {{0, R, 0, 1, 0}};
  ir = make(SCHEDC_BROADCAST, 2, 1, und2, 1);
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "reduce into chunk 0 on rank 1, which holds no value yet");
  free(m);

  /* double count, blamed at the transfer that created it */
  X dbl[] = {{0, R, 0, 1, 0}, {1, R, 0, 1, 0}, {2, CP, 1, 0, 0}};
  ir = make(SCHEDC_ALLREDUCE, 2, 1, dbl, 3);
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "t.lua:101: chunk 0 on rank 1 counts rank 0 twice"); /* where it arose, not where it was copied */
  free(m);

  /* different association on different ranks */
  X assoc[] = {{0, R, 1, 0, 0}, {0, R, 2, 0, 0}, {0, R, 0, 2, 0}, {0, R, 1, 2, 0}, {1, CP, 0, 1, 0}};
  ir = make(SCHEDC_ALLREDUCE, 3, 1, assoc, 5);
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "chunk 0: rank 2 ends with ((r0+r2)+r1) but rank 0 with ((r0+r1)+r2)");
  free(m);

  /* malformed transfers from a (crafted) plan file */
  X mal[] = {{0, R, 0, 5, 0}};
  ir = make(SCHEDC_ALLREDUCE, 2, 1, mal, 1);
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "malformed transfer 0 -> 5");
  free(m);

  /* reduce_scatter: other ranks' partials are unspecified and not compared */
  X rs[] = {{0, R, 1, 0, 0}, {0, R, 0, 1, 1}};
  ir = make(SCHEDC_REDUCE_SCATTER, 2, 2, rs, 2);
  m = run(&ir, 1, 1, tree, sizeof tree);
  CHECK_EQ_STR(m, "");
  CHECK_EQ_STR(tree, "(r0+r1)");
  free(m);

  /* canonical: a 4-rank chain is rejected, the balanced tree accepted */
  X ch4[] = {{0, R, 1, 0, 0}, {0, R, 2, 0, 0}, {0, R, 3, 0, 0}};
  ir = make(SCHEDC_REDUCE, 4, 1, ch4, 3);
  ir.order = SC_ORDER_CANONICAL;
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_CONTAINS(m, "requires ((r0+r1)+(r2+r3))");
  free(m);
  X bal[] = {{0, R, 1, 0, 0}, {0, R, 3, 2, 0}, {1, R, 2, 0, 0}};
  ir = make(SCHEDC_REDUCE, 4, 1, bal, 3);
  ir.order = SC_ORDER_CANONICAL;
  m = run(&ir, 0, 0, tree, sizeof tree);
  CHECK_EQ_STR(m, "");
  CHECK_EQ_STR(tree, "((r0+r1)+(r2+r3))");
  free(m);
  return DONE();
}
