/*
 * err.c — thread-local error detail and the name tables of schedc.h's X-macro lists.
 */
#include "err.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char *tls_msg;
/* A key whose destructor frees the thread's message when the thread exits. */
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static void free_msg(void *p) { free(p); }
static void make_key(void) { pthread_key_create(&tls_key, free_msg); }
static void set_msg(char *m) {
  free(tls_msg);
  tls_msg = m;
  pthread_once(&tls_once, make_key);
  pthread_setspecific(tls_key, m);
}

static const char *const status_msgs[] = {
#define X(name, value, msg) [value] = msg,
    SCHEDC_STATUS_LIST(X)
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
static const char *const coll_names[] = {
#define X(name, value, str) [value] = str,
    SCHEDC_COLLECTIVE_LIST(X)
#undef X
};

const char *schedc_status_str(schedc_status st) {
  if ((int)st < 0 || st >= SCHEDC_STATUS_COUNT_) return "unknown status";
  return status_msgs[st];
}

const char *schedc_errmsg(void) { return tls_msg ? tls_msg : ""; }

schedc_status sc_err_str(schedc_status st, const char *msg) {
  set_msg(strdup(msg ? msg : "")); /* NULL on OOM: errmsg then says "" and the status still tells */
  return st;
}

schedc_status sc_err(schedc_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *m = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (m) {
    va_start(ap, fmt);
    vsnprintf(m, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  set_msg(m);
  return st;
}

void sc_err_clear(void) { set_msg(NULL); }

const char *schedc_collective_name(schedc_collective c) {
  return (int)c >= 0 && c < SCHEDC_COLLECTIVE_COUNT_ ? coll_names[c] : NULL;
}
const char *schedc_dtype_name(schedc_dtype t) {
  return (int)t >= 0 && t < SCHEDC_DTYPE_COUNT_ ? dtype_names[t] : NULL;
}
const char *schedc_op_name(schedc_op op) { return (int)op >= 0 && op < SCHEDC_OP_COUNT_ ? op_names[op] : NULL; }
size_t schedc_dtype_size(schedc_dtype t) { return (int)t >= 0 && t < SCHEDC_DTYPE_COUNT_ ? dtype_sizes[t] : 0; }

schedc_status schedc_dtype_parse(const char *s, schedc_dtype *out) {
  for (int i = 0; s && i < SCHEDC_DTYPE_COUNT_; i++)
    if (strcmp(s, dtype_names[i]) == 0) { *out = (schedc_dtype)i; return SCHEDC_OK; }
  return sc_err(SCHEDC_EINVAL, "unknown dtype '%s' (choose f32, f64, f16, bf16, i32 or i64)", s ? s : "(null)");
}

schedc_status schedc_op_parse(const char *s, schedc_op *out) {
  for (int i = 0; s && i < SCHEDC_OP_COUNT_; i++)
    if (strcmp(s, op_names[i]) == 0) { *out = (schedc_op)i; return SCHEDC_OK; }
  return sc_err(SCHEDC_EINVAL, "unknown op '%s' (choose sum, prod, min, max or avg)", s ? s : "(null)");
}
