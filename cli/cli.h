/*
 * cli.h — shared pieces of the schedc command: parsed common options and the subcommands.
 * The CLI is a client of the public header only (like lua.c of lua.h).
 */
#ifndef SC_CLI_H
#define SC_CLI_H

#include <stdio.h>

#include "schedc/schedc.h"

enum { EXIT_OK = 0, EXIT_REJECTED = 1, EXIT_USAGE = 2 };

/* `schedc run` and `schedc launch` (run.c). */
int cli_run(int argc, char **argv);
int cli_launch(int argc, char **argv);
/* `schedc bench` (bench.c), `schedc cost` (cost.c), `schedc tune` (tune.c). */
int cli_bench(int argc, char **argv);
int cli_cost(int argc, char **argv);
int cli_tune(int argc, char **argv);
/* `schedc topo` (topo.c). */
int cli_topo(int argc, char **argv);
/* cost.c helpers shared with tune.c and bench.c. */
void cli_print_model(const schedc_cost_model *m, const char *from);
double cli_busbw_factor(schedc_collective coll, int n);
/* A comma-separated size list (K/M/G suffixes) into sizes[cap]: the count, or -1 with the
 * offending item (or the whole list when there are too many) in bad[64]. */
int cli_parse_sizes(const char *v, size_t *sizes, int cap, char bad[64]);

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
/* Remove a job's leftover shared-memory segments. */
void cli_cleanup_job(const char *job);
/* A fresh random job id PREFIXpid-HEX into buf (cap >= 48); -1 (message printed) on failure. */
int cli_job_id(char *buf, size_t cap, const char *prefix);
/* A count: digits with an optional K/M/G suffix (and B) in [lo, hi]; 0, or -1 if malformed (a
 * sign, blank, other suffix, overflow). */
int cli_parse_count(const char *s, long long lo, long long hi, long long *out);
/* Seconds: a finite decimal number > 0 and <= hi (no nan, inf, sign or unit); 0, or -1. */
int cli_parse_seconds(const char *s, double hi, double *out);
/* Before anything is written: the path an option (opt, "-o") of command cmd writes must be a
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
