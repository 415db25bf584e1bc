/*
 * One-shot allreduce kernels: every rank receives every input and reduces
 * all of them, in rank order (so every rank gets the same bits).
 *
 * LL, for small messages.
 *
 * Purpose: lowest latency.  Every rank pushes its input to every peer in
 * 16-byte packets that carry their own readiness, so data and flag travel in
 * one store and no barrier is needed; each rank then reduces all inputs in
 * rank order (same bits everywhere).  Packet buffers hold a sentinel (all
 * bits set) wherever no packet is pending: a reader waits until a packet is
 * free of it, then writes the sentinel back.  Two packet formats:
 * - data only (float types, from LL_DATA_ONLY_MIN bytes, LL_DATA_ONLY_MIN_HOST
 *   over pinned host memory: ll.cuh): 16 data bytes,
 *   ready when no element is the sentinel, a NaN; inputs with exactly those
 *   bits are sent as the NaN one bit below, on every rank, the own input
 *   included, so results stay bit-identical;
 * - flagged (integer types, where every bit pattern is a value, and small
 *   messages): {data, 0, data, 0}, ready when neither flag word is the
 *   sentinel; twice the bytes on the wire.
 * The epoch's parity picks one of two packet buffers: a peer writes a buffer
 * again only in call e+2, after this rank's kernel e, sentinels included,
 * has completed (ipc.h).
 * Requires: bytes <= HIAR_IPC_LL_MAX_BYTES.
 *
 * Push, for medium messages (and large ones on 2 ranks, where it moves the
 * same bytes as two-shot with one exchange instead of two): per chunk, block
 * b pushes part b of its input into every peer's slot, signals, waits for
 * the peers' block b, and reduces part b.
 *
 * Pull (HIAR_ALGO=pull), the same pieces the other way round: block b copies
 * part b of its input into its own slot, signals, waits for the peers' block
 * b, and reduces part b reading each peer's slot over the link (in rank
 * order, the sum's).  Every write is local and every remote access a read: for
 * fabrics where posted writes are slow (2.7 GB/s behind some PCIe switches
 * while reads stay fast, ../shared/research/peers-2026-12.md).  A position
 * of the piece ring is written again (piece i + PUSH_RING) only after every
 * peer signalled piece i + PUSH_RING - 2, i.e. had reduced piece i; across
 * calls the slot parity rule of ipc.h holds as for push, readers for writers.
 */
#include <type_traits>

#include "ll.cuh"

/*
 * Block size: a thread moves one packet, blocks of LL_THREADS keep a small
 * message on few SMs, and from LL_SPREAD_PACKETS packets 32-thread blocks
 * spread it over more SMs, whose remote stores then go out in parallel.
 * Measured on 2 H200 in CUDA graphs, bf16, us, 128 / 32 threads per block
 * from 16 KB: 16 KB 2.46-2.50 / 2.39-2.40, 32 KB 2.52-2.53 / 2.49, 64 KB
 * 2.70-2.72 / 2.66-2.75, 128 KB 2.90-2.97 / 2.83; 64-thread blocks were
 * in between (2.46-2.47 at 16 KB).
 */
#define LL_THREADS 128
#define LL_SPREAD_PACKETS 2048

