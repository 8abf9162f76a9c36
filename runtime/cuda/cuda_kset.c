/*
 * cuda_kset.c — the kernel-set cache of a cuda group (cuda_kset.h): a plan's kernels emitted
 * (codegen/cuda_emit.c), compiled through the compile cache and loaded on each device once, kept
 * for the next calls of the same plan, dtype and op; the oldest goes when the cache is full.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_emit.h"
#include "cuda_kset.h"
#include "err.h"
#include "names.h"
#include "opreg.h"

static void kset_free(cu_group *g, cu_kset *k) {
  for (int r = 0; r < g->n && k->mod; r++)
    if (k->mod[r] && (!g->virt || r == 0)) {
      g->dv->select(g->dev[r]);
      g->dv->unload(k->mod[r]);
    }
  free(k->mod);
  free(k->run_fn);
  free(k->widen);
  free(k->narrow);
  free(k->avg);
  free(k->xstats);
  free(k->xin);
  free(k->xout);
  sc_split_free(&k->split);
  memset(k, 0, sizeof *k);
}

void sc_cu_kcache_free(cu_group *g) {
  for (int i = 0; i < g->nks; i++) kset_free(g, &g->ks[i]);
  g->nks = 0;
}

schedc_status sc_cu_split_build(const sc_prog *prog, const sc_ir *ir, const uint32_t *node, int check, sc_split *out) {
  /* with checksums the input crosses after phase 0, whose entry takes its sums */
  int rc = sc_split_build(prog, node, check ? 0 : -1, out);
  if (rc == -1) return sc_err(SCHEDC_ENOMEM, "out of memory");
  if (rc) return sc_err(SCHEDC_EINTERNAL, "plan '%s': no consistent phases across nodes", ir->name);
  return SCHEDC_OK;
}

/* Emitted once, compiled (cached by schedc_cuda_compile), loaded on every device the group
 * uses: the all-ranks unit (schedc_all) when one process drives every rank, only this rank's
 * code (schedc_rank<me>: a smaller, faster compile) for a process per GPU. */
schedc_status sc_cu_kset(cu_group *g, const schedc_plan *plan, int dtype, int op, cu_kset **out) {
  const sc_prog *prog = &plan->prog;
  int check = g->vf.check;
  /* exact mode: one source for f32, f16 and bf16, sum and avg (the format is a kernel parameter) */
  if (op == SCHEDC_SUM_EXACT || op == SCHEDC_AVG_EXACT) { dtype = SCHEDC_F32; op = SCHEDC_SUM_EXACT; }
  if (sc_op_wire(op)) dtype = SCHEDC_F32; /* a wire's likewise (names.h SC_OP_Q8, SC_OP_Q16) */
  uint64_t key = plan->hash ^ ((uint64_t)(dtype + 1) << 56) ^ ((uint64_t)(op + 1) << 48) ^ ((uint64_t)check << 40) ^
                 ((uint64_t)g->nnodes << 32);
  const sc_opdef *custom = sc_opreg_get(op); /* a custom op's kernels are keyed by its source too */
  if (custom) key ^= custom->hash * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < g->nks; i++)
    if (g->ks[i].key == key) { *out = &g->ks[i]; return SCHEDC_OK; }
  if (g->nks == CU_MODULES) { /* the oldest goes; nothing may still run it */
    schedc_status st = sc_cu_sync_all(g);
    if (st != SCHEDC_OK) return st;
    kset_free(g, &g->ks[0]);
    memmove(g->ks, g->ks + 1, sizeof g->ks[0] * (CU_MODULES - 1));
    g->nks--;
  }
  cu_kset *k = &g->ks[g->nks];
  memset(k, 0, sizeof *k);
  schedc_status sst = g->nnodes > 1 ? sc_cu_split_build(prog, &plan->ir, g->node, check, &k->split) : SCHEDC_OK;
  if (sst != SCHEDC_OK) return sst;
  char *src = sc_cuda_emit_split(&plan->ir, prog, g->me, dtype, op, check, g->nnodes > 1 ? &k->split : NULL),
       fn[32] = SC_CUDA_ENTRY_ALL;
  if (!src) { sc_split_free(&k->split); return sc_err(SCHEDC_ENOMEM, "out of memory emitting the CUDA source"); }
  if (g->me >= 0) snprintf(fn, sizeof fn, SC_CUDA_ENTRY_RANK "%d", g->me);
  size_t n = (size_t)g->n;
  k->mod = calloc(n, sizeof(void *)); k->run_fn = calloc(n, sizeof(void *)); k->widen = calloc(n, sizeof(void *));
  k->narrow = calloc(n, sizeof(void *)); k->avg = calloc(n, sizeof(void *));
  k->xstats = calloc(n, sizeof(void *)); k->xin = calloc(n, sizeof(void *)); k->xout = calloc(n, sizeof(void *));
  schedc_status st = k->mod && k->run_fn && k->widen && k->narrow && k->avg && k->xstats && k->xin && k->xout
                     ? SCHEDC_OK : sc_err(SCHEDC_ENOMEM, "out of memory");
  int conv = strstr(src, "void " SC_CUDA_ENTRY_WIDEN "(") != NULL, avg = strstr(src, "void " SC_CUDA_ENTRY_AVG "(") != NULL;
  int exact = strstr(src, "void " SC_CUDA_ENTRY_XIN "(") != NULL;
  /* a wire's set: its grid kernels (schedc_qstats, _qin, _qout) in the same slots as exact mode's */
  int wire = strstr(src, "void " SC_CUDA_ENTRY_QIN "(") != NULL;
  for (int r = 0; r < g->n && st == SCHEDC_OK; r++) {
    if (g->virt && r > 0) { /* one module on the one device */
      k->widen[r] = k->widen[0]; k->narrow[r] = k->narrow[0]; k->avg[r] = k->avg[0];
      k->xstats[r] = k->xstats[0]; k->xin[r] = k->xin[0]; k->xout[r] = k->xout[0];
      continue;
    }
    if ((st = g->dv->select(g->dev[r])) != SCHEDC_OK) break;
    if ((st = g->dv->load(src, g->arch, &k->mod[r])) != SCHEDC_OK) break;
    st = g->dv->kernel(k->mod[r], fn, &k->run_fn[r]);
    if (st == SCHEDC_OK && conv) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_WIDEN, &k->widen[r]);
    if (st == SCHEDC_OK && conv) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_NARROW, &k->narrow[r]);
    if (st == SCHEDC_OK && avg) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_AVG, &k->avg[r]);
    if (st == SCHEDC_OK && exact) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_XSTATS, &k->xstats[r]);
    if (st == SCHEDC_OK && exact) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_XIN, &k->xin[r]);
    if (st == SCHEDC_OK && exact) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_XOUT, &k->xout[r]);
    if (st == SCHEDC_OK && wire) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_QSTATS, &k->xstats[r]);
    if (st == SCHEDC_OK && wire) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_QIN, &k->xin[r]);
    if (st == SCHEDC_OK && wire) st = g->dv->kernel(k->mod[r], SC_CUDA_ENTRY_QOUT, &k->xout[r]);
  }
  free(src);
  if (st != SCHEDC_OK) { kset_free(g, k); return st; }
  k->key = key;
  g->nks++;
  *out = k;
  return SCHEDC_OK;
}
