/* CUDA runtime queries: memory kind of a pointer, the current device, MPS. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/hostmem.h"
#include "cuda/api.h"
#include "cuda/check.h"

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

extern "C" hiar_result_t hiar_cuda_pointer_device(const void *ptr, int *device)
{
    cudaPointerAttributes attr;

    *device = -1;
    if (!cuda_usable() || hiar_host_memory_known(ptr, 1))
        return HIAR_SUCCESS;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        cudaGetLastError(); /* not a pointer CUDA knows: host memory */
        return HIAR_SUCCESS;
    }
    if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged)
        *device = attr.device;
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_cuda_is_device_pointer(const void *ptr, int *on_device)
{
    int device;
    hiar_result_t rc = hiar_cuda_pointer_device(ptr, &device);

    *on_device = device >= 0;
    return rc;
}

extern "C" hiar_result_t hiar_cuda_current_device(int *device, char bus_id[32])
{
    *device = -1;
    bus_id[0] = '\0';
    if (!cuda_usable() || cudaGetDevice(device) != cudaSuccess ||
        cudaDeviceGetPCIBusId(bus_id, 32, *device) != cudaSuccess) {
        cudaGetLastError();
        *device = -1;
        bus_id[0] = '\0';
    }
    return HIAR_SUCCESS;
}

extern "C" void hiar_cuda_device_uuid(int device, unsigned char uuid[16])
{
    cudaDeviceProp prop;

    if (device >= 0 && cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        memcpy(uuid, prop.uuid.bytes, 16);
    cudaGetLastError();
}

extern "C" void hiar_cuda_device_facts(int device, char *out, size_t len)
{
    cudaDeviceProp prop;
    int driver = 0;

    if (device < 0 || cudaGetDeviceProperties(&prop, device) != cudaSuccess || cudaDriverGetVersion(&driver) != cudaSuccess) {
        cudaGetLastError();
        snprintf(out, len, "unknown");
        return;
    }
    snprintf(out, len, "%s sm_%d%d sms=%d driver=%d", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             driver);
}

extern "C" int hiar_cuda_use_device(int device)
{
    int current = device;

    if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(device) != cudaSuccess)
        cudaGetLastError();
    return current;
}

extern "C" void hiar_cuda_device_sync(int device)
{
    int was = hiar_cuda_use_device(device);

    cudaDeviceSynchronize();
    cudaSetDevice(was);
    cudaGetLastError();
}

#ifdef HIAR_KERNEL_MARKS
extern "C" int hiar_kernel_marks_text(const char *name, const char *const *phases, const uint64_t *sum, int n,
                                      char *text, size_t size)
{
    size_t at;

    text[0] = '\0';
    if (!sum[0])
        return 0;
    at = (size_t)snprintf(text, size, "%s: %llu calls, us per call in block 0:", name, (unsigned long long)sum[0]);
    for (int p = 1; p < n && at < size; p++)
        if (sum[p])
            at += (size_t)snprintf(text + at, size - at, " %s %.2f,", phases[p], (double)sum[p] / 1e3 / (double)sum[0]);
    if (at > 0 && at < size)
        text[at - 1] = '\0'; /* the last comma */
    return 1;
}
#endif

extern "C" int hiar_cuda_mps_running(void)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[512];
    struct stat st;

    snprintf(path, sizeof(path), "%s/control", dir && *dir ? dir : "/tmp/nvidia-mps");
    return stat(path, &st) == 0;
}

extern "C" hiar_result_t hiar_cuda_host_alloc(size_t bytes, void **out)
{
    cudaError_t err = cudaMallocHost(out, bytes);
    char what[64];

    if (err == cudaSuccess)
        return HIAR_SUCCESS;
    snprintf(what, sizeof(what), "cudaMallocHost of %zu bytes", bytes);
    return hiar_cuda_error(err, what); /* out of pinned memory is HIAR_NO_MEMORY */
}

extern "C" void hiar_cuda_host_free(void *ptr)
{
    cudaFreeHost(ptr);
}

extern "C" hiar_result_t hiar_cuda_host_register(void *ptr, size_t bytes, char **dev)
{
    cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
    char what[96];

    if (err == cudaSuccess)
        err = cudaHostGetDevicePointer((void **)dev, ptr, 0);
    if (err == cudaSuccess)
        return HIAR_SUCCESS;
    snprintf(what, sizeof(what), "cudaHostRegister of %zu bytes of shared memory", bytes);
    return hiar_cuda_error(err, what);
}

extern "C" void hiar_cuda_host_unregister(void *ptr)
{
    cudaHostUnregister(ptr);
    cudaGetLastError();
}

extern "C" hiar_result_t hiar_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "cudaMemcpyAsync");
}

extern "C" hiar_result_t hiar_cuda_sync(void *stream)
{
    cudaError_t err = cudaStreamSynchronize((cudaStream_t)stream);
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "cudaStreamSynchronize");
}

extern "C" hiar_result_t hiar_cuda_zero(void *ptr, size_t bytes)
{
    cudaError_t err = cudaMemset(ptr, 0, bytes);

    if (err != cudaSuccess)
        return hiar_cuda_error(err, "cudaMemset");
    err = cudaDeviceSynchronize();
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "cudaDeviceSynchronize after cudaMemset");
}

extern "C" hiar_result_t hiar_cuda_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    hiar_result_t rc = hiar_cuda_copy_async(dst, src, bytes, stream);
    return rc == HIAR_SUCCESS ? hiar_cuda_sync(stream) : rc;
}

extern "C" int hiar_cuda_capture_mode_relax(void)
{
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;

    if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
        cudaGetLastError();
        return -1; /* unchanged: nothing to restore */
    }
    return (int)mode;
}

