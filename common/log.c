/*
 * log.c — sc_log and schedc_set_log (log.h, schedc.h). The hook and its context are one pair
 * under one lock, held while the hook runs: the hook is called one message at a time, and once
 * schedc_set_log returns the old hook is never called again (so its context may be freed). The
 * lock is recursive, so a hook may itself log or call schedc_set_log.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "params.h"

static pthread_mutex_t mu;
static pthread_once_t mu_once = PTHREAD_ONCE_INIT;
static schedc_log_fn hook;
static void *hook_ctx;

static void mu_init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&mu, &a);
  pthread_mutexattr_destroy(&a);
}

void schedc_set_log(schedc_log_fn fn, void *ctx) {
  pthread_once(&mu_once, mu_init);
  pthread_mutex_lock(&mu);
  hook = fn;
  hook_ctx = fn ? ctx : NULL;
  pthread_mutex_unlock(&mu);
}

/* The default writer's level: SCHEDC_DEBUG's word (error|warn|info|debug, in schedc_log_level's
 * order), read at each message. A malformed value is said once (not a quiet fallback) and the
 * default, warn, used; the thread's errmsg, which reading it would replace, is kept. */
static schedc_log_level default_level(void) {
  static atomic_int told;
  int lv = SCHEDC_LOG_WARN;
  if (!sc_param_raw(SC_P_SCHEDC_DEBUG)) return SCHEDC_LOG_WARN; /* the list's default */
  char *keep = strdup(schedc_errmsg());
  if (sc_param_enum(SC_P_SCHEDC_DEBUG, &lv) != SCHEDC_OK) {
    if (!atomic_exchange(&told, 1)) fprintf(stderr, "schedc: warning: %s: warnings and errors are shown\n", schedc_errmsg());
    lv = SCHEDC_LOG_WARN;
  }
  if (keep) sc_err_str(SCHEDC_OK, keep);
  free(keep);
  return (schedc_log_level)lv;
}

static const char *level_word(schedc_log_level level) {
  switch (level) {
  case SCHEDC_LOG_ERROR: return "error";
  case SCHEDC_LOG_WARN: return "warning";
  case SCHEDC_LOG_INFO: return "info";
  default: return "debug";
  }
}

void sc_log(schedc_log_level level, const char *fmt, ...) {
  char small[1024], *msg = small;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big) { /* else the message cut at 1023 bytes rather than none */
      va_start(ap, fmt);
      vsnprintf(big, (size_t)n + 1, fmt, ap);
      va_end(ap);
      msg = big;
    }
  }
  pthread_once(&mu_once, mu_init);
  pthread_mutex_lock(&mu);
  if (hook) hook(hook_ctx, level, msg);
  else if (level <= default_level()) fprintf(stderr, "schedc: %s: %s\n", level_word(level), msg); /* one line, one call */
  pthread_mutex_unlock(&mu);
  if (msg != small) free(msg);
}
