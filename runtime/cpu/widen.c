/*
 * widen.c — the widened path's conversions, a slice at a time (sc_widening, cpu.h): a call whose
 * caller type is not its working type (f16/bf16 summed in f32; exact mode's integers, exact.h)
 * widens its inputs as the executor first reads them and narrows a result as it is written to the
 * receive buffer. Per element they are the conversions workbuf.c makes over whole buffers, so the
 * bits are the same wherever a slice is converted.
 */
#include <stdint.h>
#include <stdlib.h>
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

/* sc_narrow_plan (cpu.h): which final versions travel in the caller's type. Per cell (r, ch) of
 * the whole plan: its last write (group index, version); `ok` while every reader of that version
 * is a phase B single-source copy that is its own rank's last write of ch, and that reader's
 * version, if anyone reads it, is ok too. The last condition runs along copy chains (a ring's
 * allgather: each copy read by the next rank's), so it is settled by sweeps until nothing
 * changes, from the last group backwards (one sweep plus the check, for plans whose chains run
 * in rank order). A function of the plan alone: every rank finds the same table. */
enum { NAR_NONE = UINT32_MAX };
const uint8_t *sc_narrow_plan(schedc_comm *c, const sc_prog *p, uint64_t hash, size_t K, const uint8_t **need) {
  sc_cpu *x = sc_cpu_of(c);
  uint32_t R = p->nranks, C = p->nchunks, me = (uint32_t)c->rank;
  const sc_rankprog *mp = &p->rank[me];
  size_t cells = (size_t)R * C;
  size_t bytes = cells * (2 * sizeof(uint32_t) + 2) + mp->ng + R;
  uint32_t *last = x->nar, *fin = last + cells; /* per cell: its last write's group, its version */
  uint8_t *ok = (uint8_t *)(fin + cells), *read = ok + cells, *flags = read + cells, *from = flags + mp->ng;
  /* the table of the last call's plan is this one's when the plan is (its address, and its hash for
   * a plan freed and another made at the same address) */
  if (x->nar && x->nar_prog == p && x->nar_hash == hash) goto need;
  x->nar_prog = NULL;
  if (bytes > x->nar_cap) {
    void *t = realloc(x->nar, bytes);
    if (!t) return NULL;
    x->nar = t;
    x->nar_cap = bytes;
  }
  last = x->nar, fin = last + cells;
  ok = (uint8_t *)(fin + cells), read = ok + cells, flags = read + cells, from = flags + mp->ng;
  for (size_t i = 0; i < cells; i++) last[i] = NAR_NONE, fin[i] = 0, read[i] = 0;
  for (uint32_t r = 0; r < R; r++)
    for (uint32_t gi = p->rank[r].g_off; gi < p->rank[r].g_off + p->rank[r].ng; gi++)
      if (p->groups[gi].phase != SC_PH_A) {
        last[(size_t)r * C + p->groups[gi].chunk] = gi;
        fin[(size_t)r * C + p->groups[gi].chunk] = p->groups[gi].version;
      }
  for (size_t i = 0; i < cells; i++) /* read: the lowering's word for it (pub_read), and the readers found below */
    ok[i] = last[i] != NAR_NONE, read[i] = ok[i] && p->groups[last[i]].pub_read;
  /* the readers: any that does more than copy the final version into its own final one spoils it */
  for (uint32_t q = 0; q < R; q++)
    for (uint32_t gi = p->rank[q].g_off; gi < p->rank[q].g_off + p->rank[q].ng; gi++) {
      const sc_group *g = &p->groups[gi];
      if (g->phase == SC_PH_C) continue; /* a write-back reads its own temp only */
      int copies = g->copy && g->nsrc == 1 && g->phase == SC_PH_B && last[(size_t)q * C + g->chunk] == gi;
      for (uint32_t s = 0; s < g->nsrc; s++) {
        const sc_src *sr = &p->srcs[g->src_off + s];
        size_t cell = (size_t)sr->rank * C + g->chunk;
        if (last[cell] == NAR_NONE || sr->version != fin[cell]) continue; /* an earlier version */
        read[cell] = 1;
        if (!copies) ok[cell] = 0;
      }
    }
  /* ... and a copy whose own final version is read but not carried narrowed needs its source in the
   * working type: backwards, so a chain's later links are settled first */
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t q = R; q-- > 0;)
      for (uint32_t gi = p->rank[q].g_off + p->rank[q].ng; gi-- > p->rank[q].g_off;) {
        const sc_group *g = &p->groups[gi];
        size_t mine = (size_t)q * C + g->chunk;
        if (g->phase != SC_PH_B || !g->copy || g->nsrc != 1 || last[mine] != gi || !read[mine] || ok[mine])
          continue;
        const sc_src *sr = &p->srcs[g->src_off];
        size_t cell = (size_t)sr->rank * C + g->chunk;
        if (ok[cell] && sr->version == fin[cell]) ok[cell] = 0, changed = 1;
      }
  }
  for (uint32_t i = 0; i < mp->ng; i++) {
    uint32_t gi = mp->g_off + i;
    const sc_group *g = &p->groups[gi];
    size_t mine = (size_t)me * C + g->chunk;
    flags[i] = 0;
    if (g->phase == SC_PH_A || last[mine] != gi) continue;
    if (ok[mine]) flags[i] |= SC_NAR_PUB;
    if (g->phase == SC_PH_B && g->copy && g->nsrc == 1) {
      const sc_src *sr = &p->srcs[g->src_off];
      size_t cell = (size_t)sr->rank * C + g->chunk;
      /* ok[cell] implies that this copy's own version is ok or unread (the sweeps) */
      if (ok[cell] && sr->version == fin[cell] && (ok[mine] || !read[mine])) flags[i] |= SC_NAR_READ;
    }
  }
  x->nar_prog = p;
  x->nar_hash = hash;
need: /* per call (K decides which chunks are empty): the peers this rank reads narrowed bits from */
  memset(from, 0, R);
  for (uint32_t i = 0; i < mp->ng; i++) {
    size_t lo, hi;
    sc_chunk_range(K, C, p->groups[mp->g_off + i].chunk, &lo, &hi);
    if ((flags[i] & SC_NAR_READ) && hi > lo) from[p->srcs[p->groups[mp->g_off + i].src_off].rank] = 1;
  }
  *need = from;
  return flags;
}
