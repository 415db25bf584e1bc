/*
 * Allreduce + residual add + RMSNorm (hiar_allreduce_rmsnorm).
 *
 * Fused: the LL one-shot kernel of one group (cuda/oneshot.cu) with a norm
 * epilogue, one launch.  A row is cut in `slices` parts, one block each
 * (rows x slices blocks, a row per block), or with one slice a block takes
 * rows b, b + G, ... in turn.  A block pushes every packet of its part to
 * every peer, then gathers and reduces each packet over the ranks in rank
 * order, adds the residual and writes r (into the residual, or into out
 * without one), sums the squares of its part, and with several slices
 * trades that partial sum with the row's other blocks through the state
 * (summed in slice order: the same bits on every rank); then it writes
 * r * scale * w into out.  Each element is written once to out (r read
 * back by the thread that wrote it).  Rows are whole packets (core/run.c
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
 * 5.61, 2 slices 6.61.
 *
 * Unfused: norm_rows (cuda/norm.cuh) after the allreduce, on the stream.
 */
#include "cuda/check.h"
#include "ll.cuh"
#include "norm.cuh"

/* Packets of a slice: one per thread of a full block (see above). */
#define NORM_SLICE_PACKETS HIAR_THREADS

/*
 * The row's sum of squares from its `slices` blocks' partials (this block's
 * is `mine`): published with the call's epoch, gathered in slice order.
 * false: gave up waiting (a block of the row gave up).
 */
__device__ __forceinline__ bool norm_row_sum(const hiar_ipc_args_t &a, uint64_t e, unsigned slices, float mine,
                                             float *sum, hiar_waiter &w)
{
    __shared__ float total;
    __shared__ int ok;
    volatile uint64_t *partial = a.state->norm_partial;
    const uint32_t tag = (uint32_t)e;

    if (slices == 1) {
        *sum = mine;
        return true;
    }
    if (threadIdx.x == 0) {
        unsigned first = blockIdx.x / slices * slices;
        float t = 0;
        bool fine = true;
        partial[blockIdx.x] = (uint64_t)tag << 32 | __float_as_uint(mine);
        for (unsigned s = 0; s < slices && fine; s++) {
            uint64_t v = partial[first + s];
            while ((uint32_t)(v >> 32) != tag && (fine = waiter_poll(w)))
                v = partial[first + s];
            t += __uint_as_float((uint32_t)v);
        }
        total = t;
        ok = fine;
    }
    __syncthreads();
    *sum = total;
    return __syncthreads_and(ok);
}

template <typename T, typename W, typename F>
__global__ void __launch_bounds__(HIAR_THREADS, 2)
    oneshot_ll_norm(hiar_ipc_args_t a, const char *in, char *out, norm_row_args nm, size_t rows, unsigned slices)
{
    const uint64_t e = begin_call(a);
    if (comm_failed(a.failed))
        return;
    const uint32_t parity = e & 1;
    const size_t ppr = nm.row_bytes / F::DATA, bytes = rows * nm.row_bytes, per_wave = gridDim.x / slices;
    const size_t lo = ppr * (blockIdx.x % slices) / slices, hi = ppr * (blockIdx.x % slices + 1) / slices;
    hiar_waiter w = waiter_begin(a);
    bool ok = true;

    for (size_t row = blockIdx.x / slices; row < rows; row += per_wave)
        for (size_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
            size_t i = row * ppr + k;
            ll_push(a, parity, i, F::pack(F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize))));
        }
    for (size_t row = blockIdx.x / slices; row < rows; row += per_wave) {
        char *r = nm.residual ? nm.residual : out;
        float sumsq = 0, scale;
        for (size_t k = lo + threadIdx.x; k < hi && ok; k += blockDim.x) {
            size_t i = row * ppr + k;
            typename F::data s;
            unit_acc<T, F::DATA> acc;
            ok = ll_gather<T, F>(a, parity, i, F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize)),
                                 HIAR_SUM, acc, w);
            acc.store(&s, 1);
            sumsq += norm_residual<T, F::DATA>(nm, row, k, s);
            if (!nm.residual)
                store_unit<F::DATA>(out + row * nm.row_bytes, k * F::DATA, nm.row_bytes, nm.esize, s);
        }
        if (__syncthreads_or(!ok))
            break;
        release_next_kernel(); /* every peer's packets of the part arrived: see device.cuh */
        if (!norm_row_sum(a, e, slices, norm_block_sum(sumsq), &sumsq, w))
            break;
        scale = norm_scale(nm, sumsq);
        for (size_t k = lo + threadIdx.x; k < hi; k += blockDim.x)
            norm_store<T, W, F::DATA>(nm, r, out, row, k, scale);
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
 * Slices per row: as many blocks per row as give each at most
 * NORM_SLICE_PACKETS packets, while rows x slices blocks fit the LL cap
 * (so a block has one row); else one.
 */
