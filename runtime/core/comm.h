/*
 * comm.h — communicator internals shared by the collectives, the executor and the transports.
 * The shared block (sc_shared) lives in the heap for `threads` and in a POSIX shared memory
 * segment for `shm`; it holds one slot per rank (liveness, the call descriptor), the entry
 * barrier, the first failure's message, and the dataflow counters (two sets by call parity).
 */
#ifndef SC_COMM_H
#define SC_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "prog.h"
#include "schedc/schedc.h"

#define SC_SHARED_MAGIC 0x53434d31u /* "SCM1" */
#define SC_FAILMSG 320

enum { SC_ALIVE = 0, SC_DEAD = 1, SC_ABORTED = 2, SC_LEFT = 3 };

/* One call's descriptor. Two per slot, by call parity: a rank can be at most one call ahead
 * of any other (it cannot pass the next entry barrier alone), so the descriptor of call k is
 * never overwritten while a slower rank still reads it. */
typedef struct sc_desc {
  uint64_t seq;              /* number of the call this describes */
  uint32_t coll, dtype, op, root;
  uint64_t count, plan_hash;
  uint64_t slice;            /* slice bytes: counter layout depends on it, so it must match */
  uint64_t work;             /* threads: address of the working buffer; shm: arena generation */
  uint64_t arena_size;       /* shm: bytes of the rank's arena */
} sc_desc;

/* One rank's slot, on its own cache lines. Written by its rank, read by all. */
typedef struct sc_slot {
  _Atomic uint32_t state;
  _Atomic uint32_t busy;     /* inside a collective after its entry barrier */
  int32_t pid;
  uint64_t init_hash;
  sc_desc d[2];
} __attribute__((aligned(64))) sc_slot;

typedef struct sc_shared {
  uint32_t magic, nranks;
  _Atomic uint32_t ready;
  _Atomic uint32_t refs;
  _Atomic uint32_t bar_count __attribute__((aligned(64)));
  _Atomic uint32_t bar_gen;
  _Atomic uint32_t failed __attribute__((aligned(64)));
  char fail_msg[SC_FAILMSG];
  uint32_t ctr_per_rank;     /* counters per rank per kind per parity */
  uint64_t ctr_off;          /* byte offset of the counters from the start of the block */
  sc_slot slots[];           /* [nranks], then the counters */
} sc_shared;

/* Counter arrays of a parity: version[rank][k], reads[rank][k] and crc[rank][k] (the CRC32C of
 * the cell slice's current version, written by its owner before it publishes the version),
 * k < ctr_per_rank. */
enum { SC_VER = 0, SC_READS = 1, SC_CRC = 2, SC_NKINDS = 3 };
static inline _Atomic uint32_t *sc_ctr(sc_shared *sh, int parity, int kind, uint32_t rank) {
  _Atomic uint32_t *base = (_Atomic uint32_t *)((char *)sh + sh->ctr_off);
  return base + (((size_t)parity * SC_NKINDS + (size_t)kind) * sh->nranks + rank) * sh->ctr_per_rank;
}
size_t sc_shared_size(uint32_t nranks, uint32_t ctr_per_rank);
void sc_shared_init(sc_shared *sh, uint32_t nranks, uint32_t ctr_per_rank);

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
/* flip:RANK:STEP: flip the chosen bit of a copy of the payload (bytes > 0) and say so on stderr. */
void sc_inject_flip(const sc_inject *in, void *buf, size_t bytes, const char *coll, int dst, uint32_t step);

/* The first corrupted transfer this rank received in the current call (checksum mode). */
typedef struct sc_corrupt {
  uint32_t found;            /* 0: none; 1: a CRC32C mismatch; 2: the cuda kernels' 64-bit sum */
  uint32_t step, chunk, src, dst, line;
  uint32_t got, want;        /* CRC32C of what arrived, and the sender's */
} sc_corrupt;

/* Where flip:RANK:STEP lands for a plan: the receiving rank's group and source index. */
typedef struct sc_fliptarget {
  const sc_prog *prog;       /* the plan it was found for (NULL: not searched yet) */
  int dst;                   /* receiving rank, or -1 when RANK sends nothing at STEP */
  uint32_t group, src;       /* index into prog->groups, and into the group's sources */
} sc_fliptarget;

