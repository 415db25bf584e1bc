/* The norm after a plain allreduce in --decode (bench-norm.cu): hiar's unfused norm kernel, as a user would run one. */
#ifndef BENCH_NORM_H
#define BENCH_NORM_H

#include <stddef.h>

#include "hiar.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * x holds [tokens x hidden] sums of dtype: residual += x (residual may be
 * NULL), then x = the RMSNorm of it with weight of the same dtype, on stream.
 * Returns a cudaError_t.
 */
int bench_norm(void *x, void *residual, const void *weight, size_t tokens, size_t hidden, hiar_dtype_t dtype,
               float eps, void *stream);

#ifdef __cplusplus
}
#endif

#endif
