/*
 * agree.h — the one check that every rank makes the same call (agree.c). A backend fills an
 * sc_agreement per call, exchanges it (arrival lines, an allgather, a host exchange) and hands
 * mine and a peer's to sc_agreement_check, which names the first field that differs in one
 * message shape on every backend; a backend's own fields go through sc_disagree.
 */
#ifndef SC_AGREE_H
#define SC_AGREE_H

#include <stdint.h>

#include "call.h"

/* How a rank runs a call, where a backend has several ways (the CPU's small-message path). */
enum { SC_PATH_PLAN = 0, SC_PATH_SMALL = 1 };

/* What every rank's call must share. Plain words, no pointers: it travels between processes. */
typedef struct sc_agreement {
  uint64_t seq;              /* the call's number (sc_call.seq) */
  uint64_t count, plan_hash;
  uint64_t op_hash;          /* a custom op's source hash (its value is only this process's name) */
  uint64_t slice;            /* slice bytes: counter layouts depend on it */
  uint32_t coll, dtype, op, root;
  uint32_t checks;           /* the call's integrity settings (sc_call.checks) */
  uint32_t path;             /* SC_PATH_* */
  uint32_t wire;             /* a quantized call's SCHEDC_WIRE_* (0: none) */
} sc_agreement;

/* This rank's agreement for call k, run on path `path`. */
void sc_agreement_of(sc_agreement *a, const sc_call *k, uint32_t path);
/* A fingerprint of every field (ranks compare it first, and the whole agreement only when it
 * differs). */
uint64_t sc_agreement_fp(const sc_agreement *a);
/* SCHEDC_OK when rank r's agreement equals mine (this rank: me); else SCHEDC_EMISMATCH, errmsg
 * "<coll>: rank <me> and rank <r> disagree on the <field> of call <seq> (rank <me>: <value>;
 * rank <r>: <value>)", the first field that differs named and both values in words. */
schedc_status sc_agreement_check(const char *cn, int me, const sc_agreement *mine, int r, const sc_agreement *theirs);
/* The same message for a field of a backend's own (values already in words); hint: NULL, or a
 * sentence appended after a colon. Returns SCHEDC_EMISMATCH. */
schedc_status sc_disagree(const char *cn, int me, int r, uint64_t seq, const char *field, const char *mine,
                          const char *theirs, const char *hint);

#endif
