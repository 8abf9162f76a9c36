/*
 * shm.c — the `shm` backend's transport: processes on one host.
 *
 * Rendezvous: a control segment /dev/shm/schedc-JOB-ctl holds the shared block (sc_shared) and,
 * after it, this transport's tail (shm_tail): the job's 128-bit token and, per rank, the pid
 * that claimed the rank and its arena's memfd. Rank 0 creates it with O_CREAT|O_EXCL, mode 0600;
 * the other ranks open it without O_CREAT and use it only if it is this user's, mode 0600, the
 * right size, and carries their token. Once every rank has passed the init barrier (so every
 * rank has mapped it) rank 0 unlinks it: after init nothing of the job has a name, so no exit,
 * crash or kill can leave anything in /dev/shm, and no later job can meet it.
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
 * Isolation (docs/reliability.md): the token is the unique id's 128 random bits
 * (schedc_comm_init_shm_uid) or a hash of the job string (schedc_comm_init_shm: the string is
 * then the secret the launcher shares, e.g. `schedc launch`'s random job id). A segment another
 * user owns, or one with another mode or token, is refused, never written to. Two processes
 * claiming one rank of one job (two jobs given the same id) are refused on the second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "err.h"
#include "hash.h"

#define SHM_TAIL_MAGIC 0x53434d54u /* "SCMT" */

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

static void ctl_name(char *buf, size_t cap, const char *job) { snprintf(buf, cap, "/schedc-%s-ctl", job); }

/* Offset of the tail: after the shared block and its counters. */
static size_t tail_off(uint32_t nranks) { return (sc_shared_size(nranks, sc_ctr_capacity((int)nranks)) + 63) & ~(size_t)63; }
static size_t ctl_size_for(uint32_t nranks) {
  return tail_off(nranks) + sizeof(shm_tail) + (size_t)nranks * sizeof(shm_rankinfo);
}
static shm_tail *tail_of(void *ctl, uint32_t nranks) { return (shm_tail *)((char *)ctl + tail_off(nranks)); }

