/*
 * LL packets: 16-byte stores that carry their own readiness (cuda/oneshot.cu
 * says how the one-shot kernels use them; cuda/norm.cu fuses a norm in).
 * Three formats: data only (float types: 16 data bytes, an element that is
 * the sentinel NaN sent as the NaN one bit below; pending while an element
 * is the sentinel), flagged ({data, tag, data, tag}: any bits, twice the
 * bytes on the wire; arrived when both words are the call's tag) and, over
 * pinned host memory, tagged ({data, data, data, tag}).  Over device memory
 * packet buffers hold the sentinel (all bits set) wherever no packet is
 * pending, and a reader writes it back when it took a packet, whatever the
 * format.  Over pinned host memory packets are tagged or flagged, and
 * nothing is written back (ll_writes_back).
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

/*
 * Integer types, and messages below LL_DATA_ONLY_MIN: 8 data bytes and the
 * call's tag twice per packet, a tag in each 8-byte half, so that a half
 * seen without the other reads as pending (as NCCL's LL packets do).
 */
struct ll_flagged {
    enum { DATA = 8 };
    typedef uint2 data;
    __device__ static uint2 own(uint2 d) { return d; }
    __device__ static uint4 pack(uint2 d, uint32_t tag) { return make_uint4(d.x, tag, d.y, tag); }
    __device__ static bool ready(uint4 v, uint32_t tag) { return v.y == tag && v.w == tag; }
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
    __device__ static uint4 pack(uint4 d, uint32_t) { return d; }
    __device__ static bool ready(uint4 v, uint32_t)
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
 * Over pinned host memory, types of 1-4 bytes: 12 data bytes and the call's
 * tag, so nothing is written back: over PCIe the sentinel's write-back was
 * as many bytes as the data, on the same link.  On one H100, 2 ranks under
 * MPS (HIAR_PINNED=1), bf16, in CUDA graphs, us at 8 / 16 / 32 / 64 KB
 * (2026-12-06): data-only packets written back 4.19 / 4.78 / 6.09 / 8.67,
 * the same not written back (a timing-only build) 3.65 / 3.77 / 4.12 /
 * 5.40; before, flagged against data-only packets, both written back: 16
 * KB 5.73-5.79 / 4.56-4.64.  A reader takes the 16-byte packet whole: an
 * aligned 16-byte store into host memory reaches it as one write inside
 * one cache line, which the host's memory orders whole against a read of
 * the line (the formats over device memory need only 8-byte halves).
 */
struct ll_tagged {
    enum { DATA = 12 };
    typedef uint3 data;
    __device__ static uint3 own(uint3 d) { return d; }
    __device__ static uint4 pack(uint3 d, uint32_t tag) { return make_uint4(d.x, d.y, d.z, tag); }
    __device__ static bool ready(uint4 v, uint32_t tag) { return v.w == tag; }
    __device__ static uint3 unpack(uint4 v) { return make_uint3(v.x, v.y, v.z); }
};

/* The format over pinned host memory: tagged where whole elements fill 12 bytes, else (8-byte types) flagged. */
template <bool EIGHT> struct ll_host_of { typedef ll_tagged type; };
template <> struct ll_host_of<true> { typedef ll_flagged type; };
template <typename T> struct ll_host : ll_host_of<sizeof(T) == 8> {};

/*
 * Call e's tag: never the sentinel (a buffer never written reads as
 * pending), and not call e - 2's, the last to write the same buffers.  Tags
 * repeat every 2^32 - 1 calls: a packet left unwritten that long, then read
 * by the call of its tag (over host memory, where nothing is written back),
 * would pass.
 */
__device__ __forceinline__ uint32_t ll_tag(uint64_t e)
{
    return (uint32_t)(e % LL_SENTINEL);
}

/* Whether a reader over the buffers of a writes the sentinel back: over device memory, where data-only packets
 * need it (and the other formats keep it), not over host memory, where only tags tell. */
__device__ __forceinline__ bool ll_writes_back(const hiar_ipc_args_t &a)
{
    return !a.host_memory;
}

/* The format of large messages of T: integer types have no spare bit pattern. */
template <typename T> struct ll_large { typedef ll_flagged type; };
template <> struct ll_large<__half> { typedef ll_data_only<2> type; };
template <> struct ll_large<__nv_bfloat16> { typedef ll_data_only<2> type; };
template <> struct ll_large<float> { typedef ll_data_only<4> type; };
template <> struct ll_large<double> { typedef ll_data_only<8> type; };

/*
 * launch(F()) with the packet format F of T: over pinned host memory (host)
 * H, tagged; over device memory data only where `large` and T has it, else
 * flagged.
 */
template <typename T, typename H = typename ll_host<T>::type, typename L>
static cudaError_t ll_format(bool host, bool large, L launch)
{
    if (host)
        return launch(H());
    return large ? launch(typename ll_large<T>::type()) : launch(ll_flagged());
}

/* Packets that `sender` writes for call parity `parity` in the buffer at `base`. */
__device__ __forceinline__ uint4 *ll_area(const hiar_ipc_args_t &a, char *base, uint32_t parity, int sender)
{
    return reinterpret_cast<uint4 *>(base + a.ll_offset +
                                     ((size_t)parity * a.n + sender) * HIAR_IPC_LL_AREA_BYTES);
}

/* Packet i of every peer of `a` in its call e (own: mine), reduced in rank order into acc; false: gave up. */
template <typename T, typename F>
__device__ __forceinline__ bool ll_gather(const hiar_ipc_args_t &a, uint64_t e, size_t i, typename F::data mine,
                                          int op, unit_acc<T, F::DATA> &acc, hiar_waiter &w)
{
    const uint32_t tag = ll_tag(e);
    bool ok = true;

    for (int p = 0; p < a.n && ok; p++) {
        typename F::data d = mine;
        if (p != a.me) {
            uint4 *src = ll_area(a, a.base[a.me], e & 1, p) + i;
            uint4 v = ll_load(src);
            while (!F::ready(v, tag) && (ok = waiter_poll(w)))
                v = ll_load(src);
            if (ll_writes_back(a))
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

/* Packet i of this rank's input to every peer of `a` in its call e, in rotated order (spreads the traffic). */
template <typename F>
__device__ __forceinline__ void ll_push(const hiar_ipc_args_t &a, uint64_t e, size_t i, typename F::data d)
{
    const uint4 packet = F::pack(d, ll_tag(e));

    for (int k = 1; k < a.n; k++)
        ll_store(ll_area(a, a.base[(a.me + k) % a.n], e & 1, a.me) + i, packet);
}

#endif
