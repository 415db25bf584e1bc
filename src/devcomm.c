/* GPU side of a communicator: IPC setup with the P2P probe, staging, teardown. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "devcomm.h"
#include "error.h"
#include "kernels.h"
#include "log.h"

/* Bytes of one IPC data slot when HIAR_BUFFER_SIZE is 0: a chunk is half
 * a slot (2 ranks): bigger pieces per block mean fewer signals (measured on
 * 2 H200: 255 GB/s at 1 GB with 32 MB slots, 305 GB/s with 128 MB). */
#define IPC_SLOT_DEFAULT ((size_t)64 << 20)
/* Pinned buffer for staging device buffers through the host path. */
#define STAGE_BYTES ((size_t)4 << 20)
#define BUS_ID_MAX 32
/* What the P2P probe writes; the allocation starts zeroed, so it cannot be stale. */
#define PROBE_TOKEN 0x6869617270327000ull

struct hiar_devcomm {
    int device;
    char bus_id[BUS_ID_MAX];
    hiar_ipc_t *ipc;
    int shared_gpu; /* another rank of the group uses the same GPU */
    char why[200];  /* the transport for device buffers, and why */
    void *stage;
};

/* 1 if cond holds on every rank of the group. */
static int group_all(const hiar_comm_t *comm, int cond)
{
    int all = 0;
    MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_MIN, comm->group_comm);
    return all;
}

/* Steps that need every peer's memory mapped are separated by group barriers. */
static void ipc_teardown(const hiar_comm_t *comm, hiar_devcomm_t *dev, int collective)
{
    if (!dev->ipc)
        return;
    if (!collective)
        hiar_ipc_abort(dev->ipc);
    hiar_ipc_quiesce(dev->ipc);
    if (collective) {
        MPI_Barrier(comm->group_comm);
        hiar_ipc_unmap_peers(dev->ipc);
        MPI_Barrier(comm->group_comm);
    }
    hiar_ipc_destroy(dev->ipc);
    dev->ipc = NULL;
}