/* Alive: the process exists and is not a zombie (a dead child its parent has not reaped). */
static int pid_alive(int32_t pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 0;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *rp = strrchr(buf, ')'); /* "pid (comm) S ..." */
  return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* A rank that has not registered yet (pid 0) is not dead: only the timeout can judge it. */
static int s_alive(schedc_comm *c, int r) {
  int32_t pid = sc_cpu_of(c)->sh->slots[r].pid;
  return pid == 0 || pid_alive(pid);
}

static void *s_work(schedc_comm *c, size_t bytes, void *user, sc_desc *desc) {
  shmdata *d = sc_cpu_of(c)->tdata;
  /* The caller's buffer, when it lies in one of this rank's schedc_mem_alloc regions: peers map
   * that region and read it in place. The caller may reuse it once the call returns: the
   * executor returns only after its drain has seen every read the plan makes of this rank's
   * cells (the reads counters) and, after a failure, the collective quiesces until no peer is
   * inside it — the guarantee threads relies on for its receive buffers, which holds for any
   * memory the peers read. (Private memory cannot be shared: the arena.) */
  const sc_memreg *r = user ? sc_mem_find(c, user, bytes) : NULL;
  if (r && r->fd >= 0) {
    desc->reg_serial = r->serial;
    desc->reg_fd = r->fd;
    desc->reg_dev = r->dev;
    desc->reg_ino = r->ino;
    desc->reg_size = r->bytes;
    desc->reg_off = (uint64_t)((char *)user - r->base);
    c->mem_direct++;
    return d->cur = user;
  }
  desc->reg_serial = 0;
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
  if (!pid_alive(pid))
    return sc_err(SCHEDC_EPEER, "shm: rank %d (pid %d) died before rank %d could map its buffer%s", r, (int)pid,
                  c->rank, what);
  if (opened) return sc_err(SCHEDC_EIO, "shm: %s is not rank %d's buffer%s (another file, owner or size)", path, r, what);
  return sc_err(SCHEDC_EIO, "shm: cannot open rank %d's buffer%s %s: %s%s", r, what, path, strerror(e),
                e == EACCES ? " (the kernel lets a process open another's memory only if it runs as the same user "
                              "and is dumpable)" : "");
}

/* Open rank r's arena (published in the control block) once; the fd is kept. */
static schedc_status open_peer(schedc_comm *c, int r) {
  shmdata *d = sc_cpu_of(c)->tdata;
  const shm_rankinfo *ri = &d->tail->rank[r];
  return open_peer_file(c, r, atomic_load(&ri->pid), ri->fd, ri->dev, ri->ino, 0, "", &d->peers[r].fd);
}

/* Rank r's region named by its descriptor s, mapped read-only (cached per peer by serial). Opened
 * through /proc/OWNER/fd/FD and checked as arenas are (open_peer_file); the fd is closed once mapped
 * (the mapping keeps the memory, even if the owner frees the region or dies). */
static schedc_status map_region(schedc_comm *c, int r, const sc_desc *s, char **out) {
  shmdata *d = sc_cpu_of(c)->tdata;
  if (!d->regs[r] && !(d->regs[r] = calloc(REGMAPS, sizeof(regmap))))
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  regmap *m = d->regs[r], *slot = &m[0];
  for (int i = 0; i < REGMAPS; i++) {
    if (m[i].base && m[i].serial == s->reg_serial && m[i].ino == s->reg_ino && m[i].size == s->reg_size) {
      m[i].used = ++d->reg_clock;
      *out = m[i].base;
      return SCHEDC_OK;
    }
    if (!m[i].base ? slot->base != NULL : slot->base && m[i].used < slot->used) slot = &m[i];
  }
  if (s->reg_off > s->reg_size) return sc_err(SCHEDC_EIO, "shm: rank %d announced a buffer outside its region", r);
  int fd;
  schedc_status st = open_peer_file(c, r, atomic_load(&d->tail->rank[r].pid), s->reg_fd, s->reg_dev, s->reg_ino,
                                    s->reg_size, " (a schedc_mem_alloc region)", &fd);
  if (st != SCHEDC_OK) return st;
  void *p = mmap(NULL, s->reg_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return sc_err(SCHEDC_EIO, "shm: cannot map rank %d's region: %s", r, strerror(errno));
  if (slot->base) munmap(slot->base, slot->size);
  *slot = (regmap){s->reg_serial, s->reg_ino, p, s->reg_size, ++d->reg_clock};
  *out = p;
  return SCHEDC_OK;
}

static schedc_status s_map(schedc_comm *c, const uint8_t *need, int parity) {
  shmdata *d = sc_cpu_of(c)->tdata;
  sc_cpu_of(c)->peer[c->rank] = d->cur;
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->rank || !need[r]) continue;
    const sc_desc *s = &sc_cpu_of(c)->sh->slots[r].d[parity];
    schedc_status st;
    if (s->reg_serial) {
      char *base = NULL;
      if ((st = map_region(c, r, s, &base)) != SCHEDC_OK) return st;
      sc_cpu_of(c)->peer[r] = base + s->reg_off;
      continue;
    }
    peermap *pm = &d->peers[r];
    if (pm->gen == s->work && pm->base) { sc_cpu_of(c)->peer[r] = pm->base; continue; }
    if (pm->base) munmap(pm->base, pm->size);
    pm->base = NULL;
    if (pm->fd < 0 && (st = open_peer(c, r)) != SCHEDC_OK) return st;
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

/* Rank 0: the control segment loses its name (idempotent). Only rank 0 unlinks, and only a
 * segment it created itself: the name may belong to another job once it is gone. */
static void ctl_unlink(shmdata *d) {
  if (!d->ctl_linked) return;
  char name[128];
  ctl_name(name, sizeof name, d->job);
  shm_unlink(name);
  d->ctl_linked = 0;
}

static void s_destroy(schedc_comm *c) {
  shmdata *d = sc_cpu_of(c)->tdata;
  if (!d) return;
  ctl_unlink(d);
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
  if (sc_cpu_of(c)->sh) {
    atomic_store(&sc_cpu_of(c)->sh->slots[c->rank].state, SC_LEFT);
    munmap(sc_cpu_of(c)->sh, d->ctl_size);
  }
  free(d->peers);
  free(d);
  sc_cpu_of(c)->tdata = NULL;
}

static const sc_transport shm_transport = {0, s_work, s_map, s_alive, s_destroy};

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

static int valid_job(const char *job) {
  size_t n = strlen(job);
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(job[i] == '-' || job[i] == '_' || job[i] == '.' || (job[i] >= '0' && job[i] <= '9') ||
          (job[i] >= 'a' && job[i] <= 'z') || (job[i] >= 'A' && job[i] <= 'Z')))
      return 0;
  return 1;
}

/* The token of a job given by name: 128 bits of two independent 64-bit hashes of the string.
 * Not a secret of its own (the string is): it tells this job's block from anything else that
 * could sit under the same name. */
static void job_token(const char *job, uint8_t tok[16]) {
  uint64_t h[2] = {SC_FNV_INIT, 0x6a09e667f3bcc909ull};
  for (const unsigned char *p = (const unsigned char *)job; *p; p++) {
    h[0] = sc_fnv_step(h[0], *p);
    h[1] = sc_mix64(h[1] ^ *p);
  }
  h[0] = sc_mix64(h[0] ^ 0x7363686564632d31ull); /* "schedc-1" */
  h[1] = sc_mix64(h[1] + h[0]);
  memcpy(tok, h, 16);
}

/* Who owns uid, for messages. */
static void owner_name(uid_t uid, char *buf, size_t cap) {
  struct passwd pw, *res = NULL;
  char tmp[1024];
  if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
    snprintf(buf, cap, "uid %u (%s)", (unsigned)uid, res->pw_name);
  else
    snprintf(buf, cap, "uid %u", (unsigned)uid);
}

/* The checks every rank makes on a control segment it did not create before using it: this
 * user's, and no permission bits beyond 0600 (else refused: another user could read or write
 * it). SCHEDC_OK or the refusal, naming the segment and its owner. Bits missing from 0600 are
 * not refused here: rank 0 sets exactly 0600 with fchmod just after creating it (shm_open's
 * mode passes through the umask), and a rank may look in between; join_ctl waits for 0600. */
static schedc_status check_owner(const char *name, const struct stat *sb) {
  if (sb->st_uid != geteuid()) {
    char who[160];
    owner_name(sb->st_uid, who, sizeof who);
    return sc_err(SCHEDC_EINVAL, "shm: /dev/shm%s belongs to %s, not to this user (uid %u): refusing to use it (another "
                  "user created the job's segment name first; give the job an unpredictable id, e.g. schedc launch's "
                  "or schedc_unique_id's)", name, who, (unsigned)geteuid());
  }
  if ((sb->st_mode & 07777 & ~0600u) != 0)
    return sc_err(SCHEDC_EINVAL, "shm: /dev/shm%s has mode %04o, not 0600: refusing to use it (schedc did not make it "
                  "so; remove it if it is yours)", name, (unsigned)(sb->st_mode & 07777));
  return SCHEDC_OK;
}

/* Rank 0 found its control segment's name taken. SCHEDC_OK: it is a stale one of this user's
 * (a schedc block whose rank 0 is dead) that the caller may remove; else the refusal. */
static schedc_status judge_existing(const char *name, const char *job) {
  int fd = shm_open(name, O_RDONLY, 0);
  struct stat sb;
  if (fd < 0) {
    if (errno == ENOENT) return SCHEDC_OK; /* gone meanwhile: try again */
    int e = errno;
    char path[160];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    schedc_status st = stat(path, &sb) == 0 ? check_owner(name, &sb) : SCHEDC_OK; /* name the owner if not us */
    if (st != SCHEDC_OK) return st;
    return sc_err(SCHEDC_EINVAL, "shm: /dev/shm%s exists and cannot be opened (%s): refusing to use it", name,
                  strerror(e));
  }
  schedc_status st = fstat(fd, &sb) != 0 ? sc_err(SCHEDC_EIO, "shm: cannot stat /dev/shm%s: %s", name, strerror(errno))
                                         : check_owner(name, &sb);
  if (st != SCHEDC_OK) { close(fd); return st; }
  int32_t creator = -1;
  if ((size_t)sb.st_size >= sizeof(sc_shared)) {
    sc_shared *sh = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (sh != MAP_FAILED) {
      uint32_t n = sh->nranks;
      if (atomic_load(&sh->ready) == SC_SHARED_MAGIC && n >= 1 && n <= 65536 && (size_t)sb.st_size == ctl_size_for(n) &&
          tail_of(sh, n)->magic == SHM_TAIL_MAGIC)
        creator = atomic_load(&tail_of(sh, n)->rank[0].pid);
      munmap(sh, (size_t)sb.st_size);
    }
  }
  close(fd);
  if (creator < 0)
    return sc_err(SCHEDC_EINVAL, "shm: /dev/shm%s exists (%lld bytes) and is not a schedc control segment: refusing to "
                  "use it (remove it if it is a leftover of yours)", name, (long long)sb.st_size);
  if (creator == (int32_t)getpid() || pid_alive(creator))
    return sc_err(SCHEDC_EINVAL, "shm: job id '%s' is in use by a live job (its rank 0 is pid %d): concurrent jobs need "
                  "different job ids (SCHEDC_JOB, schedc_unique_id)", job, (int)creator);
  return SCHEDC_OK;
}

/* Rank 0: create the control segment (O_EXCL), removing a stale one of this user's. */
static schedc_status create_ctl(schedc_comm *c, shmdata *d, const char *name, const uint8_t tok[16]) {
  int fd = -1;
  for (int tries = 0; fd < 0; tries++) {
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) break;
    if (errno != EEXIST || tries == 3)
      return sc_err(SCHEDC_EIO, "shm: cannot create /dev/shm%s: %s", name, strerror(errno));
    schedc_status st = judge_existing(name, d->job);
    if (st != SCHEDC_OK) return st;
    shm_unlink(name); /* stale: its job's rank 0 is dead */
  }
  d->ctl_linked = 1;
  /* the umask may have cleared bits of 0600; the peers require exactly 0600 */
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)d->ctl_size) != 0) {
    close(fd);
    return sc_err(SCHEDC_EIO, "shm: cannot size /dev/shm%s: %s", name, strerror(errno));
  }
  void *p = mmap(NULL, d->ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return sc_err(SCHEDC_EIO, "shm: cannot map /dev/shm%s: %s", name, strerror(errno));
  sc_shared *sh = p;
  uint32_t n = (uint32_t)c->nranks;
  sc_shared_init(sh, n, sc_ctr_capacity(c->nranks));
  shm_tail *t = tail_of(sh, n);
  t->magic = SHM_TAIL_MAGIC;
  t->nranks = n;
  memcpy(t->token, tok, 16);
  atomic_store(&t->rank[0].pid, (int32_t)getpid());
  sh->slots[0].pid = (int32_t)getpid();
  sc_cpu_of(c)->sh = sh;
  d->tail = t;
  atomic_store(&sh->ready, SC_SHARED_MAGIC); /* last: a peer uses nothing before it sees this */
  return SCHEDC_OK;
}

