/*
 * schedc.c — the `schedc` command: check, show, compile and viz a schedule (more subcommands
 * join as the runtime grows). Exit status: 0 success, 1 rejected / script or I/O error,
 * 2 usage error. Uses the public API only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct opts {
  const char *file, *out, *topology;
  int ranks, nodes, rank;
  int order, steps;
  const char *arch, *target, *dtype, *op;
  int ptx;
  int checksums;             /* emit-cuda, compile --target cuda: the checksum-verifying kernels */
  const char **defines;
  int ndefines;
} opts;

static const char *prog = "schedc";

static void usage_main(FILE *f) {
  fprintf(f,
          "usage: schedc COMMAND [ARGS]\n"
          "       schedc --version\n"
          "\n"
          "commands:\n"
          "  check FILE    verify a schedule and print a one-line summary\n"
          "  show FILE     print the proven reduction order (--order) or the steps (--steps)\n"
          "  compile FILE  verify and write a plan file (-o PLAN)\n"
          "  viz FILE      draw ranks x steps as SVG (-o OUT.svg)\n"
          "  emit-cuda FILE  write each rank's CUDA kernel source (-o DIR; --ptx compiles with NVRTC)\n"
          "  check-op FILE.c:NAME  check a custom reduction operator (docs/ops.md)\n"
          "  run FILE      run a plan on N ranks (threads, shm processes, MPI or GPUs)\n"
          "  launch -n N -- CMD   start N processes of CMD with the rank environment\n"
          "  bench [FILE]  collective throughput per size (nccl-tests columns)\n"
          "  cost FILE     the cost model's predicted time per size (--topology T or --links F)\n"
          "  tune          measure this host, choose the fastest plan per size, write a tuning table\n"
          "  topo          describe this machine (hwloc, NVML) or NCCL/hwloc XML; write a topology file\n"
          "  info          what this build contains and finds here, for a bug report (--json)\n"
          "\n"
          "'schedc COMMAND --help' describes a command. FILE is a schedule (.lua) or a plan file.\n"
          "-V, --version prints the version and git revision.\n");
}

static const char *const common_help =
    "  --ranks N        number of ranks (the script's `nranks`)\n"
    "  --nodes M        split the ranks into M equal consecutive nodes\n"
    "  --topology T     topology file (.lua returning { nodes = {{...}, ...} })\n"
    "  -D key=value     a script parameter (`params.key`; numbers are converted)\n"
    "  -h, --help       this help\n";

