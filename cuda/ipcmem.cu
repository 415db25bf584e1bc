/*
 * Device memory shared between the processes of a group by CUDA IPC: an
 * allocation's handle (with ptr's offset in it), mapping a peer's, unmapping
 * it.  Used for the CUDA IPC transport's own buffers (ipc.cu) and for
 * registered memory (src/core/reg.c); the exchange of handles between ranks
 * is src/transport/peers.c.
 */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda/api.h"
#include "cuda/check.h"

extern "C" hiar_result_t hiar_cuda_mem_alloc(int device, size_t bytes, void **ptr)
{
    int was = hiar_cuda_use_device(device);
    cudaError_t err = cudaMalloc(ptr, bytes);

    cudaSetDevice(was);
    if (err == cudaSuccess)
        return HIAR_SUCCESS;
    char what[64];
    *ptr = NULL;
    snprintf(what, sizeof(what), "hiar_mem_alloc: cudaMalloc of %zu bytes", bytes);
    return hiar_cuda_error(err, what);
}

extern "C" void hiar_cuda_mem_free(void *ptr)
{
    if (cudaFree(ptr) != cudaSuccess)
        cudaGetLastError();
}

typedef CUresult (*range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);

/*
 * cuMemGetAddressRange through the runtime, so that libhiar does not link
 * libcuda: a handle maps the whole allocation, and peers need ptr's offset.
 */
static hiar_result_t allocation_range(const void *ptr, char **base, size_t *size, const char *what)
{
    static range_fn range;
    cudaDriverEntryPointQueryResult found;
    CUdeviceptr b = 0;

    if (!range && (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void **)&range, 12000,
                                                    cudaEnableDefault, &found) != cudaSuccess ||
                   found != cudaDriverEntryPointSuccess)) {
        cudaGetLastError();
        range = NULL;
        return hiar_error_set(HIAR_CUDA_ERROR, "%s: the CUDA driver has no cuMemGetAddressRange", what);
    }
    if (range(&b, size, (CUdeviceptr)ptr) != CUDA_SUCCESS)
        return hiar_error_set(HIAR_UNSUPPORTED, "%s: %p is not in a device allocation CUDA knows", what, ptr);
    *base = (char *)b;
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_cuda_export(const void *ptr, size_t bytes, unsigned char handle[HIAR_IPC_HANDLE_BYTES],
                                          size_t *offset, const char *what)
{
    cudaIpcMemHandle_t h;
    cudaError_t err;
    char *base = NULL;
    size_t size = 0;

    HIAR_CHECK(allocation_range(ptr, &base, &size, what));
    if (bytes > size - (size_t)((const char *)ptr - base))
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "%s: %zu bytes from %p run past the end of its allocation (%zu bytes from %p)", what,
                              bytes, ptr, size, (void *)base);
    err = cudaIpcGetMemHandle(&h, (void *)ptr);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return hiar_error_set(HIAR_UNSUPPORTED,
                              "%s: CUDA cannot export the allocation of %p to other processes (%s); cudaMalloc'd "
                              "memory can be, stream-ordered pool, VMM and managed memory cannot: use hiar_mem_alloc",
                              what, ptr, cudaGetErrorString(err));
    }
    memcpy(handle, &h, HIAR_IPC_HANDLE_BYTES);
    *offset = (size_t)((const char *)ptr - base);
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_cuda_map(int device, const unsigned char handle[HIAR_IPC_HANDLE_BYTES], char **base,
                                       const char *what)
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
    return hiar_error_set(HIAR_CUDA_ERROR,
                          "%s: mapping a peer's memory failed: %s (do the ranks share an IPC namespace, and can "
                          "the GPUs reach each other?)",
                          what, cudaGetErrorString(err));
}

extern "C" void hiar_cuda_unmap(int device, char *base)
{
    int was = hiar_cuda_use_device(device);

    if (cudaIpcCloseMemHandle(base) != cudaSuccess)
        cudaGetLastError();
    cudaSetDevice(was);
}
