/*
 * mem.h — schedc_mem_alloc's regions (mem.c): the arguments and the communicator's list are the
 * core's, the memory is the backend's (sc_backend.mem_alloc). A region lives until
 * schedc_mem_free or the communicator's free.
 */
#ifndef SC_MEM_H
#define SC_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"

#define SC_MAXMEM 64
typedef struct sc_memreg {
  char *base;
  size_t bytes;              /* rounded up to the page size */
  int fd;                    /* a file every rank can map (shm's memfd), or -1: heap memory */
  uint64_t dev, ino;         /* that file's inode, published to the peers that map it */
  uint64_t serial;           /* this communicator's number for it (1, 2, ...; never reused) */
} sc_memreg;
/* The region of c's that holds [p, p + bytes), or NULL. */
const sc_memreg *sc_mem_find(const schedc_comm *c, const void *p, size_t bytes);
/* Release every region of c (schedc_comm_free, before the backend's free). */
void sc_mem_release_all(schedc_comm *c);
/* Heap regions (64-byte aligned, zeroed): the entries of backends whose ranks already see each
 * other's memory (threads) or copy through messages anyway (mpi). */
schedc_status sc_mem_host_alloc(schedc_comm *c, sc_memreg *r);
void sc_mem_host_free(schedc_comm *c, sc_memreg *r);

#endif
