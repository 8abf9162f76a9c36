/*
 * plan.h — what a schedc_plan is inside: the IR, its proof (final terms per cell) and derived
 * figures. Immutable after creation; shared read-only by every thread and communicator.
 */
#ifndef SC_PLAN_H
#define SC_PLAN_H

#include "ir.h"
#include "verify.h"
#include "schedc/schedc.h"

struct schedc_plan {
  sc_ir ir;
  sc_verified v;
  uint64_t hash;          /* sc_ir_hash: equal schedules, equal hash */
  double max_sent, max_recv;
};

/* Verify ir and wrap it into a plan (takes ownership of ir on success and failure).
 * SCHEDC_EVERIFY with the rendered diagnostics in errmsg; SCHEDC_ENOMEM when out of memory
 * anywhere in the verification (never a verdict then). */
schedc_status sc_plan_make(sc_ir *ir, schedc_plan **out);

#endif
