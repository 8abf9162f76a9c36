/*
 * prog.h — a plan compiled for execution: per rank, the list of write groups (all transfers
 * into one (rank, chunk) cell in one step, fused into one pass) with the counter values each
 * must wait for. Counters per cell (and per slice at run time): `version` = number of steps
 * whose writes to the cell are complete (published by the owner); `reads` = number of completed
 * reads of the cell by other ranks (bumped by the readers).
 *
 * Per rank and step the groups run in three phases, which rules out wait cycles:
 *   A  groups whose cell is also read in this step: compute into a temp (reads only),
 *   B  the other groups, straight into the cell,
 *   C  write-back of the A temps, after every read of the old value in this step is done.
 * A and B wait only on earlier steps; C waits on A/B reads of the same step.
 */
#ifndef SC_PROG_H
#define SC_PROG_H

#include <stdint.h>

#include "ir.h"

typedef struct sc_src {
  uint32_t rank;
  uint32_t version;    /* wait until version(rank, chunk) >= this (RAW) */
} sc_src;

enum { SC_PH_A = 0, SC_PH_B = 1, SC_PH_C = 2 };

typedef struct sc_group {
  uint32_t chunk, step;
  uint8_t phase;       /* SC_PH_* */
  uint8_t copy;        /* 1: a copy (one source), 0: reduce chain into the cell */
  uint8_t pub_read;    /* B and C: another rank reads the version this group publishes */
  uint8_t pad_;
  uint32_t nsrc;
  uint32_t src_off;    /* into sc_prog.srcs */
  uint32_t wait_reads; /* B and C: wait until reads(self, chunk) >= this (WAR) */
  uint32_t version;    /* B and C: the cell's version after this group */
  uint32_t temp;       /* A and C: temp slot (in chunk-sized units, per step) */
  uint32_t line;       /* user line of the first transfer (messages) */
} sc_group;

typedef struct sc_rankprog {
  uint32_t g_off, ng;  /* into sc_prog.groups */
  uint32_t ntemp;      /* temp slots needed (max per step) */
  uint32_t *final_reads; /* [nchunks]: reads of each own cell over the whole plan (drain) */
  uint8_t *reads_from;   /* [nranks]: 1 if this rank reads that rank's cells (maps it) */
  uint8_t *init_read;    /* [nchunks]: 1 if another rank reads the cell's initial value */
} sc_rankprog;

typedef struct sc_prog {
  uint32_t nranks, nchunks, nsteps;
  sc_group *groups;
  sc_src *srcs;
  sc_rankprog *rank;   /* [nranks] */
} sc_prog;

/* Compile; 0 or -1 (OOM). */
int sc_prog_build(const sc_ir *ir, sc_prog *p);
void sc_prog_free(sc_prog *p);

#endif
