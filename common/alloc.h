/*
 * alloc.h — the allocation wrappers codegen's verifier uses (sc_alloc, sc_calloc, sc_realloc:
 * malloc, calloc and realloc, freed with free()), and their test-only failure injection: tests
 * make the n-th allocation fail to prove that every failure surfaces as out of memory.
 */
#ifndef SC_ALLOC_H
#define SC_ALLOC_H

#include <stddef.h>

void *sc_alloc(size_t n);
void *sc_calloc(size_t n, size_t size);
void *sc_realloc(void *p, size_t n);

/* Test hook, never set by the library itself nor from the environment: the calling thread's
 * n-th wrapped allocation from now returns NULL (once; the ones after it succeed again), n = 0
 * disarms. sc_alloc_fail_fired() says whether that armed failure happened. Thread-local, so a
 * test arming it affects no other thread. */
void sc_alloc_fail_after(unsigned long n);
int sc_alloc_fail_fired(void);

#endif
