/*
 * plan.h — what a schedc_plan is inside: the IR, its proof (final terms per cell), the program
 * lowered from it (per rank, the fused write groups every backend runs) and derived figures.
 * Made once by sc_plan_make (verify -> lower), immutable after, shared read-only by every thread
 * and communicator: nothing lowers a plan again per communicator or per call.
 */
#ifndef SC_PLAN_H
#define SC_PLAN_H

#include "ir.h"
#include "prog.h"
#include "verify.h"
#include "schedc/schedc.h"

struct schedc_plan {
  sc_ir ir;
  sc_verified v;
  sc_prog prog;           /* lowered from ir when the plan is made */
  uint64_t hash;          /* sc_ir_hash: equal schedules, equal hash */
  double max_sent, max_recv;
};

/* Verify ir, lower it, and wrap both into a plan (takes ownership of ir on success and failure).
 * SCHEDC_EVERIFY with the rendered diagnostics in errmsg; SCHEDC_ENOMEM when out of memory
 * anywhere in the verification or the lowering (never a verdict then). */
schedc_status sc_plan_make(sc_ir *ir, schedc_plan **out);

#endif
