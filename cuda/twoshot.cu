/*
 * Two-shot allreduce for medium and large messages, push-based, and its two
 * halves for the hierarchical path.
 *
 * Purpose: bandwidth.  Per chunk of the message (one data slot holds a chunk),
 * cut into nshards shards, shard s owned by rank s % n:
 *
 *   step | rank r, block b                                      | waits for
 *   -----+------------------------------------------------------+--------------------
 *   RS   | push part b of every shard it does not own to its    |
 *        | owner; signal RS(b) to every peer                    |
 *   red. | reduce part b of each owned shard over the ranks in  | RS(b) of every peer
 *        | rank order, write it to its output (and push it to   |
 *        | every peer when gathering); signal AG(b)             |
 *   AG   | copy part b of every other shard to its output (one | AG(b) of every peer
 *        | chunk late, while the next chunk's pushes drain)     |
 *
 * One group: RS and AG in one kernel, nshards = n.  Several groups: the RS
 * kernel leaves each owned shard in the output, the host reduces it with the
 * same shard of the other groups over MPI, and the AG kernel pushes it from
 * there (nshards = the largest group, so shards match across groups).
 * Block b only ever waits for block b of its peers, so blocks pipeline
 * independently; posted writes (push) suit PCIe.  Inputs are read from the
 * caller's buffer: no copy-in, no registration.
 *
 * Zero copy: where every rank's output lies at the same place of memory
 * registered with the comm (hiar_ipc_direct_t), the owner pushes its reduced
 * shards straight into the peers' outputs and AG only waits: no copy out of
 * the slots (measured on 2 H200, bf16: 335 against 309 GB/s at 64 MB, 357
 * against 349 at 1 GB).  The ranks learn it in the first chunk's RS exchange.
 * Requires: the same grid on every rank (it depends on the size only).
 */
#include "device.cuh"

struct ts_chunk {
    size_t c0, bytes; /* chunk position and size in the message */
    size_t cap;       /* bytes reserved per shard in a slot */
    size_t span;      /* bytes of a shard the blocks' parts are cut from */
    int nshards, k;   /* shards, and shards owned per rank (at most) */
    size_t slot;      /* this call's and chunk's slot: its offset in every rank's allocation */
    uint64_t value;   /* flag value of this chunk: epoch and chunk number */
};

/*
 * Byte range of this block's part of shard s of the chunk (relative to the
 * chunk), and the shard's start.  The part is cut from `span` bytes and then
 * clipped.  With several chunks, span is a full shard (cap), so a block uses
 * the same slot bytes in a short last chunk as in full ones: a peer's block
 * b' may still be reading its own bytes of this slot from two chunks ago;
 * block b waited only for block b.  A message of one chunk reuses no slot
 * in the call, and span is its largest shard, so every block gets work.
 */
__device__ __forceinline__ void block_part(const ts_chunk &c, int s, size_t *lo, size_t *hi, size_t *s_lo)
{
    size_t s_hi, rel_lo, rel_hi, len;
    hiar_ipc_shard_range(c.bytes, c.nshards, s, s_lo, &s_hi);
    hiar_range_scaled(c.span / HIAR_UNIT, HIAR_UNIT, gridDim.x, blockIdx.x, &rel_lo, &rel_hi);
    len = s_hi - *s_lo;
    *lo = *s_lo + (rel_lo < len ? rel_lo : len);
    *hi = *s_lo + (rel_hi < len ? rel_hi : len);
}

/* RS area: sender's part of owner's k-th shard; then the AG area, shard by shard. */
__device__ __forceinline__ uint4 *rs_at(const hiar_ipc_args_t &a, const ts_chunk &c, int owner, int sender, int s,
                                        int n, size_t shard_off)
{
    return reinterpret_cast<uint4 *>(a.base[owner] + c.slot + ((size_t)sender * c.k + s / n) * c.cap + shard_off);
}

__device__ __forceinline__ uint4 *ag_at(const hiar_ipc_args_t &a, const ts_chunk &c, int rank, int n, int s,
                                        size_t shard_off)
{
    return reinterpret_cast<uint4 *>(a.base[rank] + c.slot + ((size_t)n * c.k + s) * c.cap + shard_off);
}

/*
 * One unit in flight per thread.  Measured on 2 H200 at 1 GB: 4 units (2 in
 * reductions) made the kernel spill at 64 registers and lost 4% (331 against
 * 346 GB/s); without the two-blocks-per-SM bound it gained nothing (347).
 */
#define TS_UNROLL 1

__device__ __forceinline__ void push_to_owners(const hiar_ipc_args_t &a, const ts_chunk &c, const char *in,
                                               size_t total, int esize)
{
    for (int j = 1; j <= c.nshards; j++) {
        int s = (a.me + j) % c.nshards;
        size_t lo, hi, s_lo;
        if (s % a.n == a.me)
            continue;
        block_part(c, s, &lo, &hi, &s_lo);
        move_units<TS_UNROLL>(
            lo, hi, [&](size_t off) { return load_unit<HIAR_UNIT>(in, c.c0 + off, total, esize); },
            [&](size_t off, const uint4 &u) { *rs_at(a, c, s % a.n, a.me, s, a.n, off - s_lo) = u; });
    }
}

