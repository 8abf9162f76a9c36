/*
 * shm.c — the `shm` backend's transport: processes on one host. A control segment /schedc-JOB-ctl holds
 * the shared block; each rank's working buffer is its own segment /schedc-JOB-rRANK (its
 * "arena"), grown on demand and mapped read-only by its peers, which remap when the owner's
 * generation changes. Rank 0 creates the control segment; the others wait for it (a stale one
 * left by a dead job is recognised by its creator's pid and skipped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

typedef struct peermap { char *base; size_t size; uint64_t gen; } peermap;

typedef struct shmdata {
  char job[72];
  size_t ctl_size;
  char *arena;
  size_t arena_cap;
  uint64_t arena_gen;
  peermap *peers;
} shmdata;

static void seg_name(char *buf, size_t cap, const char *job, int rank) {
  if (rank < 0) snprintf(buf, cap, "/schedc-%s-ctl", job);
  else snprintf(buf, cap, "/schedc-%s-r%d", job, rank);
}

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
  (void)user; /* private memory cannot be shared: always the arena */
  shmdata *d = sc_cpu_of(c)->tdata;
  if (bytes > d->arena_cap || !d->arena) {
    size_t cap = d->arena_cap ? d->arena_cap : 1 << 20;
    while (cap < bytes) cap *= 2;
    char name[128];
    seg_name(name, sizeof name, d->job, c->rank);
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)cap) != 0) {
      if (fd >= 0) close(fd);
      sc_err(SCHEDC_EIO, "shm: cannot size %s to %zu bytes: %s", name, cap, strerror(errno));
      return NULL;
    }
    char *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) { sc_err(SCHEDC_EIO, "shm: cannot map %s: %s", name, strerror(errno)); return NULL; }
    if (d->arena) munmap(d->arena, d->arena_cap);
    d->arena = p;
    d->arena_cap = cap;
    d->arena_gen++;
  }
  desc->work = d->arena_gen;
  desc->arena_size = d->arena_cap;
  return d->arena;
}

static schedc_status s_map(schedc_comm *c, const uint8_t *need, int parity) {
  shmdata *d = sc_cpu_of(c)->tdata;
  sc_cpu_of(c)->peer[c->rank] = d->arena;
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->rank || !need[r]) continue;
    const sc_desc *s = &sc_cpu_of(c)->sh->slots[r].d[parity];
    peermap *pm = &d->peers[r];
    if (pm->gen == s->work && pm->base) { sc_cpu_of(c)->peer[r] = pm->base; continue; }
    if (pm->base) munmap(pm->base, pm->size);
    pm->base = NULL;
    char name[128];
    seg_name(name, sizeof name, d->job, r);
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) return sc_err(SCHEDC_EIO, "shm: cannot open rank %d's buffer %s: %s", r, name, strerror(errno));
    void *p = mmap(NULL, s->arena_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return sc_err(SCHEDC_EIO, "shm: cannot map rank %d's buffer: %s", r, strerror(errno));
    pm->base = p;
    pm->size = s->arena_size;
    pm->gen = s->work;
    sc_cpu_of(c)->peer[r] = p;
  }
  return SCHEDC_OK;
}

static void s_destroy(schedc_comm *c) {
  shmdata *d = sc_cpu_of(c)->tdata;
  if (!d) return;
  for (int r = 0; r < c->nranks; r++)
    if (d->peers && d->peers[r].base) munmap(d->peers[r].base, d->peers[r].size);
  char name[128];
  if (d->arena) {
    munmap(d->arena, d->arena_cap);
    seg_name(name, sizeof name, d->job, c->rank);
    shm_unlink(name);
  }
  if (sc_cpu_of(c)->sh) {
    atomic_store(&sc_cpu_of(c)->sh->slots[c->rank].state, SC_LEFT);
    if (atomic_fetch_sub(&sc_cpu_of(c)->sh->refs, 1) == 1) {
      seg_name(name, sizeof name, d->job, -1);
      shm_unlink(name);
    }
    munmap(sc_cpu_of(c)->sh, d->ctl_size);
  }
  free(d->peers);
  free(d);
  sc_cpu_of(c)->tdata = NULL;
}

