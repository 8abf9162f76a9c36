/*
 * launch.c — `schedc launch -n N -- CMD`: start N processes of any program with the rank
 * environment (SCHEDC_RANK, SCHEDC_NRANKS, SCHEDC_JOB and torchrun's names), like torchrun; with
 * --hosts, on other hosts through ssh or a command prefix (hostlist.c) with torchrun's variables
 * for a multi-node job. Supervised by procs.c: the first failure stops the others after --grace,
 * as does SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t got_signal;
static void on_signal(int s) { got_signal = s; }

static void launch_usage(void) {
  printf("usage: schedc launch -n N [--grace S] -- CMD [ARGS...]\n"
         "       schedc launch --hosts H1:S1,H2:S2,... [-n N] [--map-by slot|node] [--rsh CMD | --host-cmd TEMPLATE]\n"
         "                     [--master-addr A] [--master-port P] [-x NAME=VALUE]... [--grace S] -- CMD [ARGS...]\n\n"
         "Start N processes of CMD with SCHEDC_RANK, SCHEDC_NRANKS, SCHEDC_JOB (and torchrun's RANK,\n"
         "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) set, like torchrun. If one fails, the others are\n"
         "stopped after S seconds (default 5). Exit status: 0 if all exit 0, else the first failure's.\n\n"
         "--hosts: the ranks on those hosts (SLOTS each, default 1; N defaults to all slots), in blocks\n"
         "(--map-by slot) or one per host in turn (--map-by node), with torchrun's variables of a\n"
         "multi-node job (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE,\n"
         "MASTER_ADDR: the first rank's host, MASTER_PORT: 29500, TORCHELASTIC_RUN_ID: the job) and\n"
         "each -x NAME=VALUE. A host is reached by --rsh CMD (default 'ssh -o BatchMode=yes': CMD HOST\n"
         "'cd DIR && exec env VARS... CMD ARGS...') or by --host-cmd TEMPLATE, a prefix that execs\n"
         "its arguments (%%h is the host: 'ip netns exec %%h', 'docker exec %%h').\n");
}

typedef struct launchopts {
  int n, by_node, port;
  double grace;
  const char *hosts, *rsh, *prefix, *master;
  const char **xenv;
  int nxenv;
} launchopts;

static int parse_launch(int argc, char **argv, launchopts *o, int *cmd_at) {
  enum { O_GRACE = 256, O_HOSTS, O_MAPBY, O_RSH, O_HOSTCMD, O_MADDR, O_MPORT };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'}, {"grace", required_argument, NULL, O_GRACE},
    {"hosts", required_argument, NULL, O_HOSTS}, {"map-by", required_argument, NULL, O_MAPBY},
    {"rsh", required_argument, NULL, O_RSH}, {"host-cmd", required_argument, NULL, O_HOSTCMD},
    {"master-addr", required_argument, NULL, O_MADDR}, {"master-port", required_argument, NULL, O_MPORT},
    {NULL, 0, NULL, 0},
  };
  cli_args a = {.cmd = "launch", .argc = argc, .argv = argv, .shortopts = "hn:x:", .longopts = longopts,
                .stop_at_positional = 1};
  const char *v, *mapby = NULL;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    switch (c) {
    case 'h': launch_usage(); return -1;
    case 'n': if (cli_opt_int(&a, v, 1, 4096, "a process count from 1 to 4096", &o->n)) return EXIT_USAGE; break;
    case O_GRACE:
      if (cli_opt_seconds(&a, v, 1e6, "a number of seconds: a finite number > 0 and <= 1e6 (no unit)", &o->grace)) return EXIT_USAGE;
      break;
    case O_HOSTS: o->hosts = v; break;
    case O_MAPBY:
      if (strcmp(v, "slot") != 0 && strcmp(v, "node") != 0) return cli_usage_error(&a, "--map-by '%s' is not slot or node", v);
      mapby = v;
      o->by_node = v[0] == 'n';
      break;
    case O_RSH: case O_HOSTCMD:
      if (!v[strspn(v, " \t")]) return cli_usage_error(&a, "%s '%s' is not a command", a.opt, v);
      if (c == O_RSH) o->rsh = v; else o->prefix = v;
      break;
    case O_MADDR:
      if (!*v || v[strcspn(v, " \t'\"\\")]) return cli_usage_error(&a, "--master-addr '%s' is not a host name or address", v);
      o->master = v;
      break;
    case O_MPORT: if (cli_opt_int(&a, v, 1, 65535, "a port from 1 to 65535", &o->port)) return EXIT_USAGE; break;
    case 'x': {
      size_t k = strcspn(v, "=");
      int name_ok = k > 0 && v[k] == '=' && !(v[0] >= '0' && v[0] <= '9');
      for (size_t i = 0; i < k && name_ok; i++)
        name_ok = v[i] == '_' || (v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9');
      if (!name_ok) return cli_usage_error(&a, "-x '%s' is not NAME=VALUE (launch passes what it is given; it does not read its own environment)", v);
      const char **nx = realloc(o->xenv, (size_t)(o->nxenv + 1) * sizeof *nx);
      if (!nx) return cli_usage_error(&a, "out of memory");
      o->xenv = nx;
      o->xenv[o->nxenv++] = v;
      break;
    }
    default: return EXIT_USAGE; /* CLI_BAD: said why */
    }
  }
  int i = cli_rest(&a);
  if (i < argc && !cli_after_dashes(&a))
    return cli_usage_error(&a, "unexpected '%s' (usage: schedc launch -n N -- CMD [ARGS...])", argv[i]);
  if (i >= argc) return cli_usage_error(&a, o->hosts ? "need -- CMD" : "need -n N and -- CMD");
  if (!o->hosts) {
    const char *only = mapby ? "--map-by" : o->rsh ? "--rsh" : o->prefix ? "--host-cmd" : o->master ? "--master-addr"
                     : o->port ? "--master-port" : o->nxenv ? "-x" : NULL;
    if (only) return cli_usage_error(&a, "%s is for --hosts", only);
    if (!o->n) return cli_usage_error(&a, "need -n N and -- CMD");
  }
  if (o->rsh && o->prefix) return cli_usage_error(&a, "--rsh and --host-cmd are two ways to reach a host: give one");
  *cmd_at = i;
  return 0;
}

