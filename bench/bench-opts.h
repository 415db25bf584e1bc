/*
 * hiar-bench's command line: the options and their defaults, the usage text,
 * and the checks of what this build and the ranks' GPUs allow.  Usage errors
 * come back as exit status 2 with the message in err (ERR_LEN bytes) for
 * rank 0 to print; every rank parses, so all take the same branch.
 */
#ifndef BENCH_OPTS_H
#define BENCH_OPTS_H

#include <stdio.h>

#include "bench.h"

void bench_usage(FILE *out);
int bench_parse_options(int argc, char **argv, options_t *o, char *err);

/* Collective over MPI_COMM_WORLD: sets b->device and the default --impl set. */
int bench_resolve_mode(bench_t *b, char *err);

#endif
