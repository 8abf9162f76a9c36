/*
 * comm.h — the communicator head every backend shares, the call descriptor the core hands a
 * backend, and the backend operation table (sc_backend). A communicator is this head plus the
 * backend's own state (be_data); the core never asks which backend it holds, it calls c->be.
 * Also the core's helpers for backends: the working buffer in and out, integrity, injection.
 */
#ifndef SC_COMM_H
#define SC_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "prog.h"
#include "schedc/schedc.h"

#define SC_FAILMSG 320

typedef struct sc_inject {
  int kill_rank, kill_step;  /* -1: none */
  int delay_rank, delay_us;
  unsigned jitter_seed, jitter_us;
  int flip_rank, flip_step;  /* flips one bit of the payload flip_rank sends at flip_step */
  long flip_bit;             /* which bit of that payload (taken modulo its size); -1: the middle */
  int flipout_rank;          /* flips one bit of that rank's result after the collective */
} sc_inject;
/* Parse SCHEDC_INJECT (see inject.c). SCHEDC_EINVAL with a message. */
schedc_status sc_inject_parse(const char *spec, sc_inject *out);
/* The parsed faults against the communicator: every rank named exists, and the backend (its
 * name) can inject each kind. SCHEDC_EINVAL / SCHEDC_EUNAVAIL with a message. */
schedc_status sc_inject_check(const sc_inject *in, int nranks, const char *backend);
/* flip:RANK:STEP: flip the chosen bit of a copy of the payload (bytes > 0) and say so on stderr. */
void sc_inject_flip(const sc_inject *in, void *buf, size_t bytes, const char *coll, int dst, uint32_t step);

/* The first corrupted transfer this rank received in the current call (checksum mode). */
typedef struct sc_corrupt {
  uint32_t found;            /* 0: none; 1: a CRC32C mismatch; 2: the cuda kernels' 64-bit sum */
  uint32_t step, chunk, src, dst, line;
  uint32_t got, want;        /* CRC32C of what arrived, and the sender's */
} sc_corrupt;

enum { SC_V_DIGEST = 1, SC_V_CHECKSUM = 2 }; /* bits of schedc_comm.verify */

/* tuning.c: the tuning table's entries for this communicator's rank count. */
typedef struct sc_tuneentry {
  int coll, root;
  size_t lo, hi, slice;      /* whole-buffer bytes [lo, hi]; slice 0: the communicator's */
  schedc_plan *plan;         /* owned */
} sc_tuneentry;
typedef struct sc_tuning { sc_tuneentry *e; int n; } sc_tuning;
schedc_status sc_tuning_load(const char *path, int nranks, sc_tuning *t);
const sc_tuneentry *sc_tuning_pick(const sc_tuning *t, int coll, int root, size_t bytes);
void sc_tuning_free(sc_tuning *t);

/* Flags of a call. A call the library makes for itself (verification's digest exchange, a
 * repair's re-broadcast, a backend's bootstrap exchange over a host communicator) is internal:
 * it is never verified, never injected into, and never re-enters verification. */
enum {
  SC_CALL_NOVERIFY = 1,      /* no checksums, digests or repair */
  SC_CALL_NOINJECT = 2,      /* no SCHEDC_INJECT faults */
  SC_CALL_INTERNAL = SC_CALL_NOVERIFY | SC_CALL_NOINJECT
};

/* One collective call, checked by the core (comm.c) before a backend sees it. */
typedef struct sc_call {
  int coll;                  /* schedc_collective */
  const char *cn;            /* its name, for messages */
  const void *send;
  void *recv;
  size_t count;              /* the user's count argument */
  size_t K;                  /* elements of the whole working buffer (count, or count * nranks) */
  schedc_dtype dtype, acc;   /* the data type, and the type partial sums are carried in */
  schedc_op op;
  int root;
  const schedc_plan *plan;
  const sc_prog *prog;       /* the plan's lowered program (owned by the plan) */
  size_t slice;              /* pipelining slice bytes for this call (a tuning entry's or the comm's) */
  unsigned flags;            /* SC_CALL_* */
  uint64_t op_hash;          /* a custom op's source hash (0: built-in): ranks compare it, since the
                              * op's value is only this process's name for it */
  uint32_t checks;           /* this call's integrity settings, which every rank must share (ranks
                              * compare it with the call): sc_call_checks_word */
} sc_call;

