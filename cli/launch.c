/*
 * launch.c — `schedc launch -n N -- CMD`: start N processes of any program with the rank
 * environment (SCHEDC_RANK, SCHEDC_NRANKS, SCHEDC_JOB and torchrun's names), like torchrun;
 * supervised by procs.c: the first failure stops the others after --grace, as does SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t got_signal;
static void on_signal(int s) { got_signal = s; }

typedef struct launchwatch { double grace; int failed; } launchwatch;
static void launch_ended(void *ctx, int rank, int ws, int killed_here) {
  (void)rank; (void)killed_here;
  launchwatch *lw = ctx;
  int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  if (code && !lw->failed) {
    lw->failed = 1;
    fprintf(stderr, "schedc launch: a rank exited with status %d; stopping the others in %.3g s\n", code, lw->grace);
  }
}

static void launch_usage(void) {
  printf("usage: schedc launch -n N [--grace S] -- CMD [ARGS...]\n\n"
         "Start N processes of CMD with SCHEDC_RANK, SCHEDC_NRANKS, SCHEDC_JOB (and torchrun's RANK,\n"
         "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) set, like torchrun. If one fails, the others are\n"
         "stopped after S seconds (default 5). Exit status: 0 if all exit 0, else the first failure's.\n");
}

int cli_launch(int argc, char **argv) {
  enum { O_GRACE = 256 };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'}, {"grace", required_argument, NULL, O_GRACE}, {NULL, 0, NULL, 0},
  };
  cli_args a = {.cmd = "launch", .argc = argc, .argv = argv, .shortopts = "hn:", .longopts = longopts,
                .stop_at_positional = 1};
  int n = 0;
  double grace = 5;
  const char *v;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    switch (c) {
    case 'h': launch_usage(); return EXIT_OK;
    case 'n': if (cli_opt_int(&a, v, 1, 4096, "a process count from 1 to 4096", &n)) return EXIT_USAGE; break;
    case O_GRACE:
      if (cli_opt_seconds(&a, v, 1e6, "a number of seconds: a finite number > 0 and <= 1e6 (no unit)", &grace)) return EXIT_USAGE;
      break;
    default: return EXIT_USAGE; /* CLI_BAD: said why */
    }
  }
  int i = cli_rest(&a);
  if (i < argc && !cli_after_dashes(&a))
    return cli_usage_error(&a, "unexpected '%s' (usage: schedc launch -n N -- CMD [ARGS...])", argv[i]);
  if (!n || i >= argc) return cli_usage_error(&a, "need -n N and -- CMD");
  char job[64], buf[32];
  if (cli_job_id(job, sizeof job, "launch") != 0) return EXIT_REJECTED;
  pid_t *pids = calloc((size_t)n, sizeof *pids);
  if (!pids) return EXIT_REJECTED;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  fflush(stdout);
  pid_t parent = getpid();
  for (int r = 0; r < n; r++) {
    pid_t p = cli_fork_child(parent, 127);
    if (p < 0) { /* the ranks started so far would wait for the missing one: stop them */
      fprintf(stderr, "schedc launch: cannot start rank %d: %s\n", r, strerror(errno));
      for (int k = 0; k < r; k++) kill(pids[k], SIGKILL);
      for (int k = 0; k < r; k++) waitpid(pids[k], NULL, 0);
      cli_cleanup_job(job);
      free(pids);
      return EXIT_REJECTED;
    }
    if (p == 0) {
      snprintf(buf, sizeof buf, "%d", r);
      setenv("SCHEDC_RANK", buf, 1); setenv("RANK", buf, 1); setenv("LOCAL_RANK", buf, 1);
      snprintf(buf, sizeof buf, "%d", n);
      setenv("SCHEDC_NRANKS", buf, 1); setenv("WORLD_SIZE", buf, 1); setenv("LOCAL_WORLD_SIZE", buf, 1);
      setenv("SCHEDC_JOB", job, 1);
      execvp(argv[i], argv + i);
      fprintf(stderr, "schedc launch: cannot run %s: %s\n", argv[i], strerror(errno));
      _exit(127);
    }
    pids[r] = p;
  }
  /* no hang limit: a trainer's steps take as long as they take; SIGTERM (never SIGKILL) lets
   * the processes end cleanly */
  launchwatch lw = {grace, 0};
  cli_supervisor w = {.grace_s = grace, .stop = &got_signal, .ctx = &lw, .ended = launch_ended};
  int rc = cli_supervise(pids, n, &w);
  cli_cleanup_job(job);
  free(pids);
  return rc ? rc : (got_signal ? 128 + got_signal : 0);
}