static unsigned norm_slices(size_t rows, size_t ppr, unsigned max_blocks)
{
    size_t want = (ppr + NORM_SLICE_PACKETS - 1) / NORM_SLICE_PACKETS, fit = max_blocks / rows;
    size_t slices = want < fit ? want : fit;

    return slices > 1 ? (unsigned)slices : 1;
}

template <typename T, typename W, typename F>
static cudaError_t launch_fused(const hiar_ipc_args_t *a, const hiar_call_t *c, const norm_row_args &nm)
{
    size_t rows = c->count / nm.hidden, ppr = nm.row_bytes / F::DATA;
    unsigned slices = norm_slices(rows, ppr, a->ll_blocks);
    unsigned blocks = (unsigned)(rows * slices < a->ll_blocks ? rows * slices : a->ll_blocks / slices * slices);

    return hiar_ipc_launch(a, oneshot_ll_norm<T, W, F>, blocks, norm_threads((ppr + slices - 1) / slices),
                           (cudaStream_t)c->stream, *a, (const char *)c->sendbuf, (char *)c->recvbuf, nm, rows,
                           slices);
}

/* launch(T(), W()) for activations of dtype and weights of weight_dtype. */
template <typename L> static cudaError_t dispatch_pair(hiar_dtype_t dtype, hiar_dtype_t weight_dtype, L launch)
{
    return norm_dispatch(dtype, [&](auto t) {
        return norm_dispatch(weight_dtype, [&](auto w) { return launch(t, w); });
    });
}

cudaError_t hiar_ipc_launch_norm(const hiar_ipc_args_t *a, const hiar_call_t *c)
{
    norm_row_args nm = row_args(c);

    /* The packet format by size, as the plain LL kernel's. */
    return dispatch_pair(c->dtype, c->norm->weight_dtype, [&](auto t, auto w) {
        typedef decltype(t) T;
        typedef decltype(w) W;
        return hiar_call_bytes(c) >= LL_DATA_ONLY_MIN ? launch_fused<T, W, typename ll_large<T>::type>(a, c, nm)
                                                      : launch_fused<T, W, ll_flagged>(a, c, nm);
    });
}

int hiar_ipc_norm_per_sm(void)
{
    static const hiar_dtype_t types[] = {HIAR_FLOAT32, HIAR_FLOAT16, HIAR_BFLOAT16};
    int fewest = 1 << 30;

    for (hiar_dtype_t t : types)
        for (hiar_dtype_t w : types)
            dispatch_pair(t, w, [&](auto at, auto aw) {
                typedef decltype(at) T;
                typedef decltype(aw) W;
                int flagged = 0, large = 0;
                if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&flagged, oneshot_ll_norm<T, W, ll_flagged>,
                                                                  HIAR_THREADS, 0) != cudaSuccess ||
                    cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                        &large, oneshot_ll_norm<T, W, typename ll_large<T>::type>, HIAR_THREADS, 0) != cudaSuccess)
                    cudaGetLastError();
                fewest = flagged < fewest ? flagged : fewest;
                fewest = large < fewest ? large : fewest;
                return cudaSuccess;
            });
    return fewest > 0 ? fewest : 1;
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
