/*
 * schedc.h — the one public header of schedc: deterministic, verified collective schedules.
 * C99, C++-includable, no Lua/CUDA/MPI types. Every function documents its statuses,
 * ownership and thread rules; schedc_errmsg() gives the detail of the calling thread's last
 * failure (multi-line for verifier diagnostics, each line "file:line: message").
 */
#ifndef SCHEDC_H
#define SCHEDC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks every public function: libschedc.so is compiled with hidden visibility, so these are the
 * only symbols it exports (checked by the install tests). Define SCHEDC_API before including
 * this header to override it. */
#ifndef SCHEDC_API
#if defined(__GNUC__) || defined(__clang__)
#define SCHEDC_API __attribute__((visibility("default")))
#else
#define SCHEDC_API
#endif
#endif

#define SCHEDC_VERSION_MAJOR 0
#define SCHEDC_VERSION_MINOR 1
#define SCHEDC_VERSION_PATCH 0

/* ---- statuses: the single list (name, value, message) ------------------------------------ */
#define SCHEDC_STATUS_LIST(X)                                                  \
  X(SCHEDC_OK, 0, "success")                                                   \
  X(SCHEDC_EINVAL, 1, "invalid argument")                                      \
  X(SCHEDC_ENOMEM, 2, "out of memory")                                         \
  X(SCHEDC_EIO, 3, "file I/O error")                                           \
  X(SCHEDC_ESCRIPT, 4, "schedule script error")                                \
  X(SCHEDC_EVERIFY, 5, "schedule rejected by the verifier")                    \
  X(SCHEDC_EPLAN, 6, "invalid or corrupted plan file")                         \
  X(SCHEDC_EVERSION, 7, "unsupported plan file version")                       \
  X(SCHEDC_ETIMEOUT, 8, "timed out waiting for a peer")                        \
  X(SCHEDC_EPEER, 9, "a peer rank failed or left")                             \
  X(SCHEDC_EMISMATCH, 10, "ranks disagree on the call or the plan")            \
  X(SCHEDC_EUNAVAIL, 11, "backend or feature unavailable in this build")       \
  X(SCHEDC_ECORRUPT, 12, "data corruption detected")                           \
  X(SCHEDC_EINTERNAL, 13, "internal error")

typedef enum schedc_status {
#define SCHEDC_X_(name, value, msg) name = value,
  SCHEDC_STATUS_LIST(SCHEDC_X_)
#undef SCHEDC_X_
  SCHEDC_STATUS_COUNT_
} schedc_status;

/* ---- collectives (name, value, DSL spelling) ---------------------------------------------- */
#define SCHEDC_COLLECTIVE_LIST(X)                                              \
  X(SCHEDC_ALLREDUCE, 0, "allreduce")                                          \
  X(SCHEDC_REDUCE_SCATTER, 1, "reduce_scatter")                                \
  X(SCHEDC_ALLGATHER, 2, "allgather")                                          \
  X(SCHEDC_BROADCAST, 3, "broadcast")                                          \
  X(SCHEDC_REDUCE, 4, "reduce")

typedef enum schedc_collective {
#define SCHEDC_X_(name, value, str) name = value,
  SCHEDC_COLLECTIVE_LIST(SCHEDC_X_)
#undef SCHEDC_X_
  SCHEDC_COLLECTIVE_COUNT_
} schedc_collective;

/* ---- data types (name, value, spelling, element bytes) ------------------------------------ */
#define SCHEDC_DTYPE_LIST(X)                                                   \
  X(SCHEDC_F32, 0, "f32", 4)                                                   \
  X(SCHEDC_F64, 1, "f64", 8)                                                   \
  X(SCHEDC_F16, 2, "f16", 2)                                                   \
  X(SCHEDC_BF16, 3, "bf16", 2)                                                 \
  X(SCHEDC_I32, 4, "i32", 4)                                                   \
  X(SCHEDC_I64, 5, "i64", 8)

typedef enum schedc_dtype {
#define SCHEDC_X_(name, value, str, bytes) name = value,
  SCHEDC_DTYPE_LIST(SCHEDC_X_)
#undef SCHEDC_X_
  SCHEDC_DTYPE_COUNT_
} schedc_dtype;

/* ---- reduction operators (name, value, spelling) ------------------------------------------ */
#define SCHEDC_OP_LIST(X)                                                      \
  X(SCHEDC_SUM, 0, "sum")                                                      \
  X(SCHEDC_PROD, 1, "prod")                                                    \
  X(SCHEDC_MIN, 2, "min")                                                      \
  X(SCHEDC_MAX, 3, "max")                                                      \
  X(SCHEDC_AVG, 4, "avg")

/* ---- exact mode: order-free sums (docs/determinism.md "Exact mode", docs/c-api.md) ----------
 * SCHEDC_SUM_EXACT and SCHEDC_AVG_EXACT are ops for allreduce, reduce_scatter and reduce of f32,
 * f16 and bf16 data: every rank's input is put on one fixed-point grid shared by all ranks (the
 * scale from an order-free max exchange of the inputs' exponents, an extra small collective the
 * library makes first; round to nearest, ties to even; headroom of ceil(log2 nranks) bits), the
 * 64-bit integers are summed by the plan (any verified plan: integer addition is associative),
 * and the sum is rounded to the data type once (avg: the exact sum divided by nranks, rounded
 * once). So every plan, schedule, backend and slice size gives the same bits. The grid's unit is
 * 2^(E - 61 + ceil(log2 nranks)), E = floor(log2) of the call's largest input on any rank: inputs
 * with bits below it are rounded to it (below half a unit: to zero); NaN anywhere, or +Inf and -Inf together, gives NaN; +Inf (-Inf) alone
 * gives +Inf (-Inf); an exact zero sum is +0. Every rank must pass the same op (a rank in exact
 * mode and one not is SCHEDC_EMISMATCH, naming the op). Backends: threads, shm, mpi, cuda.
 * The payload is 8 bytes per element. Values are below SCHEDC_OP_CUSTOM_BASE
 * and outside [0, SCHEDC_OP_COUNT_): loops over the plain ops do not meet them. */
#define SCHEDC_OP_EXACT_LIST(X)                                                \
  X(SCHEDC_SUM_EXACT, 64, "sum_exact")                                         \
  X(SCHEDC_AVG_EXACT, 68, "avg_exact")

typedef enum schedc_op {
#define SCHEDC_X_(name, value, str) name = value,
  SCHEDC_OP_LIST(SCHEDC_X_)
  SCHEDC_OP_COUNT_,
  SCHEDC_OP_EXACT_LIST(SCHEDC_X_)
#undef SCHEDC_X_
} schedc_op;

/* Custom operators (schedc_op_create below) are values >= SCHEDC_OP_CUSTOM_BASE: the schedc_op
 * parameter of every collective carries them unchanged, and the library maps the value to the
 * operator it made (a process-wide registry; values are never reused within a process). */
#define SCHEDC_OP_CUSTOM_BASE 256

/* ---- names and messages ------------------------------------------------------------------- */

/* Static message of a status ("success", "invalid argument", ...); never NULL. */
SCHEDC_API const char *schedc_status_str(schedc_status st);
/* The calling thread's detail for its most recent failed schedc call (thread-local; valid until
 * that thread's next schedc call). Verifier rejections list every diagnostic, one per line,
 * sorted by file and line. Never NULL; "" if nothing failed yet. */
SCHEDC_API const char *schedc_errmsg(void);
/* Spelling of a collective/dtype/op ("allreduce", "bf16", "max"), or NULL if out of range. */
SCHEDC_API const char *schedc_collective_name(schedc_collective c);
SCHEDC_API const char *schedc_dtype_name(schedc_dtype t);
SCHEDC_API const char *schedc_op_name(schedc_op op);
/* Parse a spelling back. SCHEDC_EINVAL (errmsg lists the legal choices) if unknown. */
SCHEDC_API schedc_status schedc_dtype_parse(const char *s, schedc_dtype *out);
SCHEDC_API schedc_status schedc_op_parse(const char *s, schedc_op *out);
/* Bytes per element of a dtype (0 if out of range). */
SCHEDC_API size_t schedc_dtype_size(schedc_dtype t);

/* ---- version and build (docs/c-api.md "Version and build info") -------------------------------
 * The library's version, "MAJOR.MINOR.PATCH": the SCHEDC_VERSION_* of the header it was built with
 * (a program built against another header compares them). Static; never NULL. Any thread. */
SCHEDC_API const char *schedc_version(void);
/* The source revision the library was built from: `git describe --always --dirty` of the checkout
 * at build time ("a5f705f0c1d2", "a5f705f0c1d2-dirty"), or "unknown" when built outside a git
 * checkout. Static; never NULL. Any thread. */
SCHEDC_API const char *schedc_revision(void);

