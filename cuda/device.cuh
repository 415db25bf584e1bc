/*
 * Device helpers shared by the kernels: system-scope flags, bounded waits,
 * element-wise reduction of 8- and 16-byte units for every dtype, and loads
 * and stores that fall back to element granularity for unaligned buffers and
 * the tail of a message.
 */
#ifndef HIAR_DEVICE_CUH
#define HIAR_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "ipc.h"

/* ---- flags: release/acquire at system scope (peers are other GPUs) ---- */

__device__ __forceinline__ void flag_store_release(uint64_t *flag, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t flag_load_acquire(const uint64_t *flag)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(flag) : "memory");
    return v;
}

__device__ __forceinline__ uint64_t globaltimer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/*
 * Bounded spinning.  The clock and the host-mapped abort/status words are
 * read only every HIAR_POLL_EVERY polls: a read of host memory costs about a
 * microsecond over PCIe.  The clock starts at the first such check, not at
 * the kernel's start, which stays off the small-message critical path.  On
 * expiry the first waiter records HIAR_TIMEOUT in the status word the host
 * reads, and every waiter gives up; one that gives up also marks the comm
 * failed on the device, for the kernels after it (begin_call).
 */
#define HIAR_POLL_EVERY 1024u

struct hiar_waiter {
    uint64_t timeout_ns, deadline; /* deadline 0: not started */
    unsigned polls;
    const hiar_ipc_control_t *ctl;
    int *failed;
};

__device__ __forceinline__ hiar_waiter waiter_begin(const hiar_ipc_args_t &a)
{
    hiar_waiter w = {a.timeout_ns, 0, 0, a.ctl, a.failed};
    return w;
}

/* false: give up (timeout, abort, or another waiter already gave up). */
__device__ __forceinline__ bool waiter_poll(hiar_waiter &w)
{
    if (++w.polls % HIAR_POLL_EVERY)
        return true;
    volatile const int *abort_flag = &w.ctl->abort;
    volatile int *status = const_cast<volatile int *>(&w.ctl->status);
    if (!*abort_flag && !*status) {
        if (!w.deadline)
            w.deadline = globaltimer_ns() + w.timeout_ns;
        if (globaltimer_ns() <= w.deadline)
            return true;
        *status = HIAR_TIMEOUT;
    }
    *(volatile int *)w.failed = 1;
    return false;
}

/* Calls f with a value of the device type of dtype (f's template argument; base/dtypes.def). */
template <typename F> static cudaError_t hiar_dispatch_dtype(hiar_dtype_t dtype, F f)
{
    switch (dtype) {
#define HIAR_DTYPE(E, NAME, HOST_T, DEVICE_T, ...)                                                 \
    case HIAR_##E: return f(DEVICE_T());
#include "base/dtypes.def"
#undef HIAR_DTYPE
    default: return cudaErrorInvalidValue;
    }
}

/* An op as a type, for kernels that take it as a template argument. */
template <int OP> struct hiar_op_tag {
    enum { value = OP };
};

/*
 * Calls f with hiar_op_tag<op>.  Where latency counts, the op is a constant
 * of the kernel: with a switch per element on an argument, 1-64 KB took
 * 0.1-0.2 us longer through the LL kernel on 2 H200 in CUDA graphs (16 KB
 * 2.75 against 2.57 in one build with both).  HIAR_AVG folds as a sum
 * (op_apply) but is a tag of its own, so that only its kernels test the
 * divisor: 16 KB 2.52-2.56 with AVG as SUM, 2.46-2.50 without.
 */
template <typename F> static cudaError_t hiar_dispatch_op(hiar_op_t op, F f)
{
    switch (op) {
    case HIAR_PROD: return f(hiar_op_tag<HIAR_PROD>());
    case HIAR_MIN: return f(hiar_op_tag<HIAR_MIN>());
    case HIAR_MAX: return f(hiar_op_tag<HIAR_MAX>());
    case HIAR_AVG: return f(hiar_op_tag<HIAR_AVG>());
    default: return f(hiar_op_tag<HIAR_SUM>());
    }
}

/* ---- element arithmetic: half types accumulate in f32 ---- */

template <typename T> struct acc_of { typedef T type; };
template <> struct acc_of<__half> { typedef float type; };
template <> struct acc_of<__nv_bfloat16> { typedef float type; };

