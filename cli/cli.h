/*
 * cli.h — shared pieces of the schedc command: parsed common options and the subcommands.
 * The CLI is a client of the public header only (like lua.c of lua.h).
 */
#ifndef SC_CLI_H
#define SC_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "schedc/schedc.h"

enum { EXIT_OK = 0, EXIT_REJECTED = 1, EXIT_USAGE = 2 };

/* The subcommands. argv[0] is the subcommand's name ("run"), its options follow. */
int cli_run(int argc, char **argv);    /* run.c */
int cli_launch(int argc, char **argv); /* launch.c */
int cli_bench(int argc, char **argv);  /* bench.c */
int cli_cost(int argc, char **argv);   /* cost.c */
int cli_tune(int argc, char **argv);   /* tune.c */
int cli_topo(int argc, char **argv);   /* topo.c */
int cli_info(int argc, char **argv);   /* info.c */
/* info.c: `schedc --version` (-V): the library's version and revision. */
int cli_version(void);
/* cost.c helpers shared with tune.c and bench.c. */
void cli_print_model(const schedc_cost_model *m, const char *from);
double cli_busbw_factor(schedc_collective coll, int n);

/* args.c: every subcommand reads its arguments with cli_next, getopt_long in argument order:
 *   cli_args a = {.cmd = "run", .argc = argc, .argv = argv, .shortopts = "hD:", .longopts = L};
 *   for (int c; (c = cli_next(&a, &v)) != CLI_END;) switch (c) { case CLI_ARG: FILE = v; ... }
 * A positional comes back as CLI_ARG in its place (options may precede or follow FILE; after
 * "--" everything is positional), an option as its code with its value in *v and its name in
 * a.opt ("--ranks", "-o": for messages). CLI_BAD: an unknown or ambiguous option, a missing or
 * unexpected value, already reported on stderr as "schedc CMD: ..." (exit with EXIT_USAGE).
 * stop_at_positional (launch): the first positional ends the options; cli_rest() is its index
 * and cli_after_dashes() whether "--" came before it. Long options abbreviate as getopt_long
 * allows (--chec for --check) when unambiguous. */