typedef enum schedc_info_format {
  SCHEDC_INFO_TEXT = 0, /* "key: value" lines, to paste into a bug report (`schedc info`) */
  SCHEDC_INFO_JSON = 1  /* one JSON object with the same facts (`schedc info --json`; docs/cli.md its keys) */
} schedc_info_format;
/* What this build contains and what it finds on this machine (`schedc info`, docs/cli.md): the
 * version and revision, the library's file, compiler and build type; every backend (built in, and
 * usable here or why not: threads and shm by making a one-rank communicator, cuda by counting
 * devices); each optional library (NVRTC, the CUDA driver, NCCL, NVML, libclang, hwloc, MPI) found
 * or not, with its file and version or the reason and what to install; the vector path the CPU
 * loops take; the CPUs online and usable, the NUMA nodes; the CUDA devices the cuda backend sees;
 * the kernel cache directory (created if missing, as its first use would); /dev/shm's free space;
 * every variable of docs/env.md that is set, with the reason a malformed one is refused, and any
 * other SCHEDC_* variable (misspelt?). It loads the optional libraries with dlopen, as their first
 * use would, and initialises no MPI. *text is malloc'd (schedc_free). SCHEDC_EINVAL (text NULL, an
 * unknown format), SCHEDC_ENOMEM. Any thread, but not while another changes the environment. */
SCHEDC_API schedc_status schedc_info(schedc_info_format fmt, char **text);

/* ---- parameters: the environment variables schedc reads (docs/env.md) ----------------------
 * Parameter `name` as schedc reads it: *value is the variable's value (unset or empty: the
 * documented default, or NULL where the default is computed), checked against the parameter's
 * type. SCHEDC_EINVAL when name is not in docs/env.md's list, or when the value is malformed
 * (errmsg names the variable, the value and the legal values). *value points into the
 * environment or at a constant: valid until the variable changes. Any thread. */
SCHEDC_API schedc_status schedc_param_get(const char *name, const char **value);

/* ---- log: the library's warnings and notices (docs/c-api.md) --------------------------------
 * Failures are returned (a status and schedc_errmsg); what the library only reports — a result
 * repaired by verification, a fault injected for a test — is a message with a level, handed to a
 * hook. Without one (the default, and after schedc_set_log(NULL, NULL)) messages go to stderr as
 * lines "schedc: warning: MSG" (error, info, debug likewise), those of the level SCHEDC_DEBUG names
 * (error, warn, info or debug; default warn) and of the levels above it. */
typedef enum { SCHEDC_LOG_ERROR = 0, SCHEDC_LOG_WARN = 1, SCHEDC_LOG_INFO = 2, SCHEDC_LOG_DEBUG = 3 } schedc_log_level;
/* A hook: ctx as given to schedc_set_log, the level, and the message (one line, no newline and no
 * "schedc:" prefix; valid only during the call). It gets every level (SCHEDC_DEBUG filters only
 * the default writer). */
typedef void (*schedc_log_fn)(void *ctx, schedc_log_level level, const char *msg);
/* Send the library's messages to fn(ctx, level, msg) from now on, process-wide; fn NULL restores
 * the default writer (ctx is then ignored). Any thread, at any time. The hook is called in the
 * thread that logs (a rank's thread, a caller's), one message at a time (calls are serialised,
 * so it need not be reentrant); once schedc_set_log returns, the previous hook is never called
 * again, so its ctx may be freed. The hook may call schedc functions, schedc_set_log included,
 * but must not wait for another thread that may be logging (that thread waits for the hook). */
SCHEDC_API void schedc_set_log(schedc_log_fn fn, void *ctx);

/* ---- plans: a verified schedule -------------------------------------------------------------
 * A plan is immutable once created and may be shared by any number of threads. */
typedef struct schedc_plan schedc_plan;

/* Options for loading a schedule script. Start with SCHEDC_LOAD_OPTS_INIT; zero means default. */
typedef struct schedc_load_opts {
  size_t size;               /* sizeof(schedc_load_opts) */
  int nranks;                /* ranks (the `nranks` global); 0: from the topology, else error */
  int nnodes;                /* split ranks into this many equal consecutive nodes; 0: 1 node */
  const char *topology;      /* topology file (.lua) or NULL */
  const char *const *defines;/* "key=value" strings, the `params` table (numbers converted) */
  int ndefines;
  uint64_t max_instructions; /* Lua instruction cap; 0: 1e9 (5-15 s of plain Lua) */
  size_t max_memory;         /* memory cap in bytes (Lua's and the transfers'); 0: 1 GiB */
  double max_seconds;        /* wall-clock limit of the script's run; 0: 20 s. No Lua code, pcall
                              * or library call outlasts a limit once hit */
  const int *node_of;        /* with nranks and nnodes, no topology: rank r's node, node_of[0..nranks)
                              * in [0, nnodes), every node used (ranks round-robin across hosts, as
                              * mpirun --map-by node places them); NULL: equal consecutive blocks */
} schedc_load_opts;
#define SCHEDC_LOAD_OPTS_INIT {sizeof(schedc_load_opts), 0, 0, NULL, NULL, 0, 0, 0, 0.0, NULL}

/* Run the schedule script at `path` in the sandbox, verify it and lower it into a plan. A path
 * without a folder may name a shipped or installed schedule ("ring"; schedc_schedule_find below),
 * and opts->topology likewise a topology ("dgx_h100"). Returns SCHEDC_OK and a new plan in *out (free with schedc_plan_free), or:
 *  SCHEDC_EINVAL (bad options), SCHEDC_EIO (file unreadable), SCHEDC_ESCRIPT (the script failed:
 *  errmsg is "file:line: message"), SCHEDC_EVERIFY (rejected: errmsg lists the diagnostics),
 *  SCHEDC_ENOMEM. On failure *out is NULL: a rejected schedule produces no plan.
 * Thread-safe: every call has its own Lua state. */
SCHEDC_API schedc_status schedc_plan_from_script(const char *path, const schedc_load_opts *opts,
                                                 schedc_plan **out);

/* Open `path` (looked up as by schedc_schedule_find) as a plan file if it starts with the plan
 * magic, else run it as a schedule script with opts (like schedc_plan_from_script). For plan files, opts->nranks/nnodes, when given, must
 * match the plan (SCHEDC_EINVAL otherwise). */
SCHEDC_API schedc_status schedc_plan_open(const char *path, const schedc_load_opts *opts, schedc_plan **out);

/* Where schedc_plan_open and schedc_plan_from_script read the schedule `name` from (and
 * schedc_cost_model_load and opts->topology a topology, in the topologies/ subfolder of the
 * same places): `name` itself if it contains a '/' or is an existing file; else NAME, then
 * NAME.lua, in each folder of $SCHEDC_SCHEDULE_PATH (colon-separated), then in the installed
 * schedules, share/schedc beside the library's lib/ folder (found at run time, so a moved prefix
 * works; in a build tree, the source's schedules/). So "ring" is the shipped ring from any
 * directory. The path into path[cap]. SCHEDC_EIO: not found (errmsg lists every folder looked
 * in); SCHEDC_EINVAL: NULL or empty arguments, or the path does not fit in cap. */
SCHEDC_API schedc_status schedc_schedule_find(const char *name, char *path, size_t cap);

/* Write a plan to a versioned plan file (written to a temporary name, then renamed).
 * SCHEDC_EIO on failure; the file is either complete or absent. */
SCHEDC_API schedc_status schedc_plan_save(const schedc_plan *plan, const char *path);
/* Load a plan file strictly: magic, version, sizes and content hash are checked and the plan is
 * verified again. SCHEDC_EIO, SCHEDC_EPLAN (not a plan, truncated, corrupted), SCHEDC_EVERSION,
 * SCHEDC_EVERIFY. On failure *out is NULL. */
SCHEDC_API schedc_status schedc_plan_load(const char *path, schedc_plan **out);
/* Free a plan; NULL is a no-op. The caller must make sure nothing still uses it. */
SCHEDC_API void schedc_plan_free(schedc_plan *plan);

/* What a plan is. Strings point into the plan and live as long as it. */
typedef struct schedc_plan_info {
  size_t size;               /* sizeof(schedc_plan_info), set by the caller */
  const char *name;
  const char *source;        /* the script's path as given */
  schedc_collective collective;
  int nranks, nnodes, nchunks, root, nsteps;
  long ntransfers;
  int canonical;             /* declared order = "canonical" (and proven) */
  uint64_t hash;             /* content hash of the plan (equal plans, equal hash) */
  double max_sent;           /* most data one rank sends, in units of the whole buffer */
  double max_recv;           /* most data one rank receives, likewise */
} schedc_plan_info;
#define SCHEDC_PLAN_INFO_INIT {sizeof(schedc_plan_info), NULL, NULL, SCHEDC_ALLREDUCE, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0}
SCHEDC_API schedc_status schedc_plan_get_info(const schedc_plan *plan, schedc_plan_info *info);