template <typename T> __device__ __forceinline__ typename acc_of<T>::type to_acc(T v) { return v; }
template <> __device__ __forceinline__ float to_acc<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_acc<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_acc(typename acc_of<T>::type v) { return v; }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* Integer sum/prod wrap like the host path (unsigned arithmetic, no UB). */
template <typename A> __device__ __forceinline__ A op_add(A a, A b) { return a + b; }
template <typename A> __device__ __forceinline__ A op_mul(A a, A b) { return a * b; }
#define HIAR_WRAPPING(T, U)                                                                        \
    template <> __device__ __forceinline__ T op_add<T>(T a, T b) { return (T)((U)a + (U)b); }      \
    template <> __device__ __forceinline__ T op_mul<T>(T a, T b) { return (T)((U)a * (U)b); }
HIAR_WRAPPING(int32_t, uint32_t)
HIAR_WRAPPING(int64_t, uint64_t)
HIAR_WRAPPING(int8_t, uint8_t)
#undef HIAR_WRAPPING

/* NaN-propagating min/max, as on the host (a != a only for NaN). */
template <typename A> __device__ __forceinline__ A op_apply(int op, A a, A b)
{
    switch (op) {
    case HIAR_PROD: return op_mul(a, b);
    case HIAR_MIN: return (a < b || a != a) ? a : b;
    case HIAR_MAX: return (a > b || a != a) ? a : b;
    default: return op_add(a, b); /* HIAR_SUM, HIAR_AVG */
    }
}

/* A unit of W bytes seen as elements of T, reduced element-wise. */
template <typename T, int W> struct unit_acc {
    enum { N = W / sizeof(T) };
    typename acc_of<T>::type v[N];

    __device__ __forceinline__ void load(const void *bits)
    {
        const T *e = reinterpret_cast<const T *>(bits);
#pragma unroll
        for (int i = 0; i < N; i++)
            v[i] = to_acc<T>(e[i]);
    }
    __device__ __forceinline__ void fold(int op, const void *bits)
    {
        const T *e = reinterpret_cast<const T *>(bits);
#pragma unroll
        for (int i = 0; i < N; i++)
            v[i] = op_apply(op, v[i], to_acc<T>(e[i]));
    }
    __device__ __forceinline__ void store(void *bits, int divisor) const
    {
        T *e = reinterpret_cast<T *>(bits);
#pragma unroll
        for (int i = 0; i < N; i++)
            e[i] = from_acc<T>(divisor > 1 ? v[i] / (typename acc_of<T>::type)divisor : v[i]);
    }
};

/* ---- unit loads/stores: vectors when aligned and whole, elements otherwise ---- */

template <int W> struct unit_bits;
template <> struct unit_bits<4> { typedef uint32_t type; };
template <> struct unit_bits<8> { typedef uint2 type; };
template <> struct unit_bits<16> { typedef uint4 type; };

/* Copies `bytes` (a multiple of esize, <= W) between unit buffers element by element. */
__device__ __forceinline__ void copy_elements(char *dst, const char *src, int bytes, int esize)
{
    for (int i = 0; i < bytes; i += esize) {
        switch (esize) {
        case 1: dst[i] = src[i]; break;
        case 2: *(uint16_t *)(dst + i) = *(const uint16_t *)(src + i); break;
        case 4: *(uint32_t *)(dst + i) = *(const uint32_t *)(src + i); break;
        default: *(uint64_t *)(dst + i) = *(const uint64_t *)(src + i); break;
        }
    }
}

/* Unit at byte offset off of a user buffer of `bytes`; missing bytes read as 0. */
template <int W>
__device__ __forceinline__ typename unit_bits<W>::type load_unit(const char *base, size_t off,
                                                                 size_t bytes, int esize)
{
    if (off + W <= bytes && ((uintptr_t)(base + off) % W) == 0)
        return *reinterpret_cast<const typename unit_bits<W>::type *>(base + off);
    /* Declared here, not above: u's address is taken, so it lives in local memory, and its zeroing
     * went before the branch, a 16-byte local store per unit on the full-unit path too. */
    typename unit_bits<W>::type u = {};
    int n = bytes - off < (size_t)W ? (int)(bytes - off) : W;
    copy_elements(reinterpret_cast<char *>(&u), base + off, n, esize);
    return u;
}