/* LONE: a warp waits in one lane's poll (ll_wait_warp; launch_ll says where). */
template <typename T, typename F, int OP, bool LONE = false>
__global__ void __launch_bounds__(HIAR_THREADS)
    oneshot_ll(hiar_ipc_args_t a, const char *in, char *out, size_t bytes, int esize, int divisor)
{
    mark(a, HIAR_MARK_ENTRY);
    const uint64_t e = begin_call(a);
    if (comm_failed(a.failed))
        return;
    mark(a, HIAR_MARK_BEGUN);
    const uint32_t parity = e & 1;
    const size_t packets = (bytes + F::DATA - 1) / F::DATA, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    hiar_waiter w = waiter_begin(a);
    typename F::data mine = {};
    bool ok = true;

    /* Push everything first, to the peers in rotated order to spread traffic.
     * A thread's first packet (in most calls its only one) stays in registers
     * for the reduction, which then loads nothing of its own after the wait
     * (no difference measured on 2 H200, in CUDA graphs).  Not ll.cuh's
     * ll_push and ll_gather, which the kernels with more steps share: with
     * them (the own packet then loaded before the wait) the kernel took
     * longer, one H100, bf16, graphs, 2026-12-06, two rounds, us at 128 /
     * 256 / 512 KB: 2 ranks 2.59-2.60 / 2.92 / 3.44-3.45 against 2.52 /
     * 2.77-2.79 / 3.17, 4 ranks at 64 / 128 / 256 KB 3.95-3.97 / 4.67 /
     * 5.42-5.44 against 3.73-3.81 / 4.22-4.30 / 4.68-4.72. */
    for (size_t i = first; i < packets; i += stride) {
        typename F::data d = F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize));
        mine = i == first ? d : mine;
        for (int k = 1; k < a.n; k++)
            ll_store(ll_area(a, a.base[(a.me + k) % a.n], parity, a.me) + i, F::pack(d));
    }
    mark(a, HIAR_MARK_PUSHED);
    for (size_t i = first; i < packets && ok; i += stride) {
        unit_acc<T, F::DATA> acc;
        for (int p = 0; p < a.n && ok; p++) {
            typename F::data d;
            if (p == a.me) {
                d = i == first ? mine : F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize));
            } else {
                uint4 *src = ll_area(a, a.base[a.me], parity, p) + i;
                uint4 v = ll_load(src);
                /* At compile time: the kernels without it keep the code they had before it. */
                if constexpr (LONE)
                    ok = ll_wait_warp<F>(src, v, w);
                else
                    while (!F::ready(v) && (ok = waiter_poll(w)))
                        v = ll_load(src);
                ll_store(src, make_uint4(LL_SENTINEL, LL_SENTINEL, LL_SENTINEL, LL_SENTINEL));
                d = F::unpack(v);
            }
            if (p == 0)
                acc.load(&d);
            else
                acc.fold(OP, &d);
        }
        if (ok) {
            typename F::data r;
            release_next_kernel(); /* every peer's packet i arrived: see device.cuh */
            acc.store(&r, OP == HIAR_AVG ? divisor : 1);
            store_unit<F::DATA>(out, i * F::DATA, bytes, esize, r);
        }
    }
    mark(a, HIAR_MARK_GATHERED);
    finish_call(a, e);
    mark_end(a, HIAR_MARK_LL);
}

/* Grid of an LL kernel for `packets` packets, at most max_blocks blocks. */
static void ll_grid(size_t packets, unsigned max_blocks, unsigned *blocks_out, unsigned *threads_out)
{
    size_t per_block = (packets + max_blocks - 1) / max_blocks;
    size_t threads = packets < LL_SPREAD_PACKETS ? LL_THREADS : 32;
    size_t blocks;

    threads = per_block <= threads ? threads : (per_block + 31) / 32 * 32;
    if (packets < threads)
        threads = (packets + 31) / 32 * 32;
    if (threads > HIAR_THREADS)
        threads = HIAR_THREADS;
    blocks = (packets + threads - 1) / threads;
    *blocks_out = (unsigned)(blocks < max_blocks ? blocks : max_blocks);
    *threads_out = (unsigned)threads;
}

/*
 * The latency path over groups in one kernel: LL in the group, then LL
 * between groups, packet by packet with no barrier in between.  A thread
 * reduces its packet i over the group (rank order, so every rank of the
 * group has the same bits G), pushes G to its counterparts in the other
 * groups, one set per shard it owns (a rank of a smaller group stands in
 * for it in several), and reduces their G's in group order: the same bits
 * on every rank of the comm.  G goes out in the packet format as an input
 * does (F::own), on every rank alike, own copy included.  Each transport
 * keeps its own epoch, parity and waits (ipc.h); a group of one has no
 * group stage (group.n == 1).
 */