typedef enum schedc_xfer_kind { SCHEDC_XFER_REDUCE = 0, SCHEDC_XFER_COPY = 1 } schedc_xfer_kind;
/* One transfer of a plan, in plan order (by step, then as written). */
typedef struct schedc_transfer {
  int step;
  schedc_xfer_kind kind;
  int src, dst, chunk;
  const char *file;          /* the user's file of the call that added it (lives with the plan) */
  int line;
} schedc_transfer;
/* Transfer i (0 <= i < ntransfers). SCHEDC_EINVAL if out of range. */
SCHEDC_API schedc_status schedc_plan_transfer(const schedc_plan *plan, long i, schedc_transfer *out);

/* The proven reduction tree of `chunk` on `rank`, written with rN, '+' and parentheses, e.g.
 * "(((r1+r2)+r3)+r0)"; a chunk the postcondition leaves unspecified on that rank is "-".
 * Writes at most `cap` bytes including the NUL; returns the full length (like snprintf) or
 * -1 (bad argument, or out of memory: buf then holds ""). */
SCHEDC_API long schedc_plan_order(const schedc_plan *plan, int chunk, int rank, char *buf, size_t cap);
/* The rank whose tree defines `chunk` (the owner for reduce_scatter, the root for reduce,
 * otherwise the lowest rank that holds it), or -1. */
SCHEDC_API int schedc_plan_chunk_holder(const schedc_plan *plan, int chunk);


/* ---- cost model (docs/tuning.md) ------------------------------------------------------------
 * An alpha-beta model over a plan's steps: per step, every rank's bytes in and out on each link
 * class (within a node / between nodes) and the bytes it reduces; a step costs, on its slowest
 * rank, alpha + bytes / bandwidth of each link class used (both directions overlap) plus the
 * reduction, and at least the node's aggregate limit (shared memory bus, NIC) and, with more
 * ranks than cores, the node's CPU time spread over its cores. Steps add up (no pipelining
 * credit: the estimate is pessimistic for long pipelines). */
typedef enum schedc_link_kind {
  SCHEDC_LINK_SHM = 0,     /* shared memory: a reduce transfer is one a + b pass by the receiver */
  SCHEDC_LINK_NVLINK = 1,
  SCHEDC_LINK_PCIE = 2,
  SCHEDC_LINK_NET = 3
} schedc_link_kind;
typedef struct schedc_link {
  schedc_link_kind kind;
  double alpha_us;         /* per step that uses the link */
  double gbps;             /* per rank and direction, GB/s (1e9 bytes/s) */
  double node_gbps;        /* all ranks of a node together (memory bus, NIC); 0: no limit */
} schedc_link;
typedef struct schedc_cost_model {
  size_t size;             /* sizeof(schedc_cost_model) */
  schedc_link intra, inter;
  double reduce_gbps;      /* a rank reduces this many GB/s of one operand (dst = dst + src) */
  double copy_gbps;        /* local copies (in and out of the working buffer) */
  double local_passes;     /* whole-buffer local copies per call (shm: 2; in-place GPU: 0) */
  double call_us;          /* fixed cost per call (entry barrier, call check) */
  int cores_per_node;      /* 0: a core per rank */
} schedc_cost_model;
#define SCHEDC_COST_MODEL_INIT {sizeof(schedc_cost_model), {SCHEDC_LINK_SHM, 1.0, 5.0, 10.0}, \
    {SCHEDC_LINK_NET, 10.0, 10.0, 0.0}, 4.0, 5.0, 2.0, 1.0, 0}

/* Read the `links` table of a topology file (docs/tuning.md) into *m (fields it does not name
 * keep their values); a file without one but with levels (`schedc topo -o`, docs/topology.md)
 * gives inter = its "host" level, intra = its slowest inner level. SCHEDC_EIO, SCHEDC_ESCRIPT or SCHEDC_EINVAL with "file:line: ..." */
SCHEDC_API schedc_status schedc_cost_model_load(const char *topology_path, schedc_cost_model *m);
/* Predicted time of one call of `plan` on a buffer of `bytes` (the whole buffer: for
 * reduce_scatter and allgather all ranks' blocks together), in microseconds. SCHEDC_EINVAL. */
SCHEDC_API schedc_status schedc_plan_cost(const schedc_plan *plan, const schedc_cost_model *m, size_t bytes,
                                          double *us);

/* ---- topology discovery and import (docs/topology.md) ---------------------------------------
 * A machine's structure: hosts; per host packages, NUMA nodes, cores, PCIe switches, GPUs, NICs
 * and NVLink links; derived from them the ranks (one per GPU, else one per core), each GPU's
 * nearest NICs, the NVLink kind and the levels (host, numa, switch, nvlink, gpu/core) with a
 * bandwidth and latency each. Written as schedc's topology file, it is what `--topology` and
 * schedc_load_opts.topology accept. Immutable once made; any thread. */
typedef struct schedc_topology schedc_topology;
typedef enum schedc_topology_format {
  SCHEDC_TOPOLOGY_SUMMARY = 0, /* readable lines (schedc topo) */
  SCHEDC_TOPOLOGY_JSON = 1,    /* {"hosts": [{"numa", "gpus", "nics", "nvlink"}...], "ranks", "levels", ...} */
  SCHEDC_TOPOLOGY_FILE = 2     /* schedc's topology file (a Lua table: levels, ranks, hosts) */
} schedc_topology_format;
/* This machine, through hwloc (and NVML for NVLink when a driver is present). SCHEDC_EUNAVAIL
 * when this build has no hwloc; SCHEDC_ENOMEM. */
SCHEDC_API schedc_status schedc_topology_discover(schedc_topology **out);
/* Read NCCL topology XML (a <system> root: NCCL_TOPO_FILE inputs, NCCL_TOPO_DUMP_FILE dumps,
 * fused multi-host dumps) or hwloc XML (a <topology> root, through hwloc's loader). Malformed
 * input: SCHEDC_EINVAL with "file:line: what is wrong"; SCHEDC_EIO; SCHEDC_EUNAVAIL for hwloc
 * XML without hwloc. */
SCHEDC_API schedc_status schedc_topology_import(const char *path, schedc_topology **out);
/* An hwloc synthetic machine ("pack:2 core:4"): for tests and what-if. SCHEDC_EINVAL, EUNAVAIL. */
SCHEDC_API schedc_status schedc_topology_synthetic(const char *desc, schedc_topology **out);
/* Write the topology in a format: at most cap bytes including the NUL; returns the full length
 * (like snprintf), or -1 (bad argument, out of memory). */
SCHEDC_API long schedc_topology_write(const schedc_topology *t, schedc_topology_format fmt, char *buf, size_t cap);
/* Its fingerprint: a hash of the ranks' places and the levels' numbers (what plans and tuning
 * depend on); also written in the topology file. 0 for NULL. */
SCHEDC_API uint64_t schedc_topology_fingerprint(const schedc_topology *t);
/* Ranks it places (one per GPU, else one per core); 0 for NULL. */
SCHEDC_API int schedc_topology_nranks(const schedc_topology *t);
SCHEDC_API void schedc_topology_free(schedc_topology *t);

/* ---- communicators -------------------------------------------------------------------------
 * A communicator is one rank's handle on a group of nranks ranks. Collectives on a
 * communicator must be called by every rank, in the same order, with matching arguments (this
 * is checked: a mismatch returns SCHEDC_EMISMATCH instead of hanging). One thread at a time
 * per communicator; different communicators may be used from different threads. */
typedef struct schedc_comm schedc_comm;

typedef enum schedc_backend {
  SCHEDC_BACKEND_THREADS = 0, /* ranks are threads of one process; peers' buffers read directly */
  SCHEDC_BACKEND_SHM = 1,     /* processes on one host; POSIX shared memory */
  SCHEDC_BACKEND_MPI = 2,     /* any MPI launcher, any number of hosts (if built with MPI) */
  SCHEDC_BACKEND_CUDA = 3,    /* GPUs: one process drives them all (schedc_comm_init_cuda) or
                                 one process per GPU (schedc_comm_init_cuda_rank) */
  SCHEDC_BACKEND_NET = 4      /* processes on any hosts over UCX, no MPI launcher (if built with UCX) */
} schedc_backend;

typedef struct schedc_comm_opts {
  size_t size;                /* sizeof(schedc_comm_opts) */
  double timeout_s;           /* every wait; 0: $SCHEDC_TIMEOUT seconds, else 300 */
  size_t slice_bytes;         /* pipelining slice; 0: $SCHEDC_SLICE, else 256 KiB. Never changes bits */
  const schedc_plan *plan;    /* a plan whose hash all ranks must share (checked at init), or NULL */
  int verify;                 /* SCHEDC_VERIFY_*; 0: $SCHEDC_VERIFY (none, digest, checksum, full, exact) */
  int repair;                 /* 1: repair what verification finds; 0: $SCHEDC_REPAIR=1 */
  const char *tuning;         /* tuning table (`schedc tune`) choosing the plan and slice of calls
                               * made with plan NULL; NULL: $SCHEDC_TUNING, else the built-in ring */
} schedc_comm_opts;
#define SCHEDC_COMM_OPTS_INIT {sizeof(schedc_comm_opts), 0.0, 0, NULL, 0, 0, NULL}

