/*
 * Allreduce + residual add + RMSNorm (hiar_allreduce_rmsnorm).
 *
 * Fused: the LL one-shot kernel of one group (cuda/oneshot.cu) with a norm
 * epilogue, one launch.  A row is cut in `slices` parts, one block each
 * (rows x slices blocks, a row per block), or with one slice a block takes
 * rows b, b + G, ... in turn.  A block pushes every packet of its part to
 * every peer, then gathers and reduces each packet over the ranks in rank
 * order, adds the residual and writes r (into the residual), sums the
 * squares of its part, and with several slices trades that partial sum
 * with the row's other blocks (norm_row_sum: through the state, or in a
 * cluster through shared memory; summed in slice order: the same bits on
 * every rank); then it writes r * scale * w into out.
 * With a packet per thread (the slices below make it so where the blocks
 * allow) r and the weights stay in registers, and the loads of the
 * residual and the weights are issued before the wait for the peers; with
 * more, r goes through the residual or out and is read back by the thread
 * that wrote it.  Rows are whole packets (core/run.c
 * checks): no packet straddles two rows.  The block's threads agree on
 * every row's outcome (__syncthreads_or) before they use it, so a block
 * that gives up (timeout, abort) gives up whole.
 *
 * Slices: a block per row put a decode step of 1-4 tokens on 1-4 SMs, but
 * trading partial sums costs about a microsecond (L2 round trips), so a row
 * is cut only where a block of HIAR_THREADS would move more than a packet
 * per thread.  Measured on one H200, 2 ranks under MPS, bf16, in CUDA
 * graphs, us per step of the fused kernel: hidden 8192 (2048 flagged
 * packets a row), 1 token: one block 9.31, 16 slices 7.76; 4 tokens 9.67,
 * 8.08; 32 tokens (1024 data-only packets) 7.64, 4 slices 6.99; hidden
 * 4096, 16 tokens (512 packets): one block 4.80, 8 slices 5.47; 64 tokens
 * 5.61, 2 slices 6.61.  With r kept in registers (2026-12-03, same setup):
 * slices of 256 packets against 512 gave 4.84 against 4.68 at hidden 4096, 1
 * token, 6.02 against 5.43 at 8192, 1 token, 5.59 against 5.73 at 8192, 16
 * tokens; two packets kept per thread (slices of 1024) spilled at the 64
 * registers of two blocks per SM and gave 5.48 against 4.68 (4096, 1 token).
 * In thread-block clusters (sm_90, HIAR_CLUSTERS=1, the default): the
 * trade is stores into the other blocks' shared memory counted on their
 * mbarriers (norm_row_sum), not round trips through L2, so a call of up to
 * NORM_CLUSTER_ROWS rows is cut as the plain LL kernel
 * cuts a message, in blocks of 128 packets (at most 8 slices, the portable
 * cluster size): the push and the gather of a 1-4 token step spread over
 * 4-8 SMs instead of 1-2, where 16 warps of one block queued behind each
 * other's instructions (the marks of 2026-12-05, one H200, 2 ranks, 1-16
 * tokens x 4096, us per call in block 0: the fused kernel's push 1.10
 * against the plain LL kernel's 0.52, its gather 1.93 against 0.72, its
 * trade of partials at 4 ranks 1.03).  Measured on 2026-12-05, same setup,
 * bf16, us per step in clusters / without, in one build: 2 ranks x 4096,
 * 1 token 3.85 / 3.94, 4 tokens 3.87 / 4.11, 16 4.18 / 4.15, 32 4.81 / 4.20;
 * x 8192, 1 3.99 / 4.59, 4 4.13 / 4.86, 16 4.95 / 5.10, 32 5.74 / 5.29;
 * 4 ranks x 4096, 1 5.41 / 5.92, 4 5.87 / 6.25, 16 7.39 / 6.43, 32 7.47 /
 * 6.86; x 8192, 1 5.60 / 6.48, 4 6.17 / 6.69, 16 7.98 / 7.80: clusters
 * for 1-4 rows only.  That build wrote into the other blocks before a
 * barrier said they had started (compute-sanitizer's racecheck: "a block
 * that might not have entered yet"); the first barrier (norm_row_sum) came
 * after it.  The form that followed (racecheck clean; a second cluster
 * barrier after the trade, before the mailbox of norm_row_sum), on one
 * H100, same setup, 1 and 4 tokens, clusters / without: 2 ranks x 4096
 * 4.18 / 4.22, 4.26 / 4.39; x 8192 4.31 / 4.69, 4.64 / 5.08; 4 ranks x
 * 4096 5.89 / 6.28, 6.47 / 6.62; x 8192 6.03 / 6.85, 6.73 / 7.00.
 * Tried and not kept (2026-12-03, same setup, against this kernel in an
 * earlier machine start): the partials polled at once by a warp, a lane per
 * slice, took 4.47 against 4.64 at 2 ranks, 1 token x 4096, but 6.62
 * against 6.43 at 4 ranks, 1 x 4096, 7.56 against 7.02 at 4 ranks, 1 x
 * 8192, 5.99 against 5.73 at 2 ranks, 16 x 8192; with it, slices of 256
 * packets won at 1-4 tokens x 8192 (5.08 against 5.39 at 2 ranks, 7.17
 * against 7.56 at 4) and lost at 16-32 tokens x 8192 and at 4096.  One
 * barrier instead of three after the gather (the outcome ANDed in the sum
 * of squares' barrier, and no barrier to free its shared words after a
 * block's last row; one H100, 2026-12-06, two rounds, us, this kernel /
 * that): 2 ranks 1 x 4096 4.13, 4.14 / 4.30, 4.32, 16 x 4096 4.36, 4.38 /
 * 4.76, 4.76, 16 x 8192 5.35, 5.35 / 5.62, 5.63; 4 ranks 1 x 4096 5.91,
 * 5.89 / 6.17, 6.16, 1 x 8192 6.05, 6.03 / 6.35, 6.34: slower everywhere,
 * not understood (the kernel's registers or the order of its loads may
 * have changed with it).  A thread's pushed packet kept in registers for
 * its gather, as the plain LL kernel does, instead of loaded again (the
 * bf16 kernels then spill 28 bytes at the 64-register cap; same setup, two
 * rounds, this kernel / that): 2 ranks 1 x 4096 4.20, 4.28 / 4.17, 4.10, 4 x
 * 4096 4.30, 4.26 / 4.23, 4.22, 4 x 8192 4.62, 4.64 / 4.51, 4.51; 4 ranks
 * 1 x 4096 5.94, 5.94 / 5.86, 5.87, 4 x 4096 6.50, 6.51 / 6.38, 6.39, but
 * 16 x 4096 6.71, 6.73 / 6.82, 6.85 and 32 x 4096 7.16, 7.17 / 7.23, 7.25:
 * a tenth of a microsecond either way, not the 0.3-0.4 the 4-rank steps
 * miss 0.75 by.  In a later machine start, two rounds: clustered slices of
 * 64 packets instead of 128 (2 ranks x 4096 on 8 SMs instead of 4) 4.19-
 * 4.24 against 4.17-4.26 at 1 x 4096 and 4.48-4.54 against 4.25-4.35 at 4 x
 * 4096 (4 ranks already at the 8-slice cap: the same); with data-only
 * packets at 4 ranks, 8 slices of 64, 6.54-6.55 against 5.89-5.90 at 1 x
 * 4096 and 6.61 against 6.03-6.04 at 1 x 8192; the kept packet with slices
 * of 64, 4.12-4.21 at 2 ranks 1 x 4096 and 5.85 / 6.38 at 4 ranks 1 / 4 x
 * 4096 against 5.89-5.90 / 6.46-6.47, but 6.82 against 6.72-6.73 at 16 x
 * 4096.
 *
 * By rows (larger calls, in place of the push or two-shot kernel; pull,
 * chosen where posted writes are slow, stays unfused), one launch: rows
 * are cut in n contiguous ranges, range p owned by rank p. A rank pushes
 * every row it does not own into its owner's slot; after one signal the
 * owner reduces its rows over the ranks in rank order, adds its residual,
 * takes the row's scale (1 / rms) and writes r and the normalised row at
 * home, and pushes r and the scale into every peer's slot; after a second
 * signal a rank copies r into its residual and writes r * scale * w into
 * out for the rows of the others. No row is normalised twice, and a row
 * crosses the fabric twice per peer, as in the two-shot kernel. The
 * residual of a row is its owner's: in tensor parallelism every rank holds
 * the same residual (doc/guide.md). Block b takes rows b, b + G, ... of
 * every owner's range, on every rank: block b waits only for block b.
 *
 * Unfused: norm_rows (cuda/norm.cuh) after the allreduce, on the stream.
 */
