/*
 * cost.h — the alpha-beta cost model over a plan's steps (see schedc_cost_model in the public
 * header for the model; cost.c for the arithmetic).
 */
#ifndef SC_COST_H
#define SC_COST_H

#include "ir.h"

/* Predicted microseconds for one call over `bytes` (whole buffer). -1 on OOM. */
double sc_cost_plan(const sc_ir *ir, const schedc_cost_model *m, double bytes);

#endif
