/*
 * params.h — every environment variable schedc reads, in one X-macro list (NCCL's param.h is the
 * model): name, type with its legal values, default, who reads it, one line of doc. Readers use
 * the typed accessors below (params.c holds the library's only getenv), so a malformed value is
 * refused the same way everywhere; docs/env.md's table is generated from this list.
 */
#ifndef SC_PARAMS_H
#define SC_PARAMS_H

#include <math.h>
#include <stddef.h>

#include "schedc/schedc.h"

/* X(name, type, lo, hi, legal, dflt, scope, doc)
 *  type  INT     a decimal integer in [lo, hi]; legal names it ("a node count")
 *        SIZE    a whole number of bytes in [lo, hi]
 *        DOUBLE  a finite number > lo and <= hi; legal is its unit ("seconds")
 *        ENUM    one of the words of legal, "a|b|c", each optionally followed by " (meaning)"
 *        STR     any text; legal describes a format its reader checks, if any
 *        PATH    a file or directory; legal says which
 *  dflt  the value used when the variable is unset, as text of its type; NULL: none here (the
 *        reader's own, computed, default applies; doc says what it is)
 *  scope LIB the library reads it; CLI only the schedc command; EXT not schedc's own (set by a
 *        launcher or the system), read by either
 * An empty value is the same as unset. Variables read only by the CUDA emulator
 * (runtime/cuda/cuda_emu*.c: SCHEDC_EMU_*, CXX) are the tests' and are not listed. */