extern "C" void hiar_cuda_capture_mode_restore(int mode)
{
    cudaStreamCaptureMode m = (cudaStreamCaptureMode)mode;

    if (mode >= 0 && cudaThreadExchangeStreamCaptureMode(&m) != cudaSuccess)
        cudaGetLastError();
}

/* A graph's destructor: the caller's, unless disarmed (the graph never took it). */
typedef struct {
    void (*fn)(void *);
    void *arg;
    int armed;
} on_destroy_t;

static void on_destroy(void *p)
{
    on_destroy_t *d = (on_destroy_t *)p;

    if (d->armed)
        d->fn(d->arg);
    free(d);
}

extern "C" hiar_result_t hiar_cuda_stream_create(void **stream)
{
    HIAR_CUDA_CHECK(cudaStreamCreateWithFlags((cudaStream_t *)stream, cudaStreamNonBlocking));
    return HIAR_SUCCESS;
}

extern "C" void hiar_cuda_stream_destroy(void *stream)
{
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" hiar_result_t hiar_cuda_graph_capture(void *stream, hiar_result_t (*enqueue)(void *), void *arg,
                                                 void **exec)
{
    cudaStream_t s = (cudaStream_t)stream;
    cudaGraph_t graph = NULL;
    hiar_result_t rc;
    cudaError_t err;

    *exec = NULL;
    HIAR_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    rc = enqueue(arg);
    err = cudaStreamEndCapture(s, &graph); /* ends the capture whatever enqueue did */
    if (rc == HIAR_SUCCESS && err != cudaSuccess)
        rc = hiar_cuda_error(err, "cudaStreamEndCapture");
    if (rc == HIAR_SUCCESS && (err = cudaGraphInstantiate((cudaGraphExec_t *)exec, graph, 0)) != cudaSuccess) {
        *exec = NULL;
        rc = hiar_cuda_error(err, "cudaGraphInstantiate");
    }
    if (graph)
        cudaGraphDestroy(graph);
    return rc;
}

extern "C" hiar_result_t hiar_cuda_graph_launch(void *exec, void *stream)
{
    HIAR_CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)stream));
    return HIAR_SUCCESS;
}

extern "C" void hiar_cuda_graph_destroy(void *exec)
{
    if (exec)
        cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

extern "C" hiar_result_t hiar_cuda_capture_on_destroy(void *stream, void (*fn)(void *), void *arg)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = NULL;
    cudaUserObject_t object;
    on_destroy_t *d;
    cudaError_t err = cudaStreamGetCaptureInfo((cudaStream_t)stream, &status, NULL, &graph);

    if (err != cudaSuccess)
        return hiar_cuda_error(err, "cudaStreamGetCaptureInfo");
    if (status != cudaStreamCaptureStatusActive || !graph)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "a destructor for a captured graph, but the stream is not "
                                                   "capturing");
    if (!(d = (on_destroy_t *)malloc(sizeof(*d))))
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate a captured graph's destructor");
    *d = on_destroy_t{fn, arg, 1};
    /* Relaxed: the application may capture in the global mode, which could refuse calls beside it. */
    int mode = hiar_cuda_capture_mode_relax();
    if ((err = cudaUserObjectCreate(&object, d, on_destroy, 1, cudaUserObjectNoDestructorSync)) != cudaSuccess) {
        hiar_cuda_capture_mode_restore(mode);
        free(d);
        return hiar_cuda_error(err, "cudaUserObjectCreate");
    }
    /* The graph takes the one reference: fn runs when the graph and its executable copies are gone. */
    err = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
    hiar_cuda_capture_mode_restore(mode);
    if (err != cudaSuccess) {
        d->armed = 0;
        cudaUserObjectRelease(object, 1);
        return hiar_cuda_error(err, "cudaGraphRetainUserObject");
    }
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_cuda_is_capturing(void *stream, int *capturing)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing((cudaStream_t)stream, &status);
    *capturing = status != cudaStreamCaptureStatusNone;
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "cudaStreamIsCapturing");
}

extern "C" hiar_result_t hiar_cuda_control_create(hiar_cuda_control_t *c)
{
    hiar_result_t rc;

    c->host = c->dev = NULL;
    c->failed = NULL;
    if (cudaHostAlloc((void **)&c->host, sizeof(*c->host), cudaHostAllocMapped) != cudaSuccess) {
        c->host = NULL;
        return hiar_cuda_error(cudaGetLastError(), "cudaHostAlloc of the kernels' control words");
    }
    memset(c->host, 0, sizeof(*c->host));
    if (cudaHostGetDevicePointer((void **)&c->dev, c->host, 0) != cudaSuccess)
        rc = hiar_cuda_error(cudaGetLastError(), "cudaHostGetDevicePointer of the kernels' control words");
    else if (cudaMalloc((void **)&c->failed, sizeof(*c->failed)) != cudaSuccess) {
        c->failed = NULL;
        rc = hiar_cuda_error(cudaGetLastError(), "cudaMalloc of the kernels' failure word");
    }
    else if ((rc = hiar_cuda_zero(c->failed, sizeof(*c->failed))) == HIAR_SUCCESS)
        return HIAR_SUCCESS;
    hiar_cuda_control_destroy(c);
    return rc;
}

extern "C" void hiar_cuda_control_destroy(hiar_cuda_control_t *c)
{
    if (c->host)
        cudaFreeHost(c->host);
    if (c->failed)
        cudaFree(c->failed);
    c->host = c->dev = NULL;
    c->failed = NULL;
}
