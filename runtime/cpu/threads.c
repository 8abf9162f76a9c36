/*
 * threads.c — the `threads` transport: ranks are threads of one process, so the shared block is
 * heap memory and a rank's working buffer (its receive buffer, or private scratch) is read by
 * its peers directly. All communicators of a group are created together.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "err.h"

static void *t_work(schedc_comm *c, size_t bytes, void *user, sc_desc *d) {
  void *w = user ? user : sc_scratch(c, bytes);
  if (!w) return NULL;
  d->work = (uint64_t)(uintptr_t)w;
  return w;
}

static schedc_status t_map(schedc_comm *c, const uint8_t *need, int parity) {
  (void)need;
  for (int r = 0; r < c->nranks; r++) c->peer[r] = (char *)(uintptr_t)c->sh->slots[r].d[parity].work;
  return SCHEDC_OK;
}

static void t_destroy(schedc_comm *c) {
  atomic_store(&c->sh->slots[c->rank].state, SC_LEFT);
  if (atomic_fetch_sub(&c->sh->refs, 1) == 1) free(c->sh);
}

sc_transport sc_threads_transport = {t_work, t_map, NULL, t_destroy};

uint32_t sc_ctr_capacity(int nranks) {
  uint32_t cap = (1u << 22) / (uint32_t)nranks;
  if (cap > 65536) cap = 65536;
  if (cap < 1024) cap = 1024;
  return cap;
}

schedc_status schedc_comm_init_threads(int nranks, const schedc_comm_opts *opts, schedc_comm **comms) {
  if (!comms) return sc_err(SCHEDC_EINVAL, "comms is NULL");
  if (nranks < 1 || nranks > 4096) return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, 4096] for threads", nranks);
  uint32_t cpr = sc_ctr_capacity(nranks);
  size_t sz = sc_shared_size((uint32_t)nranks, cpr);
  sc_shared *sh = aligned_alloc(64, (sz + 63) & ~(size_t)63);
  if (!sh) return sc_err(SCHEDC_ENOMEM, "out of memory for the shared block (%zu bytes)", sz);
  sc_shared_init(sh, (uint32_t)nranks, cpr);
  for (int r = 0; r < nranks; r++) {
    schedc_status st = sc_comm_new(SCHEDC_BACKEND_THREADS, r, nranks, opts, &comms[r]);
    if (st != SCHEDC_OK) {
      while (r--) sc_comm_release(comms[r]);
      free(sh);
      return st;
    }
    comms[r]->sh = sh;
    comms[r]->tr = &sc_threads_transport;
  }
  atomic_store(&sh->refs, (uint32_t)nranks);
  atomic_store(&sh->ready, SC_SHARED_MAGIC);
  return SCHEDC_OK; /* one caller made every rank: the plan (if any) is the same for all */
}
