/*
 * opreg.c — the registry of custom operators (opreg.h): a fixed table of atomic pointers, so a
 * collective's hot path reads an op without a lock; values only grow, so a stale value fails.
 */
#include "opreg.h"

#include <pthread.h>
#include <stdatomic.h>

#include "err.h"

#define SC_OPREG_MAX 4096

static _Atomic(const sc_opdef *) slots[SC_OPREG_MAX];
static int next_slot;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

int sc_opreg_add(const sc_opdef *d) {
  pthread_mutex_lock(&mu);
  int i = next_slot < SC_OPREG_MAX ? next_slot++ : -1;
  pthread_mutex_unlock(&mu);
  if (i < 0) return -1;
  atomic_store(&slots[i], d);
  return SCHEDC_OP_CUSTOM_BASE + i;
}

const sc_opdef *sc_opreg_get(int op) {
  if (op < SCHEDC_OP_CUSTOM_BASE || op >= SCHEDC_OP_CUSTOM_BASE + SC_OPREG_MAX) return NULL;
  return atomic_load(&slots[op - SCHEDC_OP_CUSTOM_BASE]);
}

void sc_opreg_remove(int op) {
  if (op >= SCHEDC_OP_CUSTOM_BASE && op < SCHEDC_OP_CUSTOM_BASE + SC_OPREG_MAX)
    atomic_store(&slots[op - SCHEDC_OP_CUSTOM_BASE], NULL);
}

/* float serves f32 and the 16-bit floats (they accumulate in f32), the others their own type. */
static int serves(schedc_dtype type, schedc_dtype dt) {
  if (type == SCHEDC_F32) return dt == SCHEDC_F32 || dt == SCHEDC_F16 || dt == SCHEDC_BF16;
  return dt == type;
}

schedc_status sc_op_check_dtype(int op, schedc_dtype dtype, const char *what) {
  if (op < SCHEDC_OP_CUSTOM_BASE) return SCHEDC_OK;
  const sc_opdef *d = sc_opreg_get(op);
  if (!d) return sc_err(SCHEDC_EINVAL, "%s: op %d is not a live custom operator (freed with schedc_op_free, or never "
                        "made by schedc_op_create)", what, op);
  if (serves(d->type, dtype)) return SCHEDC_OK;
  const char *ctype = d->type == SCHEDC_F32 ? "float" : d->type == SCHEDC_F64 ? "double"
                      : d->type == SCHEDC_I32 ? "int32_t" : "int64_t";
  const char *dts = d->type == SCHEDC_F32 ? "f32, f16 and bf16" : schedc_dtype_name(d->type);
  return sc_err(SCHEDC_EINVAL, "%s: operator %s takes %s, which serves %s, not %s (write a version of the operator in %s for "
                "%s data)", what, d->name, ctype, dts, schedc_dtype_name(dtype),
                dtype == SCHEDC_F64 ? "double" : dtype == SCHEDC_I32 ? "int32_t" : dtype == SCHEDC_I64 ? "int64_t" : "float",
                schedc_dtype_name(dtype));
}