template <int W>
__device__ __forceinline__ void store_unit(char *base, size_t off, size_t bytes, int esize,
                                           const typename unit_bits<W>::type &u)
{
    if (off + W <= bytes && ((uintptr_t)(base + off) % W) == 0) {
        *reinterpret_cast<typename unit_bits<W>::type *>(base + off) = u;
        return;
    }
    /* A copy: the address taken here stays in this cold branch (taken of u, it put every caller's
     * unit in local memory). */
    typename unit_bits<W>::type t = u;
    int n = bytes - off < (size_t)W ? (int)(bytes - off) : W;
    copy_elements(base + off, reinterpret_cast<const char *>(&t), n, esize);
}

/* Reads a unit that peers wrote into this GPU's memory: bypass L1 (not coherent). */
__device__ __forceinline__ uint4 load_peer_written(const uint4 *p)
{
    return __ldcg(p);
}

/* ---- work split and block-wide signalling ---- */

/* Bytes a thread moves per access: 16-byte vectors. */
#define HIAR_UNIT 16
#define HIAR_THREADS 512

/* The blocks of 512 threads of kernel that fit one SM of the current device; 0 where CUDA cannot say. */
template <typename K> static int blocks_per_sm(K kernel)
{
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, HIAR_THREADS, 0) != cudaSuccess)
        cudaGetLastError();
    return n;
}

/*
 * The fewest blocks of 512 threads that fit one SM of the current device
 * over every dtype's instance of a kernel (kernel_of(T()) is T's); 1 where
 * CUDA cannot say.
 */
template <typename F> static int fewest_per_sm(F kernel_of)
{
    int fewest = 1 << 30;

    for (int d = 0; d < HIAR_DTYPE_COUNT; d++)
        hiar_dispatch_dtype((hiar_dtype_t)d, [&](auto tag) {
            int n = blocks_per_sm(kernel_of(tag));
            fewest = n < fewest ? n : fewest;
            return cudaSuccess;
        });
    return fewest > 0 ? fewest : 1;
}

/*
 * Blocks for `bytes` of work per rank, the same on every rank (it depends on
 * the size only; launchers cap it at the group's max_blocks): one per 16 KB
 * (two units per thread) up to 128, enough outstanding stores to fill
 * NVLink; past 8 MB, one per 64 KB up to HIAR_IPC_MAX_BLOCKS, two per SM
 * (__launch_bounds__ keeps the two-shot kernel within 64 registers).
 * Measured on 2 H200, bf16: at 1 GB 256 blocks gave 356 GB/s against 343
 * with 128 (359 against 356 once the two-shot kernel overlapped its copy
 * out of the slots with the next pushes); at 16 MB 128 were 6% faster.
 */
#define HIAR_BLOCKS_BASE 128

static inline unsigned hiar_blocks_for(size_t bytes)
{
    size_t blocks = bytes / (2 * HIAR_THREADS * HIAR_UNIT) + 1;

    if (blocks > HIAR_BLOCKS_BASE)
        blocks = bytes / (64 * 1024) > HIAR_BLOCKS_BASE ? bytes / (64 * 1024) : HIAR_BLOCKS_BASE;
    return (unsigned)(blocks < HIAR_IPC_MAX_BLOCKS ? blocks : HIAR_IPC_MAX_BLOCKS);
}

/* hiar_blocks_for(bytes) times 2^log2 (-1 to 1: tuning's block counts, plan.blocks_log2), at least 1. */
static inline unsigned hiar_blocks_scaled(size_t bytes, int log2)
{
    unsigned blocks = hiar_blocks_for(bytes);

    return log2 < 0 ? (blocks + 1) / 2 : log2 > 0 ? 2 * blocks : blocks;
}

/*
 * The units of [lo, hi) this thread owns (one in every blockDim.x): U of them
 * loaded, then the U stored, so that U loads are in flight at once; in a
 * plain loop the compiler cannot lift a load above the store before it (they
 * may alias), and one block per SM waits on one load per thread at a time.
 * load(off) returns a uint4; store(off, u) puts it where it goes.
 */
template <int U, typename L, typename S>
__device__ __forceinline__ void move_units(size_t lo, size_t hi, L load, S store)
{
    const size_t stride = (size_t)blockDim.x * HIAR_UNIT;

    for (size_t base = lo + threadIdx.x * HIAR_UNIT; base < hi; base += U * stride) {
        uint4 u[U];
#pragma unroll
        for (int j = 0; j < U; j++)
            if (base + j * stride < hi)
                u[j] = load(base + j * stride);
#pragma unroll
        for (int j = 0; j < U; j++)
            if (base + j * stride < hi)
                store(base + j * stride, u[j]);
    }
}

