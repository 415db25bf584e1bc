/* --train (bench-train.c): DDP's gradient bucket allreduces beside the backward kernels of a training step. */
#ifndef BENCH_TRAIN_H
#define BENCH_TRAIN_H

#include "bench.h"

/* Collective; rank 0 prints a row per implementation; returns the exit status (1: a wrong or failed call). */
int bench_train(bench_t *b);

#endif
