/*
 * alloc.c — the allocation wrappers (see alloc.h). Disarmed (always, outside tests) the hook
 * costs one thread-local load and a predicted branch per allocation, next to malloc's own work.
 */
#include "alloc.h"

#include <stdlib.h>

/* Allocations left until the injected failure; 0: disarmed. */
static _Thread_local unsigned long fail_countdown;
static _Thread_local int fail_fired;

/* Whether this allocation is the one to fail (and disarm: the failure happens once). */
static int fail_now(void) {
  if (__builtin_expect(fail_countdown == 0, 1)) return 0;
  if (--fail_countdown) return 0;
  fail_fired = 1;
  return 1;
}

void *sc_alloc(size_t n) { return fail_now() ? NULL : malloc(n); }
void *sc_calloc(size_t n, size_t size) { return fail_now() ? NULL : calloc(n, size); }
void *sc_realloc(void *p, size_t n) { return fail_now() ? NULL : realloc(p, n); }

void sc_alloc_fail_after(unsigned long n) {
  fail_countdown = n;
  fail_fired = 0;
}

int sc_alloc_fail_fired(void) { return fail_fired; }
