/*
 * ncclAllReduce in hiar-bench, on b->stream over one NCCL communicator of all
 * ranks.  Built only with NCCL (HIAR_HAVE_NCCL).
 */
#ifndef BENCH_NCCL_H
#define BENCH_NCCL_H

#include <stddef.h>

#include "bench.h"

/* Collective over MPI_COMM_WORLD; failures end the job. */
void nccl_setup(bench_t *b);
run_t run_nccl(bench_t *b, size_t count);

#endif