static void usage_cmd(const char *cmd, FILE *f) {
  if (!strcmp(cmd, "check"))
    fprintf(f, "usage: schedc check FILE [--ranks N] [--nodes M] [--topology T] [-D k=v]...\n\n"
               "Verify FILE: postcondition, every contribution exactly once, the same tree on every rank,\n"
               "no undefined reads or conflicting writes. Exit 0 and a summary when valid; exit 1 and\n"
               "'file:line: message' diagnostics when rejected; exit 2 on a usage error.\n\n%s", common_help);
  else if (!strcmp(cmd, "show"))
    fprintf(f, "usage: schedc show FILE (--order [--rank R] | --steps) [--ranks N] [options]\n\n"
               "--order prints 'chunk C: TREE' per chunk, the proven reduction tree (rN, '+', parentheses)\n"
               "of the rank that defines the result (owner for reduce_scatter, root for reduce), or of\n"
               "rank R. --steps prints each step's transfers with the line that added them.\n\n%s", common_help);
  else if (!strcmp(cmd, "compile"))
    fprintf(f, "usage: schedc compile FILE -o PLAN [--ranks N] [--target cpu|cuda --arch sm_XX --dtype T --op OP [--checksums]] [options]\n\n"
               "Verify FILE and write the plan file PLAN (versioned, with a content hash; loaded strictly\n"
               "by the runtime and by the other commands). With --target cuda, also compile every rank's\n"
               "kernels with NVRTC for --arch (default sm_90), dtype and op (default f32 sum) into the\n"
               "kernel cache ($SCHEDC_CACHE_DIR), printing the time and whether the cache was hit;\n"
               "--checksums: the kernels SCHEDC_VERIFY=checksum runs.\n\n%s", common_help);
  else if (!strcmp(cmd, "emit-cuda"))
    fprintf(f, "usage: schedc emit-cuda FILE --ranks N -o DIR [--dtype T] [--op OP] [--arch sm_XX] [--ptx] [--checksums] [options]\n\n"
               "Write DIR/rank<R>.cu, the CUDA C++ kernel of each rank (straight-line steps, no headers), for\n"
               "dtype T (f32) and op OP (sum); with --ptx also compile each with NVRTC (--fmad=false) for\n"
               "--arch (sm_90) and write DIR/rank<R>.ptx; --checksums: the kernels that checksum\n"
               "verification runs (every transfer summed by its writer and checked by its reader). Needs no GPU.\n\n%s", common_help);
  else if (!strcmp(cmd, "viz"))
    fprintf(f, "usage: schedc viz FILE -o OUT.svg [--ranks N] [options]\n\n"
               "Draw the schedule: one lane per rank, one column per step, an arrow per transfer coloured\n"
               "by chunk (solid: reduce, dashed: copy).\n\n%s", common_help);
  else
    usage_main(f);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
    __attribute__((format(printf, 2, 0)));
static int usage_error(const char *cmd, const char *fmt, const char *arg) {
  fprintf(stderr, "%s %s: ", prog, cmd);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  fprintf(stderr, fmt, arg);
#pragma GCC diagnostic pop
  fprintf(stderr, "\n(see 'schedc %s --help')\n", cmd);
  return EXIT_USAGE;
}

/* Returns -1 on success (keep going), else an exit status. argv[0] is the command's name. */
static int parse(const char *cmd, int argc, char **argv, opts *o) {
  enum { O_RANKS = 256, O_NODES, O_RANK, O_TOPOLOGY, O_ORDER, O_STEPS, O_PTX, O_CHECKSUMS, O_ARCH, O_TARGET, O_DTYPE, O_OP };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},           {"ranks", required_argument, NULL, O_RANKS},
    {"nodes", required_argument, NULL, O_NODES}, {"rank", required_argument, NULL, O_RANK},
    {"topology", required_argument, NULL, O_TOPOLOGY}, {"order", no_argument, NULL, O_ORDER},
    {"steps", no_argument, NULL, O_STEPS},       {"ptx", no_argument, NULL, O_PTX},
    {"checksums", no_argument, NULL, O_CHECKSUMS}, {"arch", required_argument, NULL, O_ARCH},
    {"target", required_argument, NULL, O_TARGET}, {"dtype", required_argument, NULL, O_DTYPE},
    {"op", required_argument, NULL, O_OP},       {NULL, 0, NULL, 0},
  };
  memset(o, 0, sizeof *o);
  o->rank = -1;
  o->defines = calloc((size_t)argc + 1, sizeof *o->defines);
  if (!o->defines) return EXIT_REJECTED;
  cli_args a = {.cmd = cmd, .argc = argc, .argv = argv, .shortopts = "ho:D:", .longopts = longopts};
  const char *v;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    switch (c) {
    case 'h': usage_cmd(cmd, stdout); return EXIT_OK;
    case O_RANKS: if (cli_opt_int(&a, v, 1, 65536, "a rank count from 1 to 65536", &o->ranks)) return EXIT_USAGE; break;
    case O_NODES: if (cli_opt_int(&a, v, 1, 65536, "a node count from 1 to 65536", &o->nodes)) return EXIT_USAGE; break;
    case O_RANK: if (cli_opt_int(&a, v, 0, 65535, "a rank from 0 to 65535", &o->rank)) return EXIT_USAGE; break;
    case O_TOPOLOGY: o->topology = v; break;
    case 'o': o->out = v; break;
    case O_ORDER: o->order = 1; break;
    case O_STEPS: o->steps = 1; break;
    case O_PTX: o->ptx = 1; break;
    case O_CHECKSUMS: o->checksums = 1; break;
    case O_ARCH: o->arch = v; break;
    case O_TARGET: o->target = v; break;
    case O_DTYPE: o->dtype = v; break;
    case O_OP: o->op = v; break;
    case 'D': if (cli_opt_define(&a, v, o->defines, &o->ndefines)) return EXIT_USAGE; break;
    case CLI_ARG:
      if (o->file) return usage_error(cmd, "unexpected argument '%s' (one FILE only)", v);
      o->file = v;
      break;
    default: return EXIT_USAGE; /* CLI_BAD: said why */
    }
  }
  if (!o->file) return usage_error(cmd, "%s", "missing FILE");
  return -1;
}

