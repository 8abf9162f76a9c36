/*
 * builtin.c — the built-in ring (see builtin.h), transfer for transfer the same as
 * schedules/ring.lua with k = 1, so its plan hash equals the script's.
 */
#include "builtin.h"

#include <stdlib.h>
#include <string.h>

static int add(sc_ir *ir, uint32_t step, int kind, uint32_t src, uint32_t dst, uint32_t chunk) {
  sc_xfer x = {.src = src, .dst = dst, .chunk = chunk, .step = step, .line = 0, .file = 0, .kind = (uint8_t)kind};
  if (step + 1 > ir->nsteps) ir->nsteps = step + 1;
  return sc_ir_add(ir, &x);
}

int sc_builtin_ring(sc_ir *ir, int coll, uint32_t n, uint32_t root) {
  sc_ir_init(ir);
  if (n < 1 || n > SC_IR_MAX_RANKS || root >= n || !sc_ir_collective_name(coll)) return -1;
  ir->name = strdup("ring");
  ir->node_of = calloc(n, sizeof *ir->node_of);
  if (!ir->name || !ir->node_of || sc_ir_file(ir, "[builtin ring]") < 0) goto fail;
  ir->collective = coll;
  ir->nranks = n;
  ir->nchunks = n;
  ir->root = coll == SCHEDC_BROADCAST || coll == SCHEDC_REDUCE ? root : 0;
  uint32_t step = 0;
  int rc = 0;
#define MOD(x) ((uint32_t)((((int64_t)(x)) % (int64_t)n + (int64_t)n) % (int64_t)n))
  if (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_REDUCE_SCATTER) {
    for (uint32_t t = 0; t + 1 < n; t++, step++)
      for (uint32_t r = 0; r < n; r++) rc |= add(ir, step, SCHEDC_XFER_REDUCE, r, MOD(r + 1), MOD((int64_t)r - 1 - t));
  }
  if (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER) {
    for (uint32_t t = 0; t + 1 < n; t++, step++)
      for (uint32_t r = 0; r < n; r++) rc |= add(ir, step, SCHEDC_XFER_COPY, r, MOD(r + 1), MOD((int64_t)r - t));
  }
  if (coll == SCHEDC_REDUCE || coll == SCHEDC_BROADCAST) {
    int red = coll == SCHEDC_REDUCE;
    for (uint32_t t = 0; n > 1 && t < 2 * n - 2; t++, step++)
      for (uint32_t c = 0; c < n; c++) {
        int64_t h = (int64_t)t - c;
        if (h < 0 || h >= (int64_t)n - 1) continue;
        if (red) rc |= add(ir, step, SCHEDC_XFER_REDUCE, MOD(root + 1 + h), MOD(root + 2 + h), c);
        else rc |= add(ir, step, SCHEDC_XFER_COPY, MOD(root + h), MOD(root + h + 1), c);
      }
  }
#undef MOD
  if (rc || sc_ir_finish(ir)) goto fail;
  return 0;
fail:
  sc_ir_free(ir);
  return -1;
}
