/*
 * Where hiar-bench's buffers live: GPU memory in device mode, host memory
 * otherwise.  Each call hides which; copies and fills are complete on return.
 * CUDA failures end the job (bench_die).
 */
#ifndef BENCH_MEM_H
#define BENCH_MEM_H

#include <stddef.h>

#include "bench.h"

#ifdef HIAR_HAVE_CUDA
void bench_device_setup(bench_t *b);
/* Collective over MPI_COMM_WORLD: the ranks on this rank's GPU (by its UUID), *most those on any one GPU. */
int bench_gpu_ranks(int *most);
#endif
void *bench_alloc(const bench_t *b, size_t bytes, int host);
void bench_release(const bench_t *b, void *p, int host);
void bench_stream_sync(const bench_t *b);
/* Work of `ms` milliseconds on the stream (device buffers), ahead of what comes next; returns at once. */
void bench_stream_busy(const bench_t *b, int ms);
void bench_copy(const bench_t *b, void *dst, const void *src, size_t bytes);
void bench_poison(const bench_t *b, void *buf, size_t bytes);
/* Collective: pinned copies' rates, rank 0 alone (b->copy_gbps) and every rank both ways (b->copy_shared_gbps). */
void bench_copy_reference(bench_t *b);

#endif
