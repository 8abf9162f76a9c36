/*
 * plan_load.h — the C tests' plan loader: a schedule built for one collective on n ranks (its
 * `collective` and `root` defines, plus one more define and a node count when given). NULL where
 * the schedule does not build that layout, which the sweeps skip.
 */
#ifndef SC_TEST_PLAN_LOAD_H
#define SC_TEST_PLAN_LOAD_H

#include <stdio.h>

#include "schedc/schedc.h"

static inline schedc_plan *tl_plan(const char *path, int coll, int n, int nodes, const char *def, int root) {
  char c1[64], c2[32];
  snprintf(c1, sizeof c1, "collective=%s", schedc_collective_name((schedc_collective)coll));
  snprintf(c2, sizeof c2, "root=%d", root);
  const char *defs[3] = {c1, c2, def};
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = n;
  lo.nnodes = nodes;
  lo.defines = defs;
  lo.ndefines = def ? 3 : 2;
  schedc_plan *p = NULL;
  return schedc_plan_from_script(path, &lo, &p) == SCHEDC_OK ? p : NULL;
}

/* DIR/FILE, no extra define, one node. */
static inline schedc_plan *tl_plan_in(const char *dir, const char *file, int coll, int n, int root) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  return tl_plan(path, coll, n, 0, NULL, root);
}

#endif