template <typename T, typename F, int OP>
__global__ void __launch_bounds__(HIAR_THREADS)
    hier_ll(const __grid_constant__ hiar_ipc_hier_args_t h, const char *in, char *out, size_t bytes, int esize, int divisor)
{
    const bool grouped = h.group.n > 1;
    const uint64_t e0 = begin_call(h.between[0]), eg = grouped ? next_epoch(h.group) : 0;
    if (comm_failed(h.between[0].failed))
        return;
    const size_t packets = (bytes + F::DATA - 1) / F::DATA, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t eb[HIAR_IPC_MAX_GROUP];
    hiar_waiter wg = waiter_begin(h.group), wb = waiter_begin(h.between[0]);
    bool ok = true;

    for (int k = 0; k < h.nbetween; k++)
        eb[k] = k == 0 ? e0 : next_epoch(h.between[k]);
    for (size_t i = first; grouped && i < packets; i += stride)
        ll_push(h.group, eg & 1, i, F::pack(F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize))));
    for (size_t i = first; i < packets && ok; i += stride) {
        typename F::data mine = F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize)), g;
        unit_acc<T, F::DATA> acc;
        if (grouped) {
            ok = ll_gather<T, F>(h.group, eg & 1, i, mine, OP, acc, wg);
            acc.store(&g, 1);
            mine = F::own(g);
        }
        for (int k = 0; k < h.nbetween; k++)
            ll_push(h.between[k], eb[k] & 1, i, F::pack(mine));
        for (int k = 0; k < h.nbetween && ok; k++)
            ok = ll_gather<T, F>(h.between[k], eb[k] & 1, i, mine, OP, acc, wb);
        if (ok) {
            typename F::data r;
            release_next_kernel();
            acc.store(&r, OP == HIAR_AVG ? divisor : 1);
            store_unit<F::DATA>(out, i * F::DATA, bytes, esize, r);
        }
    }
    if (grouped)
        finish_call(h.group, eg);
    for (int k = 0; k < h.nbetween; k++)
        finish_call(h.between[k], eb[k]);
}

template <typename T, typename F>
static cudaError_t launch_hier_ll(const hiar_ipc_hier_args_t *h, const hiar_call_t *c, unsigned max_blocks)
{
    size_t bytes = hiar_call_bytes(c), packets = (bytes + F::DATA - 1) / F::DATA;
    unsigned blocks, threads;

    ll_grid(packets, max_blocks, &blocks, &threads);
    return hiar_dispatch_op(c->op, [&](auto o) {
        return hiar_ipc_launch(&h->between[0], hier_ll<T, F, decltype(o)::value>, blocks, threads,
                               (cudaStream_t)c->stream, *h, (const char *)c->sendbuf, (char *)c->recvbuf, bytes,
                               (int)c->esize, c->divisor);
    });
}

cudaError_t hiar_ipc_launch_hier_ll(const hiar_ipc_hier_args_t *h, const hiar_call_t *c)
{
    unsigned max_blocks = h->ll_blocks < HIAR_IPC_ONESHOT_BLOCKS ? h->ll_blocks : HIAR_IPC_ONESHOT_BLOCKS;

    return hiar_dispatch_dtype(c->dtype, [&](auto tag) {
        typedef decltype(tag) T;
        /* One format for the group and every set of counterparts, whose memory may differ: device memory's. */
        return hiar_call_bytes(c) >= LL_DATA_ONLY_MIN
                   ? launch_hier_ll<T, typename ll_large<T>::type>(h, c, max_blocks)
                   : launch_hier_ll<T, ll_flagged>(h, c, max_blocks);
    });
}

/*
 * Push one-shot, software-pipelined per block.  Block b takes pieces b, b+G,
 * b+2G, ... of the message; for its piece i it
 *
 *   pushes piece i+1 and signals i+1 | waits for the peers' piece i | reduces piece i
 *
 * so the links carry piece i+1 while the block reduces piece i.  Pieces live
 * in a ring of 4 buffers per block: when a block pushes piece i+1, it has
 * seen the peer's signal for i-1, given before the peer reduced i-2, hence
 * after it reduced i-3, the last user of that buffer.
 */
#define PUSH_RING 4

struct push_piece {
    size_t off, bytes; /* in the message */
    size_t ring;       /* offset of this piece's buffer of sender 0 in a slot area */
    uint64_t value;    /* flag value */
};

__device__ __forceinline__ push_piece piece_at(const hiar_ipc_args_t &a, uint64_t e, size_t total,
                                              size_t piece, uint32_t i)
{
    push_piece p;
    p.off = ((size_t)i * gridDim.x + blockIdx.x) * piece;
    p.bytes = total - p.off < piece ? total - p.off : piece;
    p.ring = a.data_offset + (size_t)(e & 1) * 2 * a.slot_bytes +
             ((size_t)blockIdx.x * PUSH_RING + i % PUSH_RING) * (size_t)a.n * piece;
    p.value = (e << 24) | (i + 1);
    return p;
}

