/*
 * threads.c — the `threads` backend's transport: ranks are threads of one process, so the shared block is
 * heap memory and a rank's working buffer (its receive buffer, or private scratch) is read by
 * its peers directly. All communicators of a group are created together.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static schedc_status t_regroup(schedc_comm *old, const int *members, int k, int newrank, const schedc_comm_opts *opts,
                               const sc_inject *inj, schedc_comm **out);

static const sc_transport threads_transport = {1, t_work, t_map, t_share_out, t_map_outs, NULL, t_destroy, t_regroup};

/* A group's shared block for nranks (NULL + errmsg when out of memory). */
static sc_shared *t_block(int nranks) {
  uint32_t cpr = sc_ctr_capacity(nranks);
  size_t sz = sc_shared_size((uint32_t)nranks, cpr);
  sc_shared *sh = aligned_alloc(64, (sz + 63) & ~(size_t)63);
  if (!sh) {
    sc_err(SCHEDC_ENOMEM, "out of memory for the shared block (%zu bytes)", sz);
    return NULL;
  }
  sc_shared_init(sh, (uint32_t)nranks, cpr);
  return sh;
}

/* The shrunk group's block is made by its rank 0, which publishes it in the old block
 * (shrink_next) with k references, one per member; each member takes its own and drops it if it
 * cannot make its head (then it is marked gone, so its peers' waits end at once). */
static schedc_status t_regroup(schedc_comm *old, const int *members, int k, int newrank, const schedc_comm_opts *opts,
                               const sc_inject *inj, schedc_comm **out) {
  (void)members;
  sc_shared *osh = sc_cpu_of(old)->sh, *sh;
  if (newrank == 0) {
    if (!(sh = t_block(k))) {
      atomic_store(&osh->shrink_next, 1u);
      return SCHEDC_ENOMEM;
    }
    atomic_store(&sh->refs, (uint32_t)k);
    atomic_store(&sh->ready, SC_SHARED_MAGIC);
    atomic_store_explicit(&osh->shrink_next, (uint64_t)(uintptr_t)sh, memory_order_release);
  } else {
    double deadline = sc_now() + old->timeout_s; /* rank 0 is a live thread of this process, past the agreement */
    uint64_t p;
    while (!(p = atomic_load_explicit(&osh->shrink_next, memory_order_acquire)) && sc_now() < deadline) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
    if (p <= 1)
      return sc_err(SCHEDC_EPEER, "schedc_comm_shrink: rank %d of the shrunk communicator (old rank %d) could not make "
                    "its shared block%s", 0, members[0], p ? " (out of memory)" : " in time");
    sh = (sc_shared *)(uintptr_t)p;
  }
  schedc_status st = sc_cpu_new(&sc_threads_backend, &threads_transport, newrank, k, opts, inj, out);
  if (st != SCHEDC_OK) {
    atomic_store(&sh->slots[newrank].fault, SC_ABORTED);
    atomic_store(&sh->slots[newrank].state, SC_LEFT);
    if (atomic_fetch_sub(&sh->refs, 1) == 1) free(sh);
    return st;
  }
  sc_cpu_of(*out)->sh = sh;
  return SCHEDC_OK;
}

schedc_status schedc_comm_init_threads(int nranks, const schedc_comm_opts *opts, schedc_comm **comms) {
  if (!comms) return sc_err(SCHEDC_EINVAL, "comms is NULL");
  if (nranks < 1 || nranks > 4096) return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, 4096] for threads", nranks);
  sc_shared *sh = t_block(nranks);
  if (!sh) return SCHEDC_ENOMEM;
  for (int r = 0; r < nranks; r++) {
    schedc_status st = sc_cpu_new(&sc_threads_backend, &threads_transport, r, nranks, opts, NULL, &comms[r]);
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
