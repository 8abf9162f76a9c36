/*
 * cpu.h — the CPU backends' own state (threads and shm share one collective and one executor;
 * they differ in their transport: how a rank's working buffer is made readable to its peers).
 * The shared block (sc_shared) lives in the heap for `threads` and in a POSIX shared memory
 * segment for `shm`; it holds one slot per rank (liveness, the call descriptor), the init
 * barrier, the first failure's message, the dataflow counters (two sets by call parity) and
 * each rank's arrival lines (two by call parity: the call it entered, and a small call's inputs).
 * Internal to runtime/cpu/.
 */
#ifndef SC_CPU_H
#define SC_CPU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agree.h"
#include "comm.h"

#define SC_SHARED_MAGIC 0x53434d31u /* "SCM1" */

enum { SC_ALIVE = 0, SC_DEAD = 1, SC_ABORTED = 2, SC_LEFT = 3 };
/* sc_slot.shrink: undecided, then once either a member of the shrunk communicator or left out */
enum { SC_SHRINK_UNDECIDED = 0, SC_SHRINK_JOINED = 1, SC_SHRINK_LEFT_OUT = 2 };

/* One call's descriptor: what the ranks must agree on (core/agree.h), and where this rank's
 * working buffer is for the peers that read it. Two per slot, by call parity: a rank can be at
 * most one call ahead of any other (it cannot run the next call before every peer arrived at it),
 * so the descriptor of call k is never overwritten while a slower rank still reads it. */
/* shm: a buffer inside a schedc_mem_alloc region, as its peers find it: the owner's memfd (its fd
 * number in the owner, device, inode, bytes), the region's number on the owner's communicator
 * (0: none), and where the buffer starts in it. */
typedef struct sc_regref {
  uint64_t serial, dev, ino, size, off;
  int32_t fd;
} sc_regref;

typedef struct sc_desc {
  sc_agreement a;
  uint64_t work;             /* threads: address of the working buffer; shm: arena generation */
  uint64_t arena_size;       /* shm: bytes of the rank's arena */
  sc_regref reg;             /* shm: the working buffer, when it is in a region rather than the arena */
  /* A widened allreduce: 1 if this rank's receive buffer can be read by its peers in this call
   * (sc_transport.share_out) and nothing is injected into its transfers; then `out` is its
   * address (threads) or out_reg names the schedc_mem_alloc region it lies in (shm). Final
   * versions travel narrowed through the receive buffers only when every rank says 1
   * (sc_narrow_plan). */
  int32_t out_shared;
  uint64_t out;
  sc_regref out_reg;
} sc_desc;

/* One rank's slot, on its own cache lines. Written by its rank, read by all. */
typedef struct sc_slot {
  _Atomic uint32_t state;
  _Atomic uint32_t busy;     /* inside a collective (set before it arrives) */
  _Atomic uint32_t beat;     /* advanced while the rank runs inside schedc (spinning, per slice) */
  _Atomic uint32_t beat_ms;  /* monotonic clock in ms (low 32 bits) at the last beat: for messages */
  _Atomic uint32_t asleep;   /* in a futex wait (not merely preempted) */
  _Atomic uint32_t cpu;      /* 1 + the CPU it ran on at its last beat (0: not known): a waiter on that
                              * CPU whose peer stopped beating knows it is queued behind it */
  _Atomic uint32_t at_barrier; /* waiting at the init barrier: it is not what anyone waits for */
  _Atomic uint32_t entered;  /* low 32 bits of the sequence number of the last call it entered */
  _Atomic uint32_t fault;    /* SC_DEAD or SC_ABORTED once it failed (state becomes SC_LEFT when it frees) */
  _Atomic uint64_t fail_seq; /* the call it failed in (before fault/state are set) */
  _Atomic uint32_t shrink;   /* SC_SHRINK_*: its place in the survivors (shrink.c); changes once, by CAS */
  int32_t pid;
  uint64_t init_hash;
  uint64_t layout;           /* sc_comm_layout_word: SCHEDC_TOPOLOGY, which every rank must share */
  sc_desc d[2];
} __attribute__((aligned(64))) sc_slot;