/* Units per thread per round: several loads in flight before the first store. */
#define PUSH_UNROLL 4

/*
 * The block's part of piece p of its input where its readers find it, at
 * its sender place in the piece's buffer: pushed into every peer's slot, or
 * with PULL written into its own, where the peers read it.
 */
template <bool PULL>
__device__ __forceinline__ void hand_out(const hiar_ipc_args_t &a, const push_piece &p, const char *in, size_t total,
                                         int esize, size_t piece)
{
    move_units<PUSH_UNROLL>(
        0, p.bytes, [&](size_t off) { return load_unit<HIAR_UNIT>(in, p.off + off, total, esize); },
        [&](size_t off, const uint4 &u) {
            for (int k = PULL ? 0 : 1; k < (PULL ? 1 : a.n); k++)
                *reinterpret_cast<uint4 *>(a.base[(a.me + k) % a.n] + p.ring + (size_t)a.me * piece + off) = u;
        });
}

/* Piece p reduced over the ranks in rank order; peer q's part from this rank's slot, or with PULL from q's. */
template <typename T, bool PULL>
__device__ __forceinline__ void reduce_piece(const hiar_ipc_args_t &a, const push_piece &p, const char *in,
                                             char *out, size_t total, int esize, int op, int divisor,
                                             size_t piece)
{
    move_units<1>(
        0, p.bytes,
        [&](size_t off) {
            return reduce_unit<T>(a, in, p.off + off, total, esize, op, divisor, [&](int q) {
                return reinterpret_cast<const uint4 *>(a.base[PULL ? q : a.me] + p.ring + (size_t)q * piece + off);
            });
        },
        [&](size_t off, const uint4 &r) { store_unit<HIAR_UNIT>(out, p.off + off, total, esize, r); });
}

/* Push or pull (PULL): the pieces' loop, one exchange of each, two pieces out at once. */
template <typename T, bool PULL>
__global__ void __launch_bounds__(HIAR_THREADS)
    oneshot_pieces(hiar_ipc_args_t a, const char *in, char *out, size_t total, int esize, int op, int divisor,
                   size_t piece)
{
    const uint64_t e = begin_call(a);
    if (comm_failed(a.failed))
        return;
    hiar_waiter w = waiter_begin(a);
    push_piece cur = piece_at(a, e, total, piece, 0);

    hand_out<PULL>(a, cur, in, total, esize, piece);
    signal_peers(a, HIAR_IPC_FLAG_RS, cur.value);
    for (uint32_t i = 0; cur.off < total; i++) {
        push_piece next = piece_at(a, e, total, piece, i + 1);
        if (next.off < total) {
            hand_out<PULL>(a, next, in, total, esize, piece);
            signal_peers(a, HIAR_IPC_FLAG_RS, next.value);
        }
        if (!wait_peers(a, HIAR_IPC_FLAG_RS, cur.value, w))
            break;
        reduce_piece<T, PULL>(a, cur, in, out, total, esize, op, divisor, piece);
        cur = next;
    }
    finish_call(a, e);
}

/* Piece size: enough blocks for the links (<= HIAR_IPC_ONESHOT_BLOCKS pieces in
 * flight), each ring of 4 x n pieces within half the data slots; a unit at
 * least (slots of a small HIAR_BUFFER_SIZE then take fewer blocks). */
static size_t push_piece_bytes(const hiar_ipc_args_t *a, size_t bytes)
{
    size_t max = 2 * a->slot_bytes / (HIAR_IPC_ONESHOT_BLOCKS * PUSH_RING * (size_t)a->n) / HIAR_UNIT * HIAR_UNIT;
    size_t piece = (bytes / HIAR_IPC_ONESHOT_BLOCKS + HIAR_UNIT - 1) / HIAR_UNIT * HIAR_UNIT;
    size_t min = HIAR_THREADS * HIAR_UNIT;

    piece = piece < min ? min : piece;
    piece = piece < max ? piece : max;
    return piece < HIAR_UNIT ? HIAR_UNIT : piece;
}

