/*
 * The path of one call that hiar serves, on this rank's buffers.
 *
 * Every rank of a communicator must reduce the same kind of memory in a
 * call: all device buffers (hiar's GPU path) or all host buffers.  A rank
 * knows only its own buffers, so the kind is agreed, and a rank whose
 * buffers do not fit the agreed kind copies them to one that does:
 *
 *   | agreed | this rank's buffers                      | this rank                          |
 *   | ------ | ---------------------------------------- | ---------------------------------- |
 *   | device | device, on the comm's GPU, aligned       | hiar on them                       |
 *   | device | host, another GPU, misaligned, mixed     | hiar on a device copy, copied back |
 *   | host   | host, aligned                            | hiar on them                       |
 *   | host   | device, misaligned, mixed                | hiar on a host copy, copied back   |
 *
 * So a result is right whatever the kinds; the agreement only picks the
 * fast path.  Agreeing costs a small host allreduce, as much as a whole
 * small call, so it is not done per call: a communicator where some rank
 * has no GPU is host forever (no agreement), and otherwise the kind is
 * agreed per call signature (count, dtype), kept in a slot and agreed again
 * after PMPI_KIND_RECHECK calls.  The slots change only on calls that every
 * rank makes in the same order, so every rank agrees at the same calls.
 * SPMD programs pass the same kind for the same signature (gradients on
 * the GPU, metrics on the host), so in practice the slots stay right.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "core/allreduce.h"
#include "pmpi.h"
#ifdef HIAR_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/api.h"
#endif

/*
 * Calls of one signature between two agreements: a rank whose kind changed
 * is served right (copied) for at most this many calls before the fast path
 * is agreed again, and the agreement (one 8-byte host allreduce, about a
 * small call's time) adds under 2% per call.
 */
#define PMPI_KIND_RECHECK 64

int pmpi_pointer_device(const void *ptr)
{
    int device = -1;
#ifdef HIAR_HAVE_CUDA
    if (hiar_cuda_pointer_device(ptr, &device) != HIAR_SUCCESS)
        device = -1;
#else
    (void)ptr;
#endif
    return device;
}

hiar_result_t pmpi_copy(void *dst, const void *src, size_t bytes, int device)
{
#ifdef HIAR_HAVE_CUDA
    if (device)
        return hiar_cuda_copy(dst, src, bytes, NULL);
#else
    (void)device;
#endif
    memcpy(dst, src, bytes);
    return HIAR_SUCCESS;
}

#ifdef HIAR_HAVE_CUDA
static hiar_result_t cuda_fail(cudaError_t err, const char *what)
{
    return hiar_error_set(HIAR_CUDA_ERROR, "MPI_Allreduce: %s failed: %s", what, cudaGetErrorString(err));
}

/*
 * hiar's calls on a comm must not overlap on the GPU, and its staged path
 * reuses pinned buffers that the last call's copies may still read: a call
 * on another stream than the non-blocking ones waits for them first.
 */
static hiar_result_t drain_stream(pmpi_comm_t *s)
{
    cudaError_t err;

    if (!s->inflight)
        return HIAR_SUCCESS;
    err = cudaStreamSynchronize((cudaStream_t)s->stream);
    return err == cudaSuccess ? HIAR_SUCCESS : cuda_fail(err, "waiting for earlier MPI_Iallreduce calls");
}

#else
static hiar_result_t drain_stream(pmpi_comm_t *s)
{
    (void)s;
    return HIAR_SUCCESS;
}
#endif

/* Whether every rank reduces device buffers in this call (agreed, or the slot's). */
static hiar_result_t agree_device(pmpi_comm_t *s, size_t count, hiar_dtype_t dtype, int mine, int *device)
{
    pmpi_kind_slot_t *slot = &s->kinds[(count * 31 + (size_t)dtype) % PMPI_KIND_SLOTS];

    if (!s->all_gpu) {
        *device = 0;
        return HIAR_SUCCESS;
    }
    if (slot->dtype != (int)dtype || slot->count != count || slot->uses >= PMPI_KIND_RECHECK) {
        int32_t host = !mine, any_host = 1;
        HIAR_CHECK(drain_stream(s)); /* a host call: none of the comm's kernels may be in flight */
        HIAR_CHECK(hiar_allreduce_of_kind(&host, &any_host, 1, HIAR_INT32, HIAR_MAX, 0, s->hiar, NULL));
        *slot = (pmpi_kind_slot_t){count, (int)dtype, !any_host, 0};
    }
    slot->uses++;
    *device = slot->device;
    return HIAR_SUCCESS;
}

/* Whether buf is on the comm's GPU; buffers of another GPU are reported once. */
static int on_comm_device(pmpi_comm_t *s, int device)
{
    if (device < 0 || device == s->device)
        return device >= 0;
    if (!s->warned_device) {
        s->warned_device = 1;
        HIAR_WARN(MPI, "libhiar_mpi: buffers on GPU %d, but the hiar communicator was made while GPU %d "
                       "was current (select the GPU before the first MPI_Allreduce): copying them",
                  device, s->device);
    }
    return 0;
}

