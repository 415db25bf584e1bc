/*
 * ncclAllReduce in hiar-bench, on b->stream over one NCCL communicator of all
 * ranks.  Built only with NCCL (HIAR_HAVE_NCCL).
 */
#ifndef BENCH_NCCL_H
#define BENCH_NCCL_H

#include <stddef.h>

#include "bench.h"

#ifdef HIAR_HAVE_NCCL
/* NCCL's datatype for a hiar dtype. */
ncclDataType_t bench_nccl_type(hiar_dtype_t dtype);
#endif

/*
 * Collective over MPI_COMM_WORLD; failures end the job.  With --register, registers send and recv.
 * Where ranks share a GPU, makes no communicator (b->nccl stays NULL): run then returns RUN_NA.
 */
void bench_nccl_setup(bench_t *b);
/* Destroys the communicator, or aborts it after a failure (b->dead[IMPL_NCCL]). */
void bench_nccl_teardown(bench_t *b);
run_t bench_nccl_run(bench_t *b, int impl, size_t count);

#endif