static const sc_transport shm_transport = {0, s_work, s_map, s_alive, s_destroy};

static int valid_job(const char *job) {
  size_t n = strlen(job);
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(job[i] == '-' || job[i] == '_' || job[i] == '.' || (job[i] >= '0' && job[i] <= '9') ||
          (job[i] >= 'a' && job[i] <= 'z') || (job[i] >= 'A' && job[i] <= 'Z')))
      return 0;
  return 1;
}

schedc_status schedc_comm_init_shm(int rank, int nranks, const char *job, const schedc_comm_opts *opts,
                                   schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!job || !valid_job(job))
    return sc_err(SCHEDC_EINVAL, "shm: job id '%s' must be 1-64 characters of [A-Za-z0-9_.-]", job ? job : "(null)");
  schedc_comm *c;
  schedc_status st = sc_cpu_new(&sc_shm_backend, &shm_transport, rank, nranks, opts, &c);
  if (st != SCHEDC_OK) return st;
  shmdata *d = calloc(1, sizeof *d);
  if (!d || !(d->peers = calloc((size_t)nranks, sizeof *d->peers))) {
    free(d);
    schedc_comm_free(c);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  snprintf(d->job, sizeof d->job, "%s", job);
  sc_cpu_of(c)->tdata = d;
  uint32_t cpr = sc_ctr_capacity(nranks);
  d->ctl_size = sc_shared_size((uint32_t)nranks, cpr);
  char name[128];
  seg_name(name, sizeof name, job, -1);
  double deadline = sc_now() + c->timeout_s;
  if (rank == 0) {
    shm_unlink(name); /* a stale segment of a dead job with the same id */
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)d->ctl_size) != 0) {
      st = sc_err(SCHEDC_EIO, "shm: cannot create %s: %s", name, strerror(errno));
      if (fd >= 0) close(fd);
      goto fail;
    }
    void *p = mmap(NULL, d->ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) { st = sc_err(SCHEDC_EIO, "shm: cannot map %s: %s", name, strerror(errno)); goto fail; }
    sc_cpu_of(c)->sh = p;
    sc_shared_init(sc_cpu_of(c)->sh, (uint32_t)nranks, cpr);
    sc_cpu_of(c)->sh->slots[0].pid = (int32_t)getpid();
    atomic_store(&sc_cpu_of(c)->sh->ready, SC_SHARED_MAGIC);
  } else {
    for (;;) {
      int fd = shm_open(name, O_RDWR, 0);
      if (fd >= 0) {
        struct stat sb;
        void *p = MAP_FAILED;
        if (fstat(fd, &sb) == 0 && (size_t)sb.st_size == d->ctl_size)
          p = mmap(NULL, d->ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p != MAP_FAILED) {
          sc_shared *sh = p;
          if (atomic_load(&sh->ready) == SC_SHARED_MAGIC && sh->nranks == (uint32_t)nranks && pid_alive(sh->slots[0].pid)) {
            sc_cpu_of(c)->sh = sh;
            break;
          }
          munmap(p, d->ctl_size);
        }
      }
      if (sc_now() > deadline) {
        st = sc_err(SCHEDC_ETIMEOUT, "shm: rank %d found no live job '%s' of %d ranks within %.3g s (is rank 0 "
                                     "running with the same SCHEDC_JOB and nranks?)", rank, job, nranks, c->timeout_s);
        goto fail;
      }
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
  }
  sc_cpu_of(c)->sh->slots[rank].pid = (int32_t)getpid();
  atomic_fetch_add(&sc_cpu_of(c)->sh->refs, 1);
  if ((st = sc_cpu_start(c)) != SCHEDC_OK) goto fail;
  *out = c;
  return SCHEDC_OK;
fail:
  schedc_comm_free(c);
  return st;
}


/* A uid is only ever turned into a job name here, so the segment naming stays in one place. */
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
  return schedc_comm_init_shm(rank, nranks, job, opts, out);
}
