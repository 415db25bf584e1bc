/* GPU side of a communicator: IPC setup with the P2P probe, staging, teardown. */
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/gpu.h"
#include "base/error.h"
#include "net/inter.h"
#include "cuda/api.h"
#include "base/log.h"
#include "base/reduce.h"
#include "topo/nvml.h"
#include "core/reg.h"

/* Bytes of one IPC data slot when HIAR_BUFFER_SIZE is 0: a chunk is half
 * a slot (2 ranks): bigger pieces per block mean fewer signals (measured on
 * 2 H200: 255 GB/s at 1 GB with 32 MB slots, 305 GB/s with 128 MB). */
#define IPC_SLOT_DEFAULT ((size_t)64 << 20)
/* Each of the two pinned buffers that stage device data through the host:
 * while MPI reduces one, the other is being copied.  Measured on 2 H200, 4
 * ranks as 2 groups under MPS, bf16, 1-256 MB: 1, 4 and 16 MB pieces within
 * 10% of each other (MPI dominates), 256 KB 10-20% slower. */
#define STAGE_BYTES ((size_t)4 << 20)
#define BUS_ID_MAX 32
/* What the P2P probe writes; the allocation starts zeroed, so it cannot be stale. */
#define PROBE_TOKEN 0x6869617270327000ull

struct hiar_devcomm {
    int device;
    char bus_id[BUS_ID_MAX];
    hiar_topo_fact_t *facts;  /* [comm size] every rank's topology facts */
    hiar_grouping_t groups;   /* grouping of device buffers, annotated */
    MPI_Comm group_comm;      /* this rank's group */
    int local, local_size;
    int nshards;              /* shards between groups: the largest group */
    MPI_Comm *shard_comm;     /* [nshards] owners of shard s in every group */
    size_t slot_bytes;        /* IPC slot, the same on every rank */
    hiar_ipc_t *ipc;
    int shared_gpu; /* another rank of the comm uses the same GPU */
    int hier_ok;    /* every group has IPC or one rank: the hierarchical device path, agreed by all */
    char why[320];  /* the transport for device buffers, why, and how its kernels launch */
    char *stage; /* 2 x STAGE_BYTES, pinned */
    hiar_windows_t windows; /* registered memory (hiar_mem_register) */
};

static hiar_window_group_t window_group(const hiar_devcomm_t *dev)
{
    hiar_window_group_t g = {dev->group_comm, dev->local, dev->local_size, dev->ipc != NULL, dev->device};
    return g;
}

/* Steps that need every peer's memory mapped are separated by group barriers. */
static void ipc_teardown(hiar_devcomm_t *dev, int collective)
{
    if (!dev->ipc)
        return;
    if (!collective)
        hiar_ipc_abort(dev->ipc);
    hiar_cuda_device_sync(dev->device); /* then peers can unmap and the owner free */
    if (collective) {
        MPI_Barrier(dev->group_comm);
        hiar_ipc_unmap_peers(dev->ipc);
        MPI_Barrier(dev->group_comm);
    }
    hiar_ipc_destroy(dev->ipc);
    dev->ipc = NULL;
}