typedef struct cli_args {
  const char *cmd;
  int argc;
  char **argv;
  const char *shortopts;
  const struct option *longopts;
  int stop_at_positional;
  char opt[48];
  char optstring[64];
  int begun, done;
} cli_args;
enum { CLI_ARG = 1, CLI_END = -1, CLI_BAD = -2 };
int cli_next(cli_args *a, const char **v);
int cli_rest(const cli_args *a);
int cli_after_dashes(const cli_args *a);
/* "schedc CMD: MESSAGE" on stderr; returns EXIT_USAGE. */
int cli_usage_error(const cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The value v of the current option a->opt, strictly (cli_parse_count, cli_parse_seconds): 0,
 * or -1 after "schedc CMD: --ranks '5x' is not WHAT" (what: "a rank count from 1 to 65536"). */
int cli_opt_count(const cli_args *a, const char *v, long long lo, long long hi, const char *what, long long *out);
int cli_opt_int(const cli_args *a, const char *v, int lo, int hi, const char *what, int *out);
int cli_opt_seconds(const cli_args *a, const char *v, double hi, const char *what, double *out);
/* --sizes: a comma-separated list of byte counts from 1 to 2^40 into sizes[cap], *n of them. */
int cli_opt_sizes(const cli_args *a, const char *v, size_t *sizes, int cap, int *n);
/* --wire q8|q16|default (schedc_wire_parse) and --topk F (a fraction in (0, 1], or a percentage
 * "1%"): 0, or -1 after saying why. */
int cli_opt_wire(const cli_args *a, const char *v, int *wire);
int cli_opt_topk(const cli_args *a, const char *v, double *frac);
/* -D key=value appended to defines[*n] (room for one per argument). 0, or -1 after saying why. */
int cli_opt_define(const cli_args *a, const char *v, const char **defines, int *n);
/* The parsers under those (and SCHEDC_TIMEOUT's reader, ranks.c). A count: digits with an
 * optional K/M/G suffix (and B) in [lo, hi]; 0, or -1 if malformed (a sign, blank, empty, other
 * suffix, overflow). */
int cli_parse_count(const char *s, long long lo, long long hi, long long *out);
/* Seconds: a finite decimal number > 0 and <= hi (no nan, inf, sign or unit); 0, or -1. */
int cli_parse_seconds(const char *s, double hi, double *out);
/* A comma-separated size list (K/M/G suffixes) into sizes[cap]: the count; -1 with the
 * offending item in bad[64]; -2 when there are more than cap. */
int cli_parse_sizes(const char *v, size_t *sizes, int cap, char bad[64]);

/* sbuf.c: a growing NUL-terminated string; zero-initialise ({0}), append, read, free. Out of
 * memory is sticky (oom), appends then do nothing. */
typedef struct cli_sbuf {
  char *p;
  size_t len, cap;
  int oom;
} cli_sbuf;
void cli_sb_printf(cli_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_sb_puts(cli_sbuf *b, const char *s);
/* b := DIR/rank<R>EXT (run's --inputs/--outputs files, emit-cuda's kernels), of any length: its
 * text, or NULL when out of memory. */
const char *cli_sb_rank_file(cli_sbuf *b, const char *dir, int rank, const char *ext);
const char *cli_sb_str(const cli_sbuf *b);
void cli_sb_free(cli_sbuf *b);

/* ranks.c: start n ranks (threads, or forked processes: shm, or cuda with rank r on GPU r) and call cb->rank in each with
 * its communicator; cb->failed(ctx, rank, why) reports a rank whose init failed or whose process
 * died (called in the child for init, in this process for a death). -1 if threads could not
 * be created (then no rank ran). With processes the callbacks' ctx must live in shared memory to
 * reach this process; each process dies with this one (PR_SET_PDEATHSIG), and once a rank has
 * exited, one still running after the timeout (co's, else SCHEDC_TIMEOUT's) plus 10 s is killed
 * and reported as failed, so cli_spawn always returns. */
typedef struct cli_ranks {
  void *ctx;
  void (*rank)(void *ctx, schedc_comm *comm, int rank);
  void (*failed)(void *ctx, int rank, const char *why);
} cli_ranks;
int cli_spawn(int backend, int n, const schedc_comm_opts *co, const cli_ranks *cb, const char *job_prefix);
/* This process as one rank of a job a launcher started (ranks.c): mpi (schedc_comm_init_mpi over
 * MPI_COMM_WORLD) or net (schedc_comm_init_env with SCHEDC_BACKEND=net: torchrun's or srun's
 * variables, MASTER_ADDR / MASTER_PORT). SCHEDC_OK or the status, schedc_errmsg set. */
schedc_status cli_comm_launched(int backend, const schedc_comm_opts *co, schedc_comm **out);

/* procs.c: child processes. Remove a job's leftover shared-memory segments. */
void cli_cleanup_job(const char *job);
/* A fresh random job id PREFIXpid-HEX into buf (cap >= 48); -1 (message printed) on failure. */
int cli_job_id(char *buf, size_t cap, const char *prefix);
/* fork() a child that dies with this process (PR_SET_PDEATHSIG, kept across exec); in the child
 * exits with `code` if `parent` (this process's pid before the fork) is already gone. */
pid_t cli_fork_child(pid_t parent, int code);
/* The one supervision loop: reap pids[0..n) (0 entries skipped) in any order until all ended;
 * returns the first failure's exit code (128 + signal for a death), 0 if none failed.
 *   grace_s > 0: after a failure the others get SIGTERM grace_s later (launch);
 *   stop: when *stop becomes non-zero the others get SIGTERM at once (launch's SIGINT);
 *   hung_s > 0: once one has ended, one still running hung_s later, or one stopped (SIGSTOP)
 *     for longer than hung_s, is reported through killed(ctx, r, why) and SIGKILLed (ranks).
 * ended(ctx, r, wait status, killed_here) is called for every child as it is reaped. */
typedef struct cli_supervisor {
  double grace_s, hung_s;
  volatile sig_atomic_t *stop;
  void *ctx;
  void (*ended)(void *ctx, int rank, int ws, int killed_here);
  void (*killed)(void *ctx, int rank, const char *why);
} cli_supervisor;
int cli_supervise(pid_t *pids, int n, const cli_supervisor *w);

/* hostlist.c: `launch --hosts`. The host list "h1:2,h2,h3:4" (a host without :SLOTS has 1 slot):
 * 0, or -1 with why[cap] saying what is wrong (h is then empty). */
typedef struct cli_hosts { int n; char **name; int *slots; } cli_hosts;
int cli_hosts_parse(const char *v, cli_hosts *h, char *why, size_t cap);
void cli_hosts_free(cli_hosts *h);
/* Where rank r goes: host index, its number there, the ranks there, its host's number among the
 * hosts that got ranks (torchrun's GROUP_RANK) and how many those are. */
typedef struct cli_place { int host, local, local_n, group, ngroups; } cli_place;
/* Place n ranks into pl[n]: host by host (slot order), or one per host in turn (by_node, as
 * mpirun --map-by node). -1: more ranks than slots; -2: out of memory. */
int cli_hosts_place(const cli_hosts *h, int n, int by_node, cli_place *pl);
/* How a rank reaches its host: rsh (words; "ssh -o BatchMode=yes") gets HOST and one shell line
 * `cd CWD && exec env K=V... CMD...` (each word quoted), or prefix (words, %h the host) gets
 * `env K=V... CMD...` as words. */
typedef struct cli_hostcmd { const char *rsh, *prefix, *cwd; } cli_hostcmd;
/* The argv (NULL-terminated, each string owned; cli_hosts_argv_free) that starts cmd[ncmd] on
 * host with env[nenv] ("K=V"); NULL when out of memory. */
char **cli_hosts_argv(const cli_hostcmd *hc, const char *host, const char *const *env, int nenv, char *const *cmd,
                      int ncmd);
void cli_hosts_argv_free(char **v);
/* paths.c: before anything is written: the path an option (opt, "-o") of command cmd writes must be a
 * new name or a regular file, and none of the ninputs input paths (NULLs skipped) by inode, so
 * a hard link or symbolic link to the input counts. 0, or -1 after printing why. */
int cli_check_output(const char *cmd, const char *opt, const char *out, const char *const *inputs, int ninputs);
/* An output folder (--outputs, emit-cuda -o): not empty, created with its parents if missing, a
 * folder if present. 0, or -1 after printing why. */
int cli_output_dir(const char *cmd, const char *opt, const char *dir);

/* opcmd.c: an --op value, a built-in name or FILE.c:NAME (a custom operator made with
 * schedc_op_create; it lives until the process ends): 0, or -1 with schedc_errmsg() set. */
int cli_op_parse(const char *s, schedc_op *out);
/* `schedc check-op FILE.c:NAME`. */
int cli_check_op(int argc, char **argv);

/* Draw ranks x steps with arrows coloured by chunk into an SVG file. 0 or -1 (errno). */
int cli_viz_svg(const schedc_plan *plan, FILE *out);

#endif
