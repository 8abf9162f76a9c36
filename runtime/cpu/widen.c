/*
 * widen.c — the widened path's conversions, a slice at a time (sc_widening, cpu.h): a call whose
 * caller type is not its working type (f16/bf16 summed in f32; exact mode's integers, exact.h)
 * widens its inputs as the executor first reads them and narrows a result as it is written to the
 * receive buffer. Per element they are the conversions workbuf.c makes over whole buffers, so the
 * bits are the same wherever a slice is converted.
 */
#include <string.h>

#include "cpu.h"
#include "exact.h"
#include "kernels.h"

void sc_widen(sc_widening *wd, void *dst, const void *src, size_t n, int count) {
  if (wd->ex && count && wd->tally) wd->in_sum += sc_exact_in_summed(wd->ex, wd->dtype, dst, src, n);
  else if (wd->ex) sc_exact_in(wd->ex, wd->dtype, dst, src, n); /* onto the grid (no leaves: sc_widening) */
  else sc_to_acc(wd->dtype, dst, src, n);
}

void sc_narrow(sc_widening *wd, void *dst, const void *src, size_t n, void *scratch) {
  if (wd->ex && wd->tally) { /* rounded once, the integers summed in the same pass */
    wd->out_sum += sc_exact_out_summed(wd->ex, wd->dtype, dst, src, n);
    return;
  }
  if (wd->ex) { /* rounded once; exact avg divides the integers exactly there */
    sc_exact_out(wd->ex, wd->dtype, dst, src, n);
    return;
  }
  if (wd->avg_n) { /* divided once in the working type (as sc_work_out), never in a peer's cells */
    if (src != scratch) memcpy(scratch, src, n * schedc_dtype_size(wd->acc));
    sc_divide(wd->acc, scratch, n, wd->avg_n);
    src = scratch;
  }
  sc_from_acc(wd->dtype, dst, src, n);
}