/* Open the plan; prints the error and returns the exit status on failure, -1 on success. */
static int open_plan(const opts *o, schedc_plan **plan) {
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = o->ranks;
  lo.nnodes = o->nodes;
  lo.topology = o->topology;
  lo.defines = o->defines;
  lo.ndefines = o->ndefines;
  schedc_status st = schedc_plan_open(o->file, &lo, plan);
  if (st == SCHEDC_OK) return -1;
  const char *msg = schedc_errmsg();
  fprintf(stderr, "%s\n", msg[0] ? msg : schedc_status_str(st));
  if (st == SCHEDC_EVERIFY) fprintf(stderr, "%s: rejected: no plan produced\n", o->file);
  return st == SCHEDC_EINVAL ? EXIT_USAGE : EXIT_REJECTED;
}

static void summary(const schedc_plan *plan, const char *file) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  printf("%s: ok: %s '%s', %d ranks (%d node%s), %d chunks, %d steps, %ld transfers, "
         "%.3f x buffer sent per rank (max)%s, plan %016llx\n",
         file, schedc_collective_name(in.collective), in.name, in.nranks, in.nnodes, in.nnodes == 1 ? "" : "s",
         in.nchunks, in.nsteps, in.ntransfers, in.max_sent, in.canonical ? ", canonical order" : "",
         (unsigned long long)in.hash);
}

static int show_order(const schedc_plan *plan, int rank) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  if (rank >= in.nranks) {
    fprintf(stderr, "schedc show: --rank %d out of range [0, %d)\n", rank, in.nranks);
    return EXIT_USAGE;
  }
  size_t cap = 256;
  char *buf = malloc(cap);
  for (int c = 0; buf && c < in.nchunks; c++) {
    int r = rank >= 0 ? rank : schedc_plan_chunk_holder(plan, c);
    long n = schedc_plan_order(plan, c, r, buf, cap);
    if (n >= (long)cap) {
      char *nb = realloc(buf, (size_t)n + 1);
      if (!nb) break;
      buf = nb;
      cap = (size_t)n + 1;
      schedc_plan_order(plan, c, r, buf, cap);
    }
    printf("chunk %d: %s\n", c, buf);
  }
  free(buf);
  return EXIT_OK;
}

static int show_steps(const schedc_plan *plan) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  long i = 0;
  for (int s = 0; s < in.nsteps; s++) {
    long first = i;
    schedc_transfer t;
    while (i < in.ntransfers && schedc_plan_transfer(plan, i, &t) == SCHEDC_OK && t.step == s) i++;
    printf("step %d: %ld transfer%s\n", s, i - first, i - first == 1 ? "" : "s");
    for (long k = first; k < i; k++) {
      schedc_plan_transfer(plan, k, &t);
      printf("  %-6s r%-4d -> r%-4d chunk %-4d %s:%d\n", t.kind == SCHEDC_XFER_COPY ? "copy" : "reduce", t.src,
             t.dst, t.chunk, t.file, t.line);
    }
  }
  return EXIT_OK;
}

/* emit-cuda: every rank's kernel source (and PTX) into dir, path the buffer for the file names.
 * An exit status. */