/* Unit off of the chunk, in shard s from s_lo, to every peer: its slot, or with d its output. */
__device__ __forceinline__ void push_to_all(const hiar_ipc_args_t &a, const ts_chunk &c, const hiar_ipc_direct_t *d,
                                            int s, size_t off, size_t s_lo, size_t total, int esize, const uint4 &r)
{
    for (int k = 1; k < a.n; k++) {
        int p = (a.me + k) % a.n;
        if (d)
            store_unit<HIAR_UNIT>(d->out[p], c.c0 + off, total, esize, r);
        else
            *ag_at(a, c, p, a.n, s, off - s_lo) = r;
    }
}

/*
 * Zero copy is agreed per block: in the first chunk, before its RS signal
 * (whose release carries it), a block puts its output's tag beside the flag
 * in every peer; after the RS wait it compares the peers' tags with its own.
 * Every rank sees the same tags, so all decide alike.
 */
__device__ __forceinline__ void offer_tag(const hiar_ipc_args_t &a, uint64_t tag)
{
    if (threadIdx.x == 0)
        for (int k = 1; k < a.n; k++)
            *reinterpret_cast<volatile uint64_t *>(a.base[(a.me + k) % a.n] +
                                                   hiar_ipc_tag_offset(blockIdx.x, a.me)) = tag;
}

__device__ __forceinline__ bool tags_agree(const hiar_ipc_args_t &a, uint64_t tag)
{
    __shared__ int same;
    if (threadIdx.x == 0) {
        bool all = tag != 0;
        for (int p = 0; p < a.n && all; p++)
            all = p == a.me || *reinterpret_cast<volatile const uint64_t *>(
                                   a.base[a.me] + hiar_ipc_tag_offset(blockIdx.x, p)) == tag;
        same = all;
    }
    __syncthreads();
    return same;
}

/* Reduces the owned shards; gather: also push the results to every peer (with d, to its output). */
template <typename T>
__device__ void reduce_owned(const hiar_ipc_args_t &a, const ts_chunk &c, const hiar_ipc_direct_t *d,
                             const char *in, char *out, size_t total, int esize, int op, int divisor, bool gather)
{
    for (int s = a.me; s < c.nshards; s += a.n) {
        size_t lo, hi, s_lo;
        block_part(c, s, &lo, &hi, &s_lo);
        move_units<TS_UNROLL>(
            lo, hi,
            [&](size_t off) {
                return reduce_unit<T>(a, in, c.c0 + off, total, esize, op, divisor,
                                      [&](int p) { return rs_at(a, c, a.me, p, s, a.n, off - s_lo); });
            },
            [&](size_t off, const uint4 &r) {
                store_unit<HIAR_UNIT>(out, c.c0 + off, total, esize, r);
                if (gather)
                    push_to_all(a, c, d, s, off, s_lo, total, esize, r);
            });
    }
}

/* AG without RS: the owned shards are already final in out. */
__device__ __forceinline__ void push_owned(const hiar_ipc_args_t &a, const ts_chunk &c, const char *out,
                                           size_t total, int esize)
{
    for (int s = a.me; s < c.nshards; s += a.n) {
        size_t lo, hi, s_lo;
        block_part(c, s, &lo, &hi, &s_lo);
        move_units<TS_UNROLL>(
            lo, hi, [&](size_t off) { return load_unit<HIAR_UNIT>(out, c.c0 + off, total, esize); },
            [&](size_t off, const uint4 &u) { push_to_all(a, c, nullptr, s, off, s_lo, total, esize, u); });
    }
}

__device__ __forceinline__ void copy_others(const hiar_ipc_args_t &a, const ts_chunk &c, char *out, size_t total,
                                            int esize)
{
    for (int s = 0; s < c.nshards; s++) {
        size_t lo, hi, s_lo;
        if (s % a.n == a.me)
            continue;
        block_part(c, s, &lo, &hi, &s_lo);
        move_units<TS_UNROLL>(
            lo, hi, [&](size_t off) { return load_peer_written(ag_at(a, c, a.me, a.n, s, off - s_lo)); },
            [&](size_t off, const uint4 &u) { store_unit<HIAR_UNIT>(out, c.c0 + off, total, esize, u); });
    }
}

/* The largest shard of a message of `bytes` in one chunk (whole units). */
__device__ __forceinline__ size_t one_chunk_span(size_t bytes, int nshards)
{
    size_t units = (bytes + HIAR_IPC_SHARD_UNIT - 1) / HIAR_IPC_SHARD_UNIT;
    return (units + nshards - 1) / nshards * HIAR_IPC_SHARD_UNIT;
}