#include "cuda/check.h"
#include "ll.cuh"
#include "norm.cuh"

/* Packets of a slice: one per thread of a full block (see above); in clusters, of a block of LL_THREADS, as
 * the plain LL kernel's, at most NORM_CLUSTER_MAX slices (the portable cluster size), for calls of at most
 * NORM_CLUSTER_ROWS rows (see above). */
#define NORM_SLICE_PACKETS HIAR_THREADS
#define NORM_CLUSTER_SLICE_PACKETS 128
#define NORM_CLUSTER_MAX 8
#define NORM_CLUSTER_ROWS 4

/*
 * The two halves of a barrier of every thread of the cluster.  A block may
 * write into another's shared memory only once that block has arrived at a
 * barrier (it has started: CUDA's rule for distributed shared memory); the
 * mailbox's init is fenced apart (mailbox_init), so the arrival is relaxed.
 */
__device__ __forceinline__ void cluster_arrive()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void cluster_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

/*
 * A block's mailbox in a cluster: a word per slice of its row (the slice's
 * partial sum of squares and its outcome), written by the row's blocks with
 * st.async, and the mbarrier that counts their bytes.  The block's phase
 * completes once every word is in, with the words visible to the threads
 * that wait on it; then no block writes into it again, so it may exit
 * without a barrier at the end.
 */
