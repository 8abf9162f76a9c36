/*
 * mem.c — schedc_mem_alloc / schedc_mem_free: buffers every rank of a communicator can map, so
 * a collective whose buffers come from there needs no copy into a working buffer of the
 * backend's and none out of it. The core checks the arguments and keeps each communicator's
 * list of regions (at most SC_MAXMEM); the backend makes and releases the memory (its table's
 * mem_alloc / mem_free) and decides, per call, whether a buffer is one of them.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "err.h"

const sc_memreg *sc_mem_find(const schedc_comm *c, const void *p, size_t bytes) {
  const char *q = p;
  for (int i = 0; q && i < c->nmem; i++) {
    const sc_memreg *r = &c->mem[i];
    if (q >= r->base && (size_t)(q - r->base) <= r->bytes && bytes <= r->bytes - (size_t)(q - r->base)) return r;
  }
  return NULL;
}

void sc_mem_release_all(schedc_comm *c) {
  while (c->nmem > 0) c->be->mem_free(c, &c->mem[--c->nmem]);
  free(c->mem);
  c->mem = NULL;
}

schedc_status sc_mem_host_alloc(schedc_comm *c, sc_memreg *r) {
  (void)c;
  r->base = aligned_alloc(64, r->bytes); /* r->bytes is a multiple of the page size */
  if (!r->base) return sc_err(SCHEDC_ENOMEM, "schedc_mem_alloc: out of memory for %zu bytes", r->bytes);
  memset(r->base, 0, r->bytes);
  r->fd = -1;
  return SCHEDC_OK;
}

void sc_mem_host_free(schedc_comm *c, sc_memreg *r) {
  (void)c;
  free(r->base);
}

schedc_status schedc_mem_alloc(schedc_comm *comm, size_t bytes, void **ptr) {
  if (ptr) *ptr = NULL;
  if (!comm) return sc_err(SCHEDC_EINVAL, "schedc_mem_alloc: comm is NULL");
  if (!ptr) return sc_err(SCHEDC_EINVAL, "schedc_mem_alloc: ptr is NULL");
  if (bytes == 0) return sc_err(SCHEDC_EINVAL, "schedc_mem_alloc: bytes is 0");
  if (!comm->be->mem_alloc)
    return sc_err(SCHEDC_EUNAVAIL, "schedc_mem_alloc: the %s backend has no shared allocations", comm->be->name);
  long pg = sysconf(_SC_PAGESIZE);
  size_t page = pg > 0 ? (size_t)pg : 4096;
  if (bytes > SIZE_MAX - page) return sc_err(SCHEDC_ENOMEM, "schedc_mem_alloc: %zu bytes is too large", bytes);
  if (comm->nmem == SC_MAXMEM)
    return sc_err(SCHEDC_ENOMEM, "schedc_mem_alloc: this communicator holds %d regions already, the most it can; "
                  "free one (schedc_mem_free) or allocate larger ones", SC_MAXMEM);
  if (!comm->mem && !(comm->mem = calloc(SC_MAXMEM, sizeof *comm->mem)))
    return sc_err(SCHEDC_ENOMEM, "schedc_mem_alloc: out of memory");
  sc_memreg r = {0};
  r.bytes = (bytes + page - 1) / page * page;
  r.fd = -1;
  r.serial = comm->mem_serial + 1;
  schedc_status st = comm->be->mem_alloc(comm, &r);
  if (st != SCHEDC_OK) return st;
  comm->mem_serial = r.serial;
  comm->mem[comm->nmem++] = r;
  *ptr = r.base;
  return SCHEDC_OK;
}

schedc_status schedc_mem_free(schedc_comm *comm, void *ptr) {
  if (!comm) return sc_err(SCHEDC_EINVAL, "schedc_mem_free: comm is NULL");
  if (!ptr) return SCHEDC_OK;
  for (int i = 0; i < comm->nmem; i++) {
    if (comm->mem[i].base != (char *)ptr) continue;
    comm->be->mem_free(comm, &comm->mem[i]);
    comm->mem[i] = comm->mem[--comm->nmem];
    return SCHEDC_OK;
  }
  const sc_memreg *in = sc_mem_find(comm, ptr, 0);
  if (in)
    return sc_err(SCHEDC_EINVAL, "schedc_mem_free: %p lies inside a region of this communicator (it starts at %p): "
                  "pass the pointer schedc_mem_alloc returned", ptr, (void *)in->base);
  return sc_err(SCHEDC_EINVAL, "schedc_mem_free: %p is not a schedc_mem_alloc allocation of this communicator (rank %d "
                "of %s; freed already, or another communicator's?): nothing freed", ptr, comm->rank, comm->be->name);
}
