/*
 * ops.h — the custom operator front end (docs/ops.md): the libclang checker (opcheck.c) turns an
 * operator file into the checked function's CPU and CUDA source; opcc.c compiles the CPU element
 * loop with the system C compiler into a cached shared object. opapi.c is the public API.
 */
#ifndef SC_OPS_H
#define SC_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "probe.h"
#include "schedc/schedc.h"

typedef struct sc_opsrc {
  schedc_dtype type;         /* F32, F64, I32 or I64 */
  char *cpu;                 /* C: the reached functions, static, renamed sc_u_*, plus the wrappers */
  char *cuda;                /* CUDA C++: the same functions __device__, ending in sc_custom_op */
  unsigned line, col;        /* where `name` is defined (the commutativity message) */
} sc_opsrc;

/* Parse `path` with libclang and check `name` and the functions it calls. SCHEDC_OK and *out
 * (free with sc_opsrc_free); SCHEDC_EINVAL with "file:line:col: message" lines; SCHEDC_EUNAVAIL
 * (no libclang: what to install); SCHEDC_EIO; SCHEDC_ENOMEM. */
schedc_status sc_ops_check(const char *path, const char *name, sc_opsrc *out);
void sc_opsrc_free(sc_opsrc *s);

/* The compiled element loop of a checked source: sc_op_chain (opreg.h's sc_opchain_fn) and
 * sc_op_pairs (r[i] = op(a[i], b[i]), the commutativity test's batch). */
typedef void (*sc_oppairs_fn)(const void *a, const void *b, void *r, size_t n);
typedef struct sc_opso {
  void *lib;
  void (*chain)(void *d, const void *a, const void *const *s, int n, size_t len);
  sc_oppairs_fn pairs;
  int cache_hit;
  char path[600];            /* the shared object ("" when the cache is off: removed once loaded) */
} sc_opso;
/* Compile (or find in the cache) cpu_source. SCHEDC_EUNAVAIL: no C compiler; SCHEDC_EINVAL: it
 * failed (errmsg has its output); SCHEDC_EIO. */
schedc_status sc_ops_compile(const char *cpu_source, sc_opso *out);

/* `schedc info` (runtime/info.c, probe.h): libclang loaded (its file and version) or why not. */
void sc_ops_clang_probe(sc_probe *p);

#endif
