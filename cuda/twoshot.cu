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
    int parts;        /* parts of a shard: 1, or over groups one per counterpart (hier_twoshot) */
    size_t slot;      /* this call's and chunk's slot: its offset in every rank's allocation */
    uint64_t value;   /* flag value of this chunk: epoch and chunk number */
};

/* Bytes of a part of a shard in this chunk: the span over the parts, whole units. */
__device__ __forceinline__ size_t part_span(const ts_chunk &c)
{
    return hiar_ipc_part_bytes(c.span, c.parts);
}

/*
 * Byte range of this block's piece of part j of shard s of the chunk
 * (relative to the chunk), and the shard's start (hiar_ipc_piece).  With
 * several chunks, span is a full shard (cap), so a block uses the same slot
 * bytes in a short last chunk as in full ones: a peer's block b' may still
 * be reading its own bytes of this slot from two chunks ago; block b waited
 * only for block b.  A message of one chunk reuses no slot in the call, and
 * span is its largest shard, so that blocks are not left idle by a cap much
 * larger than the message.
 */
__device__ __forceinline__ void block_part(const ts_chunk &c, int s, int j, size_t *lo, size_t *hi, size_t *s_lo)
{
    hiar_ipc_piece(c.bytes, c.nshards, s, c.span, c.parts, j, (int)gridDim.x, (int)blockIdx.x, lo, hi, s_lo);
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
        for (int part = 0; part < c.parts; part++) {
            block_part(c, s, part, &lo, &hi, &s_lo);
            move_units<TS_UNROLL>(
                lo, hi, [&](size_t off) { return load_unit<HIAR_UNIT>(in, c.c0 + off, total, esize); },
                [&](size_t off, const uint4 &u) { *rs_at(a, c, s % a.n, a.me, s, a.n, off - s_lo) = u; });
        }
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
        block_part(c, s, 0, &lo, &hi, &s_lo);
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
        block_part(c, s, 0, &lo, &hi, &s_lo);
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
        for (int j = 0; j < c.parts; j++) {
            block_part(c, s, j, &lo, &hi, &s_lo);
            move_units<TS_UNROLL>(
                lo, hi, [&](size_t off) { return load_peer_written(ag_at(a, c, a.me, a.n, s, off - s_lo)); },
                [&](size_t off, const uint4 &u) { store_unit<HIAR_UNIT>(out, c.c0 + off, total, esize, u); });
        }
    }
}

/* The largest shard of a message of `bytes` in one chunk (whole units). */
__device__ __forceinline__ size_t one_chunk_span(size_t bytes, int nshards)
{
    size_t units = (bytes + HIAR_IPC_SHARD_UNIT - 1) / HIAR_IPC_SHARD_UNIT;
    return (units + nshards - 1) / nshards * HIAR_IPC_SHARD_UNIT;
}

/* Flag value of chunk `step` of call e. */
__device__ __forceinline__ uint64_t chunk_value(uint64_t e, uint32_t step)
{
    return (e << 24) | (step + 1);
}

/* Chunk `step` of call e. */
__device__ __forceinline__ ts_chunk chunk_at(const hiar_ipc_args_t &a, uint64_t e, uint32_t step, size_t total,
                                            size_t chunk_bytes, int nshards)
{
    ts_chunk c;
    c.c0 = (size_t)step * chunk_bytes;
    c.bytes = total - c.c0 < chunk_bytes ? total - c.c0 : chunk_bytes;
    c.nshards = nshards;
    c.parts = 1;
    c.k = (nshards + a.n - 1) / a.n;
    c.cap = chunk_bytes / nshards;
    c.span = total <= chunk_bytes ? one_chunk_span(total, nshards) : c.cap;
    /* Slot by call parity and chunk parity: see ipc.h for why two of each. */
    c.slot = a.data_offset + (size_t)((e & 1) * 2 + (step & 1)) * a.slot_bytes;
    c.value = chunk_value(e, step);
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
                          int blocks_log2, cudaStream_t stream)
{
    unsigned blocks = hiar_blocks_scaled((bytes < chunk ? bytes : chunk) / (size_t)nshards, blocks_log2);

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
                                     c->plan.blocks_log2, (cudaStream_t)c->stream);
    });
}