typedef struct sc_shared {
  uint32_t magic, nranks;
  _Atomic uint32_t ready;
  _Atomic uint32_t refs;
  _Atomic uint32_t bar_count __attribute__((aligned(64)));
  _Atomic uint32_t bar_gen;
  _Atomic uint32_t failed __attribute__((aligned(64)));
  /* The earliest call any rank failed in (UINT64_MAX: none), set before `failed`. Ranks need not
   * be in the same call: a rank still finishing call s may see peers fail in call s + 1 (they
   * compared their arrival lines without it), and that failure is not its call's. */
  _Atomic uint64_t fail_seq;
  char fail_msg[SC_FAILMSG];
  /* threads: the shared block of the communicator shrunk from this one, published by its rank 0
   * (0: not yet; 1: it could not make one) */
  _Atomic uint64_t shrink_next;
  uint32_t ctr_per_rank;     /* counters per rank per kind per parity */
  uint64_t ctr_off;          /* byte offset of the counters from the start of the block */
  uint64_t arr_off;          /* byte offset of the arrival lines */
  uint32_t arr_stride, arr_data; /* bytes from one arrival line to the next; data bytes in each */
  sc_slot slots[];           /* [nranks], then the counters, then the arrival lines */
} sc_shared;

/* Bytes of working buffer the small-message path carries in an arrival line: SC_SMALL_CAP up to
 * 64 ranks, less beyond (512 KiB of lines per parity at most). SCHEDC_SMALL (at most SC_SMALL_CAP,
 * params.h) may lower the threshold; the shared block's layout depends on the rank count only. */
#define SC_SMALL_CAP 8192
/* A rank's arrival at a call, one per call parity, written by its rank, read by all. It replaces
 * the entry barrier: a rank enters call s by writing its descriptor (sc_slot.d) and, for a small
 * call, its working buffer's initial cells (data), then storing s into `seq` (release); it runs
 * the call once every peer's line of that parity holds s. The descriptor's fingerprint sits beside
 * it, so a matching small call costs a peer one cache line plus the data it reads. A line is
 * written again two calls later, when every peer has entered the call in between and so has
 * finished reading it. */
typedef struct sc_arrival {
  _Atomic uint32_t seq;      /* low 31 bits of the call's number (bit 31: the waiters' sleeper flag) */
  uint32_t pad_;
  uint64_t fp;               /* sc_desc's fingerprint (every field the ranks must agree on, the path too) */
  char data[];               /* SC_PATH_SMALL: the rank's initial working buffer (K elements) */
} sc_arrival;
static inline sc_arrival *sc_arr(sc_shared *sh, int parity, uint32_t rank) {
  return (sc_arrival *)((char *)sh + sh->arr_off + ((size_t)rank * 2 + (size_t)parity) * sh->arr_stride);
}

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
/* Counters per rank and kind for a communicator of nranks. */
uint32_t sc_ctr_capacity(int nranks);

/* Where flip:RANK:STEP lands for a plan: the receiving rank's group and source index. */
typedef struct sc_fliptarget {
  const sc_prog *prog;       /* the plan it was found for (NULL: not searched yet) */
  int dst;                   /* receiving rank, or -1 when RANK sends nothing at STEP */
  uint32_t group, src;       /* index into prog->groups, and into the group's sources */
} sc_fliptarget;

typedef struct sc_cpu sc_cpu;

/* Transport: how a rank gets a working buffer peers can read and how it maps theirs. */
typedef struct sc_transport {
  int in_process;            /* the ranks are threads of this process (a killed rank cannot die alone) */
  /* A buffer of `bytes` readable by peers for this call (NULL + errmsg on failure); may return
   * `user` (a caller buffer) when that is shareable. Records it in d (work, arena_size). */
  void *(*work)(schedc_comm *c, size_t bytes, void *user, sc_desc *d);
  /* After the arrival: fill peer[r] for the ranks with need[r] set (the ones this rank
   * reads; they cannot leave before these reads are done). SCHEDC_OK or an error. */
  schedc_status (*map_peers)(schedc_comm *c, const uint8_t *need, int parity);
  /* Can the peers read `recv` (bytes) in this call? 1: recorded in d (out, out_*), 0: not. */
  int (*share_out)(schedc_comm *c, void *recv, size_t bytes, sc_desc *d);
  /* After the arrival, every rank's out_shared set: fill peer_out[r] (their receive buffers) for
   * the ranks with need[r] set. SCHEDC_OK or an error. */
  schedc_status (*map_outs)(schedc_comm *c, const uint8_t *need, int parity);
  /* Is rank r's process alive (shm: pid check)? NULL: always (threads of this process). */
  int (*alive)(schedc_comm *c, int r);
  /* Release the transport's part of the state (tdata, its mappings, the shared block). */
  void (*destroy)(schedc_comm *c);
  /* schedc_comm_shrink, once the members are agreed (old ranks, ascending; this rank is member
   * `newrank` of k): make this rank's communicator of them with opts and the faults inj. */
  schedc_status (*regroup)(schedc_comm *old, const int *members, int k, int newrank, const schedc_comm_opts *opts,
                           const sc_inject *inj, schedc_comm **out);
} sc_transport;