typedef struct sc_memreg sc_memreg; /* a schedc_mem_alloc region (below) */

/* A sliced digest (the CPU backends under SCHEDC_VERIFY=digest): the result's K elements of esz
 * bytes cut as their executor cuts them (C chunks, each in slices of se elements, at most nsl per
 * chunk), each slice's CRC32C folded in order by sc_dslice_step from sc_dslice_init. Any single
 * flipped bit changes it (the CRC changes, and every step is a bijection of the running value),
 * and it is the same however the slices were hashed: by the executor as it wrote a slice into
 * the receive buffer, by the copy out, or by a read afterwards. */
typedef struct sc_dslice { size_t K, se, nsl, esz; uint32_t C; } sc_dslice;
static inline uint64_t sc_dslice_init(size_t K) { return 0x5343444947455354ull ^ (uint64_t)K; }
static inline uint64_t sc_dslice_step(uint64_t h, uint32_t crc) {
  h = (h ^ crc) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

/* Capabilities of a backend. */
enum {
  /* the result is in host memory when the collective returns, so the core verifies it (digests,
   * checksum verdicts) right after; a stream-ordered backend verifies inside its own collective */
  SC_CAP_HOST_RESULT = 1,
};

/* A backend: one const table, chosen when a communicator is made (Open MPI's coll components,
 * NCCL's net plugins). Operations receive the head; their state is c->be_data. */
typedef struct sc_backend {
  const char *name;
  unsigned caps;             /* SC_CAP_* */
  /* Run one checked collective on this rank. On failure: the status with errmsg set; the
   * backend marks the communicator broken (c->broken) when it cannot be used again. */
  schedc_status (*collective)(schedc_comm *c, const sc_call *call);
  /* Why the communicator broke, as the group's first failure recorded it (may be NULL). */
  const char *(*failure)(schedc_comm *c);
  /* Release c->be_data and everything the backend holds for c (the core frees the head). */
  void (*free)(schedc_comm *c);
  /* schedc_mem_alloc: make a region of r->bytes (a multiple of the page size) that every rank
   * of c can share, filling r (base, and fd/dev/ino when it is a file); SCHEDC_OK or the status
   * with errmsg set. NULL: the backend has none (SCHEDC_EUNAVAIL). The core keeps the list. */
  schedc_status (*mem_alloc)(schedc_comm *c, sc_memreg *r);
  /* schedc_mem_free / schedc_comm_free: release a region mem_alloc made. */
  void (*mem_free)(schedc_comm *c, sc_memreg *r);
} sc_backend;

/* mem.c — one schedc_mem_alloc region of a communicator (the head keeps them in mem[]). */
#define SC_MAXMEM 64
struct sc_memreg {
  char *base;
  size_t bytes;              /* rounded up to the page size */
  int fd;                    /* a file every rank can map (shm's memfd), or -1: heap memory */
  uint64_t dev, ino;         /* that file's inode, published to the peers that map it */
  uint64_t serial;           /* this communicator's number for it (1, 2, ...; never reused) */
};
/* The region of c's that holds [p, p + bytes), or NULL. */
const sc_memreg *sc_mem_find(const schedc_comm *c, const void *p, size_t bytes);
/* Release every region of c (schedc_comm_free, before the backend's free). */
void sc_mem_release_all(schedc_comm *c);
/* Heap regions (64-byte aligned, zeroed): the entries of backends whose ranks already see each
 * other's memory (threads) or copy through messages anyway (mpi). */
schedc_status sc_mem_host_alloc(schedc_comm *c, sc_memreg *r);
void sc_mem_host_free(schedc_comm *c, sc_memreg *r);

/* The common part of every communicator. */
struct schedc_comm {
  const sc_backend *be;
  void *be_data;             /* the backend's state (owned by it; released by be->free) */
  int rank, nranks;
  double timeout_s;
  size_t slice_bytes;
  const schedc_plan *init_plan; /* opts->plan: the plan all ranks must share at init, or NULL */
  sc_tuning tuning;
  uint64_t seq;              /* calls made on this communicator */
  int broken;
  int verify, repair;        /* SC_V_* bits; repair on mismatch */
  sc_inject inj;
  int attempt;               /* 0 on a call's first run; injections fire only then */
  sc_corrupt bad;            /* checksum mode: first corrupted transfer received in this call */
  const char *file;          /* the last user call's plan source (messages; owned by the plan) */
  int have_digest;           /* digest of the result taken while copying it out: 1 sc_verify_digest's,
                              * 2 sliced (dsl); 0 none (the core takes sc_verify_digest's) */
  sc_dslice dsl;             /* have_digest 2: how the result was sliced */
  uint64_t digest;
  void *scratch; size_t scratch_cap; /* private working memory */
  /* default plans (built-in ring) by collective and root */
  struct { int coll, root; schedc_plan *plan; } defplan[16];
  int ndefplan;
  sc_memreg *mem; int nmem;  /* schedc_mem_alloc's regions ([SC_MAXMEM], allocated on first use) */
  uint64_t mem_serial;       /* regions made so far */
  uint64_t mem_direct;       /* calls whose working buffer was a region its peers read in place
                              * (the copy in and out skipped; tests read it) */
};

/* Allocate a communicator head for backend `be` from options (timeout, slice, verification,
 * injection, tuning). The backend then sets be_data. */
schedc_status sc_comm_new(const sc_backend *be, int rank, int nranks, const schedc_comm_opts *opts,
                          schedc_comm **out);
/* Free the head only (the backend's state was released, or never made). */
void sc_comm_release(schedc_comm *c);
/* The communicator's private scratch, grown to at least `bytes` (NULL + errmsg on OOM). */
void *sc_scratch(schedc_comm *c, size_t bytes);
/* The internal collective entry (verification, repair, bootstrap exchanges): the public
 * collectives' checks and backend, with explicit SC_CALL_* flags instead of mode state. */
schedc_status sc_coll(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                      schedc_op op, int root, const schedc_plan *plan, unsigned flags);
/* The integrity settings of a call as the ranks compare them: SC_V_* bits (none for internal
 * SC_CALL_NOVERIFY calls), and 4 when repair is on. Ranks that differ would hash or check what
 * their peers never sent (a false corruption report) or wait in an exchange the others skip. */
static inline uint32_t sc_call_checks_word(const schedc_comm *c, unsigned flags) {
  return flags & SC_CALL_NOVERIFY ? 0u : (uint32_t)c->verify | (c->verify && c->repair ? 4u : 0u);
}
/* The settings of a checks word for messages: "SCHEDC_VERIFY=full with repair". */
const char *sc_checks_name(uint32_t checks, char *buf, size_t cap);

/* Does this call verify / inject? */
static inline int sc_call_checks(const schedc_comm *c, const sc_call *k) {
  return (c->verify & SC_V_CHECKSUM) && !(k->flags & SC_CALL_NOVERIFY);
}
static inline int sc_call_injects(const sc_call *k) { return !(k->flags & SC_CALL_NOINJECT); }

/* workbuf.c — the working buffer of a host-memory backend: this rank's initial cells in (widened
 * to the accumulation type), and its result out (avg once, rounded to the data type once;
 * flipout injection and, under digest verification, the digest taken by the copy). */
void sc_work_in(const schedc_comm *c, const sc_call *k, char *W);
void sc_work_out(schedc_comm *c, const sc_call *k, char *W);

/* integrity.c: after a collective: the ranks exchange what checksum verification found and,
 * where the result is equal on all ranks (same_bits), compare digests of buf (c->have_digest:
 * c->digest was computed while the result was copied out). The caller applied flipout. */
schedc_status sc_integrity_check(schedc_comm *c, const char *cn, void *buf, size_t bytes, int same_bits);
/* flipout:RANK injection: flip one bit of this rank's result (of `bytes`); sc_flipout_pos: the
 * offset of the byte it flips, or -1 when it does not apply to this rank. */
void sc_flipout(schedc_comm *c, void *buf, size_t bytes);
long sc_flipout_pos(const schedc_comm *c, size_t bytes);
/* The sliced digest of buf (s: its slicing). */
uint64_t sc_sliced_digest(const void *buf, const sc_dslice *s);
/* Lowest rank holding the most common of the n digests; *nbad = ranks that differ from it. */
int sc_digest_majority(const uint64_t *dg, int n, int *nbad);
/* The verdict on the ranks' digests dg[n] (majority held by root), the same words on every
 * backend: SCHEDC_OK if all agree; else SCHEDC_ECORRUPT naming the ranks that differ, or, when
 * they were repaired, SCHEDC_OK and a warning on stderr from rank root (me: this rank; -1: one
 * process speaking for all ranks, which names none as its own and warns itself). */
schedc_status sc_digest_outcome(const char *cn, const uint64_t *dg, int n, int me, int root, int repaired);
/* Broadcast `bytes` of buf from root over c, bit for bit, as an internal call. */
schedc_status sc_rebroadcast(schedc_comm *c, void *buf, size_t bytes, int root);
/* The ECORRUPT message for a corrupted transfer (every rank reports the same one), and the
 * warning when repair deals with it (`action`: what repair does about it). */
schedc_status sc_corrupt_error(const char *cn, const sc_corrupt *b, const char *file);
void sc_corrupt_warn(const char *cn, const sc_corrupt *b, const char *file, const char *action);

/* Does the collective combine values (allreduce, reduce_scatter, reduce), or only move them? */
static inline int sc_reduces(int coll) { return coll != SCHEDC_ALLGATHER && coll != SCHEDC_BROADCAST; }

/* allreduce, allgather and broadcast leave the same bits on every rank (digest-checkable); the
 * elements of that result: count, or count per rank for allgather. */
static inline int sc_same_bits(int coll) { return coll != SCHEDC_REDUCE_SCATTER && coll != SCHEDC_REDUCE; }
/* Does this call compare result digests across ranks (taken, where it can be, by the copy out)? */
static inline int sc_call_digests(const schedc_comm *c, const sc_call *k) {
  return sc_same_bits(k->coll) && !(k->flags & SC_CALL_NOVERIFY) && (c->verify & SC_V_DIGEST);
}
static inline size_t sc_same_bits_elems(int coll, size_t count, int nranks) {
  return coll == SCHEDC_ALLGATHER ? count * (size_t)nranks : count;
}

/* The part [*lo, *lo + *len) of the K-element working buffer that is `rank`'s result: its block
 * for reduce_scatter (count elements each), nothing on a reduce's other ranks, else all of it. */
static inline void sc_result_part(int coll, int rank, int root, size_t count, size_t K, size_t *lo, size_t *len) {
  *lo = coll == SCHEDC_REDUCE_SCATTER ? (size_t)rank * count : 0;
  *len = coll == SCHEDC_REDUCE_SCATTER ? count : coll == SCHEDC_REDUCE && rank != root ? 0 : K;
}

/* Chunk c of K elements split into C chunks: [lo, hi). */
static inline void sc_chunk_range(size_t K, uint32_t C, uint32_t c, size_t *lo, size_t *hi) {
  *lo = (size_t)((unsigned __int128)K * c / C);
  *hi = (size_t)((unsigned __int128)K * (c + 1) / C);
}

/* Monotonic seconds (every deadline). */
double sc_now(void);

#endif