/* Integrity checks (docs/integrity.md).
 * DIGEST: every rank ends allreduce, allgather and broadcast with the same bits, so the ranks
 * compare a 64-bit digest of the result (an allgather of 8 bytes per rank): a rank that differs
 * from the majority is named and the call returns SCHEDC_ECORRUPT on every rank, or, with
 * repair, the result is broadcast again from a majority rank and the call succeeds (a warning on
 * stderr). reduce_scatter and reduce leave different data on different ranks: no digest there.
 * CHECKSUM: every transfer's payload carries a CRC32C computed by its sender, checked by its
 * receiver before use; a mismatch returns SCHEDC_ECORRUPT on every rank naming the step, the
 * sender, the receiver and the schedule line, or, with repair, the transfer is sent again (a
 * warning on stderr). This catches a corrupted partial sum, which reaches every rank alike and
 * so passes the digest. All five collectives. FULL: both.
 * EXACT: exact mode's identity check alone (docs/determinism.md "Exact integrity"): an exact call's
 * result integers must sum to every rank's input integers (mod 2^64), which checks the transfers
 * and the reduce's arithmetic; SCHEDC_ECORRUPT on every rank otherwise. Calls that are not exact
 * run unverified under it. DIGEST and CHECKSUM include it. */
enum {
  SCHEDC_VERIFY_DEFAULT = 0,
  SCHEDC_VERIFY_NONE = 1,
  SCHEDC_VERIFY_DIGEST = 2,
  SCHEDC_VERIFY_CHECKSUM = 4,
  SCHEDC_VERIFY_FULL = 6, /* DIGEST | CHECKSUM */
  SCHEDC_VERIFY_EXACT = 8
};

/* `threads`: create nranks communicators at once (like ncclCommInitAll); comms[r] is rank r's,
 * to be used by one thread each. SCHEDC_EINVAL, SCHEDC_ENOMEM. On failure no comm is created. */
SCHEDC_API schedc_status schedc_comm_init_threads(int nranks, const schedc_comm_opts *opts, schedc_comm **comms);
/* `shm`: this process is `rank` of `nranks` on this host; `job` names the shared segments and
 * must be the same on all ranks and unique among running jobs (it is the job's secret: draw it
 * at random). Waits (up to the timeout) for all ranks to join. Nothing of the job is left in
 * /dev/shm once this returns. SCHEDC_EINVAL (also: the segment name is taken by another user,
 * another mode or job, or the rank by another process), SCHEDC_ETIMEOUT, SCHEDC_EIO (shared
 * memory), SCHEDC_EMISMATCH. */
SCHEDC_API schedc_status schedc_comm_init_shm(int rank, int nranks, const char *job, const schedc_comm_opts *opts,
                                              schedc_comm **out);
/* A job's unique id for the shm rendezvous (like ncclUniqueId): 128 random bits made by one
 * rank and handed to the others by the caller (a torch.distributed store, a broadcast, a file),
 * so two jobs on one host can never pick the same segment names by accident. Plain bytes:
 * copy it freely. */
typedef struct schedc_uid { unsigned char bytes[16]; } schedc_uid;
/* Fill *id with 128 bits from getrandom(2) (the kernel's CSPRNG; blocks only before the pool is
 * first initialised at boot). SCHEDC_EINVAL (id NULL), SCHEDC_EIO (no randomness). Thread-safe. */
SCHEDC_API schedc_status schedc_unique_id(schedc_uid *id);
/* `shm` from a unique id: as schedc_comm_init_shm with the job "u" + the id's 32 hex digits;
 * every rank passes the same id (made by schedc_unique_id on one rank). Statuses as
 * schedc_comm_init_shm, and SCHEDC_EINVAL if id is NULL. */
SCHEDC_API schedc_status schedc_comm_init_shm_uid(int rank, int nranks, const schedc_uid *id,
                                                  const schedc_comm_opts *opts, schedc_comm **out);
/* `mpi`: ranks from an MPI communicator; `mpi_comm` points to an MPI_Comm (MPI must be
 * initialised), or NULL for MPI_COMM_WORLD: then SCHEDC_NRANKS (else WORLD_SIZE), when set, must
 * be its size, else SCHEDC_EINVAL on every rank. SCHEDC_EUNAVAIL if this build has no MPI. */
SCHEDC_API schedc_status schedc_comm_init_mpi(const void *mpi_comm, const schedc_comm_opts *opts, schedc_comm **out);
/* `net`: processes on any hosts over UCX (shared memory within a host, its network transports
 * between hosts), bootstrapped without an MPI launcher (docs/c-api.md "The net backend"). Rank 0's
 * process makes the id with schedc_uid_net and hands it to the others by any means (a store, a
 * file, a broadcast; like ncclGetUniqueId); every rank then calls schedc_comm_init_net with it.
 * Waits (up to the timeout) for all ranks. SCHEDC_EUNAVAIL if this build has no UCX. */
/* A net id: 16 plain bytes holding an IPv4 address of this host (SCHEDC_NET_IFNAME's, else the
 * first interface that is up and not loopback, else 127.0.0.1), a port this process now listens
 * on (chosen by the kernel) and 64 random bits that tell this job's ranks from any other's. The
 * listener is closed by the schedc_comm_init_net of rank 0, which must run in this process.
 * SCHEDC_EINVAL (id NULL, SCHEDC_NET_IFNAME names no such interface), SCHEDC_EIO, SCHEDC_EUNAVAIL
 * (no UCX; or 64 ids made and not used yet). Thread-safe. */
SCHEDC_API schedc_status schedc_uid_net(schedc_uid *id);
/* This process is `rank` of `nranks`; id from schedc_uid_net on rank 0's process, the same on
 * every rank. Rank 0 gathers every rank's record (host, process, UCX address) at the id's address
 * and answers all; then every rank connects to every other. SCHEDC_EINVAL (bad arguments; rank 0
 * not in the id's process; the ranks disagree on nranks, two claim one rank: named on every rank
 * that connected), SCHEDC_ETIMEOUT (rank 0 unreachable, or a rank never came, named),
 * SCHEDC_EPEER (a rank failed its set-up, named), SCHEDC_EMISMATCH (opts->plan or
 * SCHEDC_TOPOLOGY differ), SCHEDC_EIO (UCX could not start), SCHEDC_ENOMEM. Nothing of the
 * bootstrap (sockets, the listener) is left once it returns. */
SCHEDC_API schedc_status schedc_comm_init_net(int rank, int nranks, const schedc_uid *id, const schedc_comm_opts *opts,
                                              schedc_comm **out);
/* An allgather the caller provides for a bootstrap (UCC's "out-of-band" collective): every rank's
 * `bytes` of `mine` into all[r * bytes] for every rank r, collectively (each rank passes the same
 * bytes); 0 on success. Called a few times in a row from the init, on its thread. */
typedef int (*schedc_oob_allgather)(void *ctx, const void *mine, void *all, size_t bytes);
/* `net` bootstrapped through the caller's allgather (a torch.distributed store: the Python
 * binding's way, docs/python.md). Statuses as schedc_comm_init_net, and SCHEDC_EPEER when the
 * allgather returns nonzero; its own waits are the caller's. */
SCHEDC_API schedc_status schedc_comm_init_net_oob(int rank, int nranks, schedc_oob_allgather allgather, void *ctx,
                                                  const schedc_comm_opts *opts, schedc_comm **out);
/* From the environment: SCHEDC_RANK/SCHEDC_NRANKS/SCHEDC_JOB, else torchrun's RANK/WORLD_SIZE,
 * else Open MPI's OMPI_COMM_WORLD_RANK/SIZE, else SLURM's SLURM_PROCID/SLURM_NTASKS. The job:
 * SCHEDC_JOB, else TORCHELASTIC_RUN_ID unless 'none', else Open MPI's, else SLURM's job and step;
 * never one two running jobs can share (MASTER_PORT, 'none'): without one, SCHEDC_EINVAL saying how
 * to give one. SCHEDC_BACKEND=shm|mpi|cuda|net picks the backend (default shm; mpi under an MPI
 * launcher when built with MPI; net when the ranks span hosts — LOCAL_WORLD_SIZE below the rank
 * count, or SLURM_STEP_NUM_NODES above 1 — without one, when built with UCX: bootstrapped at
 * MASTER_ADDR:MASTER_PORT, torchrun's agent store there when TORCHELASTIC_USE_AGENT_STORE=True,
 * else rank 0 listens on it; spanning hosts without net or MPI is SCHEDC_EINVAL saying so; cuda:
 * one process per GPU on device SCHEDC_CUDA_DEVICE, else LOCAL_RANK, else
 * OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID, else the rank: schedc_comm_init_cuda_rank, or
 * across hosts schedc_comm_init_cuda_over a communicator of its own, freed with it — MPI's under an
 * MPI launcher when built with MPI, else net's). SCHEDC_EINVAL names the missing variable. */
