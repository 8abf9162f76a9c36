/*
 * test_log.c — the log hook (schedc_set_log, schedc.h) and the default writer (common/log.c):
 * a hook gets each message with its level and its ctx, every level whatever SCHEDC_DEBUG says,
 * one call at a time from many threads, and a message longer than any fixed buffer whole;
 * schedc_set_log(NULL, NULL) restores the default, which writes "schedc: LEVEL: MSG" lines to
 * stderr for SCHEDC_DEBUG's level and above (warn when unset), says once that a malformed value
 * is malformed, and leaves the thread's errmsg as it was.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "err.h"
#include "log.h"

typedef struct seen { int n; schedc_log_level level; char msg[8192]; void *ctx; } seen;
static void hook(void *ctx, schedc_log_level level, const char *msg) {
  seen *s = ctx;
  s->n++;
  s->level = level;
  s->ctx = ctx;
  snprintf(s->msg, sizeof s->msg, "%s", msg);
}

/* Everything the default writer printed while f ran (stderr into a file). */
static char captured[4096];
static const char *capture(void (*f)(void)) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  f();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(captured, 1, sizeof captured - 1, tmp);
  captured[n] = 0;
  fclose(tmp);
  return captured;
}
static void log_each_level(void) {
  sc_log(SCHEDC_LOG_ERROR, "e%d", 1);
  sc_log(SCHEDC_LOG_WARN, "w%d", 2);
  sc_log(SCHEDC_LOG_INFO, "i%d", 3);
  sc_log(SCHEDC_LOG_DEBUG, "d%d", 4);
}

static void hook_count(void *ctx, schedc_log_level level, const char *msg) {
  (void)level; (void)msg;
  int *n = ctx;
  int v = *n; /* not atomic: correct only because hook calls are serialised */
  sched_yield();
  *n = v + 1;
}
static void *logger(void *arg) {
  (void)arg;
  for (int i = 0; i < 500; i++) sc_log(SCHEDC_LOG_INFO, "thread message %d", i);
  return NULL;
}

int main(void) {
  CHECK(SCHEDC_LOG_ERROR == 0 && SCHEDC_LOG_WARN == 1 && SCHEDC_LOG_INFO == 2 && SCHEDC_LOG_DEBUG == 3);
  unsetenv("SCHEDC_DEBUG");

  /* a hook: the warning, its level, its ctx; every level reaches it; nothing on stderr */
  seen s = {0};
  schedc_set_log(hook, &s);
  sc_log(SCHEDC_LOG_WARN, "%s: rank(s) %d repaired", "allreduce", 2);
  CHECK(s.n == 1 && s.level == SCHEDC_LOG_WARN && s.ctx == &s);
  CHECK_EQ_STR(s.msg, "allreduce: rank(s) 2 repaired");
  CHECK_EQ_STR(capture(log_each_level), "");
  CHECK(s.n == 5 && s.level == SCHEDC_LOG_DEBUG);
  CHECK_EQ_STR(s.msg, "d4");
  static char longmsg[5000];
  memset(longmsg, 'x', sizeof longmsg - 1);
  sc_log(SCHEDC_LOG_WARN, "%s", longmsg);
  CHECK(strlen(s.msg) == sizeof longmsg - 1);

  /* serialised: 4 threads x 500 messages counted by a hook with an unprotected counter */
  int count = 0;
  schedc_set_log(hook_count, &count);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, logger, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK(count == 2000);

  /* NULL restores the default writer: warn and above, the hook no longer called */
  s.n = 0;
  schedc_set_log(hook, &s);
  schedc_set_log(NULL, NULL);
  CHECK_EQ_STR(capture(log_each_level), "schedc: error: e1\nschedc: warning: w2\n");
  CHECK(s.n == 0);

  /* SCHEDC_DEBUG: the default writer's level */
  setenv("SCHEDC_DEBUG", "error", 1);
  CHECK_EQ_STR(capture(log_each_level), "schedc: error: e1\n");
  setenv("SCHEDC_DEBUG", "info", 1);
  CHECK_EQ_STR(capture(log_each_level), "schedc: error: e1\nschedc: warning: w2\nschedc: info: i3\n");
  setenv("SCHEDC_DEBUG", "debug", 1);
  CHECK_EQ_STR(capture(log_each_level),
               "schedc: error: e1\nschedc: warning: w2\nschedc: info: i3\nschedc: debug: d4\n");

  /* malformed: said once, warn used, the thread's errmsg kept */
  setenv("SCHEDC_DEBUG", "loud", 1);
  sc_err(SCHEDC_EINVAL, "the caller's own failure");
  const char *out = capture(log_each_level);
  CHECK_CONTAINS(out, "SCHEDC_DEBUG='loud'");
  CHECK_CONTAINS(out, "schedc: error: e1\nschedc: warning: w2\n");
  CHECK(!strstr(out, "i3"));
  CHECK_EQ_STR(schedc_errmsg(), "the caller's own failure");
  CHECK(!strstr(capture(log_each_level), "SCHEDC_DEBUG")); /* once */
  unsetenv("SCHEDC_DEBUG");
  return DONE();
}
