/*
 * MPI_Allreduce as hiar-bench times it, the way a user would call it: half
 * types through a user op, device buffers staged through host memory unless
 * MPI takes them, avg as a sum and a division.  Errors abort (MPI's default).
 */
#ifndef BENCH_MPI_H
#define BENCH_MPI_H

#include <stddef.h>

#include "bench.h"

/* b->mpi_comm, type, op and staging; after the GPU and the buffers are set up. */
void mpi_setup(bench_t *b);
run_t run_mpi(bench_t *b, size_t count);
run_t run_mpi_shards(bench_t *b, size_t count);

#endif