static int emit_files(const schedc_plan *plan, const opts *o, schedc_dtype dt, schedc_op op, const char *arch,
                      const char *dir, int nranks, cli_sbuf *path) {
  const char *inputs[2] = {o->file, o->topology};
  for (int r = 0; r < nranks; r++) { /* every file first: a refused run writes none */
    if (!cli_sb_rank_file(path, dir, r, ".cu")) { fprintf(stderr, "schedc emit-cuda: out of memory\n"); return EXIT_REJECTED; }
    if (cli_check_output("emit-cuda", "-o", path->p, inputs, 2)) return EXIT_USAGE;
    if (!cli_sb_rank_file(path, dir, r, ".ptx")) { fprintf(stderr, "schedc emit-cuda: out of memory\n"); return EXIT_REJECTED; }
    if (o->ptx && cli_check_output("emit-cuda", "-o", path->p, inputs, 2)) return EXIT_USAGE;
  }
  if (cli_output_dir("emit-cuda", "-o", dir)) return EXIT_REJECTED;
  for (int r = 0; r < nranks; r++) {
    char *src;
    if (schedc_cuda_source_v2(plan, r, dt, op, o->checksums, &src)) { fprintf(stderr, "%s\n", schedc_errmsg()); return EXIT_REJECTED; }
    if (!cli_sb_rank_file(path, dir, r, ".cu")) { fprintf(stderr, "schedc emit-cuda: out of memory\n"); schedc_free(src); return EXIT_REJECTED; }
    FILE *f = fopen(path->p, "w");
    int bad = !f || fputs(src, f) < 0;
    if (f && fclose(f)) bad = 1;
    if (bad) {
      fprintf(stderr, "schedc emit-cuda: cannot write %s: %s\n", path->p, strerror(errno));
      schedc_free(src);
      return EXIT_REJECTED;
    }
    printf("wrote %s\n", path->p);
    if (o->ptx) {
      void *img;
      size_t len;
      schedc_cuda_compile_info ci = SCHEDC_CUDA_COMPILE_INFO_INIT;
      if (schedc_cuda_compile(src, arch, 1, &img, &len, &ci)) {
        fprintf(stderr, "%s\n", schedc_errmsg());
        schedc_free(src);
        return EXIT_REJECTED;
      }
      if (len && ((const char *)img)[len - 1] == '\0') len--; /* the text, not its terminator: ptxas stops at a NUL */
      f = cli_sb_rank_file(path, dir, r, ".ptx") ? fopen(path->p, "w") : NULL;
      bad = !f || fwrite(img, 1, len, f) != len;
      if (f && fclose(f)) bad = 1;
      if (bad) {
        fprintf(stderr, "schedc emit-cuda: cannot write %s: %s\n", cli_sb_str(path), strerror(errno));
        schedc_free(img);
        schedc_free(src);
        return EXIT_REJECTED;
      }
      printf("wrote %s (%s, %.3f s)\n", path->p, ci.cache_hit ? "cache hit" : "NVRTC", ci.seconds);
      schedc_free(img);
    }
    schedc_free(src);
  }
  return EXIT_OK;
}

/* Emit (into dir, per rank) and/or compile the plan's CUDA kernels. */
static int cuda_build(const schedc_plan *plan, const opts *o, const char *dir) {
  schedc_dtype dt = SCHEDC_F32;
  schedc_op op = SCHEDC_SUM;
  if (o->dtype && schedc_dtype_parse(o->dtype, &dt)) {
    fprintf(stderr, "schedc: %s\n", schedc_errmsg());
    return EXIT_USAGE;
  }
  if (o->op && cli_op_parse(o->op, &op)) { /* a rejected custom operator is a rejection, not a usage error */
    fprintf(stderr, "schedc: %s\n", schedc_errmsg());
    return strchr(o->op, ':') ? EXIT_REJECTED : EXIT_USAGE;
  }
  const char *arch = o->arch ? o->arch : "sm_90";
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  if (!dir) { /* compile --target cuda: every rank's kernels, one NVRTC unit */
    char *src;
    void *img;
    size_t len;
    schedc_cuda_compile_info ci = SCHEDC_CUDA_COMPILE_INFO_INIT;
    if (schedc_cuda_source_v2(plan, -1, dt, op, o->checksums, &src) || schedc_cuda_compile(src, arch, 0, &img, &len, &ci)) {
      fprintf(stderr, "%s\n", schedc_errmsg());
      if (src) schedc_free(src);
      return EXIT_REJECTED;
    }
    printf("cuda: %d rank kernels for %s %s %s, cubin %zu bytes in %.3f s (%s, NVRTC %d.%d) %s\n", in.nranks,
           schedc_dtype_name(dt), schedc_op_name(op), arch, len, ci.seconds, ci.cache_hit ? "cache hit" : "compiled",
           ci.nvrtc_major, ci.nvrtc_minor, ci.cache_file);
    schedc_free(src);
    schedc_free(img);
    return EXIT_OK;
  }
  cli_sbuf path = {0}; /* DIR/rank<R>.cu and .ptx, of any length */
  int rc = emit_files(plan, o, dt, op, arch, dir, in.nranks, &path);
  cli_sb_free(&path);
  return rc;
}