/* Chunk `step` of call e in the group, its shards cut in `parts`. */
__device__ __forceinline__ ts_chunk fused_chunk(const hiar_ipc_args_t &g, uint64_t e, uint32_t step, size_t total,
                                               size_t chunk_bytes, int nshards, int parts)
{
    ts_chunk c = chunk_at(g, e, step, total, chunk_bytes, nshards);
    c.parts = parts;
    return c;
}

/*
 * The bandwidth path over groups in one kernel.  The shards are the
 * hierarchical halves' (nshards = the largest group), the chunks its own
 * (hiar_ipc_hier_fused_chunk), and each shard is cut into one part per
 * group (c.parts), the same bytes on every rank, so shard s's counterparts
 * (set k: the owners of s, one per group, rank g of the set in group g)
 * split it.  Per chunk, block b of a rank:
 *
 *   step | does                                                    | waits first for
 *   -----+---------------------------------------------------------+-------------------------
 *   RS   | pushes its piece of every part of each shard it does    |
 *        | not own to the owner (the group's slots)                |
 *   AG   | copies the other shards of the chunk before to its      | the group's RS(b), which
 *        | output                                                  | also covers AG' before
 *   RS'  | reduces each owned shard's parts over the group (rank   |
 *        | order) and puts part j in counterpart j's slot          |
 *   red. | reduces its own part over the counterparts (group       | the counterparts' RS(b)
 *        | order), divided; writes it to its output and to every   |
 *        | counterpart and group peer                              |
 *   AG'  | copies the counterparts' parts to its output and passes | the counterparts' AG(b)
 *        | them on to its group peers                              |
 *
 * and after the last chunk a wait for the group's AG(b) and its copy: three
 * exchanges a chunk.  With a fourth (the group's AG of each chunk apart)
 * and chunks sized for any group (hiar_ipc_hier_chunk, 21 against 32 MB),
 * on one H200, 4 ranks as 0,1|2,3, bf16: 256 MB 2667 against 2327 us,
 * 64 MB 704 against 601.
 *
 * A part leaves its group once, and every rank gets the owner's bits.  In
 * a set's slot, counterpart i's partial of part j lies at [i] of j's slot,
 * part j gathered at [n + j], a part's bytes (hiar_ipc_part_bytes) each.
 * Slots are reused as in the two-shot kernel: block b writes a slot of
 * chunk t + 2 only after an exchange with every peer it writes to that the
 * peer signalled after reading that slot in chunk t (the group's gather
 * slot is read in chunk t + 1, before the group's RS(t + 2)).  Every block
 * signals in every chunk, so each transport's epoch argument (ipc.h)
 * holds.  The first wait, the group's, lets the next kernel in before the
 * counterparts are heard from (device.cuh release_next_kernel): harmless,
 * as the launch takes PDL from the first set of counterparts, which has it
 * only where each of its ranks, this one included, has a GPU of its own
 * (transport/ipc.c): the next kernel holds no SM a peer needs.
 *
 * Against the three kernels of the hierarchical halves around a two-shot
 * call between groups, it writes each owned shard to the output once, not
 * three times, and needs no launch between the steps (core/plan.c has the
 * numbers).
 */
__device__ __forceinline__ uint4 *part_at(const hiar_ipc_args_t &b, const ts_chunk &cb, size_t part_bytes, int rank,
                                          int index, size_t pos)
{
    return reinterpret_cast<uint4 *>(b.base[rank] + cb.slot + (size_t)index * part_bytes + pos);
}

/* RS': this block's pieces of owned shard s reduced over the group, part j to counterpart j. */
template <typename T>
__device__ __forceinline__ void partials_out(const hiar_ipc_args_t &g, const ts_chunk &c, const hiar_ipc_args_t &b,
                                             const ts_chunk &cb, size_t part_bytes, int s, const char *in,
                                             size_t total, int esize, int op)
{
    for (int k = 0; k < b.n; k++) {
        int j = (b.me + 1 + k) % b.n; /* own part last: its slot is local */
        size_t lo, hi, s_lo, p_lo;
        block_part(c, s, j, &lo, &hi, &s_lo);
        p_lo = s_lo + (size_t)j * part_span(c);
        move_units<TS_UNROLL>(
            lo, hi,
            [&](size_t off) {
                return reduce_unit<T>(g, in, c.c0 + off, total, esize, op, 0,
                                      [&](int p) { return rs_at(g, c, g.me, p, s, g.n, off - s_lo); });
            },
            [&](size_t off, const uint4 &u) { *part_at(b, cb, part_bytes, j, b.me, off - p_lo) = u; });
    }
}