struct norm_mailbox {
    unsigned long long bar;
    unsigned long long word[NORM_CLUSTER_MAX];
};

/* A shared variable's address in the shared window (what mbarrier, mapa and st.async take). */
__device__ __forceinline__ uint32_t shared_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Thread 0, before the block's first cluster arrival: the mbarrier takes one arrival, visibly to the cluster. */
__device__ __forceinline__ void mailbox_init(norm_mailbox &m)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_addr(&m.bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/* Thread 0: the phase's one arrival, expecting `bytes` (before or after they come: the count may go below 0). */
__device__ __forceinline__ void mailbox_expect(norm_mailbox &m, uint32_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_addr(&m.bar)), "r"(bytes)
                 : "memory");
#endif
}

/* v into word `slot` of the mailbox of cluster rank `rank` (the same variable there), counted on its mbarrier. */
__device__ __forceinline__ void mailbox_put(norm_mailbox &m, unsigned slot, unsigned rank, unsigned long long v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t word, bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(word) : "r"(shared_addr(&m.word[slot])), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bar) : "r"(shared_addr(&m.bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(word), "l"(v),
                 "r"(bar)
                 : "memory");
#endif
}

/*
 * Until the mailbox's first phase completes: it serves one trade, so a block
 * of a cluster has one row (launch_fused).  Unbounded: every block of the
 * cluster writes its word once its own bounded waits are over.
 */
__device__ __forceinline__ void mailbox_wait(norm_mailbox &m)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t done;
    do
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; "
                     "selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(shared_addr(&m.bar))
                     : "memory");
    while (!done);
#endif
}

/*
 * The row's sum of squares from its `slices` blocks' partials (this block's
 * is `mine`), summed in slice order; ok: this block's outcome so far (the
 * same on all its threads).  Returns whether every block of the row got
 * there (false: give up).  With several slices a block has one row
 * (norm_slices).
 *
 * In a cluster (one per row: rank = slice), every block set up its mailbox
 * and arrived at a cluster barrier when it began (oneshot_ll_norm); it
 * waits for it here, so that all have started and their mailboxes are
 * ready, then thread s puts this block's partial and outcome into slice s's
 * mailbox, and every thread waits for its own block's mailbox and sums it.
 * Every block of the cluster takes part, one that gave up or found the comm
 * failed included: so every mailbox fills, and none is written after its
 * block has exited or before it has started.
 * The mailbox replaced a second cluster barrier (its release arrival
 * ordered the block's earlier stores before it, the pushes to the peers and
 * the residual among them: the likely cost).  One H100, 2026-12-06, under
 * MPS, bf16, in CUDA graphs, two rounds, us per step, barrier / mailbox: 2
 * ranks x 4096 1 token 4.25-4.27 / 4.03-4.04, 4 tokens 4.27-4.30 /
 * 3.96-3.98, x 8192 1 token 4.27-4.33 / 4.01; 4 ranks x 4096 1 token
 * 5.90-5.91 / 5.42-5.43, 4 tokens 6.47 / 5.94, x 8192 1 token 6.03 /
 * 5.61-5.62, 4 tokens 6.72-6.75 / 6.23-6.25.  Skipping the trade (a probe,
 * wrong sums) gave 4.95 at 4 ranks x 4096, 1 token: the barrier's trade
 * cost a microsecond.  Tried and slower than the barrier: thread 0 polling
 * its mailbox, written with relaxed 64-bit stores (a block then needs a
 * barrier before it exits, so that none writes into it after): 6.88 there.
 *
 * Else through global memory: partials published with the call's epoch and
 * polled by thread 0; a block that gave up publishes nothing, and the others
 * give up at their bound.
 */
