/*
 * cuda_split.c — phases of a plan split across nodes (see cuda_split.h). Every constraint is
 * "phase(x) >= phase(y) + w" with w 0 or 1, one per edge of the plan's wait graph (program order,
 * a read after its write, an overwrite after the reads of the old version), except that a
 * cross-node read is served from a mirror filled at the boundary after its writer's phase: the
 * reader gets w = 1 from the writer, and the next overwrite waits for that boundary instead of
 * for the read. Those edges follow paths of the wait graph, which is acyclic for a verified
 * plan, so the longest-path relaxation below settles.
 */
#include "cuda_split.h"

#include <stdlib.h>
#include <string.h>

void sc_split_free(sc_split *s) {
  if (!s) return;
  free(s->phase);
  free(s->wait_reads);
  free(s->final_reads);
  free(s->slot);
  free(s->nslots);
  free(s->copies);
  memset(s, 0, sizeof *s);
}

static int max_i(int a, int b) { return a > b ? a : b; }

int sc_split_build(const sc_prog *prog, const uint32_t *node, int input_phase, sc_split *out) {
  memset(out, 0, sizeof *out);
  uint32_t n = prog->nranks, C = prog->nchunks, V = prog->nsteps + 1, G = 0, NS = 0;
  for (uint32_t r = 0; r < n; r++) G += prog->rank[r].ng;
  for (uint32_t g = 0; g < G; g++) NS = max_i((int)NS, (int)(prog->groups[g].src_off + prog->groups[g].nsrc));
  size_t cv = (size_t)n * C * V; /* (rank, chunk, version) */
  int32_t *pub = malloc(cv * sizeof *pub);             /* group publishing that version; -1: the input */
  uint32_t *remote = calloc(cv, sizeof *remote);       /* cross-node reads of that version */
  uint32_t *rd_off = calloc(cv + 1, sizeof *rd_off);   /* readers of that version (CSR) */
  uint32_t *rd = malloc(((size_t)NS + 1) * sizeof *rd);
  uint32_t *owner = malloc(((size_t)G + 1) * sizeof *owner); /* rank of each group */
  out->phase = calloc((size_t)G + 1, sizeof *out->phase);
  out->wait_reads = malloc(((size_t)G + 1) * sizeof *out->wait_reads);
  out->final_reads = malloc(((size_t)n * C + 1) * sizeof *out->final_reads);
  out->slot = malloc(((size_t)NS + 1) * sizeof *out->slot);
  out->nslots = calloc(n, sizeof *out->nslots);
  out->copies = malloc(((size_t)NS + 1) * sizeof *out->copies);
  int rc = -1;
  if (!pub || !remote || !rd_off || !rd || !owner || !out->phase || !out->wait_reads || !out->final_reads ||
      !out->slot || !out->nslots || !out->copies)
    goto done;
  for (size_t i = 0; i < cv; i++) pub[i] = -1;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t i = 0; i < prog->rank[r].ng; i++) {
      uint32_t gi = prog->rank[r].g_off + i;
      const sc_group *g = &prog->groups[gi];
      owner[gi] = r;
      if (g->phase != SC_PH_A) pub[((size_t)r * C + g->chunk) * V + g->version] = (int32_t)gi;
    }
