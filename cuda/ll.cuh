/*
 * LL packets: 16-byte stores that carry their own readiness (cuda/oneshot.cu
 * says how the one-shot kernels use them; cuda/norm.cu fuses a norm in).
 * Packet buffers hold a sentinel (all bits set) wherever no packet is
 * pending: a reader waits until a packet is free of it, then writes the
 * sentinel back.  Two formats: data only (float types: 16 data bytes, an
 * element that is the sentinel NaN sent as the NaN one bit below) and
 * flagged ({data, 0, data, 0}: any bits, twice the bytes on the wire).
 */
#ifndef HIAR_LL_CUH
#define HIAR_LL_CUH

#include "device.cuh"

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

#define LL_SENTINEL 0xffffffffu

/* Integer types, and messages below LL_DATA_ONLY_MIN: 8 data bytes and two flag words per packet. */
struct ll_flagged {
    enum { DATA = 8 };
    typedef uint2 data;
    __device__ static uint2 own(uint2 d) { return d; }
    __device__ static uint4 pack(uint2 d) { return make_uint4(d.x, 0, d.y, 0); }
    __device__ static bool ready(uint4 v) { return v.y != LL_SENTINEL && v.w != LL_SENTINEL; }
    __device__ static uint2 unpack(uint4 v) { return make_uint2(v.x, v.z); }
};

/* Float types of S bytes: 16 data bytes per packet; an element with all bits set marks it pending. */
template <int S> struct ll_data_only {
    enum { DATA = 16 };
    typedef uint4 data;
    /* The bits to flip in words lo, hi (elements of 2 or 4 bytes, or one of 8)
     * so that no element is the sentinel: the lowest bit of each that is. */
    __device__ static uint2 flips(uint32_t lo, uint32_t hi)
    {
        if (S == 2)
            return make_uint2(__vcmpeq2(lo, LL_SENTINEL) & 0x00010001u, __vcmpeq2(hi, LL_SENTINEL) & 0x00010001u);
        if (S == 4)
            return make_uint2(lo == LL_SENTINEL, hi == LL_SENTINEL);
        return make_uint2((lo & hi) == LL_SENTINEL, 0);
    }
    __device__ static uint4 own(uint4 d)
    {
        uint2 a = flips(d.x, d.y), b = flips(d.z, d.w);
        return make_uint4(d.x ^ a.x, d.y ^ a.y, d.z ^ b.x, d.w ^ b.y);
    }
    __device__ static uint4 pack(uint4 d) { return d; }
    __device__ static bool ready(uint4 v)
    {
        uint2 a = flips(v.x, v.y), b = flips(v.z, v.w);
        return !(a.x | a.y | b.x | b.y);
    }
    __device__ static uint4 unpack(uint4 v) { return v; }
};

/*
 * Data-only packets from this size on.  Measured on 2 H200 in CUDA graphs,
 * bf16, us, flagged / data only, over three machine starts: 1-8 KB
 * 2.28-2.54 / 2.44-2.61 (why data only costs more there is not understood),
 * 16 KB 2.61-2.69 / 2.58-2.84, 32 KB 2.70-2.81 / 2.84-3.11, 64 KB
 * 2.88-2.97 / 2.96-3.10, 128 KB 3.35-3.43 / 3.11-3.15, 256 KB 4.16-4.27 /
 * 3.50-3.65.
 */
#define LL_DATA_ONLY_MIN (128 * 1024)
/*
 * Over pinned host memory every packet crosses PCIe and is polled there, so
 * the flagged format's doubled bytes cost from smaller sizes.  On one H100,
 * 2 ranks under MPS (HIAR_PINNED=1), bf16, us, flagged / data only, eager
 * and in graphs, two rounds: 8 KB 6.02-6.05 / 5.78-6.00 and 4.33-4.43 /
 * 4.00-4.09, 16 KB 6.77-6.98 / 6.19-6.29 and 5.73-5.79 / 4.56-4.64 (below
 * 8 KB within noise, graphs 1 KB 3.55-3.58 / 3.67-3.69).
 * Tried and not kept (2026-12-06, same setup, graphs, us at 8 / 16 / 32 /
 * 64 KB): packets of 12 data bytes and the call's epoch as a tag, which
 * nothing writes back (the write-back of the sentinel crosses PCIe too):
 * 4.26 / 4.87 / 6.30 / 9.48 against data only's 4.19 / 4.78 / 6.09 / 8.67
 * in one run and 3.65 / 4.29 / 5.96 / 8.52 in a later one of that machine
 * start; eager 64 KB 11.23 against 9.00-9.27.  A third more packets cost
 * more than the write-back saved.  (A build that skipped the write-back
 * with data-only packets took 5.40 at 64 KB, but its readers took the
 * packets of the call before last for this call's, which carried the same
 * data, without waiting: not a bound.)  Within the noise, one run each: a 100 ns sleep between
 * polls of host memory, 4.04 / 4.62 / 5.83 / 8.27 (eager 64 KB 9.09 against
 * 9.00); 128-thread blocks at 64 KB instead of 32-thread ones, 8.66 (the
 * unchanged kernel's two runs above differ by as much).  The write-back in
 * 8 bytes instead of 16 (a sentinel word is enough to mark a packet
 * pending): 20.5-20.9 us at 64 KB in graphs against 7.67-7.93, and, where
 * every pinned call wrote back 8 bytes, eager calls too, 10.6-10.9 at 32 KB
 * in graphs against 5.89-6.01 (partial writes of host memory across PCIe
 * cost far more than whole ones); it would also have given up
 * the check against a 16-byte store landing in two halves, which a full
 * sentinel keeps (each half then carries a sentinel of its own until
 * written).
 */
