/*
 * shm_arena.c — the `shm` transport's memory: each rank's arena and its schedc_mem_alloc
 * regions (memfds that never had a name), and the read-only mappings of its peers' (shm.h).
 *
 * Arenas: each rank's working buffer is a memfd (never in /dev/shm), grown on demand (the same
 * inode, ftruncate'd). Right after init every rank opens each peer's through
 * /proc/OWNER_PID/fd/FD (a PTRACE_MODE_READ check: same user, dumpable process; Yama's
 * ptrace_scope restricts only attaching), checks it is the inode its owner published and this
 * user's, and keeps that fd: it maps the arena read-only from it and remaps when the owner's
 * generation changes, even after the owner died (what it published stays readable, as it did
 * when arenas had names).
 *
 * Shared allocations (schedc_mem_alloc): each region is a memfd of its own, mapped read/write by
 * its owner. A call whose working buffer would be the caller's receive buffer (cpu_coll.c's
 * `direct`) and whose buffer lies inside one of this rank's regions works there: the descriptor
 * names the region (fd in the owner, inode, size, offset) instead of the arena, and each reader
 * opens it through /proc/OWNER_PID/fd/FD with the arena's checks, maps it read-only and keeps
 * the mapping (a few per peer, least recently used let go). No copy in or out of an arena.
 *
 * Below shm.c (the job's rendezvous): this file calls nothing of it, nor of cpu_coll.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu.h"
#include "err.h"
#include "fileio.h"
#include "shm.h"

/* Alive: the process exists and is not a zombie (a dead child its parent has not reaped). */
int sc_shm_pid_alive(int32_t pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 0;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  const char *st = sc_proc_stat_rest(path, buf, sizeof buf); /* the state first */
  return !(st && (st[0] == 'Z' || st[0] == 'X'));
}

/* p (bytes) when it lies in one of this rank's schedc_mem_alloc regions: 1, and *ref names it for
 * the peers; else 0 and ref->serial 0 (private memory: the peers cannot map it). */
static int region_of(schedc_comm *c, const void *p, size_t bytes, sc_regref *ref) {
  const sc_memreg *r = p ? sc_mem_find(c, p, bytes) : NULL;
  if (!r || r->fd < 0) {
    ref->serial = 0;
    return 0;
  }
  *ref = (sc_regref){r->serial, r->dev, r->ino, r->bytes, (uint64_t)((const char *)p - r->base), r->fd};
  return 1;
}

void *sc_shm_work(schedc_comm *c, size_t bytes, void *user, sc_desc *desc) {
  shmdata *d = sc_cpu_of(c)->tdata;
  /* The caller's buffer, when it lies in one of this rank's schedc_mem_alloc regions: peers map
   * that region and read it in place. The caller may reuse it once the call returns: the
   * executor returns only after its drain has seen every read the plan makes of this rank's
   * cells (the reads counters) and, after a failure, the collective quiesces until no peer is
   * inside it — the guarantee threads relies on for its receive buffers, which holds for any
   * memory the peers read. (Private memory cannot be shared: the arena.) */
  if (region_of(c, user, bytes, &desc->reg)) {
    c->mem_direct++;
    return d->cur = user;
  }
  if (bytes > d->arena_cap || !d->arena) {
    size_t cap = d->arena_cap ? d->arena_cap : 1 << 20;
    while (cap < bytes) cap *= 2;
    /* Growing the same memfd keeps its inode (the one published at init) and its contents. */
    if (ftruncate(d->memfd, (off_t)cap) != 0) {
      sc_err(SCHEDC_EIO, "shm: cannot size rank %d's buffer to %zu bytes: %s", c->rank, cap, strerror(errno));
      return NULL;
    }
    char *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, d->memfd, 0);
    if (p == MAP_FAILED) {
      sc_err(SCHEDC_EIO, "shm: cannot map rank %d's buffer (%zu bytes): %s", c->rank, cap, strerror(errno));
      return NULL;
    }
    if (d->arena) munmap(d->arena, d->arena_cap);
    d->arena = p;
    d->arena_cap = cap;
    d->arena_gen++;
  }
  desc->work = d->arena_gen;
  desc->arena_size = d->arena_cap;
  return d->cur = d->arena;
}