/* Host path; buffers that are not aligned host buffers go through a host copy. */
static hiar_result_t run_host(pmpi_comm_t *s, const void *send, int send_dev, void *recv, int recv_dev,
                              size_t count, hiar_dtype_t dtype, hiar_op_t hop, int direct)
{
    size_t bytes = count * hiar_dtype_size(dtype);
    void *tmp;
    hiar_result_t rc;

    if (direct)
        return hiar_allreduce_of_kind(send, recv, count, dtype, hop, 0, s->hiar, NULL);
    if (!(tmp = malloc(bytes)))
        return hiar_error_set(HIAR_NO_MEMORY, "MPI_Allreduce: cannot allocate %zu bytes to stage the buffers",
                              bytes);
    rc = pmpi_copy(tmp, send, bytes, send_dev);
    if (rc == HIAR_SUCCESS)
        rc = hiar_allreduce_of_kind(tmp, tmp, count, dtype, hop, 0, s->hiar, NULL);
    if (rc == HIAR_SUCCESS)
        rc = pmpi_copy(recv, tmp, bytes, recv_dev);
    free(tmp);
    return rc;
}

#ifdef HIAR_HAVE_CUDA
/* The stream and event of non-blocking calls, made on the first. */
static hiar_result_t comm_stream(pmpi_comm_t *s)
{
    cudaError_t err;

    if (s->stream)
        return HIAR_SUCCESS;
    err = cudaStreamCreateWithFlags((cudaStream_t *)&s->stream, cudaStreamNonBlocking);
    if (err == cudaSuccess)
        err = cudaEventCreateWithFlags((cudaEvent_t *)&s->ready, cudaEventDisableTiming);
    return err == cudaSuccess ? HIAR_SUCCESS : cuda_fail(err, "creating the preload's stream");
}

/*
 * Device path on `stream`: in place on a device copy when the buffers are
 * not the comm GPU's own.  A host recv is copied when the stream is done
 * (op->out); device results are copied on the stream.
 */
static hiar_result_t run_device(pmpi_comm_t *s, const void *send, void *recv, int recv_dev, size_t count,
                                hiar_dtype_t dtype, hiar_op_t hop, int direct, cudaStream_t stream, pmpi_op_t *op)
{
    size_t bytes = count * hiar_dtype_size(dtype);
    void *tmp = NULL;
    hiar_result_t rc;
    cudaError_t err;

    if (direct)
        return hiar_allreduce_of_kind(send, recv, count, dtype, hop, 1, s->hiar, stream);
    if ((err = cudaMallocAsync(&tmp, bytes, stream)) != cudaSuccess)
        return cuda_fail(err, "allocating device memory to stage the buffers");
    HIAR_CHECK_GOTO(hiar_cuda_copy_async(tmp, send, bytes, stream), rc, err_free);
    HIAR_CHECK_GOTO(hiar_allreduce_of_kind(tmp, tmp, count, dtype, hop, 1, s->hiar, stream), rc, err_free);
    if (recv_dev >= 0) {
        HIAR_CHECK_GOTO(hiar_cuda_copy_async(recv, tmp, bytes, stream), rc, err_free);
        cudaFreeAsync(tmp, stream);
        return HIAR_SUCCESS;
    }
    *op = (pmpi_op_t){.s = NULL, .inner = MPI_REQUEST_NULL, .out = recv, .from = tmp, .bytes = bytes,
                      .copy_device = 1, .scratch = tmp};
    return HIAR_SUCCESS;
err_free:
    cudaFreeAsync(tmp, stream);
    return rc;
}

/* The async error of the comm's kernels, after they finished. */
static hiar_result_t async_error(pmpi_comm_t *s)
{
    hiar_result_t async = HIAR_SUCCESS;

    HIAR_CHECK(hiar_comm_get_async_error(s->hiar, &async));
    if (async != HIAR_SUCCESS)
        return hiar_error_set(async, "MPI_Allreduce: hiar's kernel failed: %s", hiar_strerror(async));
    return HIAR_SUCCESS;
}

/* Frees op's memory; the copy left (if any) first. */
static hiar_result_t op_finish(pmpi_op_t *op)
{
    hiar_result_t rc = HIAR_SUCCESS;

    if (op->out)
        rc = pmpi_copy(op->out, op->from, op->bytes, op->copy_device);
    if (op->scratch)
        cudaFreeAsync(op->scratch, NULL); /* its stream is done */
    free(op->host);
    op->out = op->host = op->scratch = NULL;
    return rc;
}