__device__ __forceinline__ bool norm_row_sum(const hiar_ipc_args_t &a, uint64_t e, unsigned slices, bool clustered,
                                             bool ok, float mine, float *sum, norm_mailbox &mail, hiar_waiter &w)
{
    __shared__ float total;
    __shared__ int fine;
    volatile uint64_t *partial = a.state->norm_partial;
    const uint32_t tag = (uint32_t)e;

    if (slices == 1) {
        *sum = mine;
        return ok;
    }
    if (clustered) {
        float t = 0;
        bool all = true;
        cluster_wait();
        if (threadIdx.x == 0)
            mailbox_expect(mail, slices * sizeof(mail.word[0]));
        if (threadIdx.x < slices)
            mailbox_put(mail, blockIdx.x % slices, threadIdx.x, (unsigned long long)ok << 32 | __float_as_uint(mine));
        mailbox_wait(mail);
        for (unsigned s = 0; s < slices; s++) {
            t += __uint_as_float((uint32_t)mail.word[s]);
            all = all && mail.word[s] >> 32;
        }
        *sum = t;
        return all;
    }
    if (!ok)
        return false;
    if (threadIdx.x == 0) {
        unsigned first = blockIdx.x / slices * slices;
        float t = 0;
        bool good = true;
        partial[blockIdx.x] = (uint64_t)tag << 32 | __float_as_uint(mine);
        for (unsigned s = 0; s < slices && good; s++) {
            uint64_t v = partial[first + s];
            while ((uint32_t)(v >> 32) != tag && (good = waiter_poll(w)))
                v = partial[first + s];
            t += __uint_as_float((uint32_t)v);
        }
        total = t;
        fine = good;
    }
    __syncthreads();
    *sum = total;
    return __syncthreads_and(fine);
}