/* create -> exchange handles -> open -> probe; every step agreed in the group. */
static void ipc_setup(const hiar_comm_t *comm, hiar_devcomm_t *dev)
{
    unsigned char handle[HIAR_IPC_HANDLE_BYTES] = {0};
    unsigned char *all = malloc((size_t)dev->local_size * HIAR_IPC_HANDLE_BYTES);
    int ok, pass = 0;

    ok = all && hiar_ipc_create(dev->local, dev->local_size, dev->slot_bytes,
                                (int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &dev->ipc,
                                handle) == HIAR_SUCCESS;
    if (!hiar_mpi_all(dev->group_comm, ok)) {
        snprintf(dev->why, sizeof(dev->why), "staged through host memory: IPC buffers could not be allocated (%s)",
                 ok ? "on another rank" : hiar_last_error());
        free(all);
        if (dev->ipc)
            hiar_ipc_destroy(dev->ipc);
        dev->ipc = NULL;
        return;
    }
    MPI_Allgather(handle, HIAR_IPC_HANDLE_BYTES, MPI_BYTE, all, HIAR_IPC_HANDLE_BYTES, MPI_BYTE,
                  dev->group_comm);
    ok = hiar_ipc_open(dev->ipc, all) == HIAR_SUCCESS;
    free(all);
    if (hiar_mpi_all(dev->group_comm, ok)) {
        ok = hiar_ipc_probe_write(dev->ipc, PROBE_TOKEN) == HIAR_SUCCESS;
        MPI_Barrier(dev->group_comm);
        ok = ok && hiar_ipc_probe_check(dev->ipc, PROBE_TOKEN, &pass) == HIAR_SUCCESS && pass;
        if (hiar_mpi_all(dev->group_comm, ok)) {
            snprintf(dev->why, sizeof(dev->why), "ipc (P2P verified by a write and read-back between every pair)");
            return;
        }
    }
    snprintf(dev->why, sizeof(dev->why), "staged through host memory: the CUDA IPC P2P check failed (%s)",
             ok ? "on another rank" : (*hiar_last_error() ? hiar_last_error() : "wrong data read back"));
    HIAR_WARN(IPC, "%s", dev->why);
    ipc_teardown(dev, 1);
}

/*
 * Ranks of the comm on this rank's GPU, itself included, by CUDA's UUID of
 * the GPU: bus ids repeat on identical machines, and host names differ
 * between containers on one machine; 0 without a GPU.  This counts ranks of
 * this comm only: other communicators' kernels on the GPU are not counted.
 */
static int ranks_on_gpu(const hiar_comm_t *comm, const hiar_devcomm_t *dev)
{
    static const unsigned char unknown[16];
    const unsigned char *mine = dev->facts[comm->rank].gpu_uuid;
    int n = 0;

    if (!dev->bus_id[0])
        return 0;
    if (memcmp(mine, unknown, sizeof(unknown)) == 0)
        return 1;
    for (int r = 0; r < comm->size; r++)
        n += memcmp(dev->facts[r].gpu_uuid, mine, sizeof(unknown)) == 0;
    return n;
}

/*
 * Launch caps for the group: each GPU's share for the most ranks on one GPU
 * of the group, the smallest over its ranks (the same grids everywhere);
 * two-shot within HIAR_MAX_BLOCKS (0: the default).
 */
static void set_launch(const hiar_comm_t *comm, hiar_devcomm_t *dev, int on_gpu)
{
    long long want = hiar_comm_param(comm, HIAR_P_MAX_BLOCKS);
    unsigned max = want <= 0 ? HIAR_IPC_BLOCKS_DEFAULT : want > HIAR_IPC_BLOCKS_MAX ? HIAR_IPC_BLOCKS_MAX : (unsigned)want;
    hiar_ipc_caps_t caps;
    int sharers = 1, pdl;
    size_t used;

    PMPI_Allreduce(&on_gpu, &sharers, 1, MPI_INT, MPI_MAX, dev->group_comm);
    hiar_ipc_fit_caps(dev->ipc, sharers > 0 ? (unsigned)sharers : 1, &caps);
    caps.twoshot = caps.twoshot < max ? caps.twoshot : max;
    _Static_assert(sizeof(caps) == 3 * sizeof(unsigned), "hiar_ipc_caps_t is reduced as 3 unsigned");
    PMPI_Allreduce(MPI_IN_PLACE, &caps, 3, MPI_UNSIGNED, MPI_MIN, dev->group_comm);
    pdl = hiar_ipc_set_launch(dev->ipc, &caps, (int)hiar_comm_param(comm, HIAR_P_PDL));
    used = strlen(dev->why);
    snprintf(dev->why + used, sizeof(dev->why) - used, "; kernels of at most %u (LL), %u (push), %u (two-shot) "
             "blocks for %d rank%s on one GPU, %s", caps.ll, caps.push, caps.twoshot, sharers,
             sharers == 1 ? "" : "s", pdl ? "programmatic dependent launch" : "plain launches");
}

/* Whether every rank of this rank's group has a GPU, and whether one shares ours. */
static int group_has_gpus(const hiar_comm_t *comm, hiar_devcomm_t *dev)
{
    const hiar_grouping_t *g = &dev->groups;
    int grp = g->group_of[comm->rank], all_gpu = 1;

    for (int m = g->start[grp]; m < g->start[grp + 1]; m++) {
        const hiar_topo_fact_t *f = &dev->facts[g->members[m]];
        all_gpu &= f->pci.bus_id[0] != '\0';
        if (g->members[m] != comm->rank && dev->bus_id[0] && strcmp(f->pci.bus_id, dev->facts[comm->rank].pci.bus_id) == 0)
            dev->shared_gpu = 1;
    }
    return all_gpu;
}

/* This rank's facts: host, GPU and its PCI path, NVLink peers. */
static void own_facts(const hiar_comm_t *comm, hiar_devcomm_t *dev, hiar_topo_fact_t *f)
{
    char host[HIAR_HOST_ID_MAX];

    hiar_topo_host_id(comm->params.v[HIAR_P_HOST_ID].text, host);
    hiar_topo_fact_init(f, host);
    if (!dev->bus_id[0])
        return;
    hiar_cuda_device_uuid(dev->device, f->gpu_uuid);
    if (hiar_topo_fact_set_gpu(f, comm->params.v[HIAR_P_SYSFS_ROOT].text, dev->bus_id) != HIAR_SUCCESS) {
        /* Without its PCI path the GPU still groups: its path to others is SYS. */
        HIAR_INFO(TOPO, "%s; grouping GPU %s without its PCI path", hiar_last_error(), dev->bus_id);
        hiar_pci_busid_normalize(dev->bus_id, f->pci.bus_id);
    }
    hiar_nvml_add_nvlink(f);
}

/* Gathers every rank's facts and groups the ranks for device buffers. */
static hiar_result_t group_devices(const hiar_comm_t *comm, hiar_devcomm_t *dev)
{
    hiar_topo_fact_t mine;
    const char *groups = comm->params.v[HIAR_P_GROUPS].text;

    own_facts(comm, dev, &mine);
    dev->facts = malloc(sizeof(mine) * (size_t)comm->size);
    if (!dev->facts)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the topology of %d ranks", comm->size);
    HIAR_MPI_CHECK(MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, dev->facts, sizeof(mine), MPI_BYTE, comm->mpi));
    if (*groups) {
        HIAR_CHECK(hiar_grouping_parse(groups, comm->size, &dev->groups));
        snprintf(dev->groups.why, sizeof(dev->groups.why), "HIAR_GROUPS=%s", groups);
        HIAR_CHECK(hiar_topo_annotate(dev->facts, NULL, &dev->groups));
    } else {
        HIAR_CHECK(hiar_topo_group(dev->facts, comm->size, (int)hiar_comm_param(comm, HIAR_P_GROUP_LEVEL), NULL,
                                   &dev->groups));
    }
    dev->local = dev->groups.local_index[comm->rank];
    dev->local_size = hiar_group_size(&dev->groups, dev->groups.group_of[comm->rank]);
    HIAR_MPI_CHECK(MPI_Comm_split(comm->mpi, dev->groups.group_of[comm->rank], comm->rank, &dev->group_comm));
    return hiar_shard_comms_create(comm->mpi, &dev->groups, comm->rank, &dev->nshards, &dev->shard_comm);
}

