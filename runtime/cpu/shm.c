/*
 * shm.c — the `shm` backend's job: processes on one host meet in a control segment, checked
 * before use; their arenas and mappings are shm_arena.c's (shm.h).
 *
 * Rendezvous: a control segment /dev/shm/schedc-JOB-ctl holds the shared block (sc_shared) and,
 * after it, this transport's tail (shm_tail): the job's 128-bit token and, per rank, the pid
 * that claimed the rank and its arena's memfd. Rank 0 creates it with O_CREAT|O_EXCL, mode 0600;
 * the other ranks open it without O_CREAT and use it only if it is this user's, mode 0600, the
 * right size, and carries their token. Once every rank has passed the init barrier (so every
 * rank has mapped it) rank 0 unlinks it: after init nothing of the job has a name, so no exit,
 * crash or kill can leave anything in /dev/shm, and no later job can meet it.
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
#include "shm.h"

#define SHM_TAIL_MAGIC 0x53434d54u /* "SCMT" */

static void ctl_name(char *buf, size_t cap, const char *job) { snprintf(buf, cap, "/schedc-%s-ctl", job); }

/* Offset of the tail: after the shared block and its counters. */
static size_t tail_off(uint32_t nranks) { return (sc_shared_size(nranks, sc_ctr_capacity((int)nranks)) + 63) & ~(size_t)63; }
static size_t ctl_size_for(uint32_t nranks) {
  return tail_off(nranks) + sizeof(shm_tail) + (size_t)nranks * sizeof(shm_rankinfo);
}
static shm_tail *tail_of(void *ctl, uint32_t nranks) { return (shm_tail *)((char *)ctl + tail_off(nranks)); }

/* A rank that has not registered yet (pid 0) is not dead: only the timeout can judge it. */
static int s_alive(schedc_comm *c, int r) {
  int32_t pid = sc_cpu_of(c)->sh->slots[r].pid;
  return pid == 0 || sc_shm_pid_alive(pid);
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
  sc_shm_arena_release(c, d);
  if (sc_cpu_of(c)->sh) {
    atomic_store(&sc_cpu_of(c)->sh->slots[c->rank].state, SC_LEFT);
    munmap(sc_cpu_of(c)->sh, d->ctl_size);
  }
  free(d);
  sc_cpu_of(c)->tdata = NULL;
}

static schedc_status s_regroup(schedc_comm *old, const int *members, int k, int newrank, const schedc_comm_opts *opts,
                               const sc_inject *inj, schedc_comm **out);

static const sc_transport shm_transport = {0, sc_shm_work, sc_shm_map, sc_shm_share_out, sc_shm_map_outs, s_alive,
                                           s_destroy, s_regroup};

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
  if (creator == (int32_t)getpid() || sc_shm_pid_alive(creator))
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
        } else if (!sc_shm_pid_alive(atomic_load(&t->rank[0].pid))) {
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
                              const schedc_comm_opts *opts, const sc_inject *inj, schedc_comm **out) {
  schedc_comm *c;
  schedc_status st = sc_cpu_new(&sc_shm_backend, &shm_transport, rank, nranks, opts, inj, &c);
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
    if (r != rank && (st = sc_shm_open_peer(c, r)) != SCHEDC_OK) goto fail;
  /* ...and no rank returns before every rank holds its handles: a rank that returned at once and
   * exited (a job with nothing to do, an argument refused after init) failed a slower peer's init
   * ("died before rank 0 could map its buffer"). */
  if (nranks > 1 && (st = sc_barrier(c, "communicator init", sc_now() + c->timeout_s)) != SCHEDC_OK) goto fail;
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
  return shm_init(rank, nranks, job, tok, opts, NULL, out);
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
  return shm_init(rank, nranks, job, id->bytes, opts, NULL, out);
}

/* The shrunk group meets like a new job: its token is drawn from the old job's (the members' secret,
 * never a name another job can guess) and the member list, and its name from the token, so the
 * members agree on both without a word, and each shrink of each job meets in a segment of its own. */
static schedc_status s_regroup(schedc_comm *old, const int *members, int k, int newrank, const schedc_comm_opts *opts,
                               const sc_inject *inj, schedc_comm **out) {
  const uint8_t *otok = ((shmdata *)sc_cpu_of(old)->tdata)->tail->token;
  uint64_t h[2] = {SC_FNV_INIT, 0x73687269e66b2d31ull}; /* "shrink-1"-ish */
  for (int i = 0; i < 16; i++) {
    h[0] = sc_fnv_step(h[0], otok[i]);
    h[1] = sc_mix64(h[1] ^ otok[i]);
  }
  for (int i = 0; i < k; i++) {
    h[0] = sc_mix64(h[0] ^ (uint64_t)members[i]);
    h[1] = sc_mix64(h[1] + h[0]);
  }
  uint8_t tok[16];
  memcpy(tok, h, 16);
  char job[2 + 32];
  job[0] = 's';
  for (int i = 0; i < 16; i++) snprintf(job + 1 + 2 * i, 3, "%02x", tok[i]);
  return shm_init(newrank, k, job, tok, opts, inj, out);
}
