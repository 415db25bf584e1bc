/*
 * One-shot allreduce for small messages, LL protocol.
 *
 * Purpose: lowest latency.  Every rank pushes its input to every peer as
 * 16-byte packets {data, epoch, data, epoch}; a packet is valid when both
 * epoch words equal the call's epoch, so data and readiness travel in one
 * store and no barrier is needed.  Each rank then reduces all inputs in rank
 * order (same bits everywhere).
 * Cost: twice the bytes on the wire, so it pays only for small messages.
 * Requires: bytes <= HIAR_IPC_LL_MAX_BYTES.
 */
#include "device.cuh"

#define LL_THREADS 512

__device__ __forceinline__ void ll_store(uint4 *dst, uint4 v)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(dst), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}

__device__ __forceinline__ uint4 ll_load(const uint4 *src)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src)
                 : "memory");
    return v;
}

/* Packets that `sender` writes for call parity `parity` in the buffer at `base`. */
__device__ __forceinline__ uint4 *ll_area(const hiar_ipc_args_t &a, char *base, uint32_t parity, int sender)
{
    return reinterpret_cast<uint4 *>(base + a.ll_offset +
                                     ((size_t)parity * a.n + sender) * HIAR_IPC_LL_AREA_BYTES);
}

template <typename T>
__global__ void __launch_bounds__(LL_THREADS)
    oneshot_ll(hiar_ipc_args_t a, const char *in, char *out, size_t bytes, int esize, int op, int divisor)
{
    const uint32_t e = a.state->epoch + 1, parity = e & 1;
    const size_t packets = (bytes + 7) / 8, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    hiar_waiter w = waiter_begin(a);
    bool ok = true;

    /* Push everything first; peers are read in rotated order to spread traffic. */
    for (size_t i = first; i < packets; i += stride) {
        uint2 d = load_unit<8>(in, i * 8, bytes, esize);
        for (int k = 1; k < a.n; k++) {
            int p = (a.me + k) % a.n;
            ll_store(ll_area(a, a.base[p], parity, a.me) + i, make_uint4(d.x, e, d.y, e));
        }
    }
    for (size_t i = first; i < packets && ok; i += stride) {
        unit_acc<T, 8> acc;
        for (int p = 0; p < a.n && ok; p++) {
            uint2 d;
            if (p == a.me) {
                d = load_unit<8>(in, i * 8, bytes, esize);
            } else {
                const uint4 *src = ll_area(a, a.base[a.me], parity, p) + i;
                uint4 v = ll_load(src);
                while ((v.y != e || v.w != e) && (ok = waiter_poll(w)))
                    v = ll_load(src);
                d = make_uint2(v.x, v.z);
            }
            if (p == 0)
                acc.load(&d);
            else
                acc.fold(op, &d);
        }
        if (ok) {
            uint2 r;
            acc.store(&r, divisor);
            store_unit<8>(out, i * 8, bytes, esize, r);
        }
    }
    finish_call(a, e);
}

template <typename T>
static cudaError_t launch(const hiar_ipc_args_t *a, const void *in, void *out, size_t bytes, int esize,
                          hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t packets = (bytes + 7) / 8;
    unsigned threads = packets < LL_THREADS ? (unsigned)((packets + 31) / 32 * 32) : LL_THREADS;
    size_t blocks = (packets + threads - 1) / threads;

    if (blocks > HIAR_IPC_MAX_BLOCKS)
        blocks = HIAR_IPC_MAX_BLOCKS;
    oneshot_ll<T><<<(unsigned)blocks, threads, 0, stream>>>(*a, (const char *)in, (char *)out, bytes,
                                                             esize, (int)op, divisor);
    return cudaGetLastError();
}

cudaError_t hiar_ipc_launch_oneshot(const hiar_ipc_args_t *a, const void *in, void *out, size_t count,
                                    hiar_dtype_t dtype, hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t esize = hiar_dtype_size(dtype);
    return hiar_dispatch_dtype(dtype, [&](auto tag) {
        return launch<decltype(tag)>(a, in, out, count * esize, (int)esize, op, divisor, stream);
    });
}