typedef struct launchwatch { double grace; int failed; const cli_hosts *hosts; const cli_place *pl; } launchwatch;
static void launch_ended(void *ctx, int rank, int ws, int killed_here) {
  (void)killed_here;
  launchwatch *lw = ctx;
  int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  if (code && !lw->failed) {
    lw->failed = 1;
    if (lw->hosts)
      fprintf(stderr, "schedc launch: rank %d (on %s) exited with status %d; stopping the others in %.3g s\n", rank,
              lw->hosts->name[lw->pl[rank].host], code, lw->grace);
    else
      fprintf(stderr, "schedc launch: a rank exited with status %d; stopping the others in %.3g s\n", code, lw->grace);
  }
}

/* The argv of every rank on its host (NULL entries in argvs: out of memory, said here). */
static int host_argvs(const launchopts *o, const cli_hosts *h, const cli_place *pl, const char *job, char *const *cmd,
                      int ncmd, char ***argvs) {
  char cwd[PATH_MAX];
  cli_hostcmd hc = {.rsh = o->prefix ? NULL : o->rsh ? o->rsh : "ssh -o BatchMode=yes", .prefix = o->prefix,
                    .cwd = getcwd(cwd, sizeof cwd)};
  const char *master = o->master ? o->master : h->name[pl[0].host];
  int nenv = o->nxenv + 9;
  char (*vals)[96] = malloc((size_t)9 * sizeof *vals);
  const char **env = malloc((size_t)nenv * sizeof *env);
  cli_sbuf m = {0};
  cli_sb_printf(&m, "MASTER_ADDR=%s", master);
  int rc = vals && env && !m.oom ? 0 : -1;
  for (int r = 0; r < o->n && rc == 0; r++) {
    for (int i = 0; i < o->nxenv; i++) env[i] = o->xenv[i]; /* first: launch's own names win */
    const cli_place *p = &pl[r];
    snprintf(vals[0], 96, "RANK=%d", r);
    snprintf(vals[1], 96, "WORLD_SIZE=%d", o->n);
    snprintf(vals[2], 96, "LOCAL_RANK=%d", p->local);
    snprintf(vals[3], 96, "LOCAL_WORLD_SIZE=%d", p->local_n);
    snprintf(vals[4], 96, "GROUP_RANK=%d", p->group);
    snprintf(vals[5], 96, "GROUP_WORLD_SIZE=%d", p->ngroups);
    snprintf(vals[6], 96, "MASTER_PORT=%d", o->port ? o->port : 29500);
    snprintf(vals[7], 96, "TORCHELASTIC_RUN_ID=%s", job);
    for (int i = 0; i < 8; i++) env[o->nxenv + i] = vals[i];
    env[o->nxenv + 8] = cli_sb_str(&m);
    if (!(argvs[r] = cli_hosts_argv(&hc, h->name[p->host], env, nenv, cmd, ncmd))) rc = -1;
  }
  if (rc) fprintf(stderr, "schedc launch: out of memory\n");
  cli_sb_free(&m);
  free(vals);
  free(env);
  return rc;
}

