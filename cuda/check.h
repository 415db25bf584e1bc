/*
 * The one mapping of a cudaError_t to a hiar_result_t, for cuda/ (C++):
 * clears CUDA's sticky last error, names the call and CUDA's reason.
 */
#ifndef HIAR_CUDA_CHECK_H
#define HIAR_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "base/error.h"

static inline hiar_result_t hiar_cuda_error(cudaError_t err, const char *what)
{
    cudaGetLastError();
    return hiar_error_set(err == cudaErrorMemoryAllocation ? HIAR_NO_MEMORY : HIAR_CUDA_ERROR, "%s failed: %s (%s)",
                          what, cudaGetErrorString(err), cudaGetErrorName(err));
}

#define HIAR_CUDA_CHECK(call)                                                                      \
    do {                                                                                           \
        cudaError_t hiar_cuda_err_ = (call);                                                       \
        if (hiar_cuda_err_ != cudaSuccess)                                                         \
            return hiar_cuda_error(hiar_cuda_err_, #call);                                         \
    } while (0)

#endif
