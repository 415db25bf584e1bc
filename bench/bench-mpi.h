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
void bench_mpi_setup(bench_t *b);
/* bench_impls' run of mpi, and of --split's mpi-shard and mpi-link (bench-split.h). */
run_t bench_mpi_run(bench_t *b, int impl, size_t count);
run_t bench_mpi_run_shards(bench_t *b, int impl, size_t count);
/* --split's link: where it sends from and receives into; after bench_split_setup. */
void bench_mpi_link_setup(bench_t *b);
void bench_mpi_link_teardown(bench_t *b);

#endif
