/*
 * The norm kernel --decode runs after hiar_allreduce and after ncclAllReduce:
 * cuda/norm.cuh's norm_rows, a block per row with 16-byte loads, the one
 * hiar itself runs when it cannot fuse.  So the comparison is the fusion
 * alone: the same arithmetic, one launch and one pass fewer.
 */
#include "bench-norm.h"
#include "cuda/norm.cuh"

extern "C" int bench_norm(void *x, void *residual, const void *weight, size_t tokens, size_t hidden,
                          hiar_dtype_t dtype, float eps, void *stream)
{
    size_t esize = hiar_dtype_size(dtype);
    norm_row_args nm = {(char *)residual, (const char *)weight, hidden, hidden * esize, (int)esize, eps, 0.0f};

    return (int)norm_dispatch(dtype, [&](auto t) {
        return norm_rows_launch<decltype(t), decltype(t)>(nm, (char *)x, tokens, (cudaStream_t)stream);
    });
}
