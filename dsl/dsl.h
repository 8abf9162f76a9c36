/*
 * dsl.h — running a schedule script (Lua 5.4, sandboxed) and copying its result into the IR.
 * The only interface to Lua: no caller sees a Lua type, and no Lua value outlives a load.
 */
#ifndef SC_DSL_H
#define SC_DSL_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"

typedef struct sc_dsl_opts {
  uint32_t nranks;             /* 0: from the topology */
  uint32_t nnodes;             /* 0: one node (or the topology's) */
  const char *topology;        /* topology file or NULL */
  const char *const *defines;  /* "k=v" */
  int ndefines;
  uint64_t max_instructions;   /* 0: default */
  size_t max_memory;           /* 0: default */
  double max_seconds;          /* wall-clock limit of the load; 0: default */
  const int *node_of;          /* with nnodes: rank r's node (checked by the caller); NULL: blocks */
} sc_dsl_opts;

/* Runs the script at path and fills *ir (initialised here; on success the caller frees it).
 * Returns SCHEDC_OK, or SCHEDC_EINVAL / SCHEDC_EIO / SCHEDC_ESCRIPT / SCHEDC_ENOMEM with a
 * malloc'd "file:line: message" in *err (caller frees). Thread-safe: one Lua state per call. */
int sc_dsl_load(const char *path, const sc_dsl_opts *opts, sc_ir *ir, char **err);
/* Read a topology file's `links` table into *m (links.c). Status and *err as above. */
int sc_dsl_load_links(const char *path, schedc_cost_model *m, char **err);

#endif