/* Ranks > 0: find rank 0's control segment, check it, claim the rank. Waits for rank 0 up to
 * the timeout; refuses at once what can never become this job's (another owner, mode or
 * token, or its rank taken). */
static schedc_status join_ctl(schedc_comm *c, shmdata *d, const char *name, const uint8_t tok[16]) {
  int rank = c->rank, nranks = c->nranks;
  double deadline = sc_now() + c->timeout_s;
  char why[200] = "it does not exist";
  for (;;) {
    int fd = shm_open(name, O_RDWR, 0);
    if (fd >= 0) {
      struct stat sb;
      if (fstat(fd, &sb) != 0) { close(fd); return sc_err(SCHEDC_EIO, "shm: cannot stat /dev/shm%s: %s", name, strerror(errno)); }
      schedc_status st = check_owner(name, &sb);
      if (st != SCHEDC_OK) { close(fd); return st; }
      void *p = MAP_FAILED;
      if ((sb.st_mode & 07777) != 0600) /* rank 0 is between shm_open and fchmod */
        snprintf(why, sizeof why, "its mode is %04o, not yet 0600", (unsigned)(sb.st_mode & 07777));
      else if ((size_t)sb.st_size == d->ctl_size) p = mmap(NULL, d->ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      else if (sb.st_size != 0) /* 0: rank 0 has not sized it yet */
        snprintf(why, sizeof why, "it has %lld bytes, not the %zu of a job of %d ranks", (long long)sb.st_size,
                 d->ctl_size, nranks);
      close(fd);
      if (p != MAP_FAILED) {
        sc_shared *sh = p;
        shm_tail *t = tail_of(sh, (uint32_t)nranks);
        if (atomic_load(&sh->ready) != SC_SHARED_MAGIC) {
          snprintf(why, sizeof why, "rank 0 has not finished making it");
        } else if (sh->nranks != (uint32_t)nranks || t->magic != SHM_TAIL_MAGIC || t->nranks != (uint32_t)nranks) {
          snprintf(why, sizeof why, "it is not a control segment of a job of %d ranks", nranks);
        } else if (memcmp(t->token, tok, 16) != 0) {
          munmap(p, d->ctl_size);
          return sc_err(SCHEDC_EINVAL, "shm: /dev/shm%s carries another job's token: refusing to use it (it was not "
                        "made by rank 0 of job '%s')", name, d->job);
        } else if (!pid_alive(atomic_load(&t->rank[0].pid))) {
          snprintf(why, sizeof why, "its rank 0 (pid %d) is dead: a stale one", (int)atomic_load(&t->rank[0].pid));
        } else {
          int32_t expect = 0;
          if (!atomic_compare_exchange_strong(&t->rank[rank].pid, &expect, (int32_t)getpid())) {
            munmap(p, d->ctl_size);
            return sc_err(SCHEDC_EINVAL, "shm: rank %d of job '%s' is taken by pid %d already: two processes were given "
                          "the same rank and job (two jobs with the same job id?)", rank, d->job, (int)expect);
          }
          sh->slots[rank].pid = (int32_t)getpid();
          sc_cpu_of(c)->sh = sh;
          d->tail = t;
          return SCHEDC_OK;
        }
        munmap(p, d->ctl_size);
      }
    } else if (errno == EACCES) { /* another user's, or ours before rank 0's fchmod: the owner says */
      char path[160];
      struct stat sb;
      snprintf(path, sizeof path, "/dev/shm%s", name);
      if (stat(path, &sb) == 0) {
        schedc_status st = check_owner(name, &sb);
        if (st != SCHEDC_OK) return st;
        snprintf(why, sizeof why, "it cannot be opened yet (mode %04o)", (unsigned)(sb.st_mode & 07777));
      }
    } else if (errno != ENOENT) {
      return sc_err(SCHEDC_EIO, "shm: cannot open /dev/shm%s: %s", name, strerror(errno));
    }
    if (sc_now() > deadline)
      return sc_err(SCHEDC_ETIMEOUT, "shm: rank %d found no live job '%s' of %d ranks within %.3g s: /dev/shm%s: %s "
                    "(is rank 0 running with the same job id and nranks?)", rank, d->job, nranks, c->timeout_s, name, why);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
}

static schedc_status shm_init(int rank, int nranks, const char *job, const uint8_t tok[16],
                              const schedc_comm_opts *opts, schedc_comm **out) {
  schedc_comm *c;
  schedc_status st = sc_cpu_new(&sc_shm_backend, &shm_transport, rank, nranks, opts, &c);
  if (st != SCHEDC_OK) return st;
  shmdata *d = calloc(1, sizeof *d);
  if (!d || !(d->peers = calloc((size_t)nranks, sizeof *d->peers)) || !(d->regs = calloc((size_t)nranks, sizeof *d->regs))) {
    if (d) free(d->peers);
    free(d);
    schedc_comm_free(c);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  d->memfd = -1;
  for (int r = 0; r < nranks; r++) d->peers[r].fd = -1;
  snprintf(d->job, sizeof d->job, "%s", job);
  sc_cpu_of(c)->tdata = d;
  d->ctl_size = ctl_size_for((uint32_t)nranks);
  char name[128];
  ctl_name(name, sizeof name, job);
  /* The arena first: a memfd, never named, sized when the first call needs it. */
  char mname[96];
  snprintf(mname, sizeof mname, "schedc-%s-r%d", job, rank);
  struct stat sb;
  if ((d->memfd = memfd_create(mname, MFD_CLOEXEC)) < 0 || fstat(d->memfd, &sb) != 0) {
    st = sc_err(SCHEDC_EIO, "shm: cannot create rank %d's buffer (memfd_create): %s", rank, strerror(errno));
    goto fail;
  }
  st = rank == 0 ? create_ctl(c, d, name, tok) : join_ctl(c, d, name, tok);
  if (st != SCHEDC_OK) goto fail;
  shm_rankinfo *me = &d->tail->rank[rank];
  me->fd = d->memfd;
  me->dev = (uint64_t)sb.st_dev;
  me->ino = (uint64_t)sb.st_ino;
  st = sc_cpu_start(c); /* its barrier: every rank has mapped the control segment */
  ctl_unlink(d);
  if (st != SCHEDC_OK) goto fail;
  /* Every rank has published its arena (before the barrier): take a handle on each now, while
   * they are all alive (one fd per peer). */
  for (int r = 0; r < nranks; r++)
    if (r != rank && (st = open_peer(c, r)) != SCHEDC_OK) goto fail;
  *out = c;
  return SCHEDC_OK;
fail:
  schedc_comm_free(c);
  return st;
}

schedc_status schedc_comm_init_shm(int rank, int nranks, const char *job, const schedc_comm_opts *opts,
                                   schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!job || !valid_job(job))
    return sc_err(SCHEDC_EINVAL, "shm: job id '%s' must be 1-64 characters of [A-Za-z0-9_.-]", job ? job : "(null)");
  uint8_t tok[16];
  job_token(job, tok);
  return shm_init(rank, nranks, job, tok, opts, out);
}

/* A uid is only ever turned into a job name and token here, so the segment naming stays in one place. */
schedc_status schedc_unique_id(schedc_uid *id) {
  if (!id) return sc_err(SCHEDC_EINVAL, "id is NULL");
  size_t got = 0;
  while (got < sizeof id->bytes) {
    ssize_t n = getrandom(id->bytes + got, sizeof id->bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sc_err(SCHEDC_EIO, "getrandom: %s", strerror(errno));
    }
    got += (size_t)n;
  }
  return SCHEDC_OK;
}

schedc_status schedc_comm_init_shm_uid(int rank, int nranks, const schedc_uid *id, const schedc_comm_opts *opts,
                                       schedc_comm **out) {
  if (out) *out = NULL;
  if (!id) return sc_err(SCHEDC_EINVAL, "id is NULL");
  char job[2 + 2 * sizeof id->bytes];
  job[0] = 'u';
  for (size_t i = 0; i < sizeof id->bytes; i++) snprintf(job + 1 + 2 * i, 3, "%02x", id->bytes[i]);
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  /* the token is the id itself: 128 bits drawn by one rank, which no other job holds */
  return shm_init(rank, nranks, job, id->bytes, opts, out);
}
