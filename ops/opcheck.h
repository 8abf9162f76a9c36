/*
 * opcheck.h — the operator checker's parts, shared by its files: opclang.c (libclang, loaded
 * once), oprules.c (what an operator may contain), opprint.c (the checked functions printed
 * again as C and CUDA) and opcheck.c (sc_ops_check, ops.h: parse, check, print). Internal to ops/.
 */
#ifndef SC_OPCHECK_H
#define SC_OPCHECK_H

#include <stddef.h>

#include "clang_abi.h"
#include "ops.h"
#include "schedc/schedc.h"
#include "strbuf.h"

/* libclang's functions; filled once, by the first sc_ops_clang_load, and only read after it. */
extern sc_clang sc_ops_cl;
#define CL sc_ops_cl
/* Load libclang (once per process; any thread): NULL when loaded, else why not (what to install). */
const char *sc_ops_clang_load(void);

#define MAXFN 64
typedef struct sc_opfn {
  char name[128];
  CXCursor cur;
  int defined, reached, state; /* state: 0 unchecked, 1 on the call stack, 2 checked */
} sc_opfn;

typedef struct sc_opck {
  CXTranslationUnit tu;
  const char *path;
  sc_opfn f[MAXFN];
  int nf;
  int cur;                   /* the function being checked */
  sc_strbuf msg;             /* diagnostics, one per line (its oom: out of memory) */
  int nerr;
} sc_opck;

#define TYPES_ALLOWED "float, double, int32_t or int64_t"

/* The math functions an operator may call (and their f forms), with their parameter lists: the
 * checker's allowance and the CUDA text's C-semantics wrappers (print_fn) come from this list. */
#define SC_MATH_OK(X)                                                                                  \
  X(fabs, "double a", "a") X(fmin, "double a, double b", "a, b") X(fmax, "double a, double b", "a, b")  \
  X(copysign, "double a, double b", "a, b") X(sqrt, "double a", "a")                                    \
  X(fma, "double a, double b, double c", "a, b, c") X(floor, "double a", "a") X(ceil, "double a", "a")  \
  X(trunc, "double a", "a") X(rint, "double a", "a")
/* The index of the file's function `name` in k->f, or -1. */
int sc_opck_find(const sc_opck *k, const char *name);
/* The rules from the function `name` (oprules.c): SCHEDC_EINVAL when the file defines no such
 * function; else SCHEDC_OK, with *target (its index), *dt, out->line and out->col, and every
 * broken rule counted in k->nerr and written as a line of k->msg. */
schedc_status sc_opck_rules(sc_opck *k, const char *name, int *target, schedc_dtype *dt, sc_opsrc *out);
/* The reached functions printed again (opprint.c): the CPU source (with sc_op_chain and
 * sc_op_pairs around the op) into cpu, the CUDA source (ending in sc_custom_op) into cu. */
void sc_opck_emit(sc_opck *k, int target, schedc_dtype dt, sc_strbuf *cpu, sc_strbuf *cu);

#endif