SCHEDC_API schedc_status schedc_comm_init_env(const schedc_comm_opts *opts, schedc_comm **out);
/* Destroy; NULL is a no-op. Safe after any error, including a dead peer. */
SCHEDC_API void schedc_comm_free(schedc_comm *comm);
/* Go on without the ranks that died (docs/recovery.md), like ULFM's MPIX_Comm_shrink or
 * ncclCommShrink, but with an agreement: after a call failed with SCHEDC_EPEER (or
 * SCHEDC_ETIMEOUT), every rank still alive calls schedc_comm_shrink on its broken communicator;
 * they agree on who is still there and each gets *newcomm, a communicator of exactly those ranks,
 * renumbered in their old order (the lowest surviving old rank is rank 0; schedc_comm_parent_rank
 * maps back). The agreement cannot split: every rank that gets a communicator gets one with the
 * same members, and a rank left out gets an error, never a communicator of its own. A rank is left
 * out when it is dead (its process gone; on threads, killed by SCHEDC_INJECT), when it freed its
 * communicator, or when it has not called schedc_comm_shrink within the old communicator's timeout
 * while the others waited for it; each live rank is waited for until it calls it too, so a rank
 * that was computing when its peer died joins when its next call fails. The ranks need not be in
 * the same call of the old communicator when it broke (one may have finished a call another failed
 * in): agree on where to go on from over the new communicator (docs/recovery.md shows how).
 * opts: the new communicator's options; NULL: the old one's timeout, slice, verification and
 * repair (the tuning table as at init, for the new rank count). Faults to inject (SCHEDC_INJECT)
 * carry over by process: one named for an old rank applies to its new number; those of ranks that
 * are gone are dropped. Once per communicator. The old communicator stays broken, and its
 * schedc_mem_alloc buffers stay its own: free it once the new one is made (or not).
 * Statuses: SCHEDC_OK; SCHEDC_EINVAL (NULL arguments; shrink called again on one communicator);
 * SCHEDC_EPEER (this rank was left out, or is itself the rank that was killed; or a member died
 * while the new communicator was being made: those members whose new communicator could not be
 * made get this, the others a communicator whose next call reports the death — shrink that one);
 * SCHEDC_ETIMEOUT (the new communicator's rendezvous); SCHEDC_EUNAVAIL (a backend that cannot:
 * mpi, since Open MPI 4.1 has no ULFM and a dead process ends the MPI job; cuda); SCHEDC_ENOMEM;
 * SCHEDC_EIO (shm segments). Backends: threads, shm, net (there the survivors agree by messages
 * through a coordinator, and a group that is not more than half of the ranks not known dead fails
 * with SCHEDC_EPEER rather than risk a split: docs/recovery.md). *newcomm is NULL on failure. */
SCHEDC_API schedc_status schedc_comm_shrink(schedc_comm *comm, const schedc_comm_opts *opts, schedc_comm **newcomm);
/* The rank that `rank` of comm had in the communicator comm was shrunk from (schedc_comm_shrink);
 * rank itself for a communicator made otherwise; -1 when comm is NULL or rank out of range. */
SCHEDC_API int schedc_comm_parent_rank(const schedc_comm *comm, int rank);
/* The plan a call with plan NULL would use for `bytes` of whole buffer (the tuning table's
 * choice; else, when the ranks span hosts — an mpi or net communicator learns its hosts at init —
 * the shipped hierarchical schedule with one node per host, in blocks or round-robin, for
 * allreduce, reduce_scatter and allgather; else the built-in ring); owned by the communicator.
 * NULL + errmsg on failure. */
SCHEDC_API const schedc_plan *schedc_comm_default_plan(schedc_comm *comm, schedc_collective coll, int root,
                                                       size_t bytes);
/* This process's host as communicators tell hosts apart: a hash of SCHEDC_HOST_ID when set, else
 * of the host name and the kernel's boot id. Only for comparing with other processes' ids. */
SCHEDC_API uint64_t schedc_host_id(void);
/* The fingerprint of a layout of nranks ranks on hosts (host_of[r]: rank r's host, numbered in
 * order of first appearance: 0, then the next new host 1, ...), as the `hosts` line of a tuning
 * table names the layout it was measured on (docs/tuning.md); a communicator whose ranks sit
 * otherwise refuses the table at init. 0 for bad arguments. */
SCHEDC_API uint64_t schedc_hosts_fingerprint(int nranks, const int *host_of);
SCHEDC_API int schedc_comm_rank(const schedc_comm *comm);
SCHEDC_API int schedc_comm_nranks(const schedc_comm *comm);

/* ---- shared allocations --------------------------------------------------------------------
 * Memory every rank of the communicator can map. A collective whose receive buffer (and, to
 * skip the copy in as well, its send buffer, or in place) lies in such a buffer works in it
 * directly: on `shm` the peers map this rank's buffer and read it in place, with no copy into
 * the backend's working buffer and none out of it. The results are the same bits as with any
 * other buffers. Where the result is carried in a wider type than the data (avg, sums of f16 /
 * bf16), for reduce_scatter, and on a reduce's non-root ranks, the call still goes through the
 * backend's buffer. `threads`: heap memory (those calls share the receive buffer anyway);
 * `mpi`: heap memory, no copy saved; `cuda`: SCHEDC_EINVAL (schedc_cuda_alloc).
 *
 * schedc_mem_alloc: *ptr = at least `bytes` of zeroed memory, 64-byte aligned (page aligned on
 * shm: each allocation is its own memfd, rounded up to the page size, never named in the file
 * system), owned by the communicator: released by schedc_mem_free or, at the latest, by
 * schedc_comm_free (using it afterwards is undefined). At most 64 live allocations per
 * communicator. Local to the rank (not collective): each rank allocates its own buffers.
 * Statuses: SCHEDC_OK; SCHEDC_EINVAL (comm or ptr NULL, bytes 0, a cuda communicator: errmsg
 * names it); SCHEDC_ENOMEM (out of memory, or 64 allocations live); SCHEDC_EIO (the memfd could
 * not be made). *ptr is NULL on failure. After a call on this rank returns, the caller may
 * write these buffers: the call returned only after every peer finished reading them (on
 * failure, after the peers left the call or the timeout passed, as for any buffer).
 * Threads: like the collectives, not concurrently with another call on the same communicator
 * (different communicators, e.g. the ranks of a threads group, are independent). */
SCHEDC_API schedc_status schedc_mem_alloc(schedc_comm *comm, size_t bytes, void **ptr);
/* Release a buffer of schedc_mem_alloc on the communicator that made it; ptr NULL: no-op
 * (SCHEDC_OK). A pointer that is not the start of one of this communicator's live allocations
 * (freed already, another communicator's, inside one): SCHEDC_EINVAL, errmsg says which, and
 * nothing is freed. comm NULL: SCHEDC_EINVAL. Peers that still map the memory (shm) keep their
 * mapping until they need the room or are freed; the memory is gone when the last one lets go.
 * Threads: as schedc_mem_alloc. */
SCHEDC_API schedc_status schedc_mem_free(schedc_comm *comm, void *ptr);

/* ---- collectives ---------------------------------------------------------------------------
 * Each call blocks until this rank's part is done and its buffers may be reused. `plan` may be
 * NULL: the communicator's default plan (a ring) for that collective is used. A plan must have
 * the communicator's rank count and the call's collective (and root). Every rank gets the bits
 * the plan's proven trees define, whatever the timing, slice size or backend.
 * Counts are elements; any count, zero included. In place: sendbuf == recvbuf (allgather:
 * sendbuf == recvbuf + rank * sendcount elements; reduce_scatter: sendbuf == recvbuf is not in
 * place, recvbuf must not overlap sendbuf otherwise).
 * Statuses: SCHEDC_OK, SCHEDC_EINVAL (bad argument: errmsg names it), SCHEDC_EMISMATCH (ranks
 * disagree on the call), SCHEDC_ETIMEOUT / SCHEDC_EPEER (errmsg names the step, this rank and
 * the rank it waited for; the communicator is then broken and only schedc_comm_free is
 * useful), SCHEDC_ENOMEM. */
SCHEDC_API schedc_status schedc_allreduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype,
                                          schedc_op op, schedc_comm *comm, const schedc_plan *plan);
/* sendbuf: nranks * recvcount elements; recvbuf: recvcount (block `rank`). */
SCHEDC_API schedc_status schedc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                               schedc_dtype dtype, schedc_op op, schedc_comm *comm, const schedc_plan *plan);
/* sendbuf: sendcount elements; recvbuf: nranks * sendcount, block r from rank r. */
SCHEDC_API schedc_status schedc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, schedc_dtype dtype,
                                          schedc_comm *comm, const schedc_plan *plan);
