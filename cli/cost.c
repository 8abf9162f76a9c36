/*
 * cost.c — `schedc cost FILE`: the cost model's predicted time and bandwidth of a plan per size,
 * with the links of a topology file (--topology, which also places the ranks on nodes) or of a
 * links-only file (--links, e.g. the host.lua `schedc tune` writes from its measurements).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const KIND[] = {"shm", "nvlink", "pcie", "net"};

void cli_print_model(const schedc_cost_model *m, const char *from) {
  printf("# model (%s): intra %s alpha %.2f us, %.2f GB/s per rank, %.2f GB/s per node; inter %s alpha %.2f us, "
         "%.2f GB/s per rank, %.2f GB/s per node; reduce %.2f GB/s; local copies %.1f x at %.2f GB/s; call %.2f us; "
         "%d cores per node\n", from, KIND[m->intra.kind], m->intra.alpha_us, m->intra.gbps, m->intra.node_gbps,
         KIND[m->inter.kind], m->inter.alpha_us, m->inter.gbps, m->inter.node_gbps, m->reduce_gbps, m->local_passes,
         m->copy_gbps, m->call_us, m->cores_per_node);
}

double cli_busbw_factor(schedc_collective coll, int n) {
  return coll == SCHEDC_ALLREDUCE ? 2.0 * (n - 1) / n
         : coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER ? (double)(n - 1) / n : 1.0;
}

int cli_cost(int argc, char **argv) {
  const char *file = NULL, *topo = NULL, *links = NULL;
  int ranks = 0, nodes = 0, nsizes = 0, nd = 0;
  size_t sizes[64];
  const char **defs = calloc((size_t)argc + 1, sizeof *defs);
  int rc = EXIT_USAGE;
  if (!defs) return EXIT_REJECTED;
  enum { O_TOPOLOGY = 256, O_LINKS, O_RANKS, O_NODES, O_SIZES };
  static const struct option longopts[] = {
    {"help", no_argument, NULL, 'h'},                 {"topology", required_argument, NULL, O_TOPOLOGY},
    {"links", required_argument, NULL, O_LINKS},      {"ranks", required_argument, NULL, O_RANKS},
    {"nodes", required_argument, NULL, O_NODES},      {"sizes", required_argument, NULL, O_SIZES},
    {NULL, 0, NULL, 0},
  };
  cli_args a = {.cmd = "cost", .argc = argc, .argv = argv, .shortopts = "hD:", .longopts = longopts};
  const char *v;
  for (int c; (c = cli_next(&a, &v)) != CLI_END;) {
    int bad = 0;
    switch (c) {
    case 'h':
      printf("usage: schedc cost FILE|PLAN (--topology T | --links F) [--ranks N] [--nodes M] [--sizes 8,1M,64M] [-D k=v]\n\n"
             "Predicted time per call (alpha-beta model over the plan's steps; docs/tuning.md) and the\n"
             "algbw/busbw it implies, per size. The links come from the topology file's `links` table\n"
             "or from --links F (a file returning { links = {...} }, e.g. the host.lua of 'schedc tune').\n");
      rc = EXIT_OK;
      goto done;
    case O_TOPOLOGY: topo = v; break;
    case O_LINKS: links = v; break;
    case O_RANKS: bad = cli_opt_int(&a, v, 1, 65536, "a rank count from 1 to 65536", &ranks); break;
    case O_NODES: bad = cli_opt_int(&a, v, 1, 65536, "a node count from 1 to 65536", &nodes); break;
    case O_SIZES: bad = cli_opt_sizes(&a, v, sizes, 64, &nsizes); break;
    case 'D': bad = cli_opt_define(&a, v, defs, &nd); break;
    case CLI_ARG:
      if ((bad = file != NULL)) cli_usage_error(&a, "unexpected '%s' (one FILE only)", v);
      file = v;
      break;
    default: bad = 1; break; /* CLI_BAD: said why */
    }
    if (bad) goto done;
  }
  if (!file || (!topo && !links)) { fprintf(stderr, "schedc cost: need FILE and --topology T or --links F (see --help)\n"); goto done; }
  if (!nsizes) { size_t d[] = {8, 4096, 1 << 20, 64 << 20}; memcpy(sizes, d, sizeof d); nsizes = 4; }
  rc = EXIT_REJECTED;
  schedc_cost_model m = SCHEDC_COST_MODEL_INIT;
  if (schedc_cost_model_load(links ? links : topo, &m) != SCHEDC_OK) { fprintf(stderr, "schedc cost: %s\n", schedc_errmsg()); goto done; }
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = ranks;
  lo.nnodes = nodes;
  lo.topology = topo;
  lo.defines = defs;
  lo.ndefines = nd;
  schedc_plan *plan;
  if (schedc_plan_open(file, &lo, &plan) != SCHEDC_OK) { fprintf(stderr, "%s\n", schedc_errmsg()); goto done; }
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(plan, &in);
  printf("# schedc cost: %s, %s, %d ranks on %d node(s), %d steps, %d chunks\n", in.name,
         schedc_collective_name(in.collective), in.nranks, in.nnodes ? in.nnodes : 1, in.nsteps, in.nchunks);
  cli_print_model(&m, links ? links : topo);
  printf("#%11s %12s %10s %10s\n", "size", "time_us", "algbw", "busbw");
  for (int i = 0; i < nsizes; i++) {
    double us;
    if (schedc_plan_cost(plan, &m, sizes[i], &us) != SCHEDC_OK) { fprintf(stderr, "schedc cost: %s\n", schedc_errmsg()); break; }
    double alg = (double)sizes[i] / (us * 1e3);
    printf(" %11zu %12.2f %10.3f %10.3f\n", sizes[i], us, alg, alg * cli_busbw_factor(in.collective, in.nranks));
  }
  schedc_plan_free(plan);
  rc = EXIT_OK;
done:
  free(defs);
  return rc;
}
