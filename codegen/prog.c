/*
 * prog.c — compiling a verified plan into per-rank write groups with their wait counts
 * (see prog.h). One pass over the steps with per-cell running counts.
 */
#include "prog.h"

#include <stdlib.h>
#include <string.h>

void sc_prog_free(sc_prog *p) {
  if (!p) return;
  if (p->rank)
    for (uint32_t r = 0; r < p->nranks; r++) {
      free(p->rank[r].final_reads);
      free(p->rank[r].reads_from);
      free(p->rank[r].init_read);
    }
  free(p->groups);
  free(p->srcs);
  free(p->rank);
  memset(p, 0, sizeof *p);
}

typedef struct gtmp { uint32_t rank, chunk, first_x, last_x, nx, phase, temp; } gtmp;

int sc_prog_build(const sc_ir *ir, sc_prog *p) {
  memset(p, 0, sizeof *p);
  uint32_t n = ir->nranks, C = ir->nchunks;
  size_t cells = (size_t)n * C;
  p->nranks = n;
  p->nchunks = C;
  p->nsteps = ir->nsteps;
  uint32_t *wsteps = calloc(cells, sizeof *wsteps);  /* steps that wrote the cell so far */
  uint32_t *nreads = calloc(cells, sizeof *nreads);  /* reads of the cell so far (incl. this step) */
  uint32_t *rstamp = calloc(cells, sizeof *rstamp);  /* step+1 of the last read */
  uint32_t *gidx = malloc(cells * sizeof *gidx);     /* this step's group of a cell */
  uint32_t *gstamp = calloc(cells, sizeof *gstamp);
  uint32_t *lastpub = malloc(cells * sizeof *lastpub); /* group that published the current version */
  uint32_t *src_ver = malloc(((size_t)ir->nxfers + 1) * sizeof *src_ver);
  uint32_t *gnext = malloc(((size_t)ir->nxfers + 1) * sizeof *gnext); /* next transfer of the same group */
  uint32_t *gcount = calloc(n, sizeof *gcount);
  gtmp *gs = malloc(((size_t)ir->nxfers + 1) * sizeof *gs);
  p->rank = calloc(n, sizeof *p->rank);
  p->srcs = malloc(((size_t)ir->nxfers + 1) * sizeof *p->srcs);
  int rc = -1;
  if (!wsteps || !nreads || !rstamp || !gidx || !gstamp || !lastpub || !src_ver || !gnext || !gcount || !gs ||
      !p->rank || !p->srcs)
    goto done;
  /* Pass 1: groups and counts, step by step. Groups are collected per step, then emitted per
   * rank; the final per-rank order is step, phase, order of first transfer. */
  sc_group *out = NULL;
  uint32_t nsrc_total = 0;
  /* Count groups per rank first to lay them out contiguously: do a dry run. */
  for (int pass = 0; pass < 2; pass++) {
    memset(wsteps, 0, cells * sizeof *wsteps);
    memset(nreads, 0, cells * sizeof *nreads);
    memset(rstamp, 0, cells * sizeof *rstamp);
    memset(gstamp, 0, cells * sizeof *gstamp);
    if (pass == 1) { /* lay the groups out per rank, now that their counts are known */
      size_t off = 0;
      for (uint32_t r = 0; r < n; r++) {
        p->rank[r].g_off = (uint32_t)off;
        off += gcount[r];
        p->rank[r].ng = 0;
        if (!(p->rank[r].init_read = calloc((size_t)C + 1, 1))) goto done;
      }
      if (off >= UINT32_MAX || !(out = p->groups = malloc((off + 1) * sizeof *p->groups))) goto done;
    }
    for (uint32_t s = 0; s < ir->nsteps; s++) {
      uint32_t lo = ir->step_off[s], hi = ir->step_off[s + 1], ngs = 0;
      for (uint32_t i = lo; i < hi; i++) { /* reads: versions as before the step */
        const sc_xfer *x = &ir->xfers[i];
        size_t sc = (size_t)x->src * C + x->chunk;
        src_ver[i] = wsteps[sc];
        nreads[sc]++;
        rstamp[sc] = s + 1;
        if (pass == 1 && wsteps[sc] == 0) p->rank[x->src].init_read[x->chunk] = 1;
        else if (pass == 1) out[lastpub[sc]].pub_read = 1;
      }
      for (uint32_t i = lo; i < hi; i++) { /* group writes by destination cell */
        const sc_xfer *x = &ir->xfers[i];
        size_t dc = (size_t)x->dst * C + x->chunk;
        gnext[i] = UINT32_MAX;
        if (gstamp[dc] == s + 1) {
          gtmp *g = &gs[gidx[dc]];
          gnext[g->last_x] = i;
          g->last_x = i;
          g->nx++;
        } else {
          gstamp[dc] = s + 1;
          gidx[dc] = ngs;
          gs[ngs++] = (gtmp){x->dst, x->chunk, i, i, 1, rstamp[dc] == s + 1 ? SC_PH_A : SC_PH_B, 0};
        }
      }
      if (pass == 0) {
        for (uint32_t k = 0; k < ngs; k++) gcount[gs[k].rank] += gs[k].phase == SC_PH_A ? 2 : 1;
      } else {
        /* Per rank: phase A groups, then B, then C (write-backs of A), each in written order. */
        uint32_t *tslot = gcount; /* reuse: temp slots used by each rank in this step */
        memset(tslot, 0, n * sizeof *tslot);
        for (int ph = 0; ph < 3; ph++) {
          for (uint32_t k = 0; k < ngs; k++) {
            gtmp *g = &gs[k];
            if ((ph == SC_PH_B) != (g->phase == SC_PH_B)) continue;
            size_t dc = (size_t)g->rank * C + g->chunk;
            sc_rankprog *rp = &p->rank[g->rank];
            sc_group *o = &out[rp->g_off + rp->ng++];
            memset(o, 0, sizeof *o);
            o->chunk = g->chunk;
            o->step = s;
            o->phase = (uint8_t)ph;
            o->line = ir->xfers[g->first_x].line;
            o->version = wsteps[dc] + 1;
            o->wait_reads = nreads[dc];
            if (ph != SC_PH_A) lastpub[dc] = rp->g_off + rp->ng - 1;
            if (ph == SC_PH_A) {
              o->temp = g->temp = tslot[g->rank]++;
              if (tslot[g->rank] > rp->ntemp) rp->ntemp = tslot[g->rank];
            } else if (ph == SC_PH_C) {
              o->temp = g->temp; /* the slot its phase-A group filled */
            }
            if (ph != SC_PH_C) {
              o->copy = ir->xfers[g->first_x].kind == SCHEDC_XFER_COPY;
              o->src_off = nsrc_total;
              for (uint32_t j = g->first_x; j != UINT32_MAX; j = gnext[j]) {
                p->srcs[nsrc_total++] = (sc_src){ir->xfers[j].src, src_ver[j]};
                o->nsrc++;
              }
            }
          }
        }
      }
      for (uint32_t k = 0; k < ngs; k++) wsteps[(size_t)gs[k].rank * C + gs[k].chunk]++;
    }
  }
  for (uint32_t r = 0; r < n; r++) {
    if (!(p->rank[r].final_reads = malloc((size_t)C * sizeof(uint32_t) + 1))) goto done;
    memcpy(p->rank[r].final_reads, nreads + (size_t)r * C, (size_t)C * sizeof(uint32_t));
    if (!(p->rank[r].reads_from = calloc(n, 1))) goto done;
  }
  for (uint32_t i = 0; i < ir->nxfers; i++) p->rank[ir->xfers[i].dst].reads_from[ir->xfers[i].src] = 1;
  rc = 0;
done:
  free(wsteps); free(nreads); free(rstamp); free(gidx); free(gstamp); free(lastpub); free(src_ver); free(gnext);
  free(gcount); free(gs);
  if (rc) sc_prog_free(p);
  return rc;
}