template <typename T, typename W, typename F>
__global__ void __launch_bounds__(HIAR_THREADS, 2)
    oneshot_ll_norm(hiar_ipc_args_t a, const char *in, char *out, norm_row_args nm, size_t rows, unsigned slices,
                    bool clustered)
{
    __shared__ norm_mailbox mail;
    mark(a, HIAR_MARK_ENTRY);
    const uint64_t e = begin_call(a);
    /* In a cluster a block goes on to its row's trade, having done nothing else (norm_row_sum). */
    const bool dead = comm_failed(a.failed);
    if (dead && !clustered)
        return;
    if (clustered && threadIdx.x == 0)
        mailbox_init(mail);
    if (clustered)
        cluster_arrive();
    mark(a, HIAR_MARK_BEGUN);
    const uint32_t parity = e & 1;
    /* 32-bit indices: the call fits the packet area (HIAR_IPC_LL_MAX_BYTES); 64-bit ones spilled registers. */
    const unsigned ppr = (unsigned)(nm.row_bytes / F::DATA), per_wave = gridDim.x / slices;
    const unsigned lo = ppr * (blockIdx.x % slices) / slices, hi = ppr * (blockIdx.x % slices + 1) / slices;
    const size_t bytes = rows * nm.row_bytes;
    /* A packet per thread at most: r and the weights stay in registers between the passes. */
    const bool single = hi - lo <= blockDim.x;
    hiar_waiter w = waiter_begin(a);
    bool ok = !dead;

    for (unsigned row = blockIdx.x / slices; ok && row < rows; row += per_wave)
        for (unsigned k = lo + threadIdx.x; k < hi; k += blockDim.x) {
            unsigned i = row * ppr + k;
            ll_push(a, parity, i, F::pack(F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize))));
        }
    mark(a, HIAR_MARK_PUSHED);
    for (unsigned row = blockIdx.x / slices; row < rows; row += per_wave) {
        char *r = nm.residual ? nm.residual : out;
        float sumsq = 0, scale;
        typename F::data kept;
        norm_weights<T, W, F::DATA> wk;
        for (unsigned k = lo + threadIdx.x; k < hi && ok; k += blockDim.x) {
            unsigned i = row * ppr + k;
            /* Issued before the wait for the peers' packets, so that their latency hides in it. */
            typename F::data s, old = norm_old<F::DATA>(nm, row, k);
            unit_acc<T, F::DATA> acc;
            if (single)
                wk.load(nm, k);
            ok = ll_gather<T, F>(a, parity, i, F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize)),
                                 HIAR_SUM, acc, w);
            acc.store(&s, 1);
            sumsq += norm_residual<T, F::DATA>(nm, row, k, s, old);
            kept = s;
            if (!nm.residual && !single)
                store_unit<F::DATA>(out + row * nm.row_bytes, k * F::DATA, nm.row_bytes, nm.esize, s);
        }
        ok = !__syncthreads_or(!ok);
        /* The next kernel comes in at finish_call, not here, where every peer's packets of the part have arrived
         * (device.cuh): its blocks, started early, slowed this one's end.  One H100, 2026-12-06, with the
         * mailbox, same setup, two rounds, us, here / at finish_call: 4 ranks x 4096 1 token 5.42-5.43 /
         * 5.32-5.33, 32 tokens 7.13 / 6.83, x 8192 16 tokens 8.03 / 7.64-7.65; 2 ranks x 4096 1 token
         * 4.03-4.04 / 3.79-3.80, 64 tokens 5.17-5.18 / 4.64; but 2 ranks x 4096 16 tokens 4.38-4.39 /
         * 4.46-4.47, 4 ranks x 8192 32 tokens 9.29-9.40 / 9.54-9.73. */
        if (ok)
            mark(a, HIAR_MARK_GATHERED);
        if (!norm_row_sum(a, e, slices, clustered, ok, norm_block_sum(sumsq), &sumsq, mail, w))
            break;
        mark(a, HIAR_MARK_SUMMED);
        scale = norm_scale(nm, sumsq);
        if (single && lo + threadIdx.x < hi)
            store_unit<F::DATA>(out + row * nm.row_bytes, (lo + threadIdx.x) * F::DATA, nm.row_bytes, nm.esize,
                                wk.apply(kept, scale, nm.weight_offset));
        for (unsigned k = lo + threadIdx.x; k < hi && !single; k += blockDim.x)
            norm_store<T, W, F::DATA>(nm, r, out, row, k, scale);
        mark(a, HIAR_MARK_STORED);
    }
    if (dead)
        return;
    finish_call(a, e);
    mark_end(a, HIAR_MARK_LL_NORM);
}

/*
 * The rows kernel's slot (the call's parity's first): [sender][owned row j]
 * rows sent to this rank, then r of every row (the peers' rows written by
 * their owners), then every row's scale.  Rows 16-byte aligned.
 */
struct rows_slot {
    size_t stride, per, ag, scales, bytes;
};

__host__ __device__ static inline rows_slot rows_slot_of(size_t rows, size_t row_bytes, int n)
{
    rows_slot L;
    L.stride = (row_bytes + HIAR_UNIT - 1) / HIAR_UNIT * HIAR_UNIT;
    L.per = (rows + (size_t)n - 1) / (size_t)n;
    L.ag = (size_t)n * L.per * L.stride;
    L.scales = L.ag + rows * L.stride;
    L.bytes = L.scales + rows * sizeof(float);
    return L;
}

/* The rows owner p takes: the first, and *count of them (n contiguous ranges). */
__device__ __forceinline__ size_t owner_rows(size_t rows, int n, int p, size_t *count)
{
    size_t first = rows * (size_t)p / (size_t)n;
    *count = rows * (size_t)(p + 1) / (size_t)n - first;
    return first;
}

