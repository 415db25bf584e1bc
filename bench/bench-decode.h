/* --decode (bench-decode.c): allreduce + residual add + RMSNorm steps in CUDA graphs. */
#ifndef BENCH_DECODE_H
#define BENCH_DECODE_H

#include "bench.h"

/* Every --hidden x --tokens shape, a row each on rank 0; returns the exit status (1: a wrong or failed step). */
int bench_decode(bench_t *b);

#endif