#define SC_PARAM_LIST(X)                                                                                        \
  X(SCHEDC_TIMEOUT, DOUBLE, 0, INFINITY, "seconds", "300", LIB,                                                 \
    "the timeout of every wait of a communicator (opts.timeout_s overrides)")                                    \
  X(SCHEDC_SLICE, SIZE, 4096, 1 << 30, "", "262144", LIB,                                                       \
    "the pipelining slice (opts.slice_bytes overrides); never changes bits")                                     \
  X(SCHEDC_VERIFY, ENUM, 0, 0, "none|digest|checksum|full|exact", "none", LIB,                                  \
    "verification of every collective, integrity.md; exact: exact mode's identity check alone, determinism.md " \
    "(opts.verify overrides)")                                                                                   \
  X(SCHEDC_REPAIR, ENUM, 0, 0, "0|1", "0", LIB, "1: repair what verification finds, integrity.md (opts.repair)") \
  X(SCHEDC_SPIN, ENUM, 0, 0, "auto|short", "auto", LIB,                                                          \
    "cpu waits: auto spins while the awaited rank runs elsewhere, yields to it on this CPU, sleeps after 1 ms "  \
    "preempted elsewhere (performance.md); short sleeps after 100 us")                                           \
  X(SCHEDC_BIND, ENUM, 0, 0, "none|core", "none", LIB,                                                         \
    "threads and shm ranks: core pins each rank's thread, at its first call, to the rank-th of the CPUs it may " \
    "run on, as mpirun --bind-to core, unless the ranks outnumber them (performance.md: beside a busy "          \
    "process); none leaves it")                                                                                  \
  X(SCHEDC_SMALL, SIZE, 0, 8192, "", "8192", LIB,                                                               \
    "cpu: calls of at most this many bytes (accumulation type) take the small-message path (0: never; above "   \
    "64 ranks at most 512 KiB / ranks, an arrival line's data), performance.md")                                 \
  X(SCHEDC_SIMD, ENUM, 0, 0, "auto|avx512|avx2|scalar", "auto", LIB,                                          \
    "cpu: the vector path of the reductions and conversions, chosen once per process: auto the best this CPU "   \
    "has; avx512, avx2 or scalar force one (never different bits; a path the CPU lacks fails communicator "      \
    "init), performance.md")                                                                                     \
  X(SCHEDC_INJECT, STR, 0, 0,                                                                                   \
    "comma-separated kill:RANK:STEP, delay:RANK:US, jitter:SEED:US, flip:RANK:STEP[:BIT], "                     \
    "arith:RANK:STEP[:BIT], flipout:RANK", NULL,                                                                 \
    LIB, "testing: faults to inject, checked at communicator init (integrity.md); up to 8 kill items (two "     \
    "ranks at once: kill:1:0,kill:3:0), a rank named dies in its first injected call, at STEP or when the call " \
    "fails first; a shrunk communicator keeps its members' faults (recovery.md)")                                \
  X(SCHEDC_DEBUG, ENUM, 0, 0, "error|warn|info|debug", "warn", LIB,                                             \
    "the messages the default log writer prints to stderr: this level and the ones above it (schedc_set_log: "  \
    "a hook of the program's gets every level instead), c-api.md")                                              \
  X(SCHEDC_TOPOLOGY, PATH, 0, 0, "a topology file or name", NULL, LIB,                                          \
    "the machine's layout for calls without a plan (schedc topo -o): hierarchical.lua on it; unset: the hosts learned at init") \
  X(SCHEDC_TUNING, PATH, 0, 0, "a tuning table file", NULL, LIB,                                                \
    "size ranges to plan and slice for every communicator, tuning.md (opts.tuning overrides)")                   \
  X(SCHEDC_RANK, INT, 0, 65535, "a rank", NULL, LIB,                                                            \
    "schedc_comm_init_env: this process's rank, with SCHEDC_NRANKS (before RANK and OMPI_COMM_WORLD_RANK)")      \
  X(SCHEDC_NRANKS, INT, 1, 65536, "a rank count", NULL, LIB,                                                   \
    "schedc_comm_init_env: the number of ranks (mpi: must be MPI_COMM_WORLD's size, as WORLD_SIZE)")             \
  X(SCHEDC_JOB, STR, 0, 0, "an id, the same on every rank", NULL, LIB,                                          \
    "schedc_comm_init_env: the job, unique among running jobs (the shm segments' secret, reliability.md); "      \
    "unset: TORCHELASTIC_RUN_ID unless 'none', else Open MPI's; else refused")                                   \
  X(SCHEDC_BACKEND, ENUM, 0, 0, "shm|mpi|cuda|net", NULL, LIB,                                                  \
    "schedc_comm_init_env: the backend; unset: mpi under Open MPI when built with MPI, net when the ranks span "  \
    "hosts (torchrun's LOCAL_WORLD_SIZE below WORLD_SIZE, srun's SLURM_STEP_NUM_NODES above 1) when built with " \
    "UCX, else shm (threads: schedc_comm_init_threads)")                                                         \
  X(SCHEDC_NET_IFNAME, STR, 0, 0, "an interface name", NULL, LIB,                                                \
    "net: the interface whose IPv4 address schedc_uid_net puts in the id; unset: the first that is up and not "  \
    "loopback, else 127.0.0.1")                                                                                  \
  X(SCHEDC_CUDA_DEVICE, INT, 0, 65535, "a device index", NULL, LIB,                                             \
    "schedc_comm_init_env with cuda: the GPU; unset: LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, the rank")          \
  X(SCHEDC_CUDA_BLOCKS, INT, 1, 1024, "a block count", NULL, LIB,                                               \
    "cuda: thread blocks per rank; unset: virtual ranks share the multiprocessors, a rank on its own GPU "       \
    "takes a quarter of them, at most 32")                                                                       \
  X(SCHEDC_CUDA_THREADS, INT, 1, 512, "a thread count", NULL, LIB,                                              \
    "cuda: threads per block; unset: the device's (512 on a GPU)")                                               \
  X(SCHEDC_CUDA_NODES, INT, 1, 64, "a node count", "1", LIB,                                                    \
    "cuda: split the ranks into this many contiguous nodes on this host (payloads staged between them)")         \
  X(SCHEDC_CUDA_NET, ENUM, 0, 0,                                                                                \
    "ipc (peers map each other's device memory: one host)|nccl (payloads between nodes through NCCL "            \
    "send/recv)", NULL, LIB, "cuda: how payloads cross nodes; unset: ipc on one host, nccl between hosts")       \
  X(SCHEDC_HOST_ID, STR, 0, 0, "any text", NULL, LIB,                                                           \
    "mpi, cuda: this host's id instead of its name and boot id (containers sharing a name; tests)")              \
  X(SCHEDC_NVRTC, PATH, 0, 0, "a library", NULL, LIB,                                                           \
    "cuda: the NVRTC to load; unset: libnvrtc.so*, $CUDA_HOME/lib64, /usr/local/cuda/lib64")                     \
  X(SCHEDC_LIBNCCL, PATH, 0, 0, "a library", NULL, LIB,                                                         \
    "cuda: the NCCL to load; unset: libnccl.so.2, $CUDA_HOME/lib64, /usr/local/cuda/lib64")                      \
  X(SCHEDC_LIBCUDA, PATH, 0, 0, "a library", "libcuda.so.1", LIB, "cuda: the driver library to load")           \
  X(SCHEDC_CUDA_PLUGIN, PATH, 0, 0, "a shared object", NULL, LIB, "internal: a device plugin (tests' emulated GPU)") \
  X(SCHEDC_CACHE_DIR, PATH, 0, 0, "a directory, or off", NULL, LIB,                                             \
    "the compiled-kernel cache; off: none; unset: $XDG_CACHE_HOME/schedc, else $HOME/.cache/schedc")             \
  X(SCHEDC_SCHEDULE_PATH, STR, 0, 0, "colon-separated folders", NULL, LIB,                                    \
    "schedules and topologies by name are looked up here first, then in the install's share/schedc")             \
  X(SCHEDC_LIBCLANG, PATH, 0, 0, "a library", NULL, LIB,                                                        \
    "custom operators: the libclang to load; unset: libclang-16.so.1, libclang.so.1, ... (ops.md)")              \
  X(SCHEDC_CC, PATH, 0, 0, "a C compiler", NULL, LIB,                                                           \
    "custom operators: the compiler of their CPU element loops; unset: cc (ops.md)")                             \
  X(RANK, INT, 0, 65535, "a rank", NULL, EXT, "torchrun: the rank (schedc_comm_init_env, with WORLD_SIZE)")     \
  X(WORLD_SIZE, INT, 1, 65536, "a rank count", NULL, EXT, "torchrun: the number of ranks")                      \
  X(LOCAL_RANK, INT, 0, 65535, "a device index", NULL, EXT, "torchrun: the rank on this host (the GPU with cuda)") \
  X(LOCAL_WORLD_SIZE, INT, 1, 65536, "a rank count", NULL, EXT,                                                 \
    "torchrun: the ranks on this host; below WORLD_SIZE the ranks span hosts (schedc_comm_init_env: net)")       \
  X(MASTER_ADDR, STR, 0, 0, "a host name or address", NULL, EXT,                                               \
    "torchrun, or set for srun: rank 0's host, the net backend's bootstrap (docs/c-api.md)")                     \
  X(TORCHELASTIC_USE_AGENT_STORE, STR, 0, 0, "True or False", NULL, EXT,                                       \
    "torchrun: True when MASTER_ADDR:MASTER_PORT is the agent's TCPStore (net bootstraps through it)")           \
  X(TORCHELASTIC_RESTART_COUNT, STR, 0, 0, "a number", NULL, EXT,                                              \
    "torchrun: the workers' restart, part of net's bootstrap keys and job token")                                \
  X(TORCHELASTIC_RUN_ID, STR, 0, 0, "any text", NULL, EXT,                                                     \
    "torchrun: the job id (--rdzv-id; random with --standalone); 'none', its default, is never used")            \
  X(MASTER_PORT, STR, 0, 0, "a port number", NULL, EXT,                                                         \
    "torchrun, or set for srun: net's bootstrap port (torchrun's store, else rank 0 listens there); never a job " \
    "id (two jobs can share it): schedc_comm_init_env's refusal names it")                                       \
  X(OMPI_COMM_WORLD_RANK, INT, 0, 65535, "a rank", NULL, EXT, "Open MPI: the rank")                             \
  X(OMPI_COMM_WORLD_SIZE, INT, 1, 65536, "a rank count", NULL, EXT, "Open MPI: the number of ranks")            \
  X(OMPI_COMM_WORLD_LOCAL_RANK, INT, 0, 65535, "a device index", NULL, EXT,                                     \
    "Open MPI: the rank on this host (the GPU with cuda; schedc run --mpi)")                                     \
  X(SLURM_PROCID, INT, 0, 65535, "a rank", NULL, EXT, "srun: the rank (schedc_comm_init_env, with SLURM_NTASKS)") \
  X(SLURM_NTASKS, INT, 1, 65536, "a rank count", NULL, EXT, "srun: the number of ranks")                        \
  X(SLURM_LOCALID, INT, 0, 65535, "a device index", NULL, EXT, "srun: the rank on this host (the GPU with cuda)") \
  X(SLURM_STEP_NUM_NODES, INT, 1, 65536, "a node count", NULL, EXT,                                             \
    "srun: the step's hosts; above 1 the ranks span hosts (schedc_comm_init_env: net)")                          \
  X(SLURM_JOB_ID, STR, 0, 0, "any text", NULL, EXT, "srun: with SLURM_STEP_ID, the job (shm's job, net's token)") \
  X(SLURM_STEP_ID, STR, 0, 0, "any text", NULL, EXT, "srun: the job step")                                      \
  X(OMPI_MCA_orte_hnp_uri, STR, 0, 0, "any text", NULL, EXT,                                                    \
    "Open MPI: the job id (its leading number and a hash of the whole uri, which holds mpirun's port) when no " \
    "other is set")                                                                                              \
  X(CUDA_HOME, PATH, 0, 0, "a directory", NULL, EXT, "the CUDA toolkit: where NVRTC and NCCL are looked for")   \
  X(XDG_CACHE_HOME, PATH, 0, 0, "a directory", NULL, EXT, "the kernel cache's parent when SCHEDC_CACHE_DIR is unset") \
  X(HOME, PATH, 0, 0, "a directory", NULL, EXT, "the kernel cache's parent when neither of the above is set")

