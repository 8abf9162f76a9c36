/*
 * ir.c — building, finishing, copying and hashing the schedule IR (see ir.h).
 * Transfers are appended in the order the script wrote them and stably sorted into steps once.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

const char *sc_ir_collective_name(int c) { return sc_collective_name(c); }

int sc_ir_init(sc_ir *ir) {
  memset(ir, 0, sizeof *ir);
  ir->nnodes = 1;
  return 0;
}

void sc_ir_free(sc_ir *ir) {
  if (!ir) return;
  free(ir->name);
  free(ir->node_of);
  free(ir->step_off);
  free(ir->xfers);
  for (uint32_t i = 0; i < ir->nfiles; i++) free(ir->files[i]);
  free(ir->files);
  memset(ir, 0, sizeof *ir);
}

int sc_ir_add(sc_ir *ir, const sc_xfer *x) {
  if (ir->nxfers == ir->xcap) {
    if (ir->xcap >= SC_IR_MAX_XFERS) return -1;
    uint32_t ncap = ir->xcap ? ir->xcap * 2 : 256;
    sc_xfer *p = realloc(ir->xfers, (size_t)ncap * sizeof *p);
    if (!p) return -1;
    ir->xfers = p;
    ir->xcap = ncap;
  }
  ir->xfers[ir->nxfers++] = *x;
  return 0;
}

int sc_ir_file(sc_ir *ir, const char *name) {
  for (uint32_t i = 0; i < ir->nfiles; i++)
    if (strcmp(ir->files[i], name) == 0) return (int)i;
  if (ir->nfiles >= SC_IR_MAX_FILES) return -1;
  char **p = realloc(ir->files, (ir->nfiles + 1) * sizeof *p);
  if (!p) return -1;
  ir->files = p;
  char *s = strdup(name);
  if (!s) return -1;
  ir->files[ir->nfiles] = s;
  return (int)ir->nfiles++;
}

int sc_ir_finish(sc_ir *ir) {
  /* Counting sort by step: stable, O(n + steps). */
  uint32_t *off = calloc((size_t)ir->nsteps + 1, sizeof *off);
  if (!off) return -1;
  for (uint32_t i = 0; i < ir->nxfers; i++) off[ir->xfers[i].step + 1]++;
  for (uint32_t s = 0; s < ir->nsteps; s++) off[s + 1] += off[s];
  int sorted = 1;
  for (uint32_t i = 1; i < ir->nxfers && sorted; i++)
    sorted = ir->xfers[i - 1].step <= ir->xfers[i].step;
  if (!sorted) {
    sc_xfer *tmp = malloc((size_t)ir->nxfers * sizeof *tmp + 1);
    uint32_t *pos = malloc(((size_t)ir->nsteps + 1) * sizeof *pos);
    if (!tmp || !pos) { free(tmp); free(pos); free(off); return -1; }
    memcpy(pos, off, ((size_t)ir->nsteps + 1) * sizeof *pos);
    for (uint32_t i = 0; i < ir->nxfers; i++) tmp[pos[ir->xfers[i].step]++] = ir->xfers[i];
    free(pos);
    free(ir->xfers);
    ir->xfers = tmp;
    ir->xcap = ir->nxfers;
  }
  free(ir->step_off);
  ir->step_off = off;
  return 0;
}

int sc_ir_copy(sc_ir *dst, const sc_ir *src) {
  sc_ir_init(dst);
  dst->collective = src->collective;
  dst->order = src->order;
  dst->nranks = src->nranks;
  dst->nchunks = src->nchunks;
  dst->root = src->root;
  dst->nnodes = src->nnodes;
  dst->nsteps = src->nsteps;
  dst->nxfers = dst->xcap = src->nxfers;
  dst->decl_file = src->decl_file;
  dst->decl_line = src->decl_line;
  dst->name = strdup(src->name ? src->name : "");
  dst->node_of = malloc((size_t)src->nranks * sizeof(uint32_t) + 1);
  dst->step_off = malloc(((size_t)src->nsteps + 1) * sizeof(uint32_t));
  dst->xfers = malloc((size_t)src->nxfers * sizeof(sc_xfer) + 1);
  dst->files = calloc((size_t)src->nfiles + 1, sizeof(char *));
  if (!dst->name || !dst->node_of || !dst->step_off || !dst->xfers || !dst->files) goto oom;
  if (src->node_of) memcpy(dst->node_of, src->node_of, (size_t)src->nranks * sizeof(uint32_t));
  else memset(dst->node_of, 0, (size_t)src->nranks * sizeof(uint32_t));
  if (src->step_off) memcpy(dst->step_off, src->step_off, ((size_t)src->nsteps + 1) * sizeof(uint32_t));
  memcpy(dst->xfers, src->xfers, (size_t)src->nxfers * sizeof(sc_xfer));
  for (uint32_t i = 0; i < src->nfiles; i++) {
    if (!(dst->files[i] = strdup(src->files[i]))) goto oom;
    dst->nfiles = i + 1;
  }
  return 0;
oom:
  sc_ir_free(dst);
  return -1;
}

static uint64_t hash_u32(uint64_t h, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  return sc_fnv(h, b, 4);
}

uint64_t sc_ir_hash(const sc_ir *ir) {
  uint64_t h = SC_FNV_INIT;
  const char *nm = ir->name ? ir->name : "";
  h = sc_fnv(h, nm, strlen(nm) + 1);
  h = hash_u32(h, (uint32_t)ir->collective);
  h = hash_u32(h, (uint32_t)ir->order);
  h = hash_u32(h, ir->nranks);
  h = hash_u32(h, ir->nchunks);
  h = hash_u32(h, ir->root);
  h = hash_u32(h, ir->nnodes);
  for (uint32_t r = 0; r < ir->nranks; r++) h = hash_u32(h, ir->node_of ? ir->node_of[r] : 0);
  h = hash_u32(h, ir->nsteps);
  for (uint32_t i = 0; i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    h = hash_u32(h, x->src);
    h = hash_u32(h, x->dst);
    h = hash_u32(h, x->chunk);
    h = hash_u32(h, x->step);
    h = hash_u32(h, x->kind);
  }
  return h;
}
