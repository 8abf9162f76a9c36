/*
 * shm.h — the `shm` transport's state, shared by its two files: shm.c (the job's rendezvous in
 * the control segment and its security checks) and shm_arena.c (arenas, regions and the peers'
 * mappings, below it). Internal to runtime/cpu/.
 */
#ifndef SC_SHM_H
#define SC_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

/* Per rank, in the control segment: written by the rank before the init barrier, read by its
 * peers after it (the barrier orders them). */
typedef struct shm_rankinfo {
  _Atomic int32_t pid;       /* the process that claimed this rank; 0: unclaimed */
  int32_t fd;                /* its arena's memfd, in that process */
  uint64_t dev, ino;         /* the memfd's inode: a peer checks it opened that very file */
} shm_rankinfo;

typedef struct shm_tail {
  uint32_t magic, nranks;
  uint8_t token[16];
  shm_rankinfo rank[];
} shm_tail;

/* A peer's arena as this rank sees it: an fd of its memfd, opened once right after init and
 * kept, so the arena stays reachable (and growable: the owner grows that same inode) even if
 * its owner dies later — a reader may still need what it published before dying, and must then
 * learn of the death from its wait, as with any dead peer. */
typedef struct peermap { char *base; size_t size; uint64_t gen; int fd; } peermap;

/* A peer's schedc_mem_alloc region as this rank maps it (read-only). serial: the owner's number
 * for it, never reused on that communicator, so a mapping is never taken for a later region. */
#define REGMAPS 8
typedef struct regmap { uint64_t serial, ino; char *base; size_t size; uint64_t used; } regmap;

/* A rank's transport state (sc_cpu.tdata): made and freed by shm.c; the arena's fields and the
 * mappings (memfd .. reg_clock) are shm_arena.c's. */
typedef struct shmdata {
  char job[72];
  size_t ctl_size;
  shm_tail *tail;            /* inside the control segment */
  int ctl_linked;            /* rank 0: the control segment still has its name (unlink it) */
  int memfd;                 /* this rank's arena (-1: none yet) */
  char *arena;
  size_t arena_cap;
  uint64_t arena_gen;
  peermap *peers;
  char *cur;                 /* this call's working buffer (the arena or a region) */
  regmap **regs;             /* [nranks]: NULL or [REGMAPS] mappings of that peer's regions */
  uint64_t reg_clock;        /* use stamps of regs */
} shmdata;

/* Alive: the process exists and is not a zombie (a dead child its parent has not reaped). */
int sc_shm_pid_alive(int32_t pid);
/* The transport's work entry: the call's working buffer (the arena, grown on demand, or the
 * caller's buffer when it lies in one of this rank's regions), recorded in desc. */
void *sc_shm_work(schedc_comm *c, size_t bytes, void *user, sc_desc *desc);
/* The transport's map_peers entry: the needed peers' working buffers, mapped read-only. */
schedc_status sc_shm_map(schedc_comm *c, const uint8_t *need, int parity);
/* The transport's share_out and map_outs entries: the receive buffer is shareable when it lies in
 * one of this rank's schedc_mem_alloc regions (named in the descriptor's out_* fields); the peers
 * map those regions read-only, as they do a working buffer in one. */
int sc_shm_share_out(schedc_comm *c, void *recv, size_t bytes, sc_desc *desc);
schedc_status sc_shm_map_outs(schedc_comm *c, const uint8_t *need, int parity);
/* Open rank r's arena, as published in the control segment, through /proc/PID/fd (kept). */
schedc_status sc_shm_open_peer(schedc_comm *c, int r);
/* Unmap and close every arena, region mapping and fd of d; frees d->peers and d->regs. */
void sc_shm_arena_release(schedc_comm *c, shmdata *d);

#endif