/* Open rank r's file (pid, fd) through /proc/PID/fd/FD and check it is the inode its owner
 * published (dev, ino), this user's, and at least min_size bytes. what: "" for its arena, or what
 * else it is, for messages. A peer found dead is SCHEDC_EPEER. */
static schedc_status open_peer_file(schedc_comm *c, int r, int32_t pid, int32_t fdno, uint64_t dev, uint64_t ino,
                                    uint64_t min_size, const char *what, int *out) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fdno);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_uid == geteuid() && (uint64_t)sb.st_dev == dev &&
      (uint64_t)sb.st_ino == ino && (uint64_t)sb.st_size >= min_size) {
    *out = fd;
    return SCHEDC_OK;
  }
  int e = errno, opened = fd >= 0;
  if (opened) close(fd);
  if (!sc_shm_pid_alive(pid))
    return sc_err(SCHEDC_EPEER, "shm: rank %d (pid %d) died before rank %d could map its buffer%s", r, (int)pid,
                  c->rank, what);
  if (opened) return sc_err(SCHEDC_EIO, "shm: %s is not rank %d's buffer%s (another file, owner or size)", path, r, what);
  return sc_err(SCHEDC_EIO, "shm: cannot open rank %d's buffer%s %s: %s%s", r, what, path, strerror(e),
                e == EACCES ? " (the kernel lets a process open another's memory only if it runs as the same user "
                              "and is dumpable)" : "");
}

/* Open rank r's arena (published in the control block) once; the fd is kept. */
schedc_status sc_shm_open_peer(schedc_comm *c, int r) {
  shmdata *d = sc_cpu_of(c)->tdata;
  const shm_rankinfo *ri = &d->tail->rank[r];
  return open_peer_file(c, r, atomic_load(&ri->pid), ri->fd, ri->dev, ri->ino, 0, "", &d->peers[r].fd);
}

/* Rank r's region named by s (from its descriptor), mapped read-only (cached per peer by serial).
 * Opened through /proc/OWNER/fd/FD and checked as arenas are (open_peer_file); the fd is closed
 * once mapped (the mapping keeps the memory, even if the owner frees the region or dies). */
static schedc_status map_region(schedc_comm *c, int r, const sc_regref *s, char **out) {
  shmdata *d = sc_cpu_of(c)->tdata;
  if (!d->regs[r] && !(d->regs[r] = calloc(REGMAPS, sizeof(regmap))))
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  regmap *m = d->regs[r], *slot = &m[0];
  for (int i = 0; i < REGMAPS; i++) {
    if (m[i].base && m[i].serial == s->serial && m[i].ino == s->ino && m[i].size == s->size) {
      m[i].used = ++d->reg_clock;
      *out = m[i].base;
      return SCHEDC_OK;
    }
    if (!m[i].base ? slot->base != NULL : slot->base && m[i].used < slot->used) slot = &m[i];
  }
  if (s->off > s->size) return sc_err(SCHEDC_EIO, "shm: rank %d announced a buffer outside its region", r);
  int fd;
  schedc_status st = open_peer_file(c, r, atomic_load(&d->tail->rank[r].pid), s->fd, s->dev, s->ino,
                                    s->size, " (a schedc_mem_alloc region)", &fd);
  if (st != SCHEDC_OK) return st;
  void *p = mmap(NULL, s->size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return sc_err(SCHEDC_EIO, "shm: cannot map rank %d's region: %s", r, strerror(errno));
  if (slot->base) munmap(slot->base, slot->size);
  *slot = (regmap){s->serial, s->ino, p, s->size, ++d->reg_clock};
  *out = p;
  return SCHEDC_OK;
}

schedc_status sc_shm_map(schedc_comm *c, const uint8_t *need, int parity) {
  shmdata *d = sc_cpu_of(c)->tdata;
  sc_cpu_of(c)->peer[c->rank] = d->cur;
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->rank || !need[r]) continue;
    const sc_desc *s = &sc_cpu_of(c)->sh->slots[r].d[parity];
    schedc_status st;
    if (s->reg.serial) {
      char *base = NULL;
      if ((st = map_region(c, r, &s->reg, &base)) != SCHEDC_OK) return st;
      sc_cpu_of(c)->peer[r] = base + s->reg.off;
      continue;
    }
    peermap *pm = &d->peers[r];
    if (pm->gen == s->work && pm->base) { sc_cpu_of(c)->peer[r] = pm->base; continue; }
    if (pm->base) munmap(pm->base, pm->size);
    pm->base = NULL;
    if (pm->fd < 0 && (st = sc_shm_open_peer(c, r)) != SCHEDC_OK) return st;
    struct stat sb;
    if (fstat(pm->fd, &sb) != 0 || (uint64_t)sb.st_size < s->arena_size)
      return sc_err(SCHEDC_EIO, "shm: rank %d's buffer is smaller than the %llu bytes it announced", r,
                    (unsigned long long)s->arena_size);
    void *p = mmap(NULL, s->arena_size, PROT_READ, MAP_SHARED, pm->fd, 0);
    if (p == MAP_FAILED) return sc_err(SCHEDC_EIO, "shm: cannot map rank %d's buffer: %s", r, strerror(errno));
    pm->base = p;
    pm->size = s->arena_size;
    pm->gen = s->work;
    sc_cpu_of(c)->peer[r] = p;
  }
  return SCHEDC_OK;
}