/* The units load(0), ..., load(n - 1) of T reduced in that order (the same bits wherever the order is), divided. */
template <typename T, typename L>
__device__ __forceinline__ uint4 fold_units(int n, int op, int divisor, L load)
{
    unit_acc<T, HIAR_UNIT> acc;
    uint4 r;

    for (int i = 0; i < n; i++) {
        uint4 u = load(i);
        if (i == 0)
            acc.load(&u);
        else
            acc.fold(op, &u);
    }
    acc.store(&r, divisor);
    return r;
}

/*
 * Unit at byte off of the message reduced over the ranks in rank order (the
 * same bits on every rank): this rank's from the input, peer p's from
 * peer(p), memory the peer wrote into this GPU.
 */
template <typename T, typename P>
__device__ __forceinline__ uint4 reduce_unit(const hiar_ipc_args_t &a, const char *in, size_t off, size_t total,
                                             int esize, int op, int divisor, P peer)
{
    /* fold_units' loop written out: through it, ptxas (sm_90, CUDA 13.0) gave the push one-shot kernel other
     * code (the double instance spilled 72 bytes instead of 28), and that kernel's speed was measured as is. */
    unit_acc<T, HIAR_UNIT> acc;
    uint4 r;

    for (int p = 0; p < a.n; p++) {
        uint4 u = p == a.me ? load_unit<HIAR_UNIT>(in, off, total, esize) : load_peer_written(peer(p));
        if (p == 0)
            acc.load(&u);
        else
            acc.fold(op, &u);
    }
    acc.store(&r, divisor);
    return r;
}

/* ---- the call's start and end; the epoch: see ipc.h ---- */

/*
 * Programmatic dependent launch (hiar_ipc_launch, sm_90): the next kernel on
 * the stream may be scheduled before this one ends, and waits for it in
 * begin_call; that hides most of a launch.  Every kernel starts in
 * begin_call, whose griddepcontrol.wait holds it until the kernel before it
 * has completed and its writes (the caller's input, the epoch copies) are
 * visible.  Without the launch attribute both instructions are no-ops.
 *
 * When to let the next kernel in: its blocks hold SMs while they wait, so
 * not before every block of this kernel has heard from the same block of
 * every peer.  Then all peers' blocks have started, and this kernel ends
 * without needing room on any GPU; earlier, the waiting blocks could keep a
 * peer's kernel on the same GPU (another process under MPS) from starting,
 * and both would wait until the timeout (seen at 4 ranks on 2 GPUs).  A
 * block's first sign of life from its peers is enough: the grid is the same
 * on every rank, and the first thread of a block to get there counts.  This
 * covers the peers of this kernel.  The kernels of other groups of the comm
 * on the same GPU get room from the launch caps (hiar_ipc_fit_caps), which
 * count the comm's ranks on each GPU; another communicator's kernels on it
 * are not counted unless HIAR_GPU_SHARERS says so (doc/params.md).
 */
__device__ __forceinline__ void release_next_kernel()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* The epoch of this call on a transport: on a second one of the same kernel, after begin_call waited once for all. */
__device__ __forceinline__ uint64_t next_epoch(const hiar_ipc_args_t &a)
{
    return a.state->epoch[blockIdx.x] + 1;
}

__device__ __forceinline__ uint64_t begin_call(const hiar_ipc_args_t &a)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    return next_epoch(a);
}

/*
 * Block-wide, after begin_call: whether a kernel of the comm before this one
 * gave up (waiter_poll).  Then this one must not run: its inputs may be stale
 * (the step before it did not finish), and a peer would take what it sends
 * for a result and return success.  Without it, with a peer stalled in one
 * group, the counterparts in the other group got SUCCESS after the timeout.
 * Thread 0's read decides for the block (a kernel on another stream may set
 * the word meanwhile); it goes out with the epoch's, from L2.
 */
__device__ __forceinline__ bool comm_failed(const int *failed)
{
    return __syncthreads_or(threadIdx.x == 0 && *(volatile const int *)failed);
}