/* root's sendbuf to every rank's recvbuf (sendbuf is ignored on other ranks). */
SCHEDC_API schedc_status schedc_broadcast(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype,
                                          int root, schedc_comm *comm, const schedc_plan *plan);
/* The reduction lands in root's recvbuf (recvbuf is ignored, may be NULL, on other ranks). */
SCHEDC_API schedc_status schedc_reduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype,
                                       schedc_op op, int root, schedc_comm *comm, const schedc_plan *plan);

/* ---- compression: quantized sums, top-k, error feedback (docs/compression.md) --------------
 * The wire format of a SCHEDC_SUM or SCHEDC_AVG of f32, f16 or bf16 data (allreduce,
 * reduce_scatter, reduce). QN: every rank puts its input on one grid shared by all ranks (the
 * scale from an order-free max exchange, as exact mode's) as signed integers of N bits with
 * N - 1 - ceil(log2 nranks) bits of magnitude (round to nearest, ties to even), so that every
 * partial sum of any plan fits in N bits; the plan moves and sums those N-bit integers (Q8: one
 * byte per element in every step, 4x less than f32) and the exact integer sum is rounded to the
 * data type once (avg: the exact sum divided by nranks, rounded once). The sum is exact on the
 * grid, so every plan, backend, slice size and rank layout gives the same bits for the same
 * inputs; against the exact sum of the inputs the error is at most nranks half-units of the grid
 * plus the final rounding (docs/compression.md states the grid and the bound). NaN or Inf in any
 * rank's input is SCHEDC_EINVAL on every rank (naming the rank and element), as is a rank count
 * the bits cannot hold (Q8: at most 64 ranks, Q16: 16384), and nothing is written to the output. */
#define SCHEDC_WIRE_LIST(X)                                                    \
  X(SCHEDC_WIRE_DEFAULT, 0, "default")                                         \
  X(SCHEDC_WIRE_Q8, 8, "q8")                                                   \
  X(SCHEDC_WIRE_Q16, 16, "q16")

typedef enum schedc_wire {
#define SCHEDC_X_(name, value, str) name = value,
  SCHEDC_WIRE_LIST(SCHEDC_X_)
#undef SCHEDC_X_
} schedc_wire;

/* "default", "q8", "q16", or NULL if out of range. */
SCHEDC_API const char *schedc_wire_name(schedc_wire w);
/* Parse a spelling back; SCHEDC_EINVAL (errmsg lists the choices) if unknown. */
SCHEDC_API schedc_status schedc_wire_parse(const char *s, schedc_wire *out);

/* Options of one call (the _v2 collectives). Zero means default: the plain call.
 * wire: SCHEDC_WIRE_*: the quantized sums above.
 * topk: top-k sparsification (allreduce only, SUM or AVG of f32, f16, bf16): each rank sends its
 *   k = ceil(topk * count) largest-magnitude elements (ties: the lower index first) with their
 *   indices, every rank receives every rank's (an allgather of k index-value pairs), and the union
 *   is summed exactly on one grid (exact mode's, docs/determinism.md), so the result is the bits of
 *   exact mode's sum of the ranks' sparsified inputs — the same on every rank, run, plan, backend
 *   and rank order; elements no rank sent are +0. When nranks * k > 2 * count the exact dense sum
 *   of the sparsified inputs is cheaper and is taken instead (the same bits). 0 < topk <= 1.
 * residual: error feedback: a caller-owned buffer of as many elements of the data type as the send
 *   buffer (zeros before the first call), apart from sendbuf and recvbuf. The call sends
 *   v = sendbuf + residual (added in f32, rounded to the data type once) instead of sendbuf, and
 *   leaves residual = v - what this rank contributed (for a wire: v minus its integers times the
 *   grid's unit; for top-k: v with the sent elements zeroed), computed exactly: over any number
 *   of calls, what a rank contributed plus its last residual is the sum of its inputs (up to the
 *   roundings of the additions v; docs/compression.md). Unchanged when the call fails.
 *   Requires wire or topk. */
typedef struct schedc_call_opts {
  size_t size;               /* sizeof(schedc_call_opts) */
  int wire;                  /* SCHEDC_WIRE_*; 0: the data type itself */
  double topk;               /* fraction of the elements each rank sends; 0: all (dense) */
  void *residual;            /* error feedback's residual, or NULL */
} schedc_call_opts;
#define SCHEDC_CALL_OPTS_INIT {sizeof(schedc_call_opts), 0, 0.0, NULL}

/* The collectives above with options (opts NULL: as without). Statuses as theirs, and
 * SCHEDC_EINVAL for an option the call cannot take (errmsg names it: a wire or top-k with another
 * op or dtype, NaN/Inf in an input, too many ranks for the bits, topk out of (0, 1], a residual
 * without wire or top-k, or overlapping a buffer), SCHEDC_EUNAVAIL for a wire format the
 * communicator's backend has not, SCHEDC_EMISMATCH when ranks pass different options. Wires run on
 * every backend (cuda: device buffers, stream-ordered); top-k and residuals need host memory. */
SCHEDC_API schedc_status schedc_allreduce_v2(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype,
                                             schedc_op op, schedc_comm *comm, const schedc_plan *plan,
                                             const schedc_call_opts *opts);
SCHEDC_API schedc_status schedc_reduce_scatter_v2(const void *sendbuf, void *recvbuf, size_t recvcount,
                                                  schedc_dtype dtype, schedc_op op, schedc_comm *comm,
                                                  const schedc_plan *plan, const schedc_call_opts *opts);
SCHEDC_API schedc_status schedc_reduce_v2(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype,
                                          schedc_op op, int root, schedc_comm *comm, const schedc_plan *plan,
                                          const schedc_call_opts *opts);

/* A built-in plan: the ring for `collective` on nranks ranks (root for broadcast/reduce), as the
 * communicators use by default. Caller frees it. */
SCHEDC_API schedc_status schedc_plan_builtin(schedc_collective collective, int nranks, int root, schedc_plan **out);

/* Weight-level protection for trainers: do all ranks hold the same `bytes` at buf (a digest
 * compared across ranks)? *ok = 1 if yes. Collective: every rank calls it. */
SCHEDC_API schedc_status schedc_replicas_agree(schedc_comm *comm, const void *buf, size_t bytes, int *ok);
/* Make every rank's buf equal to the majority's (broadcast from the lowest rank holding the
 * most common digest). *fixed = number of ranks that changed. Collective. */
SCHEDC_API schedc_status schedc_replicas_resync(schedc_comm *comm, void *buf, size_t bytes, int *fixed);

/* 64-bit digest of a buffer (what `schedc run` prints per rank; equal bits, equal digest). */
SCHEDC_API uint64_t schedc_digest(const void *buf, size_t bytes);
/* CRC32C (Castagnoli, as iSCSI and ext4 use it) of `bytes` at buf, continuing crc — the CRC32C of
 * the bytes before them, 0 to start — like zlib's crc32(crc, buf, len): schedc_crc32c(0, "123456789",
 * 9) is 0xe3069283. SSE4.2 where the CPU has it. What checkpoints carry per tensor and over the
 * whole file (docs/recovery.md). Any thread. */
SCHEDC_API uint32_t schedc_crc32c(uint32_t crc, const void *buf, size_t bytes);
/* The CRC32C of A||B from crc_a = CRC32C(A), crc_b = CRC32C(B) and B's length (zlib's
 * crc32_combine): a file's CRC from its parts' without a second pass over them. Any thread. */
SCHEDC_API uint32_t schedc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b);

/* ---- CUDA code generation (works without a GPU) --------------------------------------------
 * NVRTC and the CUDA driver are loaded with dlopen: a build without CUDA works, and these
 * functions then return SCHEDC_EUNAVAIL. */

/* CUDA C++ source of `rank`'s kernel (schedc_rank<R>) for this plan, dtype and op, or of every
 * rank's code in one unit behind one kernel (schedc_all) when rank is -1. No headers inside;
 * compile with --fmad=false.
 * *source is malloc'd: free it with schedc_free. SCHEDC_EINVAL, SCHEDC_ENOMEM. */
SCHEDC_API schedc_status schedc_cuda_source(const schedc_plan *plan, int rank, schedc_dtype dtype, schedc_op op,
                                            char **source);
/* As schedc_cuda_source, with flags: SCHEDC_CUDA_SRC_CHECKSUMS gives the kernels that checksum
 * verification runs (SCHEDC_VERIFY=checksum or full: every published cell part carries a 64-bit
 * sum that its readers recompute before use; docs/integrity.md); SCHEDC_CUDA_SRC_NODES(K), K in
 * 2..64, the kernels of the plan split across K nodes (SCHEDC_CUDA_NODES=K: one phase per
 * launch, payloads from other nodes read from mirror slots; docs/cuda.md). 0 is
 * schedc_cuda_source. */
