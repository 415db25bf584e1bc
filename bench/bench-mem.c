/* hiar-bench's GPU, stream and buffers, on the host or the device. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-mem.h"

/* A byte no expected result is made of: unwritten elements fail the check. */
#define POISON 0x7f

#ifdef HIAR_HAVE_CUDA
/* One GPU per rank: the rank's index on its host, round robin over the host's GPUs. */
void bench_device_setup(bench_t *b)
{
    MPI_Comm local;
    int local_rank, ngpu;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    CUDA_DIE(cudaGetDeviceCount(&ngpu));
    CUDA_DIE(cudaSetDevice(local_rank % ngpu));
    CUDA_DIE(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
}
#endif

/*
 * GPU memory in device mode, or, with `host`, pinned host memory there, so
 * that MPI's staging copies run as fast as a careful user's would.
 */
void *bench_alloc(const bench_t *b, size_t bytes, int host)
{
    void *p = NULL;

#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        CUDA_DIE(host ? cudaMallocHost(&p, bytes) : cudaMalloc(&p, bytes));
        return p;
    }
#else
    (void)b;
    (void)host;
#endif
    if (!(p = malloc(bytes)))
        bench_die("cannot allocate %zu bytes", bytes);
    return p;
}

void bench_release(const bench_t *b, void *p, int host)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        if (host)
            cudaFreeHost(p);
        else
            cudaFree(p);
        return;
    }
#else
    (void)b;
    (void)host;
#endif
    free(p);
}

/* ---- host <-> benchmark buffers */

void bench_stream_sync(const bench_t *b)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        CUDA_DIE(cudaStreamSynchronize(b->stream));
#else
    (void)b;
#endif
}

#ifdef HIAR_HAVE_CUDA
static void CUDART_CB sleep_on_stream(void *ms)
{
    struct timespec t = {0, (long)(intptr_t)ms * 1000000L};
    nanosleep(&t, NULL);
}
#endif

/* A host function that sleeps: the stream runs nothing else meanwhile, as behind a long kernel. */
void bench_stream_busy(const bench_t *b, int ms)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        CUDA_DIE(cudaLaunchHostFunc(b->stream, sleep_on_stream, (void *)(intptr_t)ms));
#else
    (void)b, (void)ms;
#endif
}

/* memcpy that also reaches GPU memory; complete on return. */
void bench_copy(const bench_t *b, void *dst, const void *src, size_t bytes)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        CUDA_DIE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, b->stream));
        bench_stream_sync(b);
        return;
    }
#else
    (void)b;
#endif
    memcpy(dst, src, bytes);
}

void bench_poison(const bench_t *b, void *buf, size_t bytes)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        CUDA_DIE(cudaMemsetAsync(buf, POISON, bytes, b->stream));
        bench_stream_sync(b);
        return;
    }
#else
    (void)b;
#endif
    memset(buf, POISON, bytes);
}