enum { SC_V_DIGEST = 1, SC_V_CHECKSUM = 2 }; /* bits of schedc_comm.verify */

/* schedc_comm_init_env's cuda backend under an MPI launcher: a process per GPU whose host
 * exchanges go over an MPI communicator of its own (freed with it), so the ranks may be on
 * several hosts (schedc_comm_init_cuda_over). */
schedc_status sc_cu_init_env_mpi(int device, const schedc_comm_opts *opts, schedc_comm **out);

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

typedef struct sc_progcache {
  uint64_t hash;
  const schedc_plan *plan;
  sc_prog prog;
} sc_progcache;

#define SC_PROGCACHE 8
#define SC_DEFPLANS 16

struct schedc_comm {
  int backend;               /* schedc_backend */
  int rank, nranks;
  sc_shared *sh;
  double timeout_s;
  size_t slice_bytes;
  size_t call_slice;         /* the current call's slice (a tuning entry's, or slice_bytes) */
  sc_tuning tuning;
  uint64_t seq;              /* calls made on this communicator */
  int broken;
  char *broken_msg;
  int verify, repair;        /* SC_V_* bits; repair on mismatch */
  int in_verify;             /* inside the verification's own collectives */
  int oversubscribed;        /* more ranks than online CPUs on this host: waiters yield */
  size_t ctr_used[2];        /* counters the last call of each parity used (reset only those) */
  sc_inject inj;
  int attempt;               /* 0 on a call's first run; injections fire only then */
  sc_corrupt bad;            /* checksum mode: first corrupted transfer received in this call */
  const char *file;          /* the current call's plan source (messages; owned by the plan) */
  int have_digest;           /* digest of the result computed while copying it out */
  uint64_t digest;
  sc_fliptarget flip;
  void *flipbuf; size_t flipbuf_cap; /* the corrupted copy a flip injection hands the receiver */
  /* private buffers */
  void *scratch; size_t scratch_cap;
  void *temp; size_t temp_cap;
  char **peer;               /* [nranks]: working buffer base of each rank for the current call */
  /* default plans (built-in ring) by collective and root */
  struct { int coll, root; schedc_plan *plan; } defplan[SC_DEFPLANS];
  int ndefplan;
  sc_progcache progs[SC_PROGCACHE];
  int nprog;
  /* transport hooks */
  struct sc_transport *tr;
  void *trdata;
};

/* Transport: how a rank gets a working buffer peers can read and how it maps theirs. */
typedef struct sc_transport {
  /* A buffer of `bytes` readable by peers for this call (NULL + errmsg on failure); may return
   * `user` (a caller buffer) when that is shareable. Records it in d (work, arena_size). */
  void *(*work)(schedc_comm *c, size_t bytes, void *user, sc_desc *d);
  /* After the entry barrier: fill c->peer[r] for the ranks with need[r] set (the ones this rank
   * reads; they cannot leave before these reads are done). SCHEDC_OK or an error. */
  schedc_status (*map_peers)(schedc_comm *c, const uint8_t *need, int parity);
  /* Is rank r's process alive (shm: pid check)? */
  int (*alive)(schedc_comm *c, int r);
  void (*destroy)(schedc_comm *c);
} sc_transport;

/* sync.c — waits on shared counters: spin briefly, then futex, with the communicator's timeout
 * and liveness checks. On failure: the status, errmsg set, and the failure recorded. */
typedef struct sc_waitctx {
  schedc_comm *c;
  const char *coll;          /* collective name for messages */
  int peer;                  /* the rank whose action is awaited */
  uint32_t step, chunk, line;
  double deadline;           /* monotonic seconds */
} sc_waitctx;
double sc_now(void);
schedc_status sc_wait_ge(_Atomic uint32_t *ctr, uint32_t want, sc_waitctx *w);
/* A failure was recorded by some rank: the status and message naming it (never SCHEDC_OK). */
schedc_status sc_peer_failure(sc_waitctx *w);
void sc_publish(_Atomic uint32_t *ctr, uint32_t value);  /* store value, wake sleepers */
void sc_bump(_Atomic uint32_t *ctr);                      /* add 1, wake sleepers */
schedc_status sc_barrier(schedc_comm *c, const char *what, double deadline);
/* After a failure: wait (bounded by the timeout) until no peer is still inside the collective,
 * so the caller may free buffers peers could be reading (threads share memory). */
