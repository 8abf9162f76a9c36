/*
 * tuning.h — a tuning table loaded for one communicator (SCHEDC_TUNING, opts->tuning): the
 * fastest verified plan per collective, root and size for its rank count (tuning.c). The entries
 * own their plans; the communicator owns the table.
 */
#ifndef SC_TUNING_H
#define SC_TUNING_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"

typedef struct sc_tuneentry {
  int coll, root;
  size_t lo, hi, slice;      /* whole-buffer bytes [lo, hi]; slice 0: the communicator's */
  schedc_plan *plan;         /* owned */
} sc_tuneentry;
typedef struct sc_tuning {
  sc_tuneentry *e;
  int n;
  uint64_t hosts_fp;         /* the `hosts` line: the layout of hosts it was measured on; 0: none */
  int hosts_line;
  char *path;                /* for messages (owned) */
} sc_tuning;
schedc_status sc_tuning_load(const char *path, int nranks, sc_tuning *t);
/* A table measured on a layout of hosts (`hosts HEX`, schedc tune --backend mpi) is for that
 * layout only: SCHEDC_EMISMATCH "FILE:LINE: ..." when nranks ranks on host_of[] (NULL: all on one
 * host) are another. SCHEDC_OK for a table without the line. */
schedc_status sc_tuning_check_hosts(const sc_tuning *t, int nranks, const int *host_of);
const sc_tuneentry *sc_tuning_pick(const sc_tuning *t, int coll, int root, size_t bytes);
void sc_tuning_free(sc_tuning *t);

#endif
