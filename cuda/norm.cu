/*
 * Allreduce + residual add + RMSNorm (hiar_allreduce_rmsnorm).
 *
 * Fused: the LL one-shot kernel of one group (cuda/oneshot.cu) with a norm
 * epilogue, one launch.  Block b takes rows b, b + G, ...: it pushes every
 * packet of its rows to every peer, then per row gathers and reduces each
 * packet over the ranks in rank order, adds the residual and writes r (into
 * the residual, or into out without one), sums the squares over the block,
 * and writes r * scale * w into out.  A row is written once, its r read
 * back by the thread that wrote it.  Rows are whole packets (core/run.c
 * checks): no packet straddles two rows.  The block's threads agree on
 * every row's outcome (__syncthreads_or) before they use it, so a block
 * that gives up (timeout, abort) gives up whole.
 *
 * Unfused: norm_rows (cuda/norm.cuh) after the allreduce, on the stream.
 */
#include "cuda/check.h"
#include "ll.cuh"
#include "norm.cuh"

template <typename T, typename W, typename F>
__global__ void __launch_bounds__(HIAR_THREADS, 2)
    oneshot_ll_norm(hiar_ipc_args_t a, const char *in, char *out, norm_row_args nm, size_t rows)
{
    const uint64_t e = begin_call(a);
    const uint32_t parity = e & 1;
    const size_t ppr = nm.row_bytes / F::DATA, bytes = rows * nm.row_bytes;
    hiar_waiter w = waiter_begin(a);
    bool ok = true;

    for (size_t row = blockIdx.x; row < rows; row += gridDim.x)
        for (size_t k = threadIdx.x; k < ppr; k += blockDim.x) {
            size_t i = row * ppr + k;
            ll_push(a, parity, i, F::pack(F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize))));
        }
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        char *r = nm.residual ? nm.residual : out;
        float sumsq = 0;
        for (size_t k = threadIdx.x; k < ppr && ok; k += blockDim.x) {
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
        release_next_kernel(); /* every peer's packets of a row arrived: see device.cuh */
        float scale = norm_scale(nm, norm_block_sum(sumsq));
        for (size_t k = threadIdx.x; k < ppr; k += blockDim.x)
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

template <typename T, typename W, typename F>
static cudaError_t launch_fused(const hiar_ipc_args_t *a, const hiar_call_t *c, const norm_row_args &nm)
{
    size_t rows = c->count / nm.hidden;
    unsigned blocks = (unsigned)(rows < a->ll_blocks ? rows : a->ll_blocks);

    return hiar_ipc_launch(a, oneshot_ll_norm<T, W, F>, blocks, norm_threads(nm.row_bytes / F::DATA),
                           (cudaStream_t)c->stream, *a, (const char *)c->sendbuf, (char *)c->recvbuf, nm, rows);
}

/* Every (activation, weight) pair; the packet format by size, as the plain LL kernel's. */
template <typename L> static cudaError_t dispatch_pair(const hiar_call_t *c, L launch)
{
    return norm_dispatch(c->dtype, [&](auto t) {
        return norm_dispatch(c->norm->weight_dtype, [&](auto w) { return launch(t, w); });
    });
}

cudaError_t hiar_ipc_launch_norm(const hiar_ipc_args_t *a, const hiar_call_t *c)
{
    norm_row_args nm = row_args(c);

    return dispatch_pair(c, [&](auto t, auto w) {
        typedef decltype(t) T;
        typedef decltype(w) W;
        return hiar_call_bytes(c) >= LL_DATA_ONLY_MIN ? launch_fused<T, W, typename ll_large<T>::type>(a, c, nm)
                                                      : launch_fused<T, W, ll_flagged>(a, c, nm);
    });
}

int hiar_ipc_norm_per_sm(void)
{
    int fewest = 1 << 30;
    hiar_call_t c = {};
    hiar_norm_t n = {};

    c.norm = &n;
    for (int d = 0; d < 3; d++)
        for (int wd = 0; wd < 3; wd++) {
            static const hiar_dtype_t types[3] = {HIAR_FLOAT32, HIAR_FLOAT16, HIAR_BFLOAT16};
            c.dtype = types[d];
            n.weight_dtype = types[wd];
            dispatch_pair(&c, [&](auto t, auto w) {
                typedef decltype(t) T;
                typedef decltype(w) W;
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
        }
    return fewest > 0 ? fewest : 1;
}

/* Blocks of the unfused norm: a row each, as many as the rows up to two per SM's worth. */
#define NORM_ROWS_BLOCKS 264

extern "C" hiar_result_t hiar_cuda_norm(const hiar_call_t *c)
{
    norm_row_args nm = row_args(c);
    size_t rows = c->count / nm.hidden;
    unsigned blocks = (unsigned)(rows < NORM_ROWS_BLOCKS ? rows : NORM_ROWS_BLOCKS);
    unsigned threads = norm_threads((nm.row_bytes + HIAR_UNIT - 1) / HIAR_UNIT);
    cudaError_t err = dispatch_pair(c, [&](auto t, auto w) {
        norm_rows<decltype(t), decltype(w)><<<blocks, threads, 0, (cudaStream_t)c->stream>>>(nm, (char *)c->recvbuf,
                                                                                              rows);
        return cudaGetLastError();
    });
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "RMSNorm kernel launch");
}