template <typename T, bool PULL>
static cudaError_t launch_pieces(const hiar_ipc_args_t *a, const void *in, void *out, size_t bytes, int esize,
                                 hiar_op_t op, int divisor, cudaStream_t stream)
{
    size_t piece = push_piece_bytes(a, bytes), pieces = (bytes + piece - 1) / piece;
    size_t fit = 2 * a->slot_bytes / (PUSH_RING * (size_t)a->n * piece); /* blocks whose rings fit */
    unsigned blocks = (unsigned)(pieces < a->push_blocks ? pieces : a->push_blocks);

    blocks = blocks < fit ? blocks : (unsigned)(fit ? fit : 1);

    return hiar_ipc_launch(a, oneshot_pieces<T, PULL>, blocks, HIAR_THREADS, stream, *a, (const char *)in,
                           (char *)out, bytes, esize, (int)op, divisor, piece);
}

/*
 * Over pinned host memory, 2 ranks, from this size, in CUDA graphs, a warp
 * waits for its peer's packets in one lane's poll (ll_wait_warp).  A lone
 * poll adds a round trip after the packets land (the other lanes read
 * again); what it saves is the polls of whole warps, 512 bytes each across
 * PCIe, which crowd the link while a large message's packets and
 * write-backs cross it: so only for large messages, and only in graphs,
 * where the ranks' kernels start together.  Measured on one H100, 2 ranks
 * under MPS (HIAR_PINNED=1), bf16, us, every lane polling / one lane, in
 * six machine starts of 2026-12-06 (this VM's times moved by a microsecond
 * between them):
 * - start 1, graphs, two rounds: 64 KB 8.64, 8.61 / 7.74, 7.35 (every lane
 *   8.30-8.52 in six more runs), 32 KB 5.98, 5.86 / 5.95, 6.32, 16 KB
 *   4.66, 4.53 / 5.56, 5.72, 1-8 KB 3.31-3.62 / 4.39-5.32; eager 64 KB
 *   9.45, 9.16 / 9.91, 9.90 (8.92-9.51 in six more), and slower at every
 *   smaller size; every lane polling 3 more times before the lone poll:
 *   8.77 and 9.89 at 64 KB in graphs;
 * - start 2, graphs, one lone poll from 64 KB against from 32 KB, two
 *   rounds: 32 KB 6.18, 6.16 / 6.57, 6.29, 40 KB 7.03, 6.84 / 6.70, 6.84,
 *   48 KB 8.08, 7.79 / 7.33, 7.44, 56 KB 8.59, 8.56 / 8.26, 8.26; the
 *   kernel before (every lane) at 64 KB 9.69, 9.58, 9.58 against 8.64,
 *   8.97, 8.76 with the lone poll (and 8.60-8.82 in three more);
 * - start 3, this form (a kernel of its own, so the others' code is the
 *   same as before), graphs, three rounds: 48 KB 7.59-7.82 / 7.04-7.25,
 *   64 KB 9.24-9.38 / 8.48-8.69; over device memory (no lone poll) 1 KB-
 *   512 KB on 2 and 4 ranks within 0.1 of the build before;
 * - start 4, three rounds, one lane: graphs 64 KB 7.93, 7.67, 7.86, eager
 *   9.68, 9.40, 9.34;
 * - start 5, this form chosen at compile time, six rounds: graphs 64 KB
 *   11.43 (the first run of the start, 32 KB 8.68 in it too), 7.52, 7.69,
 *   7.47, 7.57, 7.36, 48 KB 6.75-6.80, 40 KB 6.17-6.34; eager 64 KB
 *   8.93-9.42;
 * - start 6, the warp sharing its first leader's deadline, four rounds:
 *   graphs 64 KB 7.99, 8.17, 8.10, 8.34, eager 10.04-10.18 (a slow start,
 *   as 2 and 3: the eager kernel is the same as before).
 */
#define LL_LONE_POLL_MIN_HOST (40 * 1024)

/* Formats with a lone-poll kernel: data-only packets, which the sizes it serves take (a kernel the less for
 * every other format). */
template <typename F> constexpr bool ll_lone_form = !std::is_same<F, ll_flagged>::value;