/* Marks the groups whose P2P probe failed (or that have no IPC) as shm. */
static hiar_result_t annotate_transports(const hiar_comm_t *comm, hiar_devcomm_t *dev)
{
    int mine = dev->ipc != NULL, *ipc = malloc(sizeof(int) * (size_t)comm->size);
    unsigned char *p2p = calloc((size_t)comm->size * (size_t)comm->size, 1);
    hiar_result_t rc = HIAR_SUCCESS;

    if (!ipc || !p2p)
        rc = hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the P2P matrix of %d ranks", comm->size);
    else if (MPI_Allgather(&mine, 1, MPI_INT, ipc, 1, MPI_INT, comm->mpi) != MPI_SUCCESS)
        rc = hiar_error_set(HIAR_MPI_ERROR, "MPI_Allgather of the P2P probe results failed");
    for (int a = 0; rc == HIAR_SUCCESS && a < comm->size; a++)
        for (int b = 0; b < comm->size; b++)
            p2p[a * comm->size + b] = a == b || (ipc[a] && ipc[b] && dev->groups.group_of[a] == dev->groups.group_of[b]);
    if (rc == HIAR_SUCCESS)
        rc = hiar_topo_annotate(dev->facts, p2p, &dev->groups);
    free(ipc);
    free(p2p);
    return rc;
}