/* The reduction: own part of shard s over the counterparts, to the output, the counterparts and the group. */
template <typename T>
__device__ __forceinline__ void reduce_part(const hiar_ipc_args_t &g, const ts_chunk &c, const hiar_ipc_args_t &b,
                                            const ts_chunk &cb, size_t part_bytes, int s, char *out, size_t total,
                                            int esize, int op, int divisor)
{
    size_t lo, hi, s_lo, p_lo;
    block_part(c, s, b.me, &lo, &hi, &s_lo);
    p_lo = s_lo + (size_t)b.me * part_span(c);
    move_units<TS_UNROLL>(
        lo, hi,
        [&](size_t off) {
            return fold_units<T>(b.n, op, divisor, [&](int i) {
                return load_peer_written(part_at(b, cb, part_bytes, b.me, i, off - p_lo));
            });
        },
        [&](size_t off, const uint4 &r) {
            store_unit<HIAR_UNIT>(out, c.c0 + off, total, esize, r);
            for (int k = 1; k < b.n; k++)
                *part_at(b, cb, part_bytes, (b.me + k) % b.n, b.n + b.me, off - p_lo) = r;
            push_to_all(g, c, nullptr, s, off, s_lo, total, esize, r);
        });
}

/* AG': the counterparts' parts of shard s to the output and the group. */
__device__ __forceinline__ void gather_parts(const hiar_ipc_args_t &g, const ts_chunk &c, const hiar_ipc_args_t &b,
                                             const ts_chunk &cb, size_t part_bytes, int s, char *out, size_t total,
                                             int esize)
{
    for (int k = 1; k < b.n; k++) {
        int j = (b.me + k) % b.n;
        size_t lo, hi, s_lo, p_lo;
        block_part(c, s, j, &lo, &hi, &s_lo);
        p_lo = s_lo + (size_t)j * part_span(c);
        move_units<TS_UNROLL>(
            lo, hi,
            [&](size_t off) { return load_peer_written(part_at(b, cb, part_bytes, b.me, b.n + j, off - p_lo)); },
            [&](size_t off, const uint4 &u) {
                store_unit<HIAR_UNIT>(out, c.c0 + off, total, esize, u);
                push_to_all(g, c, nullptr, s, off, s_lo, total, esize, u);
            });
    }
}

/* Signal every set of counterparts, then wait for each (all signals first: no set waits on another). */
__device__ __forceinline__ bool exchange_sets(const hiar_ipc_hier_args_t &h, const uint64_t *eb, int which,
                                              uint32_t step, hiar_waiter &w)
{
    for (int k = 0; k < h.nbetween; k++)
        signal_peers(h.between[k], which, chunk_value(eb[k], step));
    for (int k = 0; k < h.nbetween; k++)
        if (!wait_peers(h.between[k], which, chunk_value(eb[k], step), w))
            return false;
    return true;
}