/* create -> exchange handles -> open -> probe; every step agreed in the group. */
static void ipc_setup(const hiar_comm_t *comm, hiar_devcomm_t *dev)
{
    size_t slot = (size_t)hiar_comm_param(comm, HIAR_P_BUFFER_SIZE);
    unsigned char handle[HIAR_IPC_HANDLE_BYTES] = {0};
    unsigned char *all = malloc((size_t)comm->local_size * HIAR_IPC_HANDLE_BYTES);
    int ok, pass = 0;

    ok = all && hiar_ipc_create(comm->local, comm->local_size, slot ? slot : IPC_SLOT_DEFAULT,
                                (int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &dev->ipc,
                                handle) == HIAR_SUCCESS;
    if (!group_all(comm, ok)) {
        snprintf(dev->why, sizeof(dev->why), "staged through host memory: IPC buffers could not be allocated (%s)",
                 ok ? "on another rank" : hiar_last_error());
        free(all);
        if (dev->ipc)
            hiar_ipc_destroy(dev->ipc);
        dev->ipc = NULL;
        return;
    }
    MPI_Allgather(handle, HIAR_IPC_HANDLE_BYTES, MPI_BYTE, all, HIAR_IPC_HANDLE_BYTES, MPI_BYTE,
                  comm->group_comm);
    ok = hiar_ipc_open(dev->ipc, all) == HIAR_SUCCESS;
    free(all);
    if (group_all(comm, ok)) {
        ok = hiar_ipc_probe_write(dev->ipc, PROBE_TOKEN) == HIAR_SUCCESS;
        MPI_Barrier(comm->group_comm);
        ok = ok && hiar_ipc_probe_check(dev->ipc, PROBE_TOKEN, &pass) == HIAR_SUCCESS && pass;
        if (group_all(comm, ok)) {
            snprintf(dev->why, sizeof(dev->why), "ipc (P2P verified by a write and read-back between every pair)");
            return;
        }
    }
    snprintf(dev->why, sizeof(dev->why), "staged through host memory: the CUDA IPC P2P check failed (%s)",
             ok ? "on another rank" : (*hiar_last_error() ? hiar_last_error() : "wrong data read back"));
    HIAR_WARN(IPC, "%s", dev->why);
    ipc_teardown(comm, dev, 1);
}

/* Shares bus ids in the group: who has a GPU, and who shares one. */
static hiar_result_t gather_gpus(const hiar_comm_t *comm, hiar_devcomm_t *dev, int *all_gpu)
{
    char *ids = malloc((size_t)comm->local_size * BUS_ID_MAX);

    if (!ids)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d bus ids", comm->local_size);
    MPI_Allgather(dev->bus_id, BUS_ID_MAX, MPI_CHAR, ids, BUS_ID_MAX, MPI_CHAR, comm->group_comm);
    *all_gpu = 1;
    for (int p = 0; p < comm->local_size; p++) {
        *all_gpu &= ids[(size_t)p * BUS_ID_MAX] != '\0';
        if (p != comm->local && dev->bus_id[0] && strncmp(ids + (size_t)p * BUS_ID_MAX, dev->bus_id, BUS_ID_MAX) == 0)
            dev->shared_gpu = 1;
    }
    free(ids);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_devcomm_create(hiar_comm_t *comm, hiar_devcomm_t **out)
{
    hiar_devcomm_t *dev = calloc(1, sizeof(*dev));
    int all_gpu = 0;

    if (!dev)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the GPU state");
    hiar_cuda_current_device(&dev->device, dev->bus_id);
    if (gather_gpus(comm, dev, &all_gpu) != HIAR_SUCCESS) {
        free(dev);
        return HIAR_NO_MEMORY;
    }
    if (all_gpu && comm->local_size >= 2 && comm->local_size <= 8)
        ipc_setup(comm, dev);
    else
        snprintf(dev->why, sizeof(dev->why), "staged through host memory: %s",
                 comm->local_size < 2 ? "the group has one rank"
                 : !all_gpu           ? "not every rank of the group has a GPU"
                                      : "CUDA IPC groups have at most 8 ranks");
    if (dev->shared_gpu && !hiar_cuda_mps_running() && comm->local == 0)
        HIAR_WARN(IPC, "several ranks share GPU %s but CUDA MPS is not running: their spinning "
                       "kernels time-slice (milliseconds per call instead of microseconds); start it "
                       "with nvidia-cuda-mps-control -d",
                  dev->bus_id);
    if (dev->device < 0) {
        free(dev);
        dev = NULL;
    }
    *out = dev;
    return HIAR_SUCCESS;
}

void hiar_devcomm_destroy(hiar_comm_t *comm, hiar_devcomm_t *dev, int collective)
{
    if (!dev)
        return;
    ipc_teardown(comm, dev, collective);
    if (dev->stage)
        hiar_cuda_host_free(dev->stage);
    free(dev);
}

int hiar_devcomm_has_ipc(const hiar_devcomm_t *dev)
{
    return dev && dev->ipc;
}

hiar_result_t hiar_devcomm_ipc_allreduce(hiar_devcomm_t *dev, int kernel, const void *sendbuf,
                                         void *recvbuf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                         int divisor, hiar_stream_t stream)
{
    return hiar_ipc_allreduce(dev->ipc, (hiar_ipc_kernel_t)kernel, sendbuf, recvbuf, count, dtype, op,
                              divisor, stream);
}

void *hiar_devcomm_stage_buffer(hiar_devcomm_t *dev, size_t *bytes)
{
    if (!dev->stage && hiar_cuda_host_alloc(STAGE_BYTES, &dev->stage) != HIAR_SUCCESS)
        dev->stage = NULL;
    *bytes = STAGE_BYTES;
    return dev->stage;
}

hiar_result_t hiar_devcomm_copy(void *dst, const void *src, size_t bytes, hiar_stream_t stream)
{
    return hiar_cuda_copy(dst, src, bytes, stream);
}

hiar_result_t hiar_devcomm_status(const hiar_devcomm_t *dev)
{
    return dev && dev->ipc ? hiar_ipc_status(dev->ipc) : HIAR_SUCCESS;
}

void hiar_devcomm_abort(hiar_devcomm_t *dev)
{
    if (dev && dev->ipc)
        hiar_ipc_abort(dev->ipc);
}

void hiar_devcomm_summary(const hiar_devcomm_t *dev, char *buf, size_t size)
{
    if (!dev)
        snprintf(buf, size, "no GPU on this rank");
    else
        snprintf(buf, size, "GPU %d (%s)%s: device buffers %s", dev->device, dev->bus_id,
                 dev->shared_gpu ? ", shared with another rank" : "", dev->why);
}
