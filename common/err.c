/*
 * err.c — the thread-local error detail behind schedc_errmsg() (the name tables: names.c).
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