template <typename T, typename W>
__global__ void __launch_bounds__(HIAR_THREADS, 2)
    twoshot_norm(hiar_ipc_args_t a, const char *in, char *out, norm_row_args nm, size_t rows)
{
    const uint64_t e = begin_call(a);
    if (comm_failed(a.failed))
        return;
    const rows_slot L = rows_slot_of(rows, nm.row_bytes, a.n);
    const size_t slot = a.data_offset + (size_t)(e & 1) * 2 * a.slot_bytes, units = L.stride / HIAR_UNIT;
    const uint64_t value = e << 24 | 1;
    auto rs = [&](int rank, int sender, size_t j, size_t u) {
        return reinterpret_cast<uint4 *>(a.base[rank] + slot + ((size_t)sender * L.per + j) * L.stride) + u;
    };
    auto ag = [&](int rank, size_t row, size_t u) {
        return reinterpret_cast<uint4 *>(a.base[rank] + slot + L.ag + row * L.stride) + u;
    };
    auto scale_at = [&](int rank, size_t row) { return reinterpret_cast<float *>(a.base[rank] + slot + L.scales) + row; };
    size_t owned;
    const size_t mine = owner_rows(rows, a.n, a.me, &owned);
    hiar_waiter w = waiter_begin(a);

    for (int k = 1; k < a.n; k++) {
        int p = (a.me + k) % a.n;
        size_t count, first = owner_rows(rows, a.n, p, &count);
        for (size_t j = blockIdx.x; j < count; j += gridDim.x)
            for (size_t u = threadIdx.x; u < units; u += blockDim.x)
                *rs(p, a.me, j, u) = load_unit<HIAR_UNIT>(in + (first + j) * nm.row_bytes, u * HIAR_UNIT,
                                                          nm.row_bytes, nm.esize);
    }
    if (exchange_signal(a, HIAR_IPC_FLAG_RS, value, w)) {
        for (size_t j = blockIdx.x; j < owned; j += gridDim.x) {
            const size_t row = mine + j;
            char *r = nm.residual ? nm.residual : out;
            float sumsq = 0, scale;
            for (size_t u = threadIdx.x; u < units; u += blockDim.x) {
                uint4 old = norm_old<HIAR_UNIT>(nm, row, u);
                uint4 s = reduce_unit<T>(a, in + row * nm.row_bytes, u * HIAR_UNIT, nm.row_bytes, nm.esize, HIAR_SUM,
                                         0, [&](int p) { return rs(a.me, p, j, u); });
                sumsq += norm_residual<T, HIAR_UNIT>(nm, row, u, s, old);
                if (!nm.residual)
                    store_unit<HIAR_UNIT>(out + row * nm.row_bytes, u * HIAR_UNIT, nm.row_bytes, nm.esize, s);
                for (int k = 1; k < a.n; k++)
                    *ag((a.me + k) % a.n, row, u) = s;
            }
            scale = norm_scale(nm, norm_block_sum(sumsq));
            if (threadIdx.x == 0)
                for (int k = 1; k < a.n; k++)
                    *scale_at((a.me + k) % a.n, row) = scale;
            for (size_t u = threadIdx.x; u < units; u += blockDim.x)
                norm_store<T, W, HIAR_UNIT>(nm, r, out, row, u, scale);
        }
        if (exchange_signal(a, HIAR_IPC_FLAG_AG, value, w))
            for (int k = 1; k < a.n; k++) {
                size_t count, first = owner_rows(rows, a.n, (a.me + k) % a.n, &count);
                for (size_t row = first + blockIdx.x; row < first + count; row += gridDim.x) {
                    const float scale = __ldcg(scale_at(a.me, row));
                    for (size_t u = threadIdx.x; u < units; u += blockDim.x) {
                        uint4 r = load_peer_written(ag(a.me, row, u));
                        if (nm.residual)
                            store_unit<HIAR_UNIT>(nm.residual + row * nm.row_bytes, u * HIAR_UNIT, nm.row_bytes,
                                                  nm.esize, r);
                        store_unit<HIAR_UNIT>(out + row * nm.row_bytes, u * HIAR_UNIT, nm.row_bytes, nm.esize,
                                              norm_unit<T, W, HIAR_UNIT>(nm, r, u, scale));
                    }
                }
            }
    }
    finish_call(a, e);
}

static norm_row_args row_args(const hiar_call_t *c)
{
    const hiar_norm_t *n = c->norm;
    norm_row_args nm = {(char *)n->residual, (const char *)n->weight, n->hidden, n->hidden * c->esize,
                        (int)c->esize, n->eps, n->weight_offset};
    return nm;
}