int cli_launch(int argc, char **argv) {
  launchopts o = {.grace = 5};
  int i = 0, rc = parse_launch(argc, argv, &o, &i);
  if (rc) { free(o.xenv); return rc < 0 ? EXIT_OK : rc; }
  cli_hosts h = {0};
  cli_place *pl = NULL;
  char **(*argvs) = NULL;
  if (o.hosts) {
    char why[256];
    int total = 0;
    if (cli_hosts_parse(o.hosts, &h, why, sizeof why) != 0) {
      free(o.xenv);
      fprintf(stderr, "schedc launch: --hosts '%s': %s\n", o.hosts, why);
      return EXIT_USAGE;
    }
    for (int k = 0; k < h.n; k++) total += h.slots[k];
    if (!o.n) o.n = total > 4096 ? 4096 : total;
    pl = calloc((size_t)o.n, sizeof *pl);
    argvs = calloc((size_t)o.n, sizeof *argvs);
    if (!pl || !argvs || (rc = cli_hosts_place(&h, o.n, o.by_node, pl)) != 0) {
      if (rc == -1) fprintf(stderr, "schedc launch: -n %d ranks do not fit in the %d slots of --hosts '%s'\n", o.n, total, o.hosts);
      else fprintf(stderr, "schedc launch: out of memory\n");
      rc = pl && argvs && rc == -1 ? EXIT_USAGE : EXIT_REJECTED;
      goto out;
    }
  }
  char job[64], buf[32];
  rc = EXIT_REJECTED;
  if (cli_job_id(job, sizeof job, "launch") != 0) goto out;
  if (o.hosts && host_argvs(&o, &h, pl, job, argv + i, argc - i, argvs) != 0) goto out;
  pid_t *pids = calloc((size_t)o.n, sizeof *pids);
  if (!pids) goto out;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  fflush(stdout);
  pid_t parent = getpid();
  int n = o.n;
  for (int r = 0; r < n; r++) {
    pid_t p = cli_fork_child(parent, 127);
    if (p < 0) { /* the ranks started so far would wait for the missing one: stop them */
      fprintf(stderr, "schedc launch: cannot start rank %d: %s\n", r, strerror(errno));
      for (int k = 0; k < r; k++) kill(pids[k], SIGKILL);
      for (int k = 0; k < r; k++) waitpid(pids[k], NULL, 0);
      cli_cleanup_job(job);
      free(pids);
      goto out;
    }
    if (p == 0) {
      char **args = argv + i;
      if (o.hosts) {
        args = argvs[r];
      } else {
        snprintf(buf, sizeof buf, "%d", r);
        setenv("SCHEDC_RANK", buf, 1); setenv("RANK", buf, 1); setenv("LOCAL_RANK", buf, 1);
        snprintf(buf, sizeof buf, "%d", n);
        setenv("SCHEDC_NRANKS", buf, 1); setenv("WORLD_SIZE", buf, 1); setenv("LOCAL_WORLD_SIZE", buf, 1);
        setenv("SCHEDC_JOB", job, 1);
      }
      execvp(args[0], args);
      fprintf(stderr, "schedc launch: cannot run %s: %s\n", args[0], strerror(errno));
      _exit(127);
    }
    pids[r] = p;
  }
  /* no hang limit: a trainer's steps take as long as they take; SIGTERM (never SIGKILL) lets
   * the processes end cleanly */
  launchwatch lw = {o.grace, 0, o.hosts ? &h : NULL, pl};
  cli_supervisor w = {.grace_s = o.grace, .stop = &got_signal, .ctx = &lw, .ended = launch_ended};
  rc = cli_supervise(pids, n, &w);
  cli_cleanup_job(job);
  free(pids);
  rc = rc ? rc : (got_signal ? 128 + got_signal : 0);
out:
  for (int r = 0; argvs && r < o.n; r++) cli_hosts_argv_free(argvs[r]);
  free(argvs);
  free(pl);
  cli_hosts_free(&h);
  free(o.xenv);
  return rc;
}
