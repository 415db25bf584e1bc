/* hiar-bench's GPU, stream and buffers, on the host or the device. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-mem.h"

#ifdef HIAR_HAVE_CUDA
#include <cuda.h>
#endif

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

int bench_gpu_ranks(int *most)
{
    struct cudaDeviceProp prop;
    char *all;
    int dev, nranks, mine = 0;

    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (!(all = malloc(sizeof prop.uuid * (size_t)nranks)))
        bench_die("cannot allocate the GPU table");
    CUDA_DIE(cudaGetDevice(&dev));
    CUDA_DIE(cudaGetDeviceProperties(&prop, dev));
    MPI_Allgather(&prop.uuid, sizeof prop.uuid, MPI_BYTE, all, sizeof prop.uuid, MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < nranks; r++)
        mine += memcmp(all + (size_t)r * sizeof prop.uuid, &prop.uuid, sizeof prop.uuid) == 0;
    free(all);
    MPI_Allreduce(&mine, most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return mine;
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
/*
 * The stream waits on the GPU for a word of pinned memory that a thread
 * sets `ms` later: to what is queued behind it, the same as a long kernel.
 * (A host function that sleeps blocks the stream too, but launches behind
 * one took 25-40 us each on the GPU machine, against 5 behind a kernel.)
 */
typedef CUresult (*wait_value_t)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

static struct {
    wait_value_t wait;
    volatile uint32_t *word; /* pinned, mapped */
    CUdeviceptr dev;
    uint32_t value;
    int ms;
} busy;

static void *release_later(void *arg)
{
    struct timespec t = {busy.ms / 1000, (long)(busy.ms % 1000) * 1000000L};
    uint32_t v = (uint32_t)(uintptr_t)arg;

    nanosleep(&t, NULL);
    busy.word[0] = v;
    return NULL;
}

static void busy_init(void)
{
    enum cudaDriverEntryPointQueryResult found;
    void *host;

    CUDA_DIE(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", (void **)&busy.wait, 12000, cudaEnableDefault,
                                              &found));
    if (found != cudaDriverEntryPointSuccess || !busy.wait)
        bench_die("--overlap: the driver has no cuStreamWaitValue32");
    CUDA_DIE(cudaHostAlloc(&host, sizeof(uint32_t), cudaHostAllocMapped));
    busy.word = host;
    busy.word[0] = 0;
    CUDA_DIE(cudaHostGetDevicePointer((void **)&busy.dev, host, 0));
}
#endif

void bench_stream_busy(const bench_t *b, int ms)
{
#ifdef HIAR_HAVE_CUDA
    pthread_t t;
    CUresult rc;

    if (!b->device)
        return;
    if (!busy.wait)
        busy_init();
    busy.ms = ms;
    busy.value++;
    rc = busy.wait((CUstream)b->stream, busy.dev, busy.value, CU_STREAM_WAIT_VALUE_GEQ);
    if (rc != CUDA_SUCCESS)
        bench_die("--overlap: cuStreamWaitValue32 failed (CUresult %d)", (int)rc);
    if (pthread_create(&t, NULL, release_later, (void *)(uintptr_t)busy.value) != 0)
        bench_die("--overlap: pthread_create failed");
    pthread_detach(t);
#else
    (void)b, (void)ms;
#endif
}

/*
 * The pinned-host transport moves data over PCIe like a device-to-host copy
 * does; its bandwidth is judged against copies measured in the same run,
 * the best of 5 of up to 256 MB: rank 0 alone on the bus (b->copy_gbps),
 * and every rank at once, each copying half as much both ways at the same
 * time, as the transport's ranks do (b->copy_shared_gbps, a rank's and
 * direction's rate): ranks that share a GPU share its link, so there a
 * rank's share is what its transport can reach.  A round lasts until its
 * slowest rank is done, as a call's time is the slowest rank's: with each
 * rank's own best round, a rank whose copies happened to run alone counted
 * the whole link (on one H100, 2 ranks, 64 MB: 12.6-49.5 GB/s in four runs
 * of one machine start).  The halves (recv's first to the host, the host's
 * second into send's) leave nothing the calls read: every check fills its
 * inputs again.
 */
#ifdef HIAR_HAVE_CUDA
static double best_copy_seconds(bench_t *b, size_t bytes, int both_ways, cudaStream_t up)
{
    size_t half = bytes / 2;
    double best = 0.0;

    for (int i = 0; i < 5; i++) {
        double t0, t;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (!both_ways && b->rank == 0)
            CUDA_DIE(cudaMemcpyAsync(b->host, b->recv, bytes, cudaMemcpyDeviceToHost, b->stream));
        if (both_ways) {
            CUDA_DIE(cudaMemcpyAsync(b->host, b->recv, half, cudaMemcpyDeviceToHost, b->stream));
            CUDA_DIE(cudaMemcpyAsync((char *)b->send + half, (char *)b->host + half, half, cudaMemcpyHostToDevice,
                                     up));
        }
        CUDA_DIE(cudaStreamSynchronize(b->stream));
        CUDA_DIE(cudaStreamSynchronize(up));
        t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = best == 0.0 || t < best ? t : best;
    }
    return best;
}
#endif

void bench_copy_reference(bench_t *b)
{
#ifdef HIAR_HAVE_CUDA
    size_t bytes = b->opt.max_bytes < ((size_t)256 << 20) ? b->opt.max_bytes : ((size_t)256 << 20);
    double alone, shared;
    cudaStream_t up;

    if (!b->device)
        return;
    CUDA_DIE(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
    alone = best_copy_seconds(b, bytes, 0, up);
    shared = best_copy_seconds(b, bytes, 1, up);
    CUDA_DIE(cudaStreamDestroy(up));
    b->copy_bytes = bytes;
    b->copy_gbps = b->rank == 0 && alone > 0.0 ? (double)bytes / alone / 1e9 : 0.0;
    b->copy_shared_gbps = shared > 0.0 ? (double)(bytes / 2) / shared / 1e9 : 0.0;
#else
    (void)b;
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