void sc_quiesce(schedc_comm *c);
/* Record this rank's failure (first one wins the shared message) and mark it aborted. */
void sc_fail(schedc_comm *c, int state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* exec.c — run this rank's program of a plan over the working buffers in c->peer. */
typedef struct sc_execargs {
  const sc_prog *prog;
  const char *file;          /* plan source, for messages */
  const char *coll;
  schedc_dtype acc;
  schedc_op op;
  size_t count;              /* K: elements of the whole working buffer */
  int parity;
} sc_execargs;
schedc_status sc_exec(schedc_comm *c, const sc_execargs *a);

/* integrity.c: after a collective: the ranks exchange what checksum verification found and,
 * where the result is equal on all ranks (same_bits), compare digests of buf (c->have_digest:
 * c->digest was computed while the result was copied out). The caller applied flipout. */
schedc_status sc_integrity_check(schedc_comm *c, const char *cn, void *buf, size_t bytes, int same_bits);
/* flipout:RANK injection: flip one bit of this rank's result. */
void sc_flipout(schedc_comm *c, void *buf, size_t bytes);
/* Lowest rank holding the most common of the n digests; *nbad = ranks that differ from it. */
int sc_digest_majority(const uint64_t *dg, int n, int *nbad);
/* The verdict on the ranks' digests dg[n] (majority held by root), the same words on every
 * backend: SCHEDC_OK if all agree; else SCHEDC_ECORRUPT naming the ranks that differ, or, when
 * they were repaired, SCHEDC_OK and a warning on stderr from rank root (me: this rank; -1: one
 * process speaking for all ranks, which names none as its own and warns itself). */
schedc_status sc_digest_outcome(const char *cn, const uint64_t *dg, int n, int me, int root, int repaired);
/* Broadcast `bytes` of buf from root over c, bit for bit, outside verification. */
schedc_status sc_rebroadcast(schedc_comm *c, void *buf, size_t bytes, int root);
/* The ECORRUPT message for a corrupted transfer (every rank reports the same one), and the
 * warning when repair deals with it (`action`: what repair does about it). */
schedc_status sc_corrupt_error(const char *cn, const sc_corrupt *b, const char *file);
void sc_corrupt_warn(const char *cn, const sc_corrupt *b, const char *file, const char *action);
/* Checksum the cells of this rank that peers read at version 0 (before the entry barrier). */
void sc_exec_checksum_inputs(schedc_comm *c, const sc_prog *p, schedc_dtype acc, size_t K, const char *W,
                             int parity);

/* Does the collective combine values (allreduce, reduce_scatter, reduce), or only move them? */
static inline int sc_reduces(int coll) { return coll != SCHEDC_ALLGATHER && coll != SCHEDC_BROADCAST; }

/* allreduce, allgather and broadcast leave the same bits on every rank (digest-checkable); the
 * elements of that result: count, or count per rank for allgather. */
static inline int sc_same_bits(int coll) { return coll != SCHEDC_REDUCE_SCATTER && coll != SCHEDC_REDUCE; }
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

/* cuda_comm.c: the collective on a cuda communicator (after comm.c's argument checks). */
schedc_status sc_cuda_collective(schedc_comm *c, int coll, const void *sendbuf, void *recvbuf, size_t count,
                                 schedc_dtype dtype, schedc_dtype acc, schedc_op op, int root,
                                 const schedc_plan *plan, const sc_prog *prog, size_t K);

/* Transports. */
extern sc_transport sc_threads_transport;
extern sc_transport sc_shm_transport;
/* Common init after the transport set up c->sh: slots, liveness, init barrier, plan hash. */
schedc_status sc_comm_start(schedc_comm *c, const schedc_plan *plan);
/* Allocate and fill the generic parts of a communicator from options (timeout, slice, inject). */
schedc_status sc_comm_new(int backend, int rank, int nranks, const void *opts, schedc_comm **out);
void sc_comm_release(schedc_comm *c);
/* The communicator's private scratch, grown to at least `bytes` (NULL + errmsg on OOM). */
void *sc_scratch(schedc_comm *c, size_t bytes);
/* Counters per rank and kind for a communicator of nranks (threads.c). */
uint32_t sc_ctr_capacity(int nranks);

#endif
