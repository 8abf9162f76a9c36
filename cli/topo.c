/*
 * topo.c — `schedc topo`: discover this machine (hwloc, NVML) or import NCCL / hwloc XML, print
 * a summary or JSON, and write schedc's topology file (-o) for --topology. Options are parsed
 * with getopt_long; the public API does the work (docs/topology.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void topo_usage(FILE *f) {
  fprintf(f, "usage: schedc topo [--from FILE | --synthetic DESC] [--json] [-o TOPOLOGY]\n\n"
             "Describe a machine: hosts, packages, NUMA nodes, cores, caches, PCIe switches, GPUs and NICs with\n"
             "their NUMA node and nearest NICs, NVLink (nvswitch, mesh, none or unknown), and the ranks and\n"
             "levels a topology file gives schedules (docs/topology.md).\n\n"
             "  --from FILE      read NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE, fused\n"
             "                   multi-host dumps too) or hwloc XML (lstopo --whole-io --output-format xml)\n"
             "                   instead of discovering this machine with hwloc and NVML\n"
             "  --synthetic DESC an hwloc synthetic machine, e.g. \"pack:2 core:4\"\n"
             "  --json           print JSON instead of the summary\n"
             "  -o TOPOLOGY      also write schedc's topology file (for --topology)\n"
             "  -h, --help       this help\n");
}

static int usage_err(const char *fmt, const char *arg) __attribute__((format(printf, 1, 0)));
static int usage_err(const char *fmt, const char *arg) {
  fprintf(stderr, "schedc topo: ");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  fprintf(stderr, fmt, arg);
#pragma GCC diagnostic pop
  fprintf(stderr, "\n(see 'schedc topo --help')\n");
  return EXIT_USAGE;
}

/* The whole text of one format, malloc'd; NULL after printing why. */
static char *text_of(const schedc_topology *t, schedc_topology_format fmt) {
  long n = schedc_topology_write(t, fmt, NULL, 0);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!s || schedc_topology_write(t, fmt, s, (size_t)n + 1) != n) {
    fprintf(stderr, "schedc topo: out of memory\n");
    free(s);
    return NULL;
  }
  return s;
}

int cli_topo(int argc, char **argv) {
  static const struct option longs[] = {
      {"from", required_argument, NULL, 'f'}, {"synthetic", required_argument, NULL, 's'},
      {"json", no_argument, NULL, 'j'},       {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *from = NULL, *synth = NULL, *out = NULL, *v;
  int json = 0, rc = EXIT_OK;
  cli_args a = {.cmd = "topo", .argc = argc, .argv = argv, .shortopts = "ho:", .longopts = longs};
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    switch (c) {
    case 'h': topo_usage(stdout); return EXIT_OK;
    case 'f': from = v; break;
    case 's': synth = v; break;
    case 'j': json = 1; break;
    case 'o': out = v; break;
    case CLI_ARG: return cli_usage_error(&a, "unexpected argument '%s' (schedc topo takes options only)", v);
    default: return EXIT_USAGE; /* CLI_BAD: reported */
    }
  }
  if (from && synth) return usage_err("%s", "--from and --synthetic exclude each other");
  if (from && !*from) return usage_err("%s", "--from needs a file name");
  if (out) {
    const char *inputs[1] = {from};
    if (cli_check_output("topo", "-o", out, inputs, 1)) return EXIT_USAGE;
  }

  schedc_topology *t = NULL;
  schedc_status st = from ? schedc_topology_import(from, &t) : synth ? schedc_topology_synthetic(synth, &t)
                                                                    : schedc_topology_discover(&t);
  if (st != SCHEDC_OK) {
    const char *m = schedc_errmsg();
    fprintf(stderr, "schedc topo: %s\n", m[0] ? m : schedc_status_str(st));
    return EXIT_REJECTED;
  }
  char *s = text_of(t, json ? SCHEDC_TOPOLOGY_JSON : SCHEDC_TOPOLOGY_SUMMARY);
  if (!s) { schedc_topology_free(t); return EXIT_REJECTED; }
  fputs(s, stdout);
  free(s);
  if (out) {
    char *f = text_of(t, SCHEDC_TOPOLOGY_FILE);
    FILE *o = f ? fopen(out, "w") : NULL;
    int bad = !f || !o || fputs(f, o) == EOF;
    if (o && fclose(o)) bad = 1;
    if (bad) {
      if (f) perror(out);
      rc = EXIT_REJECTED;
    } else if (!json) {
      printf("wrote %s (%d ranks; --topology %s)\n", out, schedc_topology_nranks(t), out);
    }
    free(f);
  }
  schedc_topology_free(t);
  return rc;
}
