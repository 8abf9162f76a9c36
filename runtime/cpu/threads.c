/*
 * threads.c — the `threads` backend's transport: ranks are threads of one process, so the shared block is
 * heap memory and a rank's working buffer (its receive buffer, or private scratch) is read by
 * its peers directly. All communicators of a group are created together.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "err.h"

static void *t_work(schedc_comm *c, size_t bytes, void *user, sc_desc *d) {
  void *w = user ? user : sc_scratch(c, bytes);
  if (!w) return NULL;
  if (user && sc_mem_find(c, user, bytes)) c->mem_direct++;
  d->work = (uint64_t)(uintptr_t)w;
  return w;
}

static schedc_status t_map(schedc_comm *c, const uint8_t *need, int parity) {
  (void)need;
  sc_cpu *x = sc_cpu_of(c);
  for (int r = 0; r < c->nranks; r++) x->peer[r] = (char *)(uintptr_t)x->sh->slots[r].d[parity].work;
  return SCHEDC_OK;
}

/* Every rank's thread reads this process's memory: any receive buffer is shareable. */
static int t_share_out(schedc_comm *c, void *recv, size_t bytes, sc_desc *d) {
  (void)c, (void)bytes;
  d->out = (uint64_t)(uintptr_t)recv;
  return 1;
}

static schedc_status t_map_outs(schedc_comm *c, const uint8_t *need, int parity) {
  (void)need;
  sc_cpu *x = sc_cpu_of(c);
  for (int r = 0; r < c->nranks; r++) x->peer_out[r] = (char *)(uintptr_t)x->sh->slots[r].d[parity].out;
  return SCHEDC_OK;
}

static void t_destroy(schedc_comm *c) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  if (!sh) return;
  atomic_store(&sh->slots[c->rank].state, SC_LEFT);
  if (atomic_fetch_sub(&sh->refs, 1) == 1) free(sh);
}

static const sc_transport threads_transport = {1, t_work, t_map, t_share_out, t_map_outs, NULL, t_destroy};

schedc_status schedc_comm_init_threads(int nranks, const schedc_comm_opts *opts, schedc_comm **comms) {
  if (!comms) return sc_err(SCHEDC_EINVAL, "comms is NULL");
  if (nranks < 1 || nranks > 4096) return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, 4096] for threads", nranks);
  uint32_t cpr = sc_ctr_capacity(nranks);
  size_t sz = sc_shared_size((uint32_t)nranks, cpr);
  sc_shared *sh = aligned_alloc(64, (sz + 63) & ~(size_t)63);
  if (!sh) return sc_err(SCHEDC_ENOMEM, "out of memory for the shared block (%zu bytes)", sz);
  sc_shared_init(sh, (uint32_t)nranks, cpr);
  for (int r = 0; r < nranks; r++) {
    schedc_status st = sc_cpu_new(&sc_threads_backend, &threads_transport, r, nranks, opts, &comms[r]);
    if (st != SCHEDC_OK) {
      while (r--) schedc_comm_free(comms[r]); /* their shared block is not theirs yet: no refs */
      free(sh);
      return st;
    }
    sc_cpu_of(comms[r])->sh = sh;
  }
  atomic_store(&sh->refs, (uint32_t)nranks);
  atomic_store(&sh->ready, SC_SHARED_MAGIC);
  return SCHEDC_OK; /* one caller made every rank: the plan (if any) is the same for all */
}
