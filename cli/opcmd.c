/*
 * opcmd.c — custom operators in the CLI: `schedc check-op FILE.c:NAME` and the FILE.c:NAME form
 * of --op (run, bench, emit-cuda, compile --target cuda), through the public schedc_op_* API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "FILE.c:NAME": split at the last ':' after a ".c"; 1 if s has that form. */
static int split_op(const char *s, char *file, size_t cap, const char **name) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s || !colon[1] || (size_t)(colon - s) >= cap) return 0;
  if (colon - s < 3 || strncmp(colon - 2, ".c", 2)) return 0;
  memcpy(file, s, (size_t)(colon - s));
  file[colon - s] = 0;
  *name = colon + 1;
  return 1;
}

int cli_op_parse(const char *s, schedc_op *out) {
  char file[4096];
  const char *name;
  if (s && split_op(s, file, sizeof file, &name)) return schedc_op_create(file, name, NULL, out) == SCHEDC_OK ? 0 : -1;
  return schedc_op_parse(s, out) == SCHEDC_OK ? 0 : -1;
}

static void check_op_usage(FILE *f) {
  fprintf(f, "usage: schedc check-op FILE.c:NAME\n\n"
             "Check the custom reduction operator NAME of FILE.c (docs/ops.md): libclang checks what it may use,\n"
             "op(a, b) == op(b, a) is tested bit for bit on at least 100000 pairs, and its element loop is\n"
             "compiled for the CPU. Exit 0 with a one-line summary; 1 with 'file:line:col: message' lines.\n");
}

int cli_check_op(int argc, char **argv) {
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  cli_args a = {.cmd = "check-op", .argc = argc, .argv = argv, .shortopts = "h", .longopts = longopts};
  const char *v, *spec = NULL;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    if (c == 'h') { check_op_usage(stdout); return EXIT_OK; }
    if (c != CLI_ARG) return EXIT_USAGE; /* CLI_BAD: said why */
    if (spec) return cli_usage_error(&a, "unexpected argument '%s' (one FILE.c:NAME only)", v);
    spec = v;
  }
  if (!spec) { check_op_usage(stderr); return EXIT_USAGE; }
  char file[4096];
  const char *name;
  if (!split_op(spec, file, sizeof file, &name)) {
    fprintf(stderr, "schedc check-op: '%s': expected FILE.c:NAME (an operator file and the function's name)\n", spec);
    return EXIT_USAGE;
  }
  schedc_op op;
  if (schedc_op_create(file, name, NULL, &op) != SCHEDC_OK) {
    fprintf(stderr, "%s\n", schedc_errmsg());
    return EXIT_REJECTED;
  }
  schedc_op_info in = SCHEDC_OP_INFO_INIT;
  schedc_op_get_info(op, &in);
  const char *ctype = in.type == SCHEDC_F32 ? "float" : in.type == SCHEDC_F64 ? "double"
                      : in.type == SCHEDC_I32 ? "int32_t" : "int64_t";
  const char *serves = in.type == SCHEDC_F32 ? "f32, f16, bf16" : schedc_dtype_name(in.type);
  printf("%s: ok: %s, serves %s; commutative on %ld pairs; source %016llx; check %.3f s, test %.3f s, %s %.3f s\n",
         in.name, ctype, serves, in.pairs_tested, (unsigned long long)in.hash, in.check_s, in.test_s,
         in.cache_hit ? "cache hit" : "compile", in.compile_s);
  schedc_op_free(op);
  return EXIT_OK;
}
