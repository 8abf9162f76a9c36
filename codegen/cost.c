/*
 * cost.c — predicted time of a plan: per step, per rank bytes in/out on each link class and
 * bytes reduced; per node the aggregate of each class and the CPU time when ranks outnumber
 * cores. Invariant: only the plan's transfers and the model's numbers enter — no measurement.
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

typedef struct rankload { double in[2], out[2], red, copy; } rankload; /* [0] intra, [1] inter */

static double link_time(const schedc_link *l, double in, double out) {
  double b = in > out ? in : out; /* the two directions overlap */
  return b > 0 ? l->alpha_us + b / (l->gbps * 1e3) : 0; /* GB/s = 1e3 bytes/us */
}

double sc_cost_plan(const sc_ir *ir, const schedc_cost_model *m, double bytes) {
  uint32_t n = ir->nranks, nn = ir->nnodes ? ir->nnodes : 1;
  rankload *rl = calloc(n, sizeof *rl);
  double *node_t = calloc((size_t)nn * 3, sizeof *node_t); /* per node: intra bytes, inter bytes, cpu us */
  if (!rl || !node_t) { free(rl); free(node_t); return -1; }
  double chunk = bytes / ir->nchunks, total = m->call_us + m->local_passes * bytes / (m->copy_gbps * 1e3);
  for (uint32_t s = 0; s < ir->nsteps; s++) {
    memset(rl, 0, n * sizeof *rl);
    memset(node_t, 0, (size_t)nn * 3 * sizeof *node_t);
    for (uint32_t i = ir->step_off[s]; i < ir->step_off[s + 1]; i++) {
      const sc_xfer *x = &ir->xfers[i];
      uint32_t ns = ir->node_of ? ir->node_of[x->src] : 0, nd = ir->node_of ? ir->node_of[x->dst] : 0;
      int cls = ns != nd;
      const schedc_link *l = cls ? &m->inter : &m->intra;
      if (x->kind == SCHEDC_XFER_REDUCE) rl[x->dst].red += chunk;
      /* on shared memory the receiver's reduce pass is the transfer: no separate link time */
      if (l->kind == SCHEDC_LINK_SHM && x->kind == SCHEDC_XFER_REDUCE) continue;
      rl[x->src].out[cls] += chunk;
      rl[x->dst].in[cls] += chunk;
      if (cls) node_t[(size_t)ns * 3 + 1] += chunk;
      else node_t[(size_t)ns * 3] += chunk;
    }
    double step = 0;
    for (uint32_t r = 0; r < n; r++) {
      double a = link_time(&m->intra, rl[r].in[0], rl[r].out[0]), b = link_time(&m->inter, rl[r].in[1], rl[r].out[1]);
      double red = rl[r].red > 0 ? rl[r].red / (m->reduce_gbps * 1e3) : 0;
      if (red > 0 && a == 0 && m->intra.kind == SCHEDC_LINK_SHM) red += m->intra.alpha_us; /* a step all the same */
      double t = (a > b ? a : b) + red;
      uint32_t nd = ir->node_of ? ir->node_of[r] : 0;
      node_t[(size_t)nd * 3 + 2] += t;
      /* reduce passes load the node's memory like 1.5 copies (three streams against two) */
      if (m->intra.kind == SCHEDC_LINK_SHM) node_t[(size_t)nd * 3] += 1.5 * rl[r].red;
      if (t > step) step = t;
    }
    for (uint32_t d = 0; d < nn; d++) {
      const double *nt = node_t + (size_t)d * 3;
      if (m->intra.node_gbps > 0 && nt[0] / (m->intra.node_gbps * 1e3) > step) step = nt[0] / (m->intra.node_gbps * 1e3);
      if (m->inter.node_gbps > 0 && nt[1] / (m->inter.node_gbps * 1e3) > step) step = nt[1] / (m->inter.node_gbps * 1e3);
      uint32_t here = 0;
      for (uint32_t r = 0; r < n; r++) here += (ir->node_of ? ir->node_of[r] : 0) == d;
      if (m->cores_per_node > 0 && here > (uint32_t)m->cores_per_node && nt[2] / m->cores_per_node > step)
        step = nt[2] / m->cores_per_node;
    }
    total += step;
  }
  free(rl);
  free(node_t);
  return total;
}