/*
 * Phase marks (api.h hiar_ipc_marks_lines), in builds with
 * HIAR_KERNEL_MARKS: thread 0 of block 0 stamps the phase; mark_end, after
 * finish_call, adds each stamp's distance from the one before to the
 * kernel's sums and clears them (a phase the kernel has not is skipped).
 * Stamps go to memory, not registers: the fused norm kernel is at its 64
 * registers.  A transport's kernels overlap only where programmatic
 * dependent launch starts the next one early: it stamps its ENTRY then,
 * and nothing else before its griddepcontrol.wait returns (after this
 * kernel's mark_end), so BEGUN keeps this kernel's entry aside and plain
 * adds suffice.  Even so the marks change some
 * kernels' code (the plain LL kernels of 1-byte types take 64 registers
 * instead of 40, so fewer fit an SM and the LL caps may differ; bfloat16's
 * keep theirs), so they are built only on request: compare a marked build's
 * times with an unmarked one's.
 */
#ifdef HIAR_KERNEL_MARKS
__device__ __forceinline__ void mark(const hiar_ipc_args_t &a, int phase)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    if (phase == HIAR_MARK_BEGUN)
        a.state->mark_entry = a.state->mark_stamp[HIAR_MARK_ENTRY];
    a.state->mark_stamp[phase] = globaltimer_ns();
}

__device__ __forceinline__ void mark_end(const hiar_ipc_args_t &a, int kind)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    uint64_t *stamp = a.state->mark_stamp, *sum = a.state->mark_sum[kind], prev = a.state->mark_entry;

    stamp[HIAR_MARK_FINISHED] = globaltimer_ns();
    for (int p = HIAR_MARK_ENTRY + 1; p < HIAR_MARKS; p++)
        if (stamp[p]) {
            sum[p] += stamp[p] - prev;
            prev = stamp[p];
            stamp[p] = 0;
        }
    sum[0]++;
}
#else
__device__ __forceinline__ void mark(const hiar_ipc_args_t &, int) {}
__device__ __forceinline__ void mark_end(const hiar_ipc_args_t &, int) {}
#endif

/*
 * No atomic and no fence: the next call is a later kernel on the stream, so
 * it sees these stores; nothing in this kernel reads the copies it writes
 * (the block's own threads read theirs before the barrier).  A block that
 * gave up waiting lets the next kernel in here.
 */
__device__ __forceinline__ void finish_call(const hiar_ipc_args_t &a, uint64_t epoch)
{
    __syncthreads();
    release_next_kernel();
    if (threadIdx.x == 0)
        a.state->epoch[blockIdx.x] = epoch;
    if (blockIdx.x == 0)
        for (unsigned b = gridDim.x + threadIdx.x; b < HIAR_IPC_MAX_BLOCKS; b += blockDim.x)
            a.state->epoch[b] = epoch;
}

/* Block-wide: tell every peer that this block's writes before it are done. */
__device__ __forceinline__ void signal_peers(const hiar_ipc_args_t &a, int which, uint64_t value)
{
    __syncthreads();
    /* The release store is cumulative: the block's writes, ordered before it
     * by the barrier above, are visible to a peer that acquires the flag. */
    if (threadIdx.x == 0)
        for (int k = 1; k < a.n; k++) {
            int p = (a.me + k) % a.n;
            flag_store_release(
                reinterpret_cast<uint64_t *>(a.base[p] + hiar_ipc_flag_offset(which, blockIdx.x, a.me)), value);
        }
}

/*
 * Block-wide: wait until every peer's same block signalled at least value.
 * The outcome reaches the block through __syncthreads_and, not a shared
 * word: thread 0 could overwrite one in the next wait before a slow thread
 * read it (compute-sanitizer's racecheck saw that in the push kernel, whose
 * last piece waits twice with no barrier in between).
 */
__device__ __forceinline__ bool wait_peers(const hiar_ipc_args_t &a, int which, uint64_t value, hiar_waiter &w)
{
    bool ok = true;

    if (threadIdx.x == 0) {
        for (int k = 1; k < a.n && ok; k++) {
            int p = (a.me + k) % a.n;
            const uint64_t *flag =
                reinterpret_cast<const uint64_t *>(a.base[a.me] + hiar_ipc_flag_offset(which, blockIdx.x, p));
            /* "Below value" modulo 2^64: flag values wrap (ipc.h). */
            while ((int64_t)(flag_load_acquire(flag) - value) < 0 && (ok = waiter_poll(w)))
                ;
        }
        if (ok)
            release_next_kernel();
    }
    return __syncthreads_and(ok);
}

__device__ __forceinline__ bool exchange_signal(const hiar_ipc_args_t &a, int which, uint64_t value,
                                                hiar_waiter &w)
{
    signal_peers(a, which, value);
    return wait_peers(a, which, value, w);
}

#endif
