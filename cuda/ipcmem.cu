/*
 * Registered memory (hiar_mem_alloc, hiar_mem_register): exporting a user's
 * allocation to the peers of its group and mapping theirs.  The bookkeeping
 * of which windows a comm has is src/window.c.
 */
#include <cuda.h>
#include <string.h>

#include "base/error.h"
#include "cuda/api.h"

extern "C" hiar_result_t hiar_cuda_mem_alloc(int device, size_t bytes, void **ptr)
{
    int was = hiar_cuda_use_device(device);
    cudaError_t err = cudaMalloc(ptr, bytes);

    cudaSetDevice(was);

    if (err == cudaSuccess)
        return HIAR_SUCCESS;
    cudaGetLastError();
    *ptr = NULL;
    return hiar_error_set(err == cudaErrorMemoryAllocation ? HIAR_NO_MEMORY : HIAR_CUDA_ERROR,
                          "hiar_mem_alloc: cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(err));
}

void hiar_cuda_mem_free(void *ptr)
{
    if (cudaFree(ptr) != cudaSuccess)
        cudaGetLastError();
}

typedef CUresult (*range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);

/*
 * cuMemGetAddressRange through the runtime, so that libhiar does not link
 * libcuda: a handle maps the whole allocation, and peers need ptr's offset.
 */
static hiar_result_t allocation_range(const void *ptr, char **base, size_t *size)
{
    static range_fn range;
    cudaDriverEntryPointQueryResult found;
    CUdeviceptr b = 0;

    if (!range && (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void **)&range, 12000,
                                                    cudaEnableDefault, &found) != cudaSuccess ||
                   found != cudaDriverEntryPointSuccess)) {
        cudaGetLastError();
        range = NULL;
        return hiar_error_set(HIAR_CUDA_ERROR, "hiar_mem_register: the CUDA driver has no cuMemGetAddressRange");
    }
    if (range(&b, size, (CUdeviceptr)ptr) != CUDA_SUCCESS)
        return hiar_error_set(HIAR_UNSUPPORTED,
                              "hiar_mem_register: %p is not in a device allocation CUDA knows", ptr);
    *base = (char *)b;
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_cuda_export(const void *ptr, size_t bytes, unsigned char handle[HIAR_IPC_HANDLE_BYTES],
                                          size_t *offset)
{
    cudaIpcMemHandle_t h;
    cudaError_t err;
    char *base = NULL;
    size_t size = 0;

    HIAR_CHECK(allocation_range(ptr, &base, &size));
    if (bytes > size - (size_t)((const char *)ptr - base))
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "hiar_mem_register: %zu bytes from %p run past the end of its allocation "
                              "(%zu bytes from %p)", bytes, ptr, size, (void *)base);
    err = cudaIpcGetMemHandle(&h, (void *)ptr);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return hiar_error_set(HIAR_UNSUPPORTED,
                              "hiar_mem_register: CUDA cannot export the allocation of %p to other processes "
                              "(%s); cudaMalloc'd memory can be, stream-ordered pool, VMM and managed memory "
                              "cannot: use hiar_mem_alloc",
                              ptr, cudaGetErrorString(err));
    }
    memcpy(handle, &h, HIAR_IPC_HANDLE_BYTES);
    *offset = (size_t)((const char *)ptr - base);
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_cuda_map(int device, const unsigned char handle[HIAR_IPC_HANDLE_BYTES], char **base)
{
    cudaIpcMemHandle_t h;
    cudaError_t err;
    int was = hiar_cuda_use_device(device);

    memcpy(&h, handle, sizeof(h));
    err = cudaIpcOpenMemHandle((void **)base, h, cudaIpcMemLazyEnablePeerAccess);
    cudaSetDevice(was);
    if (err == cudaSuccess)
        return HIAR_SUCCESS;
    cudaGetLastError();
    *base = NULL;
    return hiar_error_set(HIAR_CUDA_ERROR, "hiar_mem_register: mapping a peer's registered memory failed: %s",
                          cudaGetErrorString(err));
}

void hiar_cuda_unmap(int device, char *base)
{
    int was = hiar_cuda_use_device(device);

    if (cudaIpcCloseMemHandle(base) != cudaSuccess)
        cudaGetLastError();
    cudaSetDevice(was);
}