#define CELLV(q, c, v) (((size_t)(q) * C + (c)) * V + (v))
#define NODE(q) node[q]
  /* readers of each version, and how many of them are across nodes */
  for (uint32_t gi = 0; gi < G; gi++) {
    const sc_group *g = &prog->groups[gi];
    for (uint32_t s = 0; g->phase != SC_PH_C && s < g->nsrc; s++) {
      const sc_src *x = &prog->srcs[g->src_off + s];
      rd_off[CELLV(x->rank, g->chunk, x->version) + 1]++;
      if (NODE(x->rank) != NODE(owner[gi])) remote[CELLV(x->rank, g->chunk, x->version)]++;
    }
  }
  for (size_t i = 0; i < cv; i++) rd_off[i + 1] += rd_off[i];
  {
    uint32_t *fill = malloc((cv + 1) * sizeof *fill);
    if (!fill) goto done;
    memcpy(fill, rd_off, (cv + 1) * sizeof *fill);
    for (uint32_t gi = 0; gi < G; gi++) {
      const sc_group *g = &prog->groups[gi];
      for (uint32_t s = 0; g->phase != SC_PH_C && s < g->nsrc; s++) {
        const sc_src *x = &prog->srcs[g->src_off + s];
        rd[fill[CELLV(x->rank, g->chunk, x->version)]++] = gi;
      }
    }
    free(fill);
  }
  /* longest-path relaxation; the input counts as published in phase input_phase */
  int changed = 1;
  for (uint32_t it = 0; changed; it++) {
    if (it > G + 1) { rc = -2; goto done; }
    changed = 0;
    for (uint32_t r = 0; r < n; r++) {
      int prev = 0;
      for (uint32_t i = 0; i < prog->rank[r].ng; i++) {
        uint32_t gi = prog->rank[r].g_off + i;
        const sc_group *g = &prog->groups[gi];
        int p = prev;
        for (uint32_t s = 0; g->phase != SC_PH_C && s < g->nsrc; s++) { /* after the writes it reads */
          const sc_src *x = &prog->srcs[g->src_off + s];
          int32_t w = pub[CELLV(x->rank, g->chunk, x->version)];
          int wp = w >= 0 ? out->phase[w] : input_phase;
          p = max_i(p, NODE(x->rank) != NODE(r) ? wp + 1 : wp);
        }
        if (g->phase != SC_PH_A && g->version >= 1) { /* an overwrite: after the old version's reads */
          size_t old = CELLV(r, g->chunk, g->version - 1);
          int32_t w = pub[old];
          for (uint32_t k = rd_off[old]; k < rd_off[old + 1]; k++)
            p = max_i(p, NODE(owner[rd[k]]) != NODE(r) ? (w >= 0 ? out->phase[w] : input_phase) + 1 : out->phase[rd[k]]);
        }
        if (p != out->phase[gi]) { out->phase[gi] = p; changed = 1; }
        prev = p;
      }
    }
  }
  for (uint32_t gi = 0; gi < G; gi++)
    if ((uint32_t)out->phase[gi] + 1 > out->nphases) out->nphases = (uint32_t)out->phase[gi] + 1;
  if (!out->nphases) out->nphases = 1;
  /* counts without the cross-node readers (they read mirrors, and count nowhere) */
  for (uint32_t gi = 0; gi < G; gi++) {
    const sc_group *g = &prog->groups[gi];
    uint32_t w = g->wait_reads;
    for (uint32_t v = 0; g->phase != SC_PH_A && v < g->version && v < V; v++) w -= remote[CELLV(owner[gi], g->chunk, v)];
    out->wait_reads[gi] = w;
  }
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t c = 0; c < C; c++) {
      uint32_t f = prog->rank[r].final_reads[c];
      for (uint32_t v = 0; v < V; v++) f -= remote[CELLV(r, c, v)];
      out->final_reads[(size_t)r * C + c] = f;
    }
  /* mirror slots: one per (reader, writer, chunk, version) read across nodes */
  for (uint32_t s = 0; s < NS; s++) out->slot[s] = -1;
  for (uint32_t gi = 0; gi < G; gi++) {
    const sc_group *g = &prog->groups[gi];
    uint32_t r = owner[gi];
    for (uint32_t s = 0; g->phase != SC_PH_C && s < g->nsrc; s++) {
      const sc_src *x = &prog->srcs[g->src_off + s];
      if (NODE(x->rank) == NODE(r)) continue;
      int32_t w = pub[CELLV(x->rank, g->chunk, x->version)];
      int32_t b = w >= 0 ? out->phase[w] : input_phase;
      uint32_t k = 0;
      for (; k < out->ncopies; k++) {
        const sc_mirror_copy *m = &out->copies[k];
        if (m->dst == r && m->src == x->rank && m->chunk == g->chunk && m->boundary == b) break;
      }
      if (k == out->ncopies) out->copies[out->ncopies++] = (sc_mirror_copy){b, r, out->nslots[r]++, x->rank, g->chunk};
      out->slot[g->src_off + s] = (int32_t)out->copies[k].slot;
    }
  }
  for (uint32_t r = 0; r < n; r++)
    if (out->nslots[r] > out->maxslots) out->maxslots = out->nslots[r];
  /* by boundary (insertion sort: stable, and the lists are short) */
  for (uint32_t i = 1; i < out->ncopies; i++) {
    sc_mirror_copy m = out->copies[i];
    uint32_t j = i;
    for (; j > 0 && out->copies[j - 1].boundary > m.boundary; j--) out->copies[j] = out->copies[j - 1];
    out->copies[j] = m;
  }
#undef CELLV
#undef NODE
  rc = 0;
done:
  free(pub);
  free(remote);
  free(rd_off);
  free(rd);
  free(owner);
  if (rc) sc_split_free(out);
  return rc;
}