typedef enum sc_param {
#define SC_X_(name, type, lo, hi, legal, dflt, scope, doc) SC_P_##name,
  SC_PARAM_LIST(SC_X_)
#undef SC_X_
  SC_P_COUNT_
} sc_param;

typedef enum { SC_PT_INT, SC_PT_SIZE, SC_PT_DOUBLE, SC_PT_ENUM, SC_PT_STR, SC_PT_PATH } sc_param_type;
typedef enum { SC_PS_LIB, SC_PS_CLI, SC_PS_EXT } sc_param_scope;
typedef struct sc_param_def {
  const char *name;
  sc_param_type type;
  double lo, hi;
  const char *legal, *dflt;
  sc_param_scope scope;
  const char *doc;
} sc_param_def;
/* The list as a table, indexed by sc_param. */
extern const sc_param_def sc_params[SC_P_COUNT_];

/* The variable's value; NULL when unset or empty. */
const char *sc_param_raw(sc_param p);

/* Typed reads: the variable, else the list's default, parsed into *out. SCHEDC_OK with *out
 * untouched when neither is there (the caller's computed default stands); SCHEDC_EINVAL naming
 * the variable, its value and the legal values when it is malformed (never a quiet fallback).
 * sc_param_enum gives the word's index in legal. */
schedc_status sc_param_int(sc_param p, long long *out);
schedc_status sc_param_size(sc_param p, size_t *out);
schedc_status sc_param_double(sc_param p, double *out);
schedc_status sc_param_enum(sc_param p, int *out);
/* STR and PATH: the variable, else the list's default, else NULL. */
const char *sc_param_str(sc_param p);

/* The parsers behind the reads, one per type, for a value v (not NULL) of parameter p: the
 * readers that choose between variables (rank pairs) call them on the chosen one. */
schedc_status sc_param_parse_int(sc_param p, const char *v, long long *out);
schedc_status sc_param_parse_size(sc_param p, const char *v, size_t *out);
schedc_status sc_param_parse_double(sc_param p, const char *v, double *out);
schedc_status sc_param_parse_enum(sc_param p, const char *v, int *out);

/* The environment's SCHEDC_* variables that the list lacks (a misspelt name, or another program's
 * such as the Python package's SCHEDC_LIBRARY), as "NAME=value": the i-th (from 0), NULL past the
 * last. For `schedc info`; reads the environment, so not while another thread changes it. */
const char *sc_param_stray(int i);

/* p's legal values as messages and docs/env.md say them ("a node count from 1 to 64"). */
void sc_param_legal(sc_param p, char *buf, size_t cap);

#endif