int sc_shm_share_out(schedc_comm *c, void *recv, size_t bytes, sc_desc *desc) {
  return region_of(c, recv, bytes, &desc->out_reg);
}

schedc_status sc_shm_map_outs(schedc_comm *c, const uint8_t *need, int parity) {
  sc_cpu *x = sc_cpu_of(c);
  for (int r = 0; r < c->nranks; r++) {
    const sc_desc *s = &x->sh->slots[r].d[parity];
    x->peer_out[r] = NULL; /* its own too: the executor writes sc_execargs.out */
    if (r == c->rank || !need[r]) continue;
    char *base = NULL; /* the same cache of mappings as working buffers in regions */
    schedc_status st = map_region(c, r, &s->out_reg, &base);
    if (st != SCHEDC_OK) return st;
    x->peer_out[r] = base + s->out_reg.off;
  }
  return SCHEDC_OK;
}

void sc_shm_arena_release(schedc_comm *c, shmdata *d) {
  for (int r = 0; d->peers && r < c->nranks; r++) {
    if (d->peers[r].base) munmap(d->peers[r].base, d->peers[r].size);
    if (d->peers[r].fd >= 0) close(d->peers[r].fd);
    for (int i = 0; d->regs && d->regs[r] && i < REGMAPS; i++)
      if (d->regs[r][i].base) munmap(d->regs[r][i].base, d->regs[r][i].size);
    if (d->regs) free(d->regs[r]);
  }
  free(d->regs);
  if (d->arena) munmap(d->arena, d->arena_cap);
  if (d->memfd >= 0) close(d->memfd);
  free(d->peers);
  d->regs = NULL;
  d->peers = NULL;
  d->arena = NULL;
  d->memfd = -1;
}

schedc_status sc_shm_mem_alloc(schedc_comm *c, sc_memreg *r) {
  char name[64];
  snprintf(name, sizeof name, "schedc-mem-r%d-%llu", c->rank, (unsigned long long)r->serial);
  int fd = memfd_create(name, MFD_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0 || ftruncate(fd, (off_t)r->bytes) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return sc_err(e == ENOMEM || e == ENOSPC ? SCHEDC_ENOMEM : SCHEDC_EIO,
                  "schedc_mem_alloc: cannot make a shared region of %zu bytes (memfd): %s", r->bytes, strerror(e));
  }
  void *p = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    return sc_err(SCHEDC_ENOMEM, "schedc_mem_alloc: cannot map a shared region of %zu bytes: %s", r->bytes, strerror(e));
  }
  r->base = p;
  r->fd = fd;
  r->dev = (uint64_t)sb.st_dev;
  r->ino = (uint64_t)sb.st_ino;
  return SCHEDC_OK;
}

void sc_shm_mem_free(schedc_comm *c, sc_memreg *r) {
  (void)c;
  munmap(r->base, r->bytes);
  close(r->fd);
}