static void topo_log_line(void *arg, const char *line)
{
    (void)arg;
    HIAR_INFO(TOPO, "%s", line);
}

hiar_result_t hiar_devcomm_create(hiar_comm_t *comm, hiar_devcomm_t **out)
{
    hiar_devcomm_t *dev = calloc(1, sizeof(*dev));
    hiar_result_t rc;
    int all_gpu, on_gpu;

    if (!dev)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the GPU state");
    dev->group_comm = MPI_COMM_NULL;
    dev->slot_bytes = (size_t)hiar_comm_param(comm, HIAR_P_BUFFER_SIZE);
    dev->slot_bytes = dev->slot_bytes ? dev->slot_bytes : IPC_SLOT_DEFAULT;
    hiar_cuda_current_device(&dev->device, dev->bus_id);
    rc = group_devices(comm, dev);
    if (rc != HIAR_SUCCESS) {
        hiar_devcomm_destroy(comm, dev, 0);
        return rc;
    }
    all_gpu = group_has_gpus(comm, dev);
    on_gpu = ranks_on_gpu(comm, dev);
    dev->shared_gpu |= on_gpu > 1; /* ranks of other groups on this GPU spin beside ours too */
    if (all_gpu && dev->local_size >= 2 && dev->local_size <= HIAR_IPC_MAX_GROUP) {
        ipc_setup(comm, dev);
        if (dev->ipc)
            set_launch(comm, dev, on_gpu);
    } else
        snprintf(dev->why, sizeof(dev->why), "staged through host memory: %s",
                 dev->local_size < 2 ? "the group has one rank"
                 : !all_gpu          ? "not every rank of the group has a GPU"
                                     : "CUDA IPC groups have at most 8 ranks");
    rc = annotate_transports(comm, dev);
    if (rc != HIAR_SUCCESS) {
        hiar_devcomm_destroy(comm, dev, 1);
        return rc;
    }
    /* One group without IPC makes every group stage through the host paths:
     * groups on different paths would wait on different communicators. */
    dev->hier_ok = dev->ipc || dev->local_size == 1;
    PMPI_Allreduce(MPI_IN_PLACE, &dev->hier_ok, 1, MPI_INT, MPI_MIN, comm->mpi);
    if (comm->rank == 0 && hiar_log_enabled(HIAR_LOG_INFO, HIAR_SUB_TOPO))
        hiar_topo_table(dev->facts, &dev->groups, topo_log_line, NULL);
    if (dev->shared_gpu && !hiar_cuda_mps_running() && dev->local == 0)
        HIAR_WARN(IPC, "several ranks share GPU %s but CUDA MPS is not running: their spinning "
                       "kernels time-slice (milliseconds per call instead of microseconds); start it "
                       "with nvidia-cuda-mps-control -d",
                  dev->bus_id);
    if (dev->device < 0) {
        hiar_devcomm_destroy(comm, dev, 1);
        dev = NULL;
    }
    *out = dev;
    return HIAR_SUCCESS;
}