/* A CPU communicator's state (c->be_data). */
struct sc_cpu {
  const sc_transport *tr;
  void *tdata;               /* the transport's own state */
  sc_shared *sh;
  int oversubscribed;        /* more ranks than online CPUs on this host: waiters yield */
  int spin_short;            /* SCHEDC_SPIN=short: sleep once the awaited rank stood still 100 us */
  size_t small;              /* SCHEDC_SMALL: calls of at most this many working-buffer bytes run
                              * from the arrival lines (<= SC_SMALL_CAP) */
  size_t ctr_used[2];        /* counters the last call of each parity used (reset only those) */
  size_t call_slice;         /* the current call's slice */
  sc_fliptarget flip;
  void *flipbuf; size_t flipbuf_cap; /* the corrupted copy a flip injection hands the receiver */
  void *temp; size_t temp_cap;
  char **peer;               /* [nranks]: working buffer base of each rank for the current call */
  char **peer_out;           /* [nranks] (made at the first use): receive buffer of each rank, for a
                              * call whose final versions travel narrowed (sc_execargs.nar) */
  void *nar; size_t nar_cap; /* sc_narrow_plan's analysis of the current call's plan (scratch and flags) */
  const sc_prog *nar_prog; uint64_t nar_hash; /* the plan it was made for (NULL: none) */
  uint8_t *reads_now;        /* [nranks] (made at the first use): the peers the current call reads */
  uint8_t *loc; size_t loc_cap; /* the current call's sc_execargs.loc */
  uint32_t *dig; size_t dig_cap; /* the current call's sc_execargs.dig */
  void *cvt; size_t cvt_cap; /* widened calls: two slices of scratch (an own cell widened; a result
                              * before it is narrowed) */
  uint32_t *lastw; size_t lastw_cap; /* widened calls: [nchunks] this rank's last group writing each cell */
  uint8_t *tallied; size_t tallied_cap; /* widened exact calls under the identity check: sc_widening.tallied */
  int bind_wanted;           /* SCHEDC_BIND=core and not tried yet: pin the thread of the next call */
  struct sc_bind *bound;     /* bind.c: the pinned thread and its mask before (NULL: not pinned) */
};

static inline sc_cpu *sc_cpu_of(const schedc_comm *c) { return (sc_cpu *)c->be_data; }
/* Has some rank failed in this rank's current call or an earlier one (one that ends this call)? */
static inline int sc_failure_now(const schedc_comm *c) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  return atomic_load_explicit(&sh->failed, memory_order_acquire) &&
         atomic_load_explicit(&sh->fail_seq, memory_order_acquire) <= c->seq;
}

/* cpu_coll.c: the backend tables, and the common part of making a CPU communicator. */
extern const sc_backend sc_threads_backend;
extern const sc_backend sc_shm_backend;
/* schedc_mem_alloc's entries of the shm table (shm.c): a memfd per region, mapped read/write by
 * its owner and read-only by the peers that read it. (threads: sc_mem_host_alloc.) */
schedc_status sc_shm_mem_alloc(schedc_comm *c, sc_memreg *r);
void sc_shm_mem_free(schedc_comm *c, sc_memreg *r);
/* A head for `be` with an empty CPU state using transport tr (inj: the faults to inject, NULL:
 * SCHEDC_INJECT's; sc_comm_new_inj). */
schedc_status sc_cpu_new(const sc_backend *be, const sc_transport *tr, int rank, int nranks,
                         const schedc_comm_opts *opts, const sc_inject *inj, schedc_comm **out);
/* shrink.c — the backends' shrink entry (sc_backend.shrink): the survivors' agreement in the
 * shared block, then the transport's regroup. */