template <typename T, typename F>
static cudaError_t launch_ll(const hiar_ipc_args_t *a, const void *in, void *out, size_t bytes, int esize,
                             hiar_op_t op, int divisor, cudaStream_t stream)
{
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    unsigned blocks, threads;

    if (ll_lone_form<F> && a->host_memory && a->n == 2 && bytes >= LL_LONE_POLL_MIN_HOST) {
        cudaError_t err = cudaStreamIsCapturing(stream, &capture);
        if (err != cudaSuccess)
            return err;
    }
    ll_grid((bytes + F::DATA - 1) / F::DATA, a->ll_blocks, &blocks, &threads);
    return hiar_dispatch_op(op, [&](auto o) {
        auto kernel = capture != cudaStreamCaptureStatusNone ? oneshot_ll<T, F, decltype(o)::value, ll_lone_form<F>>
                                                             : oneshot_ll<T, F, decltype(o)::value, false>;
        return hiar_ipc_launch(a, kernel, blocks, threads, stream, *a, (const char *)in, (char *)out, bytes,
                               esize, divisor);
    });
}

template <typename T>
static cudaError_t launch(const hiar_ipc_args_t *a, const void *in, void *out, size_t bytes, int esize,
                          hiar_op_t op, int divisor, cudaStream_t stream)
{
    return ll_takes_data_only(*a, bytes)
               ? launch_ll<T, typename ll_large<T>::type>(a, in, out, bytes, esize, op, divisor, stream)
               : launch_ll<T, ll_flagged>(a, in, out, bytes, esize, op, divisor, stream);
}

cudaError_t hiar_ipc_launch_oneshot(const hiar_ipc_args_t *a, const hiar_call_t *c, hiar_kernel_t kernel)
{
    size_t bytes = hiar_call_bytes(c);
    int esize = (int)c->esize;
    cudaStream_t stream = (cudaStream_t)c->stream;

    return hiar_dispatch_dtype(c->dtype, [&](auto tag) {
        typedef decltype(tag) T;
        if (kernel == HIAR_KERNEL_LL)
            return launch<T>(a, c->sendbuf, c->recvbuf, bytes, esize, c->op, c->divisor, stream);
        if (kernel == HIAR_KERNEL_PULL)
            return launch_pieces<T, true>(a, c->sendbuf, c->recvbuf, bytes, esize, c->op, c->divisor, stream);
        return launch_pieces<T, false>(a, c->sendbuf, c->recvbuf, bytes, esize, c->op, c->divisor, stream);
    });
}

int hiar_ipc_oneshot_per_sm(int ll)
{
    int fewest = 1 << 30;

    if (!ll) {
        int push = fewest_per_sm([](auto t) { return oneshot_pieces<decltype(t), false>; });
        int pull = fewest_per_sm([](auto t) { return oneshot_pieces<decltype(t), true>; });
        return push < pull ? push : pull;
    }
    for (int op = 0; op < HIAR_OP_COUNT; op++)
        hiar_dispatch_op((hiar_op_t)op, [&](auto o) {
            typedef decltype(o) O;
            int flagged = fewest_per_sm([](auto t) { return oneshot_ll<decltype(t), ll_flagged, O::value>; });
            int large = fewest_per_sm(
                [](auto t) { return oneshot_ll<decltype(t), typename ll_large<decltype(t)>::type, O::value>; });
            int lone = fewest_per_sm([](auto t) {
                typedef typename ll_large<decltype(t)>::type F;
                return oneshot_ll<decltype(t), F, O::value, ll_lone_form<F>>;
            });
            int hier = fewest_per_sm([](auto t) { return hier_ll<decltype(t), ll_flagged, O::value>; });
            int hier_large = fewest_per_sm(
                [](auto t) { return hier_ll<decltype(t), typename ll_large<decltype(t)>::type, O::value>; });
            fewest = flagged < fewest ? flagged : fewest;
            fewest = large < fewest ? large : fewest;
            fewest = lone < fewest ? lone : fewest;
            fewest = hier < fewest ? hier : fewest;
            fewest = hier_large < fewest ? hier_large : fewest;
            return cudaSuccess;
        });
    return fewest;
}

int hiar_ipc_ptx_version(void)
{
    cudaFuncAttributes f;
    if (cudaFuncGetAttributes(&f, oneshot_ll<float, ll_flagged, HIAR_SUM>) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return f.ptxVersion;
}