static int cmd_plan(const char *cmd, int argc, char **argv) {
  opts o;
  int rc = parse(cmd, argc, argv, &o);
  if (rc >= 0) { free(o.defines); return rc; }
  if (!strcmp(cmd, "show") && o.order == o.steps) {
    free(o.defines);
    return usage_error(cmd, "%s", "give one of --order or --steps");
  }
  if ((!strcmp(cmd, "compile") || !strcmp(cmd, "viz") || !strcmp(cmd, "emit-cuda")) && !o.out) {
    free(o.defines);
    return usage_error(cmd, "%s", "missing -o OUTPUT");
  }
  /* Everything that can refuse the command is checked before anything is written: the output
   * (not an input, not a FIFO, device or folder), the target and dtype. */
  const char *inputs[2] = {o.file, o.topology};
  int is_compile = !strcmp(cmd, "compile"), is_emit = !strcmp(cmd, "emit-cuda");
  if ((is_compile || !strcmp(cmd, "viz")) && cli_check_output(cmd, "-o", o.out, inputs, 2)) {
    free(o.defines);
    return EXIT_USAGE;
  }
  if (is_emit) {
    struct stat st;
    if (!*o.out || (stat(o.out, &st) == 0 && !S_ISDIR(st.st_mode))) {
      free(o.defines);
      return usage_error(cmd, "-o '%s' must name a folder (it is created if missing)", o.out);
    }
  }
  if (is_compile && o.target && strcmp(o.target, "cpu") && strcmp(o.target, "cuda")) {
    free(o.defines);
    return usage_error(cmd, "--target '%s' (choose cpu or cuda)", o.target);
  }
  schedc_dtype dt;
  if (o.dtype && schedc_dtype_parse(o.dtype, &dt)) {
    fprintf(stderr, "schedc %s: %s\n", cmd, schedc_errmsg());
    free(o.defines);
    return EXIT_USAGE;
  }
  schedc_plan *plan = NULL;
  rc = open_plan(&o, &plan);
  if (rc >= 0) { free(o.defines); return rc; }
  rc = EXIT_OK;
  if (!strcmp(cmd, "check")) {
    summary(plan, o.file);
  } else if (!strcmp(cmd, "show")) {
    rc = o.order ? show_order(plan, o.rank) : show_steps(plan);
  } else if (!strcmp(cmd, "compile")) {
    if (schedc_plan_save(plan, o.out) != SCHEDC_OK) {
      fprintf(stderr, "%s\n", schedc_errmsg());
      rc = EXIT_REJECTED;
    } else {
      summary(plan, o.file);
      printf("wrote %s\n", o.out);
      if (o.target && !strcmp(o.target, "cuda")) rc = cuda_build(plan, &o, NULL);
    }
  } else if (!strcmp(cmd, "emit-cuda")) {
    rc = cuda_build(plan, &o, o.out);
  } else if (!strcmp(cmd, "viz")) {
    FILE *f = fopen(o.out, "w");
    if (!f || cli_viz_svg(plan, f) || fclose(f)) {
      fprintf(stderr, "schedc viz: cannot write %s: %s\n", o.out, strerror(errno));
      rc = EXIT_REJECTED;
    } else {
      printf("wrote %s\n", o.out);
    }
  }
  schedc_plan_free(plan);
  free(o.defines);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage_main(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage_main(stdout);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    if (argc > 2) {
      fprintf(stderr, "schedc: unexpected argument '%s' after %s\n", argv[2], cmd);
      return EXIT_USAGE;
    }
    return cli_version();
  }
  if (!strcmp(cmd, "check") || !strcmp(cmd, "show") || !strcmp(cmd, "compile") || !strcmp(cmd, "viz") ||
      !strcmp(cmd, "emit-cuda"))
    return cmd_plan(cmd, argc - 1, argv + 1);
  /* each subcommand gets its own argv: [0] its name, then its arguments */
  if (!strcmp(cmd, "run")) return cli_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "check-op")) return cli_check_op(argc - 1, argv + 1);
  if (!strcmp(cmd, "launch")) return cli_launch(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1);
  if (!strcmp(cmd, "cost")) return cli_cost(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cli_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "topo")) return cli_topo(argc - 1, argv + 1);
  if (!strcmp(cmd, "info")) return cli_info(argc - 1, argv + 1);
  fprintf(stderr, "schedc: unknown command '%s' (commands: check, show, compile, viz, emit-cuda, run, launch, bench, "
          "cost, tune, topo, info, check-op; or --version)\n", cmd);
  return EXIT_USAGE;
}
