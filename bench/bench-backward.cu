/*
 * --train's "backward" kernel (bench-train.c): a kernel of a set time that
 * occupies few SMs, as the backward kernels beside which DDP allreduces its
 * gradient buckets.  It writes its bucket first (a copy of the bucket's
 * inputs: the allreduce must follow it, or the check fails), then spins on
 * %globaltimer, so its time depends neither on the clock rate nor on what
 * else runs on the GPU.  --compute-sms blocks of THREADS threads: the
 * block scheduler spreads so small a grid over as many SMs.
 */
#include <cuda_runtime.h>

#include "bench-backward.h"
#include "cuda/device.cuh"

/* Per block; with four 16-byte loads in flight per thread, 32 KB in flight per block. */
#define THREADS 512

__global__ void backward_kernel(uint4 *__restrict__ grad, const uint4 *__restrict__ src, size_t n16,
                                unsigned char *tail_dst, const unsigned char *tail_src, int tail, unsigned long long ns)
{
    uint64_t start = globaltimer_ns();
    size_t stride = (size_t)gridDim.x * blockDim.x, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    /* Four loads in flight per thread: so few blocks copy at a latency-bound rate otherwise. */
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        grad[i] = a;
        grad[i + stride] = b;
        grad[i + 2 * stride] = c;
        grad[i + 3 * stride] = d;
    }
    for (; i < n16; i += stride)
        grad[i] = src[i];
    if (blockIdx.x == 0 && (int)threadIdx.x < tail)
        tail_dst[threadIdx.x] = tail_src[threadIdx.x];
    while (globaltimer_ns() - start < ns)
        ;
}

extern "C" int bench_backward(void *grad, const void *src, size_t bytes, int blocks, unsigned long long ns,
                              void *stream)
{
    size_t n16 = bytes / 16;

    backward_kernel<<<blocks, THREADS, 0, (cudaStream_t)stream>>>(
        (uint4 *)grad, (const uint4 *)src, n16, (unsigned char *)grad + n16 * 16,
        (const unsigned char *)src + n16 * 16, (int)(bytes % 16), ns);
    return (int)cudaGetLastError();
}