schedc_status sc_cpu_shrink(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out);
/* Common init after the transport set up the shared block: slots, liveness, init barrier, plan
 * hash. */
schedc_status sc_cpu_start(schedc_comm *c);

/* bind.c — SCHEDC_BIND=core: pin the calling thread to the rank-th of the CPUs it may run on,
 * once, at the rank's first call; not when the ranks outnumber those CPUs (a failure is a
 * warning: the rank runs unpinned); the
 * mask it had is given back by sc_unbind_rank, from any thread, when the communicator is freed. */
void sc_bind_rank(schedc_comm *c);
void sc_unbind_rank(schedc_comm *c);

/* sync.c — waits on shared counters: spin briefly, then futex, with the communicator's timeout
 * and liveness checks. On failure: the status, errmsg set, and the failure recorded. */
typedef struct sc_waitctx {
  schedc_comm *c;
  const char *coll;          /* collective name for messages */
  int peer;                  /* the rank whose action is awaited */
  uint32_t step, chunk, line; /* line 0: a transfer with no schedule line (the built-in ring) */
  double deadline;           /* monotonic seconds; 0: the timeout from the first slow look at the wait */
  int at;                    /* SC_AT_*: which wait, for messages */
} sc_waitctx;
enum { SC_AT_STEP = 0, SC_AT_BARRIER, SC_AT_DRAIN };
schedc_status sc_wait_ge(_Atomic uint32_t *ctr, uint32_t want, sc_waitctx *w);
/* Until a call number's low 31 bits (an sc_arrival.seq) reach want, in serial-number order. */
schedc_status sc_wait_seq(_Atomic uint32_t *ctr, uint32_t want, sc_waitctx *w);
/* A failure was recorded by some rank: the status and message naming it (never SCHEDC_OK). */
schedc_status sc_peer_failure(sc_waitctx *w);
void sc_publish(_Atomic uint32_t *ctr, uint32_t value);  /* store value, wake sleepers */
void sc_bump(_Atomic uint32_t *ctr);                      /* add 1, wake sleepers */
schedc_status sc_barrier(schedc_comm *c, const char *what, double deadline);

/* The waiting policy, a pure function of what a waiter knows (sync.c applies it every
 * SC_CHECK_SPINS pauses of a wait that has not ended; tests/cpu/test_waitpolicy.c checks its
 * decisions). Spin while the awaited rank runs on another core; yield the core when it is queued
 * behind this waiter on this one; sleep (futex, woken by the publisher) when it is off its core
 * elsewhere for long — this core going idle lets the scheduler pull it over at once, where a
 * spin kept it queued behind the busy process until the end of a scheduler slice (up to 100 ms
 * per stall measured, issue 30) — or when it waits itself or runs outside schedc. */
typedef struct sc_waitview {
  int oversubscribed;        /* more ranks than online CPUs at init (sc_cpu.oversubscribed) */
  int spin_short;            /* SCHEDC_SPIN=short */
  int peer_may_run;          /* the awaited rank is inside a collective, alive and not in a futex wait */
  int peer_here;             /* its last beat came from the CPU this waiter runs on */
  double still_s;            /* how long its beat has stood still (a running rank beats every few us) */
  int yields;                /* sched_yields this wait has made (oversubscribed) */
} sc_waitview;
enum { SC_WAIT_SPIN = 0, SC_WAIT_YIELD = 1, SC_WAIT_SLEEP = 2 };
#define SC_WAIT_YIELDS 64        /* oversubscribed: yield this often, then sleep */
#define SC_WAIT_HERE_S 20e-6     /* queued behind this waiter on its CPU: yield after this long still */
#define SC_WAIT_PREEMPT_S 1e-3   /* inside the call but off its core elsewhere: sleep after this long */
#define SC_WAIT_STALE_S 10e-3    /* asleep itself, or outside schedc: sleep after this long */
#define SC_WAIT_SHORT_S 100e-6   /* SCHEDC_SPIN=short: sleep after this long, whatever the peer does */
int sc_wait_decide(const sc_waitview *v);
/* After a failure: wait (bounded by the timeout) until no peer is still inside the collective,
 * so the caller may free buffers peers could be reading (threads share memory). */
