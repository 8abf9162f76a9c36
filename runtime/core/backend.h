/*
 * backend.h — the backend operation table (sc_backend): one const table per backend, chosen
 * when a communicator is made (Open MPI's coll components, NCCL's net plugins). The core calls
 * through it and never asks which backend it holds; what a backend can do is in its caps.
 */
#ifndef SC_BACKEND_H
#define SC_BACKEND_H

#include "call.h"

typedef struct sc_memreg sc_memreg; /* a schedc_mem_alloc region (mem.h) */

/* Capabilities of a backend. */
enum {
  /* the result is in host memory when the collective returns, so the core verifies it (digests,
   * checksum verdicts) right after; a stream-ordered backend verifies inside its own collective */
  SC_CAP_HOST_RESULT = 1,
  /* the collective runs the CPU executor's steps, where SCHEDC_INJECT kill, delay and jitter act */
  SC_CAP_INJECT_STEPS = 2,
  /* exact mode (exact.h): the working buffer goes through workbuf.c's conversions */
  SC_CAP_EXACT = 4,
  /* with SC_CAP_EXACT: the inputs are device memory the core cannot read, so the backend takes
   * the grid's words and exchanges them itself (inside its collective, once every rank's input is
   * known), and converts on the device: dispatch.c runs no exact_prepare nor exact_check (cuda) */
  SC_CAP_EXACT_DEVICE = 8,
  /* the backend learns its ranks' hosts at init (sc_comm_set_hosts, which checks a tuning table's
   * `hosts` line against them); without it the ranks are on one host for that check (mpi) */
  SC_CAP_HOSTS = 16,
  /* quantized wires (quant.h): exact mode's path with the wire's narrow integers as working type */
  SC_CAP_WIRE = 32,
};

/* A backend. Operations receive the head; their state is c->be_data. */
typedef struct sc_backend {
  const char *name;
  unsigned caps;             /* SC_CAP_* */
  /* Run one checked, numbered collective on this rank, filling *res (zeroed by the caller) with
   * what the integrity checks need. On failure: the status with errmsg set; the backend marks
   * the communicator broken (c->broken) when it cannot be used again. */
  schedc_status (*collective)(schedc_comm *c, const sc_call *call, sc_result *res);
  /* Why the communicator broke, as the group's first failure recorded it (may be NULL). */
  const char *(*failure)(schedc_comm *c);
  /* Release c->be_data and everything the backend holds for c (the core frees the head). */
  void (*free)(schedc_comm *c);
  /* schedc_mem_alloc: make a region of r->bytes (a multiple of the page size) that every rank
   * of c can share, filling r (base, and fd/dev/ino when it is a file); SCHEDC_OK or the status
   * with errmsg set. NULL: the backend has none (SCHEDC_EUNAVAIL). The core keeps the list. */
  schedc_status (*mem_alloc)(schedc_comm *c, sc_memreg *r);
  /* schedc_mem_free / schedc_comm_free: release a region mem_alloc made. */
  void (*mem_free)(schedc_comm *c, sc_memreg *r);
  /* schedc_comm_shrink (comm.c checked the arguments and resolved opts): agree with the other
   * live ranks on who is still there — every rank that gets a communicator gets the same members
   * — and make the communicator of them, renumbered in their old order, with c->inj carried over
   * (sc_inject_remap) and (*out)->parent set. NULL: the backend cannot (SCHEDC_EUNAVAIL). */
  schedc_status (*shrink)(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out);
} sc_backend;

#endif