enum { SCHEDC_CUDA_SRC_CHECKSUMS = 1 };
#define SCHEDC_CUDA_SRC_NODES(k) ((int)(k) << 8)
SCHEDC_API schedc_status schedc_cuda_source_v2(const schedc_plan *plan, int rank, schedc_dtype dtype, schedc_op op,
                                               int flags, char **source);

typedef struct schedc_cuda_compile_info {
  size_t size;               /* sizeof(schedc_cuda_compile_info) */
  int cache_hit;             /* 1: from the memory or disk cache, NVRTC not run */
  double seconds;            /* wall time of this call */
  int nvrtc_major, nvrtc_minor;
  char cache_file[512];      /* where the image is cached on disk ("" if the cache is off) */
} schedc_cuda_compile_info;
#define SCHEDC_CUDA_COMPILE_INFO_INIT {sizeof(schedc_cuda_compile_info), 0, 0.0, 0, 0, ""}

/* Compile `source` with NVRTC for `arch` ("sm_80", "sm_90", ...): ptx != 0 gives PTX text
 * (NUL-terminated), else a cubin. Options are always --fmad=false and the architecture. Results
 * are cached by a hash of (source, options, NVRTC version, arch) in memory and on disk under
 * $SCHEDC_CACHE_DIR (default $XDG_CACHE_HOME/schedc, else ~/.cache/schedc; "off" disables it).
 * *image is malloc'd (schedc_free). SCHEDC_EUNAVAIL: NVRTC not found (errmsg says where it
 * looked; set SCHEDC_NVRTC to its path). SCHEDC_EINVAL: compilation failed; errmsg holds the
 * NVRTC log, the options and the path where the source was dumped. Thread-safe. */
SCHEDC_API schedc_status schedc_cuda_compile(const char *source, const char *arch, int ptx, void **image, size_t *len,
                                             schedc_cuda_compile_info *info);
/* Number of CUDA devices usable through the driver (0 without a driver or a device; under
 * schedc's own tests, the emulated devices of their plugin). */
SCHEDC_API int schedc_cuda_device_count(void);
/* Free memory schedc returned (sources, images). NULL is a no-op. */
SCHEDC_API void schedc_free(void *p);

/* ---- the cuda communicator (docs/cuda.md) ---------------------------------------------------
 * Two ways to make one: schedc_comm_init_cuda (one process drives every rank, described here)
 * and schedc_comm_init_cuda_rank (one process per GPU, below it).
 * One process drives nranks ranks on GPUs, like ncclCommInitAll: rank r's buffers live on its
 * GPU, its kernels (generated per plan, compiled with NVRTC, cached) read peers' buffers through
 * peer access and synchronise with flags in device memory; the reductions happen in schedc's
 * kernels in the proven order, so the bits equal the CPU backends'. With SCHEDC_CUDA_VIRTUAL
 * all ranks share one GPU (one buffer set per rank, one fused launch): the same kernels and
 * bits on a single GPU. (schedc's own tests run the generated kernels without a GPU, on an
 * emulated device that is not part of the library: docs/cuda.md.)
 *
 * Collectives on a cuda communicator take device pointers and are stream-ordered: a call
 * returns once the work is enqueued on the rank's stream (schedc_cuda_set_stream); the result
 * is there when that stream reaches it. The ranks' calls of one collective are collected and
 * launched when the last rank's call arrives, so the one thread driving the ranks issues the
 * same collective on every rank before enqueueing other work on those streams (NCCL asks the
 * same, with ncclGroupStart/End). Verification (SCHEDC_VERIFY: digest, checksum, full; with
 * or without repair) makes the verified calls wait for their GPU work: digests copy each rank's
 * result to the host and compare; checksums run kernels in which every transfer is summed by
 * its writer and checked by its reader before use (docs/integrity.md). Failures inside kernels
 * (a wait past the timeout, a corrupted transfer without repair) break the communicator; a
 * timeout surfaces in schedc_cuda_sync. */
enum { SCHEDC_CUDA_VIRTUAL = 1 };
/* Create nranks communicators (comms[r] is rank r's). devices[r] is rank r's CUDA device
 * (NULL: rank r on device r); with SCHEDC_CUDA_VIRTUAL in flags, every rank on devices[0] (NULL:
 * device 0). At most 64 ranks. SCHEDC_EUNAVAIL (no driver or device, peer access impossible,
 * an injection the backend cannot do, SCHEDC_CUDA_NET=nccl: NCCL is for a process per GPU),
 * SCHEDC_EINVAL, SCHEDC_ENOMEM. On failure no comm is created. With verification the last rank's call (the one that launches the kernels) judges:
 * SCHEDC_ECORRUPT there, and since the other ranks' calls have returned, the group is then
 * broken so that every rank's next call and schedc_cuda_sync report it; with repair the call
 * succeeds (a transfer read again, differing results given the majority's bits). */
SCHEDC_API schedc_status schedc_comm_init_cuda(int nranks, const int *devices, int flags, const schedc_comm_opts *opts,
                                               schedc_comm **comms);
/* One process per GPU (as trainers run): this process is `rank` of `nranks` on this host and
 * drives CUDA device `device` (one rank per GPU: two ranks on one GPU are refused). `job` names
 * the host rendezvous exactly as for schedc_comm_init_shm (same on every rank, unique among
 * running jobs); through it the ranks exchange CUDA IPC handles of their device memory, and at
 * every call they check that they agree (collective, dtype, op, root, count, plan), so a call
 * returns once every rank has issued it and the work is enqueued on this rank's stream (the GPU
 * work is not waited for). The collective runs through a working buffer of schedc's that the
 * peers map (copy in, plan, copy out on the stream). Waits (up to the timeout) for all ranks to
 * join. SCHEDC_EUNAVAIL (no driver or device, an injection the backend cannot do), SCHEDC_EINVAL (bad
 * arguments, two ranks on one GPU, SCHEDC_CUDA_BLOCKS differing between ranks),
 * SCHEDC_ETIMEOUT, SCHEDC_EIO, SCHEDC_ENOMEM. The stream, sync and memory calls below work on
 * it as on the others (schedc_cuda_sync waits for this rank's stream and reports a timeout of
 * any rank's kernel). With verification every rank's call returns the same verdict
 * (SCHEDC_ECORRUPT naming the differing ranks or the corrupted transfer, as on the CPU
 * backends); after a digest failure the communicator stays usable, after a corrupted transfer
 * it is broken. The ranks must agree on the verification and on
 * SCHEDC_CUDA_NODES (else SCHEDC_EMISMATCH). SCHEDC_CUDA_NET=nccl moves the payloads that cross
 * (emulated) nodes with NCCL send/recv instead of copies from mapped memory; the ranks must
 * agree on it (else SCHEDC_EINVAL). */
SCHEDC_API schedc_status schedc_comm_init_cuda_rank(int rank, int nranks, int device, const char *job,
                                                    const schedc_comm_opts *opts, schedc_comm **out);
/* One process per GPU on one or more hosts: as schedc_comm_init_cuda_rank, with rank and nranks
 * those of `host`, a CPU communicator of the same ranks (schedc_comm_init_mpi across hosts, or
 * shm) that carries the host exchanges instead of a shared-memory one. Borrowed: the caller
 * frees it after this communicator and does not use it concurrently with this one's calls.
 * The ranks' hosts (host name and boot id, or SCHEDC_HOST_ID where set) are their nodes: ranks
 * on one host share memory through CUDA IPC, and the payloads that cross hosts go through NCCL
 * (libnccl loaded with dlopen; SCHEDC_LIBNCCL) at the plan's phase boundaries, on the stream;
 * every reduction stays in schedc's kernels, so the bits are those of one host. With every rank
 * on one host it is schedc_comm_init_cuda_rank over `host`. Collective over every rank.
 * SCHEDC_EINVAL (host NULL or not a CPU communicator, SCHEDC_CUDA_NET=ipc or SCHEDC_CUDA_NODES
 * with several hosts), SCHEDC_EUNAVAIL (no NCCL where needed), SCHEDC_EPEER (a rank could not
 * load or join NCCL), and those of schedc_comm_init_cuda_rank. Across hosts a kernel's timeout
 * is reported on its host's ranks (schedc_cuda_sync); the ranks of other hosts see their stuck
 * transfers end at the timeout or the failed rank missing at the next call. */
SCHEDC_API schedc_status schedc_comm_init_cuda_over(schedc_comm *host, int device, const schedc_comm_opts *opts,
                                                    schedc_comm **out);
/* The stream (a CUstream / cudaStream_t of the rank's device) the rank's next collectives are
 * enqueued on; NULL: the communicator's own stream. SCHEDC_EINVAL if comm is not cuda. */
