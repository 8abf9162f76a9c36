/*
 * opreg.c — the registry of custom operators (opreg.h): a fixed table of atomic pointers, so a
 * collective's hot path reads an op without a lock; values only grow, so a stale value fails.
 */
#include "opreg.h"

#include <pthread.h>
#include <stdatomic.h>

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