/*
 * Slices per row: as many blocks per row as give each at most `packets`
 * packets, at most `most`, while rows x slices blocks fit the LL cap (so a
 * block has one row); else one.
 */
static unsigned norm_slices(size_t rows, size_t ppr, unsigned max_blocks, size_t packets, size_t most)
{
    size_t want = (ppr + packets - 1) / packets, fit = max_blocks / rows;
    size_t slices = want < fit ? want : fit;

    slices = slices < most ? slices : most;
    return slices > 1 ? (unsigned)slices : 1;
}

template <typename T, typename W, typename F>
static cudaError_t launch_fused(const hiar_ipc_args_t *a, const hiar_call_t *c, const norm_row_args &nm)
{
    size_t rows = c->count / nm.hidden, ppr = nm.row_bytes / F::DATA;
    const bool in_clusters = a->clusters && rows <= NORM_CLUSTER_ROWS;
    unsigned slices = in_clusters ? norm_slices(rows, ppr, a->ll_blocks, NORM_CLUSTER_SLICE_PACKETS, NORM_CLUSTER_MAX)
                                  : norm_slices(rows, ppr, a->ll_blocks, NORM_SLICE_PACKETS, a->ll_blocks);
    unsigned blocks = (unsigned)(rows * slices < a->ll_blocks ? rows * slices : a->ll_blocks / slices * slices);
    /* A block of a cluster has one row: its mailbox serves one trade (norm_row_sum). */
    const bool clustered = in_clusters && slices > 1 && blocks == rows * slices;

    return hiar_ipc_launch_clusters(a, oneshot_ll_norm<T, W, F>, blocks, norm_threads((ppr + slices - 1) / slices),
                                    clustered ? slices : 1, (cudaStream_t)c->stream, *a, (const char *)c->sendbuf,
                                    (char *)c->recvbuf, nm, rows, slices, clustered);
}

/* launch(T(), W()) for activations of dtype and weights of weight_dtype. */
template <typename L> static cudaError_t dispatch_pair(hiar_dtype_t dtype, hiar_dtype_t weight_dtype, L launch)
{
    return norm_dispatch(dtype, [&](auto t) {
        return norm_dispatch(weight_dtype, [&](auto w) { return launch(t, w); });
    });
}

int hiar_ipc_norm_fits(const hiar_ipc_args_t *a, const hiar_call_t *c)
{
    size_t row_bytes = c->norm->hidden * c->esize;

    if (c->plan.kernel == HIAR_KERNEL_LL)
        return row_bytes % 16 == 0;
    /* In place of push or two-shot (not pull, taken where posted writes are slow: the rows kernel pushes);
     * a third of a slot at most: the layout's size cannot overflow. */
    return (c->plan.kernel == HIAR_KERNEL_PUSH || c->plan.kernel == HIAR_KERNEL_TWOSHOT) &&
           hiar_call_bytes(c) <= a->slot_bytes / 3 &&
           rows_slot_of(c->count / c->norm->hidden, row_bytes, a->n).bytes <= a->slot_bytes;
}

cudaError_t hiar_ipc_launch_norm(const hiar_ipc_args_t *a, const hiar_call_t *c)
{
    norm_row_args nm = row_args(c);
    size_t rows = c->count / nm.hidden;

    return dispatch_pair(c->dtype, c->norm->weight_dtype, [&](auto t, auto w) {
        typedef decltype(t) T;
        typedef decltype(w) W;
        /* The packet format by size, as the plain LL kernel's over device memory (not its pinned-host rule: the
         * fused kernel's LL stops at 16 KB there, core/plan.c); on 2 ranks data only at every size (half the
         * packets: without clusters 1 token x 4096 is one slice, no trade).  On one H200 under MPS, bf16, decode steps in CUDA
         * graphs, data only against flagged: 2 ranks 4.54-4.56 against 4.66-4.67 us at 1 x 4096, 4.76
         * against 5.00-5.02 at 4 x 4096, 5.12-5.13 against 5.41 at 1 x 8192; 4 ranks slower, 6.68-6.70
         * against 6.42 at 1 x 4096, 7.48-7.49 against 7.27-7.28 at 4 x 8192; and still with clusters (one
         * H100, 2026-12-06, two rounds, 4 ranks, flagged / data only): 1 x 4096 5.89, 5.87 / 6.60, 6.61,
         * 4 x 4096 6.48, 6.46 / 6.98, 6.98, 1 x 8192 6.02, 6.01 / 6.58, 6.59 (16-32 tokens the same). */
        if (c->plan.kernel == HIAR_KERNEL_LL)
            return hiar_call_bytes(c) >= LL_DATA_ONLY_MIN || a->n == 2
                       ? launch_fused<T, W, typename ll_large<T>::type>(a, c, nm)
                       : launch_fused<T, W, ll_flagged>(a, c, nm);
        const rows_slot L = rows_slot_of(rows, nm.row_bytes, a->n); /* the rows kernel's layout only */
        return hiar_ipc_launch(a, twoshot_norm<T, W>, (unsigned)(L.per < a->max_blocks ? L.per : a->max_blocks),
                               norm_threads(L.stride / HIAR_UNIT),
                               (cudaStream_t)c->stream, *a, (const char *)c->sendbuf, (char *)c->recvbuf, nm, rows);
    });
}

