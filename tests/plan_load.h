/*
 * plan_load.h — the C tests' plan loader: a schedule built for one collective on n ranks (its
 * `collective` and `root` defines, plus more defines and a node count when given). NULL where
 * the schedule does not build that layout, which the sweeps skip.
 */
#ifndef SC_TEST_PLAN_LOAD_H
#define SC_TEST_PLAN_LOAD_H

#include <stdio.h>

#include "schedc/schedc.h"

/* With the defines of a NULL-ended list (NULL: none) besides collective and root. */
static inline schedc_plan *tl_plan_defs(const char *path, int coll, int n, int nodes, const char *const *extra,
                                        int root) {
  char c1[64], c2[32];
  snprintf(c1, sizeof c1, "collective=%s", schedc_collective_name((schedc_collective)coll));
  snprintf(c2, sizeof c2, "root=%d", root);
  const char *defs[8] = {c1, c2};
  int nd = 2;
  for (int k = 0; extra && extra[k] && nd < 8; k++) defs[nd++] = extra[k];
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = n;
  lo.nnodes = nodes;
  lo.defines = defs;
  lo.ndefines = nd;
  schedc_plan *p = NULL;
  return schedc_plan_from_script(path, &lo, &p) == SCHEDC_OK ? p : NULL;
}

static inline schedc_plan *tl_plan(const char *path, int coll, int n, int nodes, const char *def, int root) {
  const char *extra[2] = {def, NULL};
  return tl_plan_defs(path, coll, n, nodes, extra, root);
}

/* DIR/FILE, no extra define, one node. */
static inline schedc_plan *tl_plan_in(const char *dir, const char *file, int coll, int n, int root) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  return tl_plan(path, coll, n, 0, NULL, root);
}

#endif