void hiar_devcomm_destroy(hiar_comm_t *comm, hiar_devcomm_t *dev, int collective)
{
    hiar_window_group_t g;

    if (!dev)
        return;
    g = window_group(dev);
    ipc_teardown(dev, collective); /* stops kernels first on abort */
    hiar_windows_clear(&dev->windows, &g, collective);
    /* A failed comm's staging may be the target of a pending MPI request;
     * copies left on the caller's stream may still read it. */
    if (dev->stage && comm->failed == HIAR_SUCCESS) {
        hiar_cuda_device_sync(dev->device);
        hiar_cuda_host_free(dev->stage);
    }
    if (dev->group_comm != MPI_COMM_NULL)
        MPI_Comm_free(&dev->group_comm);
    hiar_shard_comms_free(dev->nshards, dev->shard_comm);
    hiar_grouping_free(&dev->groups);
    free(dev->facts);
    free(dev);
}

int hiar_devcomm_has_ipc(const hiar_devcomm_t *dev)
{
    return dev && dev->ipc;
}

const hiar_grouping_t *hiar_devcomm_groups(const hiar_devcomm_t *dev)
{
    return &dev->groups;
}

int hiar_devcomm_ngroups(const hiar_devcomm_t *dev)
{
    return dev ? dev->groups.ngroups : 0;
}

hiar_result_t hiar_devcomm_print_topology(const hiar_devcomm_t *dev, FILE *out)
{
    return dev ? hiar_topo_print(out, dev->facts, &dev->groups) : HIAR_SUCCESS;
}

hiar_result_t hiar_devcomm_ipc_allreduce(hiar_devcomm_t *dev, int kernel, const void *sendbuf,
                                         void *recvbuf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                         int divisor, hiar_stream_t stream)
{
    hiar_ipc_direct_t direct;
    int zero_copy = kernel == HIAR_IPC_TWOSHOT &&
                    hiar_windows_direct(&dev->windows, recvbuf, count * hiar_dtype_size(dtype), &direct);

    return hiar_ipc_allreduce(dev->ipc, (hiar_ipc_kernel_t)kernel, sendbuf, recvbuf, count, dtype, op,
                              divisor, zero_copy ? &direct : NULL, stream);
}

hiar_result_t hiar_devcomm_mem_alloc(const hiar_devcomm_t *dev, size_t bytes, void **ptr)
{
    return hiar_cuda_mem_alloc(dev->device, bytes, ptr);
}

hiar_result_t hiar_devcomm_register(hiar_devcomm_t *dev, void *ptr, size_t bytes, int owned)
{
    hiar_window_group_t g = window_group(dev);
    return hiar_windows_add(&dev->windows, &g, ptr, bytes, owned);
}

int hiar_devcomm_registered(const hiar_devcomm_t *dev, const void *ptr, int *owned)
{
    return hiar_windows_find(&dev->windows, ptr, owned);
}

void hiar_devcomm_deregister(hiar_devcomm_t *dev, int window)
{
    hiar_window_group_t g = window_group(dev);
    hiar_windows_remove(&dev->windows, &g, window, 1);
}

void *hiar_devcomm_stage_buffer(hiar_devcomm_t *dev, size_t *bytes)
{
    if (!dev->stage && hiar_cuda_host_alloc(2 * STAGE_BYTES, (void **)&dev->stage) != HIAR_SUCCESS)
        dev->stage = NULL;
    *bytes = STAGE_BYTES;
    return dev->stage;
}

int hiar_devcomm_hier_ready(const hiar_devcomm_t *dev)
{
    return dev && dev->groups.ngroups > 1 && dev->hier_ok;
}

/*
 * MPI allreduce of `bytes` of device memory among the owners of one shard,
 * through the two pinned buffers:
 *
 *   piece i: wait for its copy to the host | start copying piece i+1 |
 *            MPI on piece i (AVG: divide) | start copying piece i back
 *
 * Copies and kernels share the caller's stream, so they stay in order: the
 * first wait also covers the reduce-scatter kernel before it, and nothing
 * waits for the last copy back (the next call's first wait does, before the
 * host touches the buffers again).  Each wait is followed by a look at the
 * kernels' status: a group that timed out must not go on to MPI with stale
 * shards.
 */
