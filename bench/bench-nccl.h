/*
 * ncclAllReduce in hiar-bench, on b->stream over an NCCL communicator of all
 * ranks: plain (nccl) and on symmetric memory (nccl-sym).  Built only with
 * NCCL (HIAR_HAVE_NCCL).
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
/* nccl-sym: the same on a communicator of its own, with its buffers from ncclMemAlloc registered as
 * symmetric windows (b->nccl_sym, b->sym_send, b->sym_recv). */
#ifdef BENCH_NCCL_SYM
void bench_nccl_sym_setup(bench_t *b);
void bench_nccl_sym_teardown(bench_t *b);
#endif
/* ncclAllReduce of impl's buffers (buffer_of) on its communicator, on b->stream. */
run_t bench_nccl_run(bench_t *b, int impl, size_t count);

#endif
