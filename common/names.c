/*
 * names.c — the one build of the X-macro name tables (see names.h) and the public functions
 * over them. Tables are indexed by the enum value, so a list entry and its name cannot drift.
 */
#include "names.h"

#include <string.h>

#include "err.h"
#include "opreg.h"

static const char *const status_msgs[] = {
#define X(name, value, msg) [value] = msg,
    SCHEDC_STATUS_LIST(X)
#undef X
};
static const char *const coll_names[] = {
#define X(name, value, str) [value] = str,
    SCHEDC_COLLECTIVE_LIST(X)
#undef X
};
static const char *const dtype_names[] = {
#define X(name, value, str, bytes) [value] = str,
    SCHEDC_DTYPE_LIST(X)
#undef X
};
static const size_t dtype_sizes[] = {
#define X(name, value, str, bytes) [value] = bytes,
    SCHEDC_DTYPE_LIST(X)
#undef X
};
static const char *const op_names[] = {
#define X(name, value, str) [value] = str,
    SCHEDC_OP_LIST(X)
#undef X
};

const char *sc_status_msg(int st) { return st >= 0 && st < SCHEDC_STATUS_COUNT_ ? status_msgs[st] : NULL; }
const char *sc_collective_name(int c) { return c >= 0 && c < SCHEDC_COLLECTIVE_COUNT_ ? coll_names[c] : NULL; }
const char *sc_dtype_name(int dtype) { return dtype >= 0 && dtype < SCHEDC_DTYPE_COUNT_ ? dtype_names[dtype] : NULL; }
const char *sc_op_name(int op) {
  if (op >= SCHEDC_OP_CUSTOM_BASE) { /* a custom op: its "file.c:name" while it lives */
    const sc_opdef *d = sc_opreg_get(op);
    return d ? d->name : NULL;
  }
#define X(name, value, str) if (op == value) return str;
  SCHEDC_OP_EXACT_LIST(X) /* exact mode's ops (schedc.h) */
#undef X
  return op >= 0 && op < SCHEDC_OP_COUNT_ ? op_names[op] : NULL;
}
size_t sc_dtype_size(int dtype) {
  if (dtype == SC_DT_Q8 || dtype == SC_DT_Q16) return dtype == SC_DT_Q8 ? 1 : 2; /* a wire's integers */
  return dtype >= 0 && dtype < SCHEDC_DTYPE_COUNT_ ? dtype_sizes[dtype] : 0;
}
const char *sc_wire_name(int wire) {
#define X(name, value, str) if (wire == value) return str;
  SCHEDC_WIRE_LIST(X)
#undef X
  return NULL;
}

/* ---- the public functions (schedc.h) ---- */

const char *schedc_status_str(schedc_status st) {
  const char *m = sc_status_msg((int)st);
  return m ? m : "unknown status";
}
const char *schedc_collective_name(schedc_collective c) { return sc_collective_name((int)c); }
const char *schedc_dtype_name(schedc_dtype t) { return sc_dtype_name((int)t); }
const char *schedc_op_name(schedc_op op) { return sc_op_name((int)op); }
size_t schedc_dtype_size(schedc_dtype t) { return sc_dtype_size((int)t); } /* the runtime's working types too */
const char *schedc_wire_name(schedc_wire w) { return sc_wire_name((int)w); }

schedc_status schedc_wire_parse(const char *s, schedc_wire *out) {
#define X(name, value, str) if (s && strcmp(s, str) == 0) { *out = name; return SCHEDC_OK; }
  SCHEDC_WIRE_LIST(X)
#undef X
  return sc_err(SCHEDC_EINVAL, "unknown wire format '%s' (choose default, q8 or q16)", s ? s : "(null)");
}

schedc_status schedc_dtype_parse(const char *s, schedc_dtype *out) {
  for (int i = 0; s && i < SCHEDC_DTYPE_COUNT_; i++)
    if (strcmp(s, dtype_names[i]) == 0) { *out = (schedc_dtype)i; return SCHEDC_OK; }
  return sc_err(SCHEDC_EINVAL, "unknown dtype '%s' (choose f32, f64, f16, bf16, i32 or i64)", s ? s : "(null)");
}

schedc_status schedc_op_parse(const char *s, schedc_op *out) {
  for (int i = 0; s && i < SCHEDC_OP_COUNT_; i++)
    if (strcmp(s, op_names[i]) == 0) { *out = (schedc_op)i; return SCHEDC_OK; }
#define X(name, value, str) if (s && strcmp(s, str) == 0) { *out = name; return SCHEDC_OK; }
  SCHEDC_OP_EXACT_LIST(X)
#undef X
  return sc_err(SCHEDC_EINVAL, "unknown op '%s' (choose sum, prod, min, max, avg, sum_exact or avg_exact)", s ? s : "(null)");
}