template <typename T>
__global__ void __launch_bounds__(HIAR_THREADS, 2)
    hier_twoshot(const __grid_constant__ hiar_ipc_hier_args_t h, const char *in, char *out, size_t total, int esize,
                 int op, int divisor, size_t chunk_bytes, int nshards)
{
    const hiar_ipc_args_t &g = h.group;
    const bool grouped = g.n > 1;
    const uint64_t e0 = begin_call(h.between[0]), eg = grouped ? next_epoch(g) : 0;
    if (comm_failed(h.between[0].failed))
        return;
    const size_t part_bytes = hiar_ipc_part_bytes(chunk_bytes / (size_t)nshards, h.between[0].n);
    uint64_t eb[HIAR_IPC_MAX_GROUP];
    hiar_waiter wg = waiter_begin(g), wb = waiter_begin(h.between[0]);
    uint32_t step = 0;
    bool ok = true;

    for (int k = 0; k < h.nbetween; k++)
        eb[k] = k == 0 ? e0 : next_epoch(h.between[k]);
    for (; ok && (size_t)step * chunk_bytes < total; step++) {
        const ts_chunk c = fused_chunk(g, eg, step, total, chunk_bytes, nshards, h.between[0].n);
        if (grouped) {
            push_to_owners(g, c, in, total, esize);
            if (!(ok = exchange_signal(g, HIAR_IPC_FLAG_RS, c.value, wg)))
                break;
            if (step > 0)
                copy_others(g, fused_chunk(g, eg, step - 1, total, chunk_bytes, nshards, c.parts), out, total, esize);
        }
        for (int k = 0; k < h.nbetween; k++)
            partials_out<T>(g, c, h.between[k], chunk_at(h.between[k], eb[k], step, total, chunk_bytes, nshards),
                            part_bytes, g.me + k * g.n, in, total, esize, op);
        if (!(ok = exchange_sets(h, eb, HIAR_IPC_FLAG_RS, step, wb)))
            break;
        for (int k = 0; k < h.nbetween; k++)
            reduce_part<T>(g, c, h.between[k], chunk_at(h.between[k], eb[k], step, total, chunk_bytes, nshards),
                           part_bytes, g.me + k * g.n, out, total, esize, op, divisor);
        if (!(ok = exchange_sets(h, eb, HIAR_IPC_FLAG_AG, step, wb)))
            break;
        for (int k = 0; k < h.nbetween; k++)
            gather_parts(g, c, h.between[k], chunk_at(h.between[k], eb[k], step, total, chunk_bytes, nshards),
                         part_bytes, g.me + k * g.n, out, total, esize);
    }
    if (ok && grouped) {
        ts_chunk last = fused_chunk(g, eg, step - 1, total, chunk_bytes, nshards, h.between[0].n);
        if (exchange_signal(g, HIAR_IPC_FLAG_AG, last.value, wg))
            copy_others(g, last, out, total, esize);
    }
    if (grouped)
        finish_call(g, eg);
    for (int k = 0; k < h.nbetween; k++)
        finish_call(h.between[k], eb[k]);
}

/*
 * Shards of up to 2 MB (messages up to 4 MB on 2 groups) take at most half
 * the cap.  One H200, 4 ranks as 0,1|2,3 under MPS (cap 66), bf16, 33
 * blocks (HIAR_MAX_BLOCKS) against the cap, 2 rounds: 2 MB 56.3-57.0
 * against 64.6-65.9 us eager, 50.7 against 58.6 in a graph; 4 MB 77.1-77.5
 * against 81.8-83.0, 69.9 against 75.4; 8 MB lost (119.5 against 114.8),
 * and 16, 24 or 48 blocks did no better at 2-4 MB.
 */
#define HIER_HALF_CAP_SHARD (2u << 20)

cudaError_t hiar_ipc_launch_hier_twoshot(const hiar_ipc_hier_args_t *h, const hiar_call_t *c)
{
    size_t bytes = hiar_call_bytes(c), chunk = c->plan.chunk;
    size_t shard = (bytes < chunk ? bytes : chunk) / (size_t)c->nshards;
    unsigned blocks = hiar_blocks_scaled(shard, c->plan.blocks_log2);
    unsigned max_blocks = h->max_blocks < HIAR_IPC_MAX_BLOCKS ? h->max_blocks : HIAR_IPC_MAX_BLOCKS;

    if (shard <= HIER_HALF_CAP_SHARD)
        max_blocks = (max_blocks + 1) / 2;

    return hiar_dispatch_dtype(c->dtype, [&](auto tag) {
        return hiar_ipc_launch(&h->between[0], hier_twoshot<decltype(tag)>, blocks < max_blocks ? blocks : max_blocks,
                               HIAR_THREADS, (cudaStream_t)c->stream, *h, (const char *)c->sendbuf, (char *)c->recvbuf,
                               bytes, (int)c->esize, (int)c->op, c->divisor, chunk, c->nshards);
    });
}

int hiar_ipc_twoshot_per_sm(void)
{
    int flat = fewest_per_sm([](auto t) { return twoshot<decltype(t)>; });
    int hier = fewest_per_sm([](auto t) { return hier_twoshot<decltype(t)>; });

    return hier < flat ? hier : flat;
}
