/*
 * comm.h — the communicator head every backend shares (comm.c: made, freed) and the internal
 * collective entry (dispatch.c). A communicator is this head plus the backend's own state
 * (be_data), reached through its operation table (backend.h). The head holds settings and what
 * lives as long as the communicator; a call's own state is its sc_call and sc_result (call.h).
 */
#ifndef SC_COMM_H
#define SC_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "call.h"
#include "inject.h"
#include "integrity.h"
#include "mem.h"
#include "tuning.h"
#include "workbuf.h"
#include "schedc/schedc.h"

#define SC_FAILMSG 320

/* The common part of every communicator. */
struct schedc_comm {
  const sc_backend *be;
  void *be_data;             /* the backend's state (owned by it; released by be->free) */
  int rank, nranks;
  double timeout_s;
  size_t slice_bytes;
  const schedc_plan *init_plan; /* opts->plan: the plan all ranks must share at init, or NULL */
  sc_tuning tuning;
  uint64_t seq;              /* the number of the last call started (dispatch.c numbers every call
                              * that reaches the backend; a backend reads which call it is in) */
  int broken;
  int verify, repair;        /* SC_V_* bits; repair on mismatch */
  int nhosts;                /* hosts the ranks are on (hosts.c; 1 until a backend learns more) */
  int host_blocks;           /* nhosts > 1: the hosts hold equal consecutive blocks of ranks */
  int *host_of;              /* nhosts > 1: rank r's host, numbered in order of first appearance (owned) */
  char *topology;            /* SCHEDC_TOPOLOGY (owned), or NULL: the layout default plans follow */
  sc_inject inj;
  void *scratch; size_t scratch_cap; /* private working memory */
  /* default plans (built-in ring) by collective and root */
  struct { int coll, root; schedc_plan *plan; } defplan[16];
  int ndefplan;
  sc_memreg *mem; int nmem;  /* schedc_mem_alloc's regions ([SC_MAXMEM], allocated on first use) */
  uint64_t mem_serial;       /* regions made so far */
  uint64_t mem_direct;       /* calls whose working buffer was a region its peers read in place
                              * (the copy in and out skipped; tests read it) */
  int shrunk;                /* schedc_comm_shrink was called on it (once per communicator) */
  int *parent;               /* [nranks] (owned): made by schedc_comm_shrink, the rank each member had
                              * in the communicator it was shrunk from; NULL otherwise */
};

/* Allocate a communicator head for backend `be` from options (timeout, slice, verification,
 * injection, tuning). The backend then sets be_data. */
schedc_status sc_comm_new(const sc_backend *be, int rank, int nranks, const schedc_comm_opts *opts,
                          schedc_comm **out);
/* The same with the faults to inject given (a shrunk communicator's, sc_inject_remap) instead of
 * parsed from SCHEDC_INJECT; inj NULL: parsed (sc_comm_new). */
schedc_status sc_comm_new_inj(const sc_backend *be, int rank, int nranks, const schedc_comm_opts *opts,
                              const sc_inject *inj, schedc_comm **out);
/* Free the head only (the backend's state was released, or never made). */
void sc_comm_release(schedc_comm *c);
/* What the ranks must agree on at init about the layout their default plans follow: a hash of
 * SCHEDC_TOPOLOGY (0 when unset). sc_layout_mismatch: SCHEDC_EMISMATCH naming it, rank r's word
 * being theirs. */
uint64_t sc_comm_layout_word(const schedc_comm *c);
schedc_status sc_layout_mismatch(const schedc_comm *c, int r, uint64_t theirs);
/* The communicator's private scratch, grown to at least `bytes` (NULL + errmsg on OOM). */
void *sc_scratch(schedc_comm *c, size_t bytes);

/* dispatch.c — the collectives below verification. sc_call_make: the arguments checked and the
 * plan chosen (given, tuned, or the built-in ring) into *k. sc_call_run: the call numbered
 * (k->seq) and run by the backend into *res (zeroed first). sc_coll: both, for the calls the
 * library makes for itself (verification, repair, bootstrap exchanges), with explicit SC_CALL_*
 * flags instead of mode state; nothing verifies them. */
schedc_status sc_call_make(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                           schedc_op op, int root, const schedc_plan *plan, unsigned flags, sc_call *k);
/* sc_call_make with a wire format (SCHEDC_WIRE_*, 0: none): a quantized call (quant.h). */
schedc_status sc_call_make_wire(schedc_comm *c, int coll, const void *send, void *recv, size_t count,
                                schedc_dtype dtype, schedc_op op, int root, const schedc_plan *plan, unsigned flags,
                                int wire, sc_call *k);
schedc_status sc_call_run(schedc_comm *c, sc_call *k, sc_result *res);
schedc_status sc_coll(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                      schedc_op op, int root, const schedc_plan *plan, unsigned flags);
/* api.c — a public collective: dispatched, then, for results in host memory, verified
 * (integrity.c). res: NULL, or where the call's result record goes (tests read the digest). */
schedc_status sc_coll_verified(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                               schedc_op op, int root, const schedc_plan *plan, sc_result *res);
/* The integrity settings of a call as the ranks compare them: SC_V_* bits (none for internal
 * SC_CALL_NOVERIFY calls), and SC_V_REPAIR when repair is on. Ranks that differ would hash or
 * check what their peers never sent (a false corruption report) or wait in an exchange the
 * others skip. */
static inline uint32_t sc_call_checks_word(const schedc_comm *c, unsigned flags) {
  return flags & SC_CALL_NOVERIFY ? 0u : (uint32_t)c->verify | (c->verify && c->repair ? (uint32_t)SC_V_REPAIR : 0u);
}
/* The settings of a checks word for messages: "SCHEDC_VERIFY=full with repair". */
const char *sc_checks_name(uint32_t checks, char *buf, size_t cap);

/* Monotonic seconds (every deadline). */
double sc_now(void);

#endif
