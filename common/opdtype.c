/*
 * opdtype.c — whether an op serves a dtype (sc_op_check_dtype, declared in opreg.h): built-in ops
 * serve every dtype, a custom op its C type's. Apart from opreg.c because its message names
 * dtypes (names.c), and names.c reads the registry for a custom op's name: one file each way.
 */
#include "err.h"
#include "names.h"
#include "opreg.h"

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
  const char *dts = d->type == SCHEDC_F32 ? "f32, f16 and bf16" : sc_dtype_name(d->type);
  return sc_err(SCHEDC_EINVAL, "%s: operator %s takes %s, which serves %s, not %s (write a version of the operator in %s for "
                "%s data)", what, d->name, ctype, dts, sc_dtype_name(dtype),
                dtype == SCHEDC_F64 ? "double" : dtype == SCHEDC_I32 ? "int32_t" : dtype == SCHEDC_I64 ? "int64_t" : "float",
                sc_dtype_name(dtype));
}