/* Chunk `step` of call e. */
__device__ __forceinline__ ts_chunk chunk_at(const hiar_ipc_args_t &a, uint64_t e, uint32_t step, size_t total,
                                            size_t chunk_bytes, int nshards)
{
    ts_chunk c;
    c.c0 = (size_t)step * chunk_bytes;
    c.bytes = total - c.c0 < chunk_bytes ? total - c.c0 : chunk_bytes;
    c.nshards = nshards;
    c.k = (nshards + a.n - 1) / a.n;
    c.cap = chunk_bytes / nshards;
    c.span = total <= chunk_bytes ? one_chunk_span(total, nshards) : c.cap;
    /* Slot by call parity and chunk parity: see ipc.h for why two of each. */
    c.slot = a.data_offset + (size_t)((e & 1) * 2 + (step & 1)) * a.slot_bytes;
    c.value = (e << 24) | (step + 1);
    return c;
}

template <typename T>
__global__ void __launch_bounds__(HIAR_THREADS, 2)
    twoshot(hiar_ipc_args_t a, const __grid_constant__ hiar_ipc_direct_t d, const char *in, char *out,
            size_t total, int esize, int op, int divisor, size_t chunk_bytes, int nshards, int steps)
{
    const uint64_t e = begin_call(a);
    if (comm_failed(a.failed))
        return;
    const bool whole = steps == (HIAR_IPC_STEP_RS | HIAR_IPC_STEP_AG);
    hiar_waiter w = waiter_begin(a);
    uint32_t step = 0;
    bool direct = false, ok = true, copy_last = false;

    for (; (size_t)step * chunk_bytes < total; step++) {
        ts_chunk c = chunk_at(a, e, step, total, chunk_bytes, nshards);

        if (steps & HIAR_IPC_STEP_RS) {
            if (whole && step == 0)
                offer_tag(a, d.tag);
            push_to_owners(a, c, in, total, esize);
        } else {
            push_owned(a, c, out, total, esize);
        }
        /* The last chunk's copy out of the slots, while this chunk's pushes
         * drain (the signal below waits for them): on 2 H200, bf16, 1 GB
         * went from 347 to 356 GB/s and 256 MB from 339 to 345.  Its slot
         * is written again two chunks on, after this block's next signals. */
        if (copy_last)
            copy_others(a, chunk_at(a, e, step - 1, total, chunk_bytes, nshards), out, total, esize);
        if (steps & HIAR_IPC_STEP_RS) {
            if (!(ok = exchange_signal(a, HIAR_IPC_FLAG_RS, c.value, w)))
                break;
            if (whole && step == 0)
                direct = tags_agree(a, d.tag);
            reduce_owned<T>(a, c, direct ? &d : nullptr, in, out, total, esize, op, divisor, whole);
        }
        if (steps & HIAR_IPC_STEP_AG) {
            if (!(ok = exchange_signal(a, HIAR_IPC_FLAG_AG, c.value, w)))
                break;
            copy_last = !direct;
        }
    }
    if (ok && copy_last)
        copy_others(a, chunk_at(a, e, step - 1, total, chunk_bytes, nshards), out, total, esize);
    finish_call(a, e);
}

template <typename T>
static cudaError_t launch(const hiar_ipc_args_t *a, const hiar_ipc_direct_t *d, const void *in, void *out,
                          size_t bytes, int esize, hiar_op_t op, int divisor, int nshards, int steps, size_t chunk,
                          cudaStream_t stream)
{
    unsigned blocks = hiar_blocks_for((bytes < chunk ? bytes : chunk) / (size_t)nshards);

    return hiar_ipc_launch(a, twoshot<T>, blocks < a->max_blocks ? blocks : a->max_blocks, HIAR_THREADS, stream,
                           *a, *d, (const char *)in, (char *)out, bytes, esize, (int)op, divisor, chunk, nshards,
                           steps);
}

cudaError_t hiar_ipc_launch_twoshot(const hiar_ipc_args_t *a, const hiar_call_t *c, hiar_step_t steps, size_t chunk)
{
    static const hiar_ipc_direct_t none = {};
    const bool whole = steps == HIAR_STEP_ALLREDUCE;
    const hiar_ipc_direct_t *d = whole && c->out_window ? c->out_window : &none;

    return hiar_dispatch_dtype(c->dtype, [&](auto tag) {
        return launch<decltype(tag)>(a, d, c->sendbuf, c->recvbuf, hiar_call_bytes(c), (int)c->esize, c->op,
                                     whole ? c->divisor : 0, whole ? a->n : c->nshards, (int)steps, chunk,
                                     (cudaStream_t)c->stream);
    });
}

int hiar_ipc_twoshot_per_sm(void)
{
    return fewest_per_sm([](auto t) { return twoshot<decltype(t)>; });
}
