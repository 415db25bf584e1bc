/*
 * Two-shot allreduce for medium and large messages, push-based.
 *
 * Purpose: bandwidth.  Per chunk of the message (one data slot holds a chunk):
 *
 *   step | rank r, block b                                   | waits for
 *   -----+---------------------------------------------------+---------------------
 *   RS   | push part b of shard s of its input to rank s      |
 *        | signal RS(b) to every peer                         |
 *   red. | reduce part b of shard r over ranks in rank order, | RS(b) of every peer
 *        | write it to its output and push it to every peer   |
 *        | signal AG(b) to every peer                         |
 *   AG   | copy part b of every other shard to its output     | AG(b) of every peer
 *
 * Block b only ever waits for block b of its peers, so blocks pipeline
 * independently; posted writes (push) suit PCIe.  Inputs are read from the
 * caller's buffer: no copy-in, no registration.
 * Requires: the same grid on every rank (it depends on the size only).
 */
#include "device.cuh"


struct ts_chunk {
    size_t c0, bytes;    /* chunk position and size in the message */
    size_t shard_cap;    /* bytes reserved per shard in a slot */
    char *slot[HIAR_IPC_MAX_RANKS]; /* this call's and chunk's slot on every rank */
    uint64_t value;      /* flag value of this chunk: epoch and chunk number */
};

/* Byte range of this block's part of shard s of the chunk (relative to the chunk). */
__device__ __forceinline__ void block_part(const ts_chunk &c, int n, int s, size_t *lo, size_t *hi)
{
    size_t units = (c.bytes + HIAR_UNIT - 1) / HIAR_UNIT, s_lo, s_hi;
    split(units, n, s, &s_lo, &s_hi);
    split((s_hi - s_lo) / HIAR_UNIT, gridDim.x, blockIdx.x, lo, hi);
    *lo += s_lo;
    *hi += s_lo;
}

/* RS area: where `sender` puts its part of shard owner's data; AG area after it. */
__device__ __forceinline__ uint4 *rs_at(const ts_chunk &c, int owner, int sender, size_t shard_off)
{
    return reinterpret_cast<uint4 *>(c.slot[owner] + (size_t)sender * c.shard_cap + shard_off);
}

__device__ __forceinline__ uint4 *ag_at(const ts_chunk &c, int rank, int n, size_t chunk_off)
{
    return reinterpret_cast<uint4 *>(c.slot[rank] + (size_t)n * c.shard_cap + chunk_off);
}

template <typename T>
__device__ void reduce_own_shard(const hiar_ipc_args_t &a, const ts_chunk &c, const char *in, char *out,
                                 size_t total, int esize, int op, int divisor)
{
    size_t lo, hi, s_lo, s_hi;
    block_part(c, a.n, a.me, &lo, &hi);
    split((c.bytes + HIAR_UNIT - 1) / HIAR_UNIT, a.n, a.me, &s_lo, &s_hi);
    for (size_t off = lo + threadIdx.x * HIAR_UNIT; off < hi; off += (size_t)blockDim.x * HIAR_UNIT) {
        unit_acc<T, HIAR_UNIT> acc;
        for (int p = 0; p < a.n; p++) {
            uint4 u = p == a.me ? load_unit<HIAR_UNIT>(in, c.c0 + off, total, esize)
                                : load_peer_written(rs_at(c, a.me, p, off - s_lo));
            if (p == 0)
                acc.load(&u);
            else
                acc.fold(op, &u);
        }
        uint4 r;
        acc.store(&r, divisor);
        store_unit<HIAR_UNIT>(out, c.c0 + off, total, esize, r);
        for (int k = 1; k < a.n; k++)
            *ag_at(c, (a.me + k) % a.n, a.n, off) = r;
    }
}

template <typename T>
__global__ void __launch_bounds__(HIAR_THREADS)
    twoshot(hiar_ipc_args_t a, const char *in, char *out, size_t total, int esize, int op, int divisor,
            size_t chunk_bytes)
{
    const uint32_t e = a.state->epoch + 1;
    hiar_waiter w = waiter_begin(a);
    bool ok = true;
    uint32_t step = 0;

    for (size_t c0 = 0; c0 < total && ok; c0 += chunk_bytes, step++) {
        ts_chunk c;
        c.c0 = c0;
        c.bytes = total - c0 < chunk_bytes ? total - c0 : chunk_bytes;
        c.shard_cap = chunk_bytes / a.n;
        /* Slot by call parity and chunk parity: see ipc.h for why two of each. */
        for (int p = 0; p < a.n; p++)
            c.slot[p] = a.base[p] + a.data_offset + (size_t)((e & 1) * 2 + (step & 1)) * a.slot_bytes;
        c.value = ((uint64_t)e << 24) | (step + 1);

        for (int k = 1; k < a.n; k++) {
            int s = (a.me + k) % a.n;
            size_t lo, hi, s_lo, s_hi;
            block_part(c, a.n, s, &lo, &hi);
            split((c.bytes + HIAR_UNIT - 1) / HIAR_UNIT, a.n, s, &s_lo, &s_hi);
            for (size_t off = lo + threadIdx.x * HIAR_UNIT; off < hi; off += (size_t)blockDim.x * HIAR_UNIT)
                *rs_at(c, s, a.me, off - s_lo) = load_unit<HIAR_UNIT>(in, c0 + off, total, esize);
        }
        ok = exchange_signal(a, HIAR_IPC_FLAG_RS, c.value, w);
        if (!ok)
            break;
        reduce_own_shard<T>(a, c, in, out, total, esize, op, divisor);
        ok = exchange_signal(a, HIAR_IPC_FLAG_AG, c.value, w);
        if (!ok)
            break;
        for (int k = 1; k < a.n; k++) {
            size_t lo, hi;
            block_part(c, a.n, (a.me + k) % a.n, &lo, &hi);
            for (size_t off = lo + threadIdx.x * HIAR_UNIT; off < hi; off += (size_t)blockDim.x * HIAR_UNIT)
                store_unit<HIAR_UNIT>(out, c0 + off, total, esize, load_peer_written(ag_at(c, a.me, a.n, off)));
        }
    }
    finish_call(a, e);
}

/* Largest chunk whose shards (n of them) and gathered copy fit one slot. */
static size_t chunk_bytes_for(size_t slot_bytes, int n)
{
    size_t granule = (size_t)HIAR_UNIT * (size_t)n;
    return slot_bytes / 2 / granule * granule;
}

template <typename T>
static cudaError_t launch(const hiar_ipc_args_t *a, const void *in, void *out, size_t bytes, int esize,
                          hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t chunk = chunk_bytes_for(a->slot_bytes, a->n);

    twoshot<T><<<hiar_blocks_for((bytes < chunk ? bytes : chunk) / (size_t)a->n), HIAR_THREADS, 0, stream>>>(
        *a, (const char *)in, (char *)out, bytes, esize, (int)op, divisor, chunk);
    return cudaGetLastError();
}

cudaError_t hiar_ipc_launch_twoshot(const hiar_ipc_args_t *a, const void *in, void *out, size_t count,
                                    hiar_dtype_t dtype, hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t esize = hiar_dtype_size(dtype);
    return hiar_dispatch_dtype(dtype, [&](auto tag) {
        return launch<decltype(tag)>(a, in, out, count * esize, (int)esize, op, divisor, stream);
    });
}