static hiar_result_t staged_inter(hiar_comm_t *comm, hiar_devcomm_t *dev, char *data, size_t bytes,
                                  hiar_dtype_t dtype, hiar_op_t op, MPI_Comm shard_comm, hiar_stream_t stream,
                                  hiar_wait_t *wait)
{
    size_t esize = hiar_dtype_size(dtype), piece_max;
    char *stage = hiar_devcomm_stage_buffer(dev, &piece_max);

    if (!stage)
        return hiar_error_set(HIAR_NO_MEMORY, "no pinned staging buffer for the inter-group step");
    piece_max = piece_max / esize * esize;
    HIAR_CHECK(hiar_cuda_copy_async(stage, data, bytes < piece_max ? bytes : piece_max, stream));
    for (size_t off = 0, i = 0; off < bytes; off += piece_max, i++) {
        char *buf = stage + (i % 2) * STAGE_BYTES;
        size_t n = bytes - off < piece_max ? bytes - off : piece_max, next = off + n;
        HIAR_CHECK(hiar_cuda_sync(stream));
        HIAR_CHECK(hiar_devcomm_status(dev));
        if (next < bytes)
            HIAR_CHECK(hiar_cuda_copy_async(stage + ((i + 1) % 2) * STAGE_BYTES, data + next,
                                            bytes - next < piece_max ? bytes - next : piece_max, stream));
        HIAR_CHECK(hiar_inter_allreduce(buf, n / esize, dtype, op, shard_comm, wait));
        if (op == HIAR_AVG)
            hiar_reduce_host(buf, (const void *const *)&buf, 1, n / esize, dtype, HIAR_SUM, comm->size);
        HIAR_CHECK(hiar_cuda_copy_async(data + off, buf, n, stream));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_devcomm_hier_allreduce(hiar_comm_t *comm, hiar_devcomm_t *dev, const void *sendbuf,
                                          void *recvbuf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                          hiar_stream_t stream)
{
    size_t esize = hiar_dtype_size(dtype), bytes = count * esize;
    size_t chunk = hiar_ipc_hier_chunk(dev->slot_bytes, dev->nshards);
    hiar_wait_t wait = hiar_wait_begin((int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &comm->abort,
                                       "hiar_allreduce (between groups)");

    if (dev->ipc) {
        HIAR_CHECK(hiar_ipc_status(dev->ipc));
        HIAR_CHECK(hiar_ipc_hier_step(dev->ipc, HIAR_IPC_STEP_RS, sendbuf, recvbuf, count, dtype, op,
                                      dev->nshards, chunk, stream));
    } else if (sendbuf != recvbuf) {
        HIAR_CHECK(hiar_cuda_copy_async(recvbuf, sendbuf, bytes, stream));
    }
    for (size_t c0 = 0; c0 < bytes; c0 += chunk) {
        size_t cbytes = bytes - c0 < chunk ? bytes - c0 : chunk;
        for (int s = dev->local; s < dev->nshards; s += dev->local_size) {
            size_t lo, hi;
            hiar_ipc_shard_range(cbytes, dev->nshards, s, &lo, &hi);
            hi = hi < cbytes ? hi : cbytes;
            if (lo < hi)
                HIAR_CHECK(staged_inter(comm, dev, (char *)recvbuf + c0 + lo, hi - lo, dtype, op,
                                        dev->shard_comm[s], stream, &wait));
        }
    }
    if (dev->ipc)
        HIAR_CHECK(hiar_ipc_hier_step(dev->ipc, HIAR_IPC_STEP_AG, recvbuf, recvbuf, count, dtype, op,
                                      dev->nshards, chunk, stream));
    return HIAR_SUCCESS;
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
