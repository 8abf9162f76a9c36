/*
 * cost_api.c — the public face of the cost model: loading a topology's link numbers (through
 * dsl/, the only Lua user) and predicting a plan's time (codegen/cost.c).
 */
#include <limits.h>
#include <stdlib.h>

#include "cost.h"
#include "dsl.h"
#include "err.h"
#include "plan.h"
#include "schedpath.h"

schedc_status schedc_cost_model_load(const char *topology_path, schedc_cost_model *m) {
  if (!topology_path || !m) return sc_err(SCHEDC_EINVAL, "topology_path or model is NULL");
  if (m->size != sizeof *m) return sc_err(SCHEDC_EINVAL, "model->size is %zu; start from SCHEDC_COST_MODEL_INIT", m->size);
  char file[PATH_MAX]; /* a name without a folder is looked up in the topologies/ folders */
  schedc_status fs = sc_find_file(topology_path, "topologies", SCHEDC_EIO, file, sizeof file);
  if (fs != SCHEDC_OK) return fs;
  char *err = NULL;
  int st = sc_dsl_load_links(file, m, &err);
  schedc_status r = st == SCHEDC_OK ? SCHEDC_OK : sc_err((schedc_status)st, "%s", err ? err : "topology file failed");
  free(err);
  return r;
}

schedc_status schedc_plan_cost(const schedc_plan *plan, const schedc_cost_model *m, size_t bytes, double *us) {
  if (!plan || !m || !us) return sc_err(SCHEDC_EINVAL, "plan, model or us is NULL");
  if (m->size != sizeof *m) return sc_err(SCHEDC_EINVAL, "model->size is %zu; start from SCHEDC_COST_MODEL_INIT", m->size);
  if (m->intra.gbps <= 0 || m->inter.gbps <= 0 || m->reduce_gbps <= 0 || m->copy_gbps <= 0)
    return sc_err(SCHEDC_EINVAL, "the cost model's bandwidths must be > 0");
  double t = sc_cost_plan(&plan->ir, m, (double)bytes);
  if (t < 0) return sc_err(SCHEDC_ENOMEM, "out of memory");
  *us = t;
  return SCHEDC_OK;
}