void sc_quiesce(schedc_comm *c);
/* Record this rank's failure (first one wins the shared message) and mark it aborted. */
void sc_fail(schedc_comm *c, int state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* This rank is running (on a core): waiters on it keep spinning rather than sleep. */
/* now > 0: also record the time (waiters do; a computing rank beats without reading the clock). */
uint32_t sc_cpu_here(void); /* 1 + the CPU this thread runs on now (0: not known); sync.c */
static inline void sc_beat(schedc_comm *c, double now) {
  sc_slot *s = &sc_cpu_of(c)->sh->slots[c->rank];
  atomic_store_explicit(&s->beat, atomic_load_explicit(&s->beat, memory_order_relaxed) + 1, memory_order_relaxed);
  atomic_store_explicit(&s->cpu, sc_cpu_here(), memory_order_relaxed);
  if (now > 0) atomic_store_explicit(&s->beat_ms, (uint32_t)(uint64_t)(now * 1e3), memory_order_relaxed);
}

/* arrive.c — entering call k (its number k->seq). sc_describe: this rank's descriptor d (path:
 * SC_PATH_*), written before it arrives. sc_arrive: publish the arrival line of the call's parity
 * (fingerprint, then the call's number, release) and wait until every peer's line holds the same;
 * afterwards every peer has finished call seq - 1. SCHEDC_EMISMATCH naming the field (on every
 * rank, core/agree.h's message) when the descriptors differ; a wait's failure otherwise. */
void sc_describe(sc_desc *d, const sc_call *k, int path);
schedc_status sc_arrive(schedc_comm *c, const sc_call *k, const sc_desc *d);

/* small.c — the small-message path. sc_small_call: does call k take it (at most SCHEDC_SMALL bytes
 * of working buffer, no verification, no injected faults)? The same answer on every rank that
 * shares those settings. sc_small_run: after the arrival (the cells in every rank's line of the
 * call's parity), this rank's result from the peers' lines, in the plan's proven order, into the
 * receive buffer. */
int sc_small_call(const schedc_comm *c, const sc_call *k);
schedc_status sc_small_run(schedc_comm *c, const sc_call *k, sc_result *res);

/* exec.c — SCHEDC_INJECT kill: a rank named to die whose injected call failed before it reached its
 * step (it saw another rank's death first) dies now, so that a kill always happens (two ranks
 * killed at once both die); otherwise st. */
schedc_status sc_exec_die_failed(schedc_comm *c, const char *coll, schedc_status st);
/* exec.c — run this rank's program of a plan over the working buffers in peer[]. */
/* Where a rank's own cell holds its current value during a call (sc_execargs.loc). Peers only
 * ever read the working buffer; the others are this rank's private shortcuts. */
enum { SC_LOC_W = 0, SC_LOC_SEND = 1, SC_LOC_OUT = 2 };
/* A widened call's conversions (widen.c): the caller's elements are `dtype`, the working buffer's
 * `acc` (f32 for f16/bf16; i64 on exact mode's grid `ex`, which has no leaves). avg_n: a plain avg
 * divides by it before narrowing (0: no division; exact avg divides in sc_exact_out). */
typedef struct sc_widening {
  schedc_dtype dtype, acc;
  const sc_exact *ex;
  int avg_n;
  /* exact mode's identity check (SC_V_EXACT): the wrapping sums of this rank's inputs' integers,
   * each counted once (tallied[ch]: own cell ch's are in in_sum), and of its result part's integers
   * as they are narrowed (each result element is narrowed once) */
  int tally;
  uint64_t in_sum, out_sum;
  uint8_t *tallied;
} sc_widening;
/* n elements widened from dtype into acc (count: their integers go into in_sum, under tally); n
 * results narrowed from acc to dtype (avg divided first; under tally summed into out_sum), through
 * `scratch` (n acc elements; src may be it) when a division must not touch src. */
void sc_widen(sc_widening *wd, void *dst, const void *src, size_t n, int count);
void sc_narrow(sc_widening *wd, void *dst, const void *src, size_t n, void *scratch);

typedef struct sc_execargs {
  const sc_prog *prog;
  const char *file;          /* plan source, for messages */
  const char *coll;
  schedc_dtype acc;
  schedc_op op;
  size_t count;              /* K: elements of the whole working buffer */
  int parity;
  unsigned flags;            /* the call's SC_CALL_* */
  /* NULL, or [nchunks] SC_LOC_* per own cell, updated as the plan writes them. SC_LOC_SEND:
   * element i at init + i * esz (the caller's inputs, in the working type). */
  uint8_t *loc;
  const char *init;
  /* NULL, or the caller's receive buffer holding working-buffer elements [out_lo, out_hi) (element
   * i at out + (i - out_lo) * esz): a version no peer reads of a cell inside it is written there
   * (SC_LOC_OUT). Needs loc. */
  char *out;
  size_t out_lo, out_hi;
  /* NULL, or [nchunks * slices per chunk]: under digest verification, the CRC32C of each slice
   * the plan writes into the receive buffer (SC_LOC_OUT), as it wrote it (comm.h sc_dslice). */
  uint32_t *dig;
  sc_corrupt *bad;           /* checksum mode: where the call's first corrupted transfer is recorded */
  /* NULL, or the call is widened (needs loc; no checksums, no digest): SC_LOC_SEND cells hold the
   * caller's elements (element i at init + i * dsz), widened as they are first read; SC_LOC_OUT
   * versions are narrowed into out (element i at out + (i - out_lo) * dsz). */
  sc_widening *wide;
  /* NULL, or [this rank's groups] SC_NAR_* (sc_narrow_plan): final versions travel in the caller's
   * type through the receive buffers (a widened allreduce; every rank's receive buffer is readable
   * by its peers: peer_out) */
  const uint8_t *nar;
} sc_execargs;
schedc_status sc_exec(schedc_comm *c, const sc_execargs *a);

/* widen.c, sc_narrow_plan — a widened allreduce's final versions carried in the caller's type.
 * A version that is its cell's last (no later write), every reader of which only copies it into a
 * version that is its own rank's last and in turn is read only so, carries in the caller's type
 * all anyone still needs: narrowing is deterministic and widening it back is exact, so copying the
 * narrowed bits gives what narrowing the copied working-type value gives (avg: divided before
 * narrowing, as sc_narrow does). Such a version is narrowed into the owner's receive buffer before
 * it is published (SC_NAR_PUB; the working buffer is not written), and its readers copy those bits
 * from there into their own receive buffer (SC_NAR_READ): 2 bytes read and 2 written per element
 * where a bf16 copy read 4 and wrote 4 + 2. The same table on every rank: a function of the plan
 * alone (hash: the plan's; with p, the key of the table kept for the next call). Returns the flags,
 * [rank me's groups]; NULL: out of memory. */
enum { SC_NAR_READ = 1, SC_NAR_PUB = 2 };
/* Plans of more cells (ranks x chunks) keep the working-type path: every rank makes the table for
 * the whole plan, 10 bytes a cell, so a threads communicator of R ranks holds R copies (a 1024-rank
 * ring, 1M cells: 11.2 GB and 37 s for the first bf16 call against 0.71 GB and 5.7 s without; 256
 * ranks, 64K cells: 310 MB and 0.41 s against 133 MB and 0.11 s for f32). */
#define SC_NAR_MAX_CELLS ((size_t)1 << 16)
/* *need: [nranks], 1 for the ranks whose receive buffer this rank reads (a non-empty chunk of K
 * elements). Only those may be mapped: a rank none reads in this call may have left it already
 * (its drain waits for no one), and freed the buffer. */
const uint8_t *sc_narrow_plan(schedc_comm *c, const sc_prog *p, uint64_t hash, size_t K, const uint8_t **need);
/* The executor's slices for K elements of esz bytes in C chunks: *se elements each, at most *nsl
 * per chunk. -1 when the communicator's counters cannot hold even one slice per chunk. */
int sc_exec_slicing(const schedc_comm *c, size_t K, uint32_t C, size_t esz, size_t *se, size_t *nsl);
/* The copy-in, before the arrival: K elements of esz bytes from send into W (no conversion;
 * send NULL: the inputs are in W already). With check, the cells peers read at version 0 are
 * hashed (their CRC32C published in the counters), fused with their copy. With loc and a send
 * buffer other than W, the cells no peer reads at version 0 are not copied: loc[ch] = SC_LOC_SEND
 * (the executor reads them in send); every other entry stays SC_LOC_W (loc must be all SC_LOC_W
 * on entry). With `wide` (no check), send holds the caller's elements, widened as they are copied. */
void sc_exec_stage_inputs(schedc_comm *c, const sc_prog *p, size_t esz, size_t K, char *W, const char *send,
                          int check, uint8_t *loc, int parity, sc_widening *wide);

#endif
