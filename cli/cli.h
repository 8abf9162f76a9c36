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
/* `schedc bench` (bench.c). */
int cli_bench(int argc, char **argv);

/* Draw ranks x steps with arrows coloured by chunk into an SVG file. 0 or -1 (errno). */
int cli_viz_svg(const schedc_plan *plan, FILE *out);

#endif