SCHEDC_API schedc_status schedc_cuda_set_stream(schedc_comm *comm, void *stream);
/* Wait for every rank's enqueued work of comm's group; SCHEDC_ETIMEOUT naming the rank, step
 * and awaited peer if a kernel's wait ran past the timeout (the communicators are then broken). */
SCHEDC_API schedc_status schedc_cuda_sync(schedc_comm *comm);
/* Device memory on the rank's device (zeroed), freed with schedc_cuda_free; and a synchronous
 * copy in any direction (host or device pointers). For tools and tests: trainers use their
 * framework's allocator. SCHEDC_EINVAL, SCHEDC_ENOMEM. */
SCHEDC_API schedc_status schedc_cuda_alloc(schedc_comm *comm, size_t bytes, void **ptr);
SCHEDC_API void schedc_cuda_free(schedc_comm *comm, void *ptr);
SCHEDC_API schedc_status schedc_cuda_copy(schedc_comm *comm, void *dst, const void *src, size_t bytes);

/* ---- canonical leaves: the same bits for any rank count ------------------------------------
 * The canonical sum of L leaves (e.g. the micro-batch gradients of a step) is the balanced tree
 * over leaf indices 0..L-1 whose left subtree takes the largest power of two below the count.
 * A rank that owns leaves [first, first + n), with n a power of two and first a multiple of n,
 * holds a whole subtree: it accumulates its leaves here, in any order, into that subtree's sum;
 * an allreduce with a plan declared order = "canonical" then combines the ranks in the canonical
 * tree over ranks, which makes the result the canonical sum of all L leaves — the same bits for
 * N = 1, 2, 4, ... ranks. Use an f32/f64 (or integer) accumulation and call the collective on
 * the accumulated buffer. One thread at a time per accumulator. */
typedef struct schedc_accum schedc_accum;
/* count elements per leaf, dtype f32, f64, i32 or i64, op sum/prod/min/max. SCHEDC_EINVAL if n
 * is not a power of two (unless first is 0 and the rank holds every leaf) or first is not a
 * multiple of n. */
SCHEDC_API schedc_status schedc_accum_create(size_t count, schedc_dtype dtype, schedc_op op, int first, int n,
                                             schedc_accum **out);
/* Add leaf `leaf` (first <= leaf < first + n; each exactly once). The data is copied; subtrees
 * are combined as soon as both halves are in. SCHEDC_EINVAL for a leaf out of range or twice. */
SCHEDC_API schedc_status schedc_accumulate(schedc_accum *acc, int leaf, const void *data);
/* The block's canonical sum into out (count elements). SCHEDC_EINVAL naming a missing leaf.
 * The accumulator can then be reused: schedc_accum_reset. */
SCHEDC_API schedc_status schedc_accum_result(schedc_accum *acc, void *out);
SCHEDC_API void schedc_accum_reset(schedc_accum *acc);
SCHEDC_API void schedc_accum_free(schedc_accum *acc);
/* Exact leaves (exact mode, above): schedc_accum_create with op SCHEDC_SUM_EXACT or AVG_EXACT and
 * dtype f32, f16 or bf16 keeps its n leaves (any n >= 1, any first: no power-of-two or alignment
 * condition), and schedc_accum_allreduce sums every leaf of every rank on one grid (its scale from
 * the largest input of any leaf of any rank, headroom ceil(log2 L) bits for L leaves in all; each
 * leaf rounded onto it on its own; avg divides by L) through `plan` (NULL: the communicator's),
 * into recv (count elements) on every rank: the same bits for every rank count and every way the
 * leaves are spread over the ranks, every plan and backend. The ranks' blocks [first, first + n)
 * may differ in size (12 leaves on 5 ranks: 3, 3, 2, 2, 2 — so a job that lost a rank goes on with
 * the same sums) but must together be the leaves 0..L-1, each on one rank: the grid exchange
 * carries every rank's block, and blocks that overlap or leave a gap are SCHEDC_EMISMATCH on every
 * rank, naming them. (Before issue 38 every rank had to hold as many leaves, with any first: blocks
 * of equal size that do not tile 0..L-1 are now refused.) Every leaf of the block must be in (else
 * SCHEDC_EINVAL naming it). schedc_accum_result refuses an exact accumulator (its sum needs every
 * rank's leaves). Reuse after schedc_accum_reset. */
SCHEDC_API schedc_status schedc_accum_allreduce(schedc_accum *acc, void *recv, schedc_comm *comm,
                                                const schedc_plan *plan);
/* schedc_accum_allreduce with call options: opts->wire quantizes every leaf onto the grid on its
 * own, with headroom for the L leaves in all (N - 1 - ceil(log2 L) bits of magnitude), and sums the
 * N-bit integers: the same bits for every rank count dividing the leaves. topk and residual are
 * refused here. opts NULL: schedc_accum_allreduce. */
SCHEDC_API schedc_status schedc_accum_allreduce_v2(schedc_accum *acc, void *recv, schedc_comm *comm,
                                                   const schedc_plan *plan, const schedc_call_opts *opts);

/* ---- custom reduction operators (docs/ops.md) ----------------------------------------------
 * An operator is a C function `T name(T a, T b)` in a file of its own, T one of float, double,
 * int32_t, int64_t. schedc_op_create parses the file with libclang (loaded with dlopen) and
 * accepts only what computes the same bits on the CPU and in CUDA: scalar locals and parameters
 * of those types, literals, arithmetic (no integer / or %), comparisons, logical, conditional, bitwise and shift
 * operators, casts between the types, if/else, return, calls to the file's other checked
 * functions and to fabs, fmin, fmax, copysign, sqrt, fma, floor, ceil, trunc, rint (and their f
 * forms). It then tests op(a, b) == op(b, a) bit for bit on at least 100,000 pairs (zeros,
 * infinities, NaNs, subnormals, extremes, random bits), since the proven trees combine operands
 * in either order, and compiles the function into an element loop with the system C compiler
 * (cc -O2 -ffp-contract=off -fno-fast-math -fwrapv, or $SCHEDC_CC), cached under the kernel cache
 * directory by a hash of (source, compiler version, flags). A NaN result is the default NaN, as
 * for the built-in ops. float serves f32, f16 and bf16 (f32 accumulation, one final rounding),
 * double f64, int32_t i32, int64_t i64. */
typedef struct schedc_op_opts {
  size_t size;               /* sizeof(schedc_op_opts) */
  long pairs;                /* operand pairs of the commutativity test; 0: 131072 (at least 100000) */
} schedc_op_opts;
#define SCHEDC_OP_OPTS_INIT {sizeof(schedc_op_opts), 0}

/* Check, test and compile the operator `name` of the C file `path` into *out (a value usable as
 * the op of every collective on the threads, shm and mpi backends, of schedc_accum_create, and
 * of schedc_cuda_source). Statuses: SCHEDC_EINVAL (the file breaks a rule, does not parse, or is
 * not commutative: errmsg has one "file:line:col: message" line per problem, saying what is
 * allowed instead, or the counterexample pair), SCHEDC_EIO (unreadable file, cache or compiler
 * output), SCHEDC_EUNAVAIL (no libclang: install libclang1-16 (Debian/Ubuntu: apt-get install
 * libclang1-16, or libclang-16-dev), or set SCHEDC_LIBCLANG to its path; no C compiler: install
 * gcc or set SCHEDC_CC), SCHEDC_ENOMEM. Thread-safe. Every rank of a job must create the same
 * operator (the calls compare its source hash: SCHEDC_EMISMATCH otherwise). */
SCHEDC_API schedc_status schedc_op_create(const char *path, const char *name, const schedc_op_opts *opts,
                                          schedc_op *out);
/* What a custom op is. Strings live as long as the op. */
typedef struct schedc_op_info {
  size_t size;               /* sizeof(schedc_op_info), set by the caller */
  const char *name;          /* "file.c:name" */
  schedc_dtype type;         /* the function's type: SCHEDC_F32, SCHEDC_F64, SCHEDC_I32 or SCHEDC_I64 */
  uint64_t hash;             /* of the checked source (what ranks and kernel caches compare) */
  long pairs_tested;         /* commutativity pairs that passed */
  int cache_hit;             /* the compiled element loop came from the cache */
  double check_s, test_s, compile_s; /* seconds: libclang check, commutativity test, compile or cache load */
  const char *cuda_source;   /* the __device__ functions emitted into generated kernels */
} schedc_op_info;
#define SCHEDC_OP_INFO_INIT {sizeof(schedc_op_info), NULL, SCHEDC_F32, 0, 0, 0, 0.0, 0.0, 0.0, NULL}
/* SCHEDC_EINVAL if op is not a live custom op. */
SCHEDC_API schedc_status schedc_op_get_info(schedc_op op, schedc_op_info *info);
/* Free a custom op; built-in ops and values already freed are a no-op. No call may still be
 * using it (the compiled code is unloaded). */
SCHEDC_API void schedc_op_free(schedc_op op);

#ifdef __cplusplus
}
#endif
#endif /* SCHEDC_H */