/* Blocking: on the legacy default stream (ordered after the caller's blocking streams), then waits. */
static hiar_result_t device_blocking(pmpi_comm_t *s, const void *send, void *recv, int recv_dev, size_t count,
                                     hiar_dtype_t dtype, hiar_op_t hop, int direct)
{
    pmpi_op_t op = PMPI_OP_INIT;
    hiar_result_t rc;
    cudaError_t err;

    HIAR_CHECK(drain_stream(s));
    HIAR_CHECK(run_device(s, send, recv, recv_dev, count, dtype, hop, direct, NULL, &op));
    if ((err = cudaStreamSynchronize(NULL)) != cudaSuccess)
        rc = cuda_fail(err, "waiting for hiar's kernel");
    else
        rc = async_error(s);
    return op_finish(&op) == HIAR_SUCCESS ? rc : HIAR_CUDA_ERROR;
}

/*
 * Started: on the comm's non-blocking stream, after the work the legacy
 * default stream has (inputs written there or on blocking streams are
 * ready); the program's later work does not wait for it.
 */
static hiar_result_t device_start(pmpi_comm_t *s, const void *send, void *recv, int recv_dev, size_t count,
                                  hiar_dtype_t dtype, hiar_op_t hop, int direct, pmpi_op_t *op)
{
    cudaStream_t stream;
    cudaError_t err;

    HIAR_CHECK(comm_stream(s));
    stream = (cudaStream_t)s->stream;
    if ((err = cudaEventRecord((cudaEvent_t)s->ready, NULL)) != cudaSuccess ||
        (err = cudaStreamWaitEvent(stream, (cudaEvent_t)s->ready, 0)) != cudaSuccess)
        return cuda_fail(err, "ordering after the default stream");
    HIAR_CHECK(run_device(s, send, recv, recv_dev, count, dtype, hop, direct, stream, op));
    if ((err = cudaEventCreateWithFlags((cudaEvent_t *)&op->event, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaEventRecord((cudaEvent_t)op->event, stream)) != cudaSuccess) {
        cudaStreamSynchronize(stream);
        if (op->event)
            cudaEventDestroy((cudaEvent_t)op->event);
        op->event = NULL;
        op_finish(op);
        return cuda_fail(err, "recording the end of MPI_Iallreduce");
    }
    op->s = s;
    s->inflight++;
    return HIAR_SUCCESS;
}

void pmpi_path_release(pmpi_comm_t *s)
{
    if (s->stream) {
        cudaStreamSynchronize((cudaStream_t)s->stream);
        cudaEventDestroy((cudaEvent_t)s->ready);
        cudaStreamDestroy((cudaStream_t)s->stream);
    }
    s->stream = s->ready = NULL;
}
#else
static hiar_result_t op_finish(pmpi_op_t *op)
{
    hiar_result_t rc = op->out ? pmpi_copy(op->out, op->from, op->bytes, 0) : HIAR_SUCCESS;

    free(op->host);
    op->out = op->host = NULL;
    return rc;
}

void pmpi_path_release(pmpi_comm_t *s)
{
    (void)s;
}
#endif

hiar_result_t pmpi_path_run(pmpi_comm_t *s, const void *send, void *recv, size_t count, hiar_dtype_t dtype,
                            hiar_op_t hop, pmpi_op_t *op)
{
    size_t esize = hiar_dtype_size(dtype);
    int send_dev = pmpi_pointer_device(send);
    int recv_dev = recv == send ? send_dev : pmpi_pointer_device(recv);
    int aligned = (uintptr_t)send % esize == 0 && (uintptr_t)recv % esize == 0;
    int mine = aligned && on_comm_device(s, send_dev) && on_comm_device(s, recv_dev), device;

    HIAR_CHECK(agree_device(s, count, dtype, mine, &device));
#ifdef HIAR_HAVE_CUDA
    if (device && op)
        return device_start(s, send, recv, recv_dev, count, dtype, hop, mine, op);
    if (device)
        return device_blocking(s, send, recv, recv_dev, count, dtype, hop, mine);
#else
    (void)op; /* host calls finish here: nothing is left */
#endif
    HIAR_CHECK(drain_stream(s));
    return run_host(s, send, send_dev >= 0, recv, recv_dev >= 0, count, dtype, hop,
                    aligned && send_dev < 0 && recv_dev < 0);
}

int pmpi_op_test(pmpi_op_t *op, hiar_result_t *rc)
{
    *rc = HIAR_SUCCESS;
    if (op->inner != MPI_REQUEST_NULL) {
        int done = 0;
        if (PMPI_Test(&op->inner, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            *rc = hiar_error_set(HIAR_MPI_ERROR, "MPI_Iallreduce: the forwarded call failed");
        else if (!done)
            return 0;
    }
#ifdef HIAR_HAVE_CUDA
    if (op->event) {
        cudaError_t err = cudaEventQuery((cudaEvent_t)op->event);
        if (err == cudaErrorNotReady)
            return 0;
        cudaEventDestroy((cudaEvent_t)op->event);
        op->event = NULL;
        op->s->inflight--;
        *rc = err == cudaSuccess ? async_error(op->s) : cuda_fail(err, "hiar's kernel");
    }
#endif
    if (op_finish(op) != HIAR_SUCCESS && *rc == HIAR_SUCCESS)
        *rc = HIAR_CUDA_ERROR;
    return 1;
}
