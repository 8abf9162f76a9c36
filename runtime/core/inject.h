/*
 * inject.h — test-only fault injection (SCHEDC_INJECT, parsed once per communicator): which
 * rank dies, sleeps, flips a sent payload, what its reduce computes, or its result, and where.
 * inject.c owns the parsing and the flips; a backend says by its caps which kinds it can inject.
 */
#ifndef SC_INJECT_H
#define SC_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"

#define SC_INJECT_KILLS 8
typedef struct sc_inject {
  int kill_rank, kill_step;  /* the first kill item (-1: none): whether any rank is to die */
  int nkill;                 /* kill items (several ranks may die: kill:1:0,kill:3:0) */
  int kill_ranks[SC_INJECT_KILLS], kill_steps[SC_INJECT_KILLS];
  int delay_rank, delay_us;
  unsigned jitter_seed, jitter_us;
  int flip_rank, flip_step;  /* flips one bit of the payload flip_rank sends at flip_step */
  long flip_bit;             /* which bit of that payload (taken modulo its size); -1: the middle */
  int flipout_rank;          /* flips one bit of that rank's result after the collective */
  int arith_rank, arith_step; /* flips one bit of what arith_rank's first reduce at arith_step computed */
  long arith_bit;            /* which bit of that slice (modulo its size); -1: the middle */
  int arith_armed;           /* the arith flip is still to come in this call: set per call by the core
                              * (dispatch.c, 0 for internal calls), cleared when it lands (once per
                              * call: a repair's rerun is clean) */
} sc_inject;
/* The step at which `rank` is to die (kill:RANK:STEP), or -1. */
int sc_inject_kill_step(const sc_inject *in, int rank);
/* The faults of a communicator carried to one shrunk from it (schedc_comm_shrink): a fault named
 * for old rank r applies to newrank[r] (-1: r is not a member; its faults are dropped). */
void sc_inject_remap(const sc_inject *in, const int *newrank, int oldn, sc_inject *out);
/* Parse SCHEDC_INJECT (see inject.c). SCHEDC_EINVAL with a message. */
schedc_status sc_inject_parse(const char *spec, sc_inject *out);
/* The parsed faults against the communicator: every rank named exists, and the backend (its
 * name and SC_CAP_* caps) can inject each kind. SCHEDC_EINVAL / SCHEDC_EUNAVAIL with a message. */
schedc_status sc_inject_check(const sc_inject *in, int nranks, const char *backend, unsigned caps);
/* kill, delay, jitter at the start of `rank`'s step `step` of call `seq` (a backend with
 * SC_CAP_INJECT_STEPS calls it): 1 when the rank is to die here (the caller kills it its way),
 * else 0 after the delay and jitter due (sleeps). */
int sc_inject_step(const sc_inject *in, int rank, uint32_t step, uint64_t seq);
/* flip:RANK:STEP: flip the chosen bit of a copy of the payload (bytes > 0) and say so (a warning, log.h). */
void sc_inject_flip(const sc_inject *in, void *buf, size_t bytes, const char *coll, int dst, uint32_t step);
/* arith:RANK:STEP[:BIT]: called by a backend right after `rank` computed a reduce at `step` into
 * buf (bytes; after its sources were checked, before the result is hashed, published or sent):
 * when armed for this rank and step, flips the chosen bit there (a faulty ALU), disarms, warns.
 * crc: NULL, or the CRC32C the reduce already took of buf, taken again after the flip (the hash
 * of what the faulty reduce stored, as a fused reduce-and-hash kernel would take it). */
void sc_inject_arith(sc_inject *in, void *buf, size_t bytes, const char *coll, int rank, uint32_t step, uint32_t *crc);

#endif
