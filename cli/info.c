/*
 * info.c — `schedc --version` (the library's version and git revision) and `schedc info` (what
 * this build contains and what it finds on this machine, as text for a bug report or --json).
 * The library gathers every fact (schedc_info, schedc.h); this prints it.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define STR_(x) #x
#define STR(x) STR_(x)

int cli_version(void) {
  static const char header[] = STR(SCHEDC_VERSION_MAJOR) "." STR(SCHEDC_VERSION_MINOR) "." STR(SCHEDC_VERSION_PATCH);
  printf("schedc %s (git %s)\n", schedc_version(), schedc_revision());
  /* a command built against another schedc.h than the library it runs with */
  if (strcmp(header, schedc_version())) printf("(this command was built with schedc.h %s)\n", header);
  return EXIT_OK;
}

static void info_usage(FILE *f) {
  fprintf(f, "usage: schedc info [--json]\n\n"
             "What this build contains and what it finds on this machine, to paste into a bug report: the\n"
             "version and git revision, the library's file, compiler and build type; each backend (built in,\n"
             "usable here or why not); each optional library (NVRTC, CUDA driver, NCCL, NVML, libclang, hwloc,\n"
             "MPI) found or not, with its file and version or the reason; the vector path of the CPU loops;\n"
             "CPUs and NUMA nodes; the GPUs the cuda backend sees; the kernel cache; /dev/shm's free space;\n"
             "the schedc variables that are set (a malformed value with its refusal; unknown SCHEDC_* names).\n\n"
             "  --json       the same facts as one JSON object (docs/cli.md lists its keys)\n"
             "  -h, --help   this help\n");
}

int cli_info(int argc, char **argv) {
  static const struct option longs[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  int json = 0;
  const char *v;
  cli_args a = {.cmd = "info", .argc = argc, .argv = argv, .shortopts = "h", .longopts = longs};
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    switch (c) {
    case 'h': info_usage(stdout); return EXIT_OK;
    case 'j': json = 1; break;
    case CLI_ARG: return cli_usage_error(&a, "unexpected argument '%s' (schedc info takes options only)", v);
    default: return EXIT_USAGE; /* CLI_BAD: reported */
    }
  }
  char *text = NULL;
  schedc_status st = schedc_info(json ? SCHEDC_INFO_JSON : SCHEDC_INFO_TEXT, &text);
  if (st != SCHEDC_OK) {
    const char *m = schedc_errmsg();
    fprintf(stderr, "schedc info: %s\n", m[0] ? m : schedc_status_str(st));
    return EXIT_REJECTED;
  }
  fputs(text, stdout);
  schedc_free(text);
  return fflush(stdout) == 0 ? EXIT_OK : EXIT_REJECTED;
}
