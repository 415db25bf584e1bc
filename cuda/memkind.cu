/* Which kind of memory a pointer is: decides between the host and GPU paths. */
#include <cuda_runtime.h>

#include "kernels.h"

/* Asked once per process: without a usable GPU no pointer is device memory,
 * and a failing runtime call per allreduce would cost more than the call. */
static bool cuda_usable()
{
    static const bool usable = [] {
        int n = 0;
        bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
        cudaGetLastError();
        return ok;
    }();
    return usable;
}

extern "C" hiar_result_t hiar_cuda_is_device_pointer(const void *ptr, int *on_device)
{
    cudaPointerAttributes attr;

    *on_device = 0;
    if (!cuda_usable())
        return HIAR_SUCCESS;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        cudaGetLastError(); /* not a pointer CUDA knows: host memory */
        return HIAR_SUCCESS;
    }
    *on_device = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
    return HIAR_SUCCESS;
}
