/*
 * One-shot allreduce kernels: every rank receives every input and reduces
 * all of them, in rank order (so every rank gets the same bits).
 *
 * LL, for small messages.
 *
 * Purpose: lowest latency.  Every rank pushes its input to every peer as
 * 16-byte packets {data, epoch, data, epoch}; a packet is valid when both
 * epoch words equal the call's epoch, so data and readiness travel in one
 * store and no barrier is needed.  Each rank then reduces all inputs in rank
 * order (same bits everywhere).
 * Cost: twice the bytes on the wire, so it pays only for small messages.
 * Requires: bytes <= HIAR_IPC_LL_MAX_BYTES.
 *
 * Push, for medium messages (and large ones on 2 ranks, where it moves the
 * same bytes as two-shot with one exchange instead of two): per chunk, block
 * b pushes part b of its input into every peer's slot, signals, waits for
 * the peers' block b, and reduces part b.
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
__global__ void __launch_bounds__(HIAR_THREADS)
    oneshot_push(hiar_ipc_args_t a, const char *in, char *out, size_t total, int esize, int op, int divisor,
                 size_t chunk_bytes)
{
    const uint32_t e = a.state->epoch + 1;
    hiar_waiter w = waiter_begin(a);
    uint32_t step = 0;

    for (size_t c0 = 0; c0 < total; c0 += chunk_bytes, step++) {
        size_t bytes = total - c0 < chunk_bytes ? total - c0 : chunk_bytes, lo, hi;
        size_t slot = a.data_offset + (size_t)((e & 1) * 2 + (step & 1)) * a.slot_bytes;
        split((bytes + HIAR_UNIT - 1) / HIAR_UNIT, gridDim.x, blockIdx.x, &lo, &hi);
        for (size_t off = lo + threadIdx.x * HIAR_UNIT; off < hi; off += (size_t)blockDim.x * HIAR_UNIT) {
            uint4 u = load_unit<HIAR_UNIT>(in, c0 + off, total, esize);
            for (int k = 1; k < a.n; k++) {
                int p = (a.me + k) % a.n;
                *reinterpret_cast<uint4 *>(a.base[p] + slot + (size_t)a.me * chunk_bytes + off) = u;
            }
        }
        if (!exchange_signal(a, HIAR_IPC_FLAG_RS, ((uint64_t)e << 24) | (step + 1), w))
            break;
        for (size_t off = lo + threadIdx.x * HIAR_UNIT; off < hi; off += (size_t)blockDim.x * HIAR_UNIT) {
            unit_acc<T, HIAR_UNIT> acc;
            for (int p = 0; p < a.n; p++) {
                uint4 u = p == a.me ? load_unit<HIAR_UNIT>(in, c0 + off, total, esize)
                                    : load_peer_written(reinterpret_cast<const uint4 *>(
                                          a.base[a.me] + slot + (size_t)p * chunk_bytes + off));
                if (p == 0)
                    acc.load(&u);
                else
                    acc.fold(op, &u);
            }
            uint4 r;
            acc.store(&r, divisor);
            store_unit<HIAR_UNIT>(out, c0 + off, total, esize, r);
        }
    }
    finish_call(a, e);
}

template <typename T>
static cudaError_t launch_push(const hiar_ipc_args_t *a, const void *in, void *out, size_t bytes, int esize,
                               hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t chunk = a->slot_bytes / (size_t)a->n / HIAR_UNIT * HIAR_UNIT;

    oneshot_push<T><<<hiar_blocks_for(bytes < chunk ? bytes : chunk), HIAR_THREADS, 0, stream>>>(
        *a, (const char *)in, (char *)out, bytes, esize, (int)op, divisor, chunk);
    return cudaGetLastError();
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

cudaError_t hiar_ipc_launch_oneshot(const hiar_ipc_args_t *a, int ll, const void *in, void *out, size_t count,
                                    hiar_dtype_t dtype, hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t esize = hiar_dtype_size(dtype);
    return hiar_dispatch_dtype(dtype, [&](auto tag) {
        return ll ? launch<decltype(tag)>(a, in, out, count * esize, (int)esize, op, divisor, stream)
                  : launch_push<decltype(tag)>(a, in, out, count * esize, (int)esize, op, divisor, stream);
    });
}