#define LL_DATA_ONLY_MIN_HOST (8 * 1024)

/*
 * Whether a message of `bytes` over the buffers of a takes data-only packets
 * (float types: ll_large).  Over pinned host memory from LL_DATA_ONLY_MIN_HOST
 * for 2 ranks, as measured (a group, or a set of 2 counterparts: the same
 * kernel over the same memory); more ranks as over device memory.
 */
__host__ __device__ static inline bool ll_takes_data_only(const hiar_ipc_args_t &a, size_t bytes)
{
    return bytes >= (a.host_memory && a.n == 2 ? LL_DATA_ONLY_MIN_HOST : LL_DATA_ONLY_MIN);
}

/* The format of large messages of T: integer types have no spare bit pattern. */
template <typename T> struct ll_large { typedef ll_flagged type; };
template <> struct ll_large<__half> { typedef ll_data_only<2> type; };
template <> struct ll_large<__nv_bfloat16> { typedef ll_data_only<2> type; };
template <> struct ll_large<float> { typedef ll_data_only<4> type; };
template <> struct ll_large<double> { typedef ll_data_only<8> type; };

/* Packets that `sender` writes for call parity `parity` in the buffer at `base`. */
__device__ __forceinline__ uint4 *ll_area(const hiar_ipc_args_t &a, char *base, uint32_t parity, int sender)
{
    return reinterpret_cast<uint4 *>(base + a.ll_offset +
                                     ((size_t)parity * a.n + sender) * HIAR_IPC_LL_AREA_BYTES);
}

/*
 * The wait of a warp for its packets at src (v: each lane's first read) in
 * one lane's poll: until every active lane's packet is ready, the highest
 * pending lane polls alone, then the others read theirs again.  Over pinned
 * host memory a poll of a whole warp reads 512 bytes across PCIe, and the
 * warps of a large message polling at once crowd the link the data crosses
 * (oneshot.cu, LL_LONE_POLL_MIN_HOST).  Every lane still checks its own
 * packet; the lone poll only decides when the warp reads again.  false: gave
 * up (every lane alike).
 */
template <typename F> __device__ __forceinline__ bool ll_wait_warp(const uint4 *src, uint4 &v, hiar_waiter &w)
{
    const unsigned m = __activemask();
    unsigned pending = __ballot_sync(m, !F::ready(v));

    while (pending) {
        const int leader = 31 - __clz(pending);
        int ok = 1;
        if ((int)(threadIdx.x & 31) == leader)
            while (!F::ready(v) && (ok = waiter_poll(w)))
                v = ll_load(src);
        if (!__shfl_sync(m, ok, leader))
            return false;
        /* One deadline for the warp, from its first leader's wait: a peer that lets the packets in one by one,
         * each just before a fresh leader's deadline, would otherwise stretch HIAR_TIMEOUT_MS up to 32 times. */
        const uint64_t deadline = __shfl_sync(m, w.deadline, leader);
        w.deadline = w.deadline ? w.deadline : deadline;
        if (!F::ready(v))
            v = ll_load(src);
        pending = __ballot_sync(m, !F::ready(v));
    }
    return true;
}

/* Packet i of every peer of `a` (own: mine), reduced in rank order into acc; false: gave up. */
template <typename T, typename F>
__device__ __forceinline__ bool ll_gather(const hiar_ipc_args_t &a, uint32_t parity, size_t i, typename F::data mine,
                                          int op, unit_acc<T, F::DATA> &acc, hiar_waiter &w)
{
    bool ok = true;

    for (int p = 0; p < a.n && ok; p++) {
        typename F::data d = mine;
        if (p != a.me) {
            uint4 *src = ll_area(a, a.base[a.me], parity, p) + i;
            uint4 v = ll_load(src);
            while (!F::ready(v) && (ok = waiter_poll(w)))
                v = ll_load(src);
            ll_store(src, make_uint4(LL_SENTINEL, LL_SENTINEL, LL_SENTINEL, LL_SENTINEL));
            d = F::unpack(v);
        }
        if (p == 0)
            acc.load(&d);
        else
            acc.fold(op, &d);
    }
    return ok;
}

__device__ __forceinline__ void ll_push(const hiar_ipc_args_t &a, uint32_t parity, size_t i, uint4 packet)
{
    for (int k = 1; k < a.n; k++)
        ll_store(ll_area(a, a.base[(a.me + k) % a.n], parity, a.me) + i, packet);
}

#endif