/* The fewest count(kernel_of(T(), W())) over every dtype pair (0 where a query fails). */
template <typename K, typename C> static int fewest_pair(K kernel_of, C count)
{
    static const hiar_dtype_t types[] = {HIAR_FLOAT32, HIAR_FLOAT16, HIAR_BFLOAT16};
    int fewest = 1 << 30;

    for (hiar_dtype_t t : types)
        for (hiar_dtype_t w : types)
            dispatch_pair(t, w, [&](auto at, auto aw) {
                int n = count(kernel_of(at, aw));
                fewest = n < fewest ? n : fewest;
                return cudaSuccess;
            });
    return fewest;
}

/* The fewest count(k) over the fused LL kernel's instances: every dtype pair, both packet formats. */
template <typename C> static int fewest_fused_ll(C count)
{
    int flagged = fewest_pair([](auto t, auto w) { return oneshot_ll_norm<decltype(t), decltype(w), ll_flagged>; },
                              count);
    int large = fewest_pair(
        [](auto t, auto w) { return oneshot_ll_norm<decltype(t), decltype(w), typename ll_large<decltype(t)>::type>; },
        count);
    return flagged < large ? flagged : large;
}

/*
 * The clusters of the fused LL kernel's largest form that fit the GPU at
 * once: NORM_CLUSTER_MAX blocks of HIAR_THREADS (a slice of a wide row takes
 * a whole block: norm_threads in launch_fused).
 */
template <typename K> static int clusters_fit(K kernel)
{
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = {};
    int n = 0;

    cfg.gridDim = dim3(NORM_CLUSTER_MAX);
    cfg.blockDim = dim3(HIAR_THREADS);
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = NORM_CLUSTER_MAX;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess)
        cudaGetLastError();
    return n;
}

/*
 * Whether `sharers` ranks' fused calls in clusters (NORM_CLUSTER_ROWS
 * clusters each) fit the GPU at once.  A launch of clusters that cannot be
 * placed fails, and one that must wait for room behind a peer's spinning
 * clusters waits until the timeout.  CUDA's answer is for the whole GPU:
 * under MPS at 100%, 10% and 2% active threads (one H100, 2 ranks, 2026-12-05,
 * then asked about blocks of 128 threads) it left clusters on, and
 * test_rmsnorm passed at all three.  Asked where
 * the comm's launches are set (hiar_ipc_clusters_usable).
 */
int hiar_ipc_norm_clusters_fit(unsigned sharers)
{
    return (unsigned)(fewest_fused_ll([](auto k) { return clusters_fit(k); }) / NORM_CLUSTER_ROWS) >= sharers;
}

int hiar_ipc_norm_per_sm(int ll)
{
    auto per_sm = [](auto k) { return blocks_per_sm(k); };
    int n = ll ? fewest_fused_ll(per_sm)
               : fewest_pair([](auto t, auto w) { return twoshot_norm<decltype(t), decltype(w)>; }, per_sm);

    return n > 0 ? n : 1;
}

extern "C" hiar_result_t hiar_cuda_norm(const hiar_call_t *c)
{
    norm_row_args nm = row_args(c);
    cudaError_t err = dispatch_pair(c->dtype, c->norm->weight_dtype, [&](auto t, auto w) {
        return norm_rows_launch<decltype(t), decltype(w)>(nm, (char *)c->recvbuf, c->count / nm.hidden,
                                                          (cudaStream_t)c->stream);
    });
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "RMSNorm kernel launch");
}
