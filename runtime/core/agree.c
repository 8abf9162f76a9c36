/*
 * agree.c — the one check that every rank makes the same call, and its one message. Backends
 * differ in how the agreements travel (arrival lines, an MPI allgather, a host exchange); what
 * is compared and how a difference is said is here.
 */
#include <stdio.h>
#include <string.h>

#include "agree.h"
#include "comm.h"
#include "err.h"
#include "names.h"
#include "plan.h"

void sc_agreement_of(sc_agreement *a, const sc_call *k, uint32_t path) {
  memset(a, 0, sizeof *a); /* it is compared and hashed whole, padding included */
  a->seq = k->seq;
  a->count = k->count;
  a->plan_hash = k->plan->hash;
  a->op_hash = k->op_hash;
  a->slice = k->slice;
  a->coll = (uint32_t)k->coll;
  a->dtype = (uint32_t)k->dtype;
  /* a custom op's value is this process's name for it: ranks compare its source hash instead */
  a->op = k->op_hash ? (uint32_t)SCHEDC_OP_CUSTOM_BASE : (uint32_t)k->op;
  if (k->ex.mode) { /* exact mode: the call as the caller made it (its grid exchange too) */
    a->coll = (uint32_t)k->ex.coll;
    a->dtype = (uint32_t)k->ex.dtype;
    a->op = (uint32_t)k->ex.op;
  }
  a->root = (uint32_t)k->root;
  a->checks = k->checks;
  a->path = path;
  a->wire = (uint32_t)k->ex.wire;
}

/* The compared fields as words, in the order a difference is named (the call's number first: the
 * other fields describe another call then); their names for the message beside them. */
enum { NFIELDS = 12 };
static const char *const field_name[NFIELDS] = {"call sequence", "collective", "dtype", "op", "wire format",
                                                "custom operator's source", "root", "count", "plan", "slice size",
                                                "verification (SCHEDC_VERIFY, SCHEDC_REPAIR)", "path"};
static void words(const sc_agreement *a, uint64_t w[NFIELDS]) {
  const uint64_t f[NFIELDS] = {a->seq, a->coll, a->dtype, a->op, a->wire, a->op_hash, a->root, a->count, a->plan_hash,
                               a->slice, a->checks, a->path};
  memcpy(w, f, sizeof f);
}

uint64_t sc_agreement_fp(const sc_agreement *a) {
  uint64_t f[NFIELDS];
  words(a, f);
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < NFIELDS; i++) {
    h = (h ^ f[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

schedc_status sc_disagree(const char *cn, int me, int r, uint64_t seq, const char *field, const char *mine,
                          const char *theirs, const char *hint) {
  return sc_err(SCHEDC_EMISMATCH, "%s: rank %d and rank %d disagree on the %s of call %llu (rank %d: %s; rank %d: %s)%s%s",
                cn, me, r, field, (unsigned long long)seq, me, mine, r, theirs, hint ? ": " : "", hint ? hint : "");
}

/* One field's value in words, for the message. */
static const char *path_name(uint32_t p) { return p == SC_PATH_SMALL ? "small-message" : "plan"; }
static void value(char *out, size_t cap, int field, const sc_agreement *a) {
  const char *name = NULL;
  switch (field) {
  case 0: snprintf(out, cap, "%llu", (unsigned long long)a->seq); return;
  case 1: name = schedc_collective_name((schedc_collective)a->coll); break;
  case 2: name = schedc_dtype_name((schedc_dtype)a->dtype); break;
  case 3: name = a->op == (uint32_t)SCHEDC_OP_CUSTOM_BASE ? "a custom operator" : schedc_op_name((schedc_op)a->op); break;
  case 4: name = sc_wire_name((int)a->wire); break;
  case 5: snprintf(out, cap, "%016llx", (unsigned long long)a->op_hash); return;
  case 6: snprintf(out, cap, "%u", a->root); return;
  case 7: snprintf(out, cap, "%llu", (unsigned long long)a->count); return;
  case 8: snprintf(out, cap, "%016llx", (unsigned long long)a->plan_hash); return;
  case 9: snprintf(out, cap, "%llu bytes", (unsigned long long)a->slice); return;
  case 10: sc_checks_name(a->checks, out, cap); return;
  case 11: name = path_name(a->path); break;
  }
  if (name) snprintf(out, cap, "%s", name);
  else snprintf(out, cap, "%u", field == 1 ? a->coll : field == 2 ? a->dtype : field == 4 ? a->wire : a->op);
}

schedc_status sc_agreement_check(const char *cn, int me, const sc_agreement *mine, int r, const sc_agreement *theirs) {
  uint64_t a[NFIELDS], b[NFIELDS];
  words(mine, a);
  words(theirs, b);
  int f = 0;
  while (f < NFIELDS && a[f] == b[f]) f++;
  if (f == NFIELDS) return SCHEDC_OK;
  char v1[64], v2[64];
  value(v1, sizeof v1, f, mine);
  value(v2, sizeof v2, f, theirs);
  /* the same call, but one rank runs it on another path: their SCHEDC_SMALL or SCHEDC_INJECT
   * differ (only a call without injected faults takes the small-message path) */
  const char *hint = f == NFIELDS - 1 ? "set SCHEDC_SMALL and SCHEDC_INJECT alike on every rank" : NULL;
  return sc_disagree(cn, me, r, mine->seq, field_name[f], v1, v2, hint);
}
