/* hiar_allreduce: validate, choose the path, run it.  No transport code here. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/error.h"
#include "net/inter.h"
#include "base/log.h"
#include "core/plan.h"
#include "base/reduce.h"
#include "base/range.h"
#ifdef HIAR_HAVE_CUDA
#include "cuda/api.h"
#endif

static hiar_result_t check_args(const void *sendbuf, void *recvbuf, size_t count,
                                hiar_dtype_t dtype, hiar_op_t op)
{
    size_t esize = hiar_dtype_size(dtype);
    uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;

    HIAR_ARG_CHECK(esize, "hiar_allreduce: dtype %d is not a hiar_dtype_t (expected 0..%d)", (int)dtype,
                   HIAR_DTYPE_COUNT - 1);
    HIAR_ARG_CHECK((unsigned)op < HIAR_OP_COUNT,
                   "hiar_allreduce: op %d is not a hiar_op_t (expected 0..%d)", (int)op, HIAR_OP_COUNT - 1);
    HIAR_ARG_CHECK(count <= PTRDIFF_MAX / esize,
                   "hiar_allreduce: count %zu of %s overflows the address space", count,
                   hiar_dtype_name(dtype));
    if (count == 0)
        return HIAR_SUCCESS;
    HIAR_ARG_CHECK(sendbuf && recvbuf, "hiar_allreduce: %s is NULL with count %zu",
                   sendbuf ? "recvbuf" : "sendbuf", count);
    HIAR_ARG_CHECK(s % esize == 0 && r % esize == 0,
                   "hiar_allreduce: %s %p is not aligned to the %zu-byte size of %s",
                   s % esize ? "sendbuf" : "recvbuf", s % esize ? sendbuf : recvbuf, esize,
                   hiar_dtype_name(dtype));
    HIAR_ARG_CHECK(s == r || s + count * esize <= r || r + count * esize <= s,
                   "hiar_allreduce: sendbuf %p and recvbuf %p overlap by part of %zu bytes; pass "
                   "the same pointer for in-place",
                   sendbuf, recvbuf, count * esize);
    return HIAR_SUCCESS;
}

/*
 * HIAR_CHECK=global: every rank compares every rank's arguments (and the
 * result of its local checks) with rank 0's, so a rank with bad arguments
 * fails every rank's call instead of leaving them waiting.  Non-blocking and
 * bounded like every other wait.
 */
static hiar_result_t check_global(hiar_comm_t *comm, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                  int device, hiar_result_t local_rc)
{
    enum { N = 5 };
    static const char *const what[N] = {"count", "dtype", "op", "device buffers", "result of local checks"};
    long long mine[N] = {(long long)count, dtype, op, device, local_rc};
    long long *all = malloc(sizeof(mine) * (size_t)comm->size);
    hiar_wait_t wait = hiar_wait_begin((int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &comm->abort,
                                       "hiar_allreduce (HIAR_CHECK=global)");
    hiar_result_t rc = HIAR_SUCCESS;
    MPI_Request req;
    int mrc;

    if (!all)
        return hiar_error_set(HIAR_NO_MEMORY, "HIAR_CHECK=global: cannot allocate %d entries", comm->size);
    mrc = MPI_Iallgather(mine, N, MPI_LONG_LONG, all, N, MPI_LONG_LONG, comm->mpi, &req);
    rc = mrc == MPI_SUCCESS ? hiar_mpi_wait(1, &req, &wait) : hiar_error_mpi(mrc, "HIAR_CHECK=global: MPI_Iallgather");
    if (rc == HIAR_SUCCESS && local_rc != HIAR_SUCCESS)
        rc = local_rc; /* this rank's own message stays */
    for (int r = 0; rc == HIAR_SUCCESS && r < comm->size; r++)
        for (int i = 0; i < N && rc == HIAR_SUCCESS; i++)
            if (all[N * r + i] != all[i] || (i == N - 1 && all[N * r + i] != HIAR_SUCCESS))
                rc = hiar_error_set(HIAR_INVALID_ARGUMENT,
                                    "hiar_allreduce (HIAR_CHECK=global): rank %d passed %s %lld but "
                                    "rank 0 passed %lld (count %lld, dtype %lld, op %lld on rank 0)",
                                    r, what[i], all[N * r + i], all[i], all[0], all[1], all[2]);
    free(all);
    return rc;
}

/* 1 if either buffer is GPU memory (then both are treated as such). */
static hiar_result_t on_device(const void *sendbuf, const void *recvbuf, int *device)
{
    *device = 0;
#ifdef HIAR_HAVE_CUDA
    int d;
    HIAR_CHECK(hiar_cuda_is_device_pointer(sendbuf, &d));
    *device = d;
    if (recvbuf != sendbuf) {
        HIAR_CHECK(hiar_cuda_is_device_pointer(recvbuf, &d));
        *device |= d;
    }
#else
    (void)sendbuf;
    (void)recvbuf;
#endif
    return HIAR_SUCCESS;
}

/* Inter-group step on the shards this rank owns; AVG divides them there, once. */
static hiar_result_t inter_step(hiar_comm_t *comm, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                hiar_wait_t *wait)
{
    for (int s = comm->local; s < comm->nshards; s += comm->local_size) {
        size_t n;
        void *shard = hiar_shm_shard(comm->shm, count, dtype, comm->nshards, s, &n);
        if (n == 0)
            continue;
        HIAR_CHECK(hiar_inter_allreduce(shard, n, dtype, op, comm->shard_comm[s], wait));
        if (op == HIAR_AVG)
            hiar_reduce_host(shard, (const void *const *)&shard, 1, n, dtype, HIAR_SUM, comm->size);
    }
    return HIAR_SUCCESS;
}

/* The comm's scratch, where MPI reduces (allocated at first use). */
static hiar_result_t need_scratch(hiar_comm_t *comm)
{
    if (!comm->scratch && !(comm->scratch = malloc(HIAR_MPI_SCRATCH_BYTES)))
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d bytes of MPI scratch", HIAR_MPI_SCRATCH_BYTES);
    return HIAR_SUCCESS;
}

/*
 * One-shot in the group into the scratch, then MPI between groups on copies
 * of the group sum (hiar_inter_oneshot).  MPI works in the scratch: see
 * run_mpi.
 */
static hiar_result_t run_hier_oneshot(hiar_comm_t *comm, const void *send, void *recv, size_t n,
                                      hiar_dtype_t dtype, hiar_op_t op, hiar_wait_t *wait)
{
    char *result;

    HIAR_CHECK(need_scratch(comm));
    HIAR_CHECK(hiar_shm_oneshot(comm->shm, send, comm->scratch, n, dtype, op, 0, wait));
    HIAR_CHECK(hiar_inter_oneshot(comm->scratch, n, dtype, op, comm->shard_comm, comm->local, comm->local_size,
                                  comm->nshards, comm->size, wait, &result));
    memcpy(recv, result, n * hiar_dtype_size(dtype));
    return HIAR_SUCCESS;
}

/* One chunk (at most a slot) through the shm transport, and MPI between groups. */
static hiar_result_t run_chunk(hiar_comm_t *comm, hiar_plan_t path, const void *send, void *recv,
                               size_t n, hiar_dtype_t dtype, hiar_op_t op, hiar_wait_t *wait)
{
    int divisor = op == HIAR_AVG ? comm->size : 0;

    switch (path) {
    case HIAR_PLAN_ONESHOT:
        return hiar_shm_oneshot(comm->shm, send, recv, n, dtype, op, divisor, wait);
    case HIAR_PLAN_TWOSHOT:
        HIAR_CHECK(hiar_shm_reduce_scatter(comm->shm, send, n, dtype, op, comm->local_size, divisor, wait));
        return hiar_shm_allgather(comm->shm, recv, n, dtype, comm->local_size, wait);
    case HIAR_PLAN_HIER_ONESHOT:
        return run_hier_oneshot(comm, send, recv, n, dtype, op, wait);
    default: /* HIAR_PLAN_HIER */
        HIAR_CHECK(hiar_shm_reduce_scatter(comm->shm, send, n, dtype, op, comm->nshards, 0, wait));
        HIAR_CHECK(inter_step(comm, n, dtype, op, wait));
        return hiar_shm_allgather(comm->shm, recv, n, dtype, comm->nshards, wait);
    }
}

/*
 * MPI reduces in the comm's scratch buffer, chunk by chunk, not in recvbuf: a
 * call that times out leaves its receives posted (mpi/inter.c), and a late
 * peer would complete them into the caller's memory, perhaps freed by then.
 * A failed comm keeps its scratch (comm_free).
 */
static hiar_result_t run_mpi(hiar_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             hiar_dtype_t dtype, hiar_op_t op, hiar_wait_t *wait)
{
    size_t esize = hiar_dtype_size(dtype), chunk = HIAR_MPI_SCRATCH_BYTES / esize;

    HIAR_CHECK(need_scratch(comm));
    for (size_t off = 0; off < count; off += chunk) {
        size_t n = count - off < chunk ? count - off : chunk;
        memcpy(comm->scratch, (const char *)sendbuf + off * esize, n * esize);
        HIAR_CHECK(hiar_inter_allreduce(comm->scratch, n, dtype, op, comm->mpi, wait));
        if (op == HIAR_AVG)
            hiar_reduce_host(comm->scratch, (const void *const *)&comm->scratch, 1, n, dtype, HIAR_SUM,
                             comm->size);
        memcpy((char *)recvbuf + off * esize, comm->scratch, n * esize);
    }
    return HIAR_SUCCESS;
}

/*
 * Small host messages over groups go one-shot in the group, then every rank
 * allreduces the whole group sum with its counterparts: one barrier instead
 * of two.  The copies for the shards a rank owns (several in a smaller group)
 * must fit the scratch: a bound every rank computes alike.
 */
size_t hiar_comm_hier_oneshot_max(const hiar_comm_t *comm)
{
    size_t max = (size_t)hiar_comm_param(comm, HIAR_P_ONESHOT_MAX);
    size_t fits = HIAR_MPI_SCRATCH_BYTES / ((size_t)comm->nshards + 1);

    max = max ? max : HIAR_HIER_ONESHOT_MAX_DEFAULT;
    return max < fits ? max : fits;
}

static hiar_plan_t plan(const hiar_comm_t *comm, size_t bytes, int device)
{
    hiar_plan_input_t in = {comm->size, comm->groups.ngroups, bytes,
                            (int)hiar_comm_param(comm, HIAR_P_ALGO),
                            (size_t)hiar_comm_param(comm, HIAR_P_ONESHOT_MAX), 0,
                            hiar_comm_hier_oneshot_max(comm), 0};
#ifdef HIAR_HAVE_CUDA
    /* Device buffers follow the device grouping (topology), host ones the host's. */
    if (device && comm->dev) {
        in.ngroups = hiar_devcomm_ngroups(comm->dev);
        in.ipc = hiar_devcomm_has_ipc(comm->dev);
    }
    in.ipc_ll_max = hiar_ipc_oneshot_max();
#else
    (void)device;
#endif
    return hiar_plan_choose(&in);
}

/* Host memory through shm and MPI; synchronous. */
static hiar_result_t run_host(hiar_comm_t *comm, hiar_plan_t path, const void *sendbuf, void *recvbuf,
                              size_t count, hiar_dtype_t dtype, hiar_op_t op)
{
    size_t esize = hiar_dtype_size(dtype);
    hiar_wait_t wait = hiar_wait_begin((int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &comm->abort,
                                       "hiar_allreduce");
    size_t chunk;

    if (path == HIAR_PLAN_MPI)
        return run_mpi(comm, sendbuf, recvbuf, count, dtype, op, &wait);
    chunk = hiar_shm_slot_bytes(comm->shm) / esize;
    for (size_t off = 0; off < count; off += chunk) {
        size_t n = count - off < chunk ? count - off : chunk;
        HIAR_CHECK(run_chunk(comm, path, (const char *)sendbuf + off * esize,
                             (char *)recvbuf + off * esize, n, dtype, op, &wait));
    }
    return HIAR_SUCCESS;
}

#ifdef HIAR_HAVE_CUDA
/*
 * Device buffers the IPC kernels cannot serve: chunk by chunk through a
 * pinned host buffer and the host path.  Every rank cuts the same chunks.
 * The copy back is left on the stream: the next copy in, on the same stream,
 * waits for it, and so does the host before it touches the buffer again.
 */
static hiar_result_t run_staged(hiar_comm_t *comm, hiar_plan_t path, const void *sendbuf, void *recvbuf,
                                size_t count, hiar_dtype_t dtype, hiar_op_t op, hiar_stream_t stream)
{
    size_t esize = hiar_dtype_size(dtype), bytes;
    char *stage = comm->dev ? hiar_devcomm_stage_buffer(comm->dev, &bytes) : NULL;
    size_t chunk;

    if (!stage)
        return hiar_error_set(HIAR_NO_MEMORY, "hiar_allreduce: no pinned staging buffer for device "
                                              "buffers (is a GPU selected on this rank?)");
    chunk = bytes / esize;
    for (size_t off = 0; off < count; off += chunk) {
        size_t n = count - off < chunk ? count - off : chunk;
        HIAR_CHECK(hiar_cuda_copy(stage, (const char *)sendbuf + off * esize, n * esize, stream));
        HIAR_CHECK(run_host(comm, path, stage, stage, n, dtype, op));
        HIAR_CHECK(hiar_cuda_copy_async((char *)recvbuf + off * esize, stage, n * esize, stream));
    }
    return HIAR_SUCCESS;
}
#endif

static hiar_result_t run(hiar_comm_t *comm, hiar_plan_t path, const void *sendbuf, void *recvbuf, size_t count,
                         hiar_dtype_t dtype, hiar_op_t op, int device, hiar_stream_t stream)
{
    HIAR_TRACE(CALL, "allreduce %zu x %s %s on %s buffers: %s", count, hiar_dtype_name(dtype),
               hiar_op_name(op), device ? "device" : "host", hiar_plan_name(path));
#ifdef HIAR_HAVE_CUDA
    size_t bytes = count * hiar_dtype_size(dtype);

    if (path >= HIAR_PLAN_IPC_LL) {
        static const hiar_ipc_kernel_t kernels[] = {HIAR_IPC_LL, HIAR_IPC_PUSH, HIAR_IPC_TWOSHOT};
        HIAR_CHECK(hiar_devcomm_status(comm->dev));
        return hiar_devcomm_ipc_allreduce(comm->dev, kernels[path - HIAR_PLAN_IPC_LL], sendbuf, recvbuf,
                                          count, dtype, op, op == HIAR_AVG ? comm->size : 0, stream);
    }
    if (device && path == HIAR_PLAN_HIER && bytes > HIAR_DEVICE_HIER_MIN && hiar_devcomm_hier_ready(comm->dev))
        return hiar_devcomm_hier_allreduce(comm, comm->dev, sendbuf, recvbuf, count, dtype, op, stream);
    /* The rest goes through host memory, so along the host grouping; small
     * messages over groups too: MPI needs them on the host anyway, and the
     * host's shared memory is quicker than two kernels and a sync. */
    if (device)
        return run_staged(comm, plan(comm, bytes, 0), sendbuf, recvbuf, count, dtype, op, stream);
#else
    (void)stream;
#endif
    return run_host(comm, path, sendbuf, recvbuf, count, dtype, op);
}

/*
 * Device calls off the IPC kernels wait on the host (MPI, copies): no graph
 * capture.  Checked with the arguments, before anything is sent, so that a
 * refused call leaves the comm usable (eager calls, say).
 */
static hiar_result_t capturable(hiar_plan_t path, int device, hiar_stream_t stream)
{
#ifdef HIAR_HAVE_CUDA
    int capturing = 0;

    if (device && path < HIAR_PLAN_IPC_LL)
        HIAR_CHECK(hiar_cuda_is_capturing(stream, &capturing));
    if (capturing)
        return hiar_error_set(HIAR_INVALID_USAGE,
                              "hiar_allreduce: device buffers that go through the host (several groups of "
                              "GPUs, or a group without CUDA IPC) wait for MPI or copies on the host and "
                              "cannot be captured in a CUDA graph (one group with IPC can)");
#else
    (void)path, (void)device, (void)stream;
#endif
    return HIAR_SUCCESS;
}

hiar_result_t hiar_allreduce(const void *sendbuf, void *recvbuf, size_t count, hiar_dtype_t dtype,
                             hiar_op_t op, hiar_comm_t *comm, hiar_stream_t stream)
{
    hiar_result_t rc = check_args(sendbuf, recvbuf, count, dtype, op);
    int device = 0;
    hiar_plan_t path = HIAR_PLAN_MPI; /* chosen below for a call that runs */

    /* With HIAR_CHECK=global a local failure is shared with the peers. */
    if (rc != HIAR_SUCCESS && !hiar_comm_checks_globally(comm))
        return rc;
    HIAR_CHECK(hiar_comm_enter(comm, "hiar_allreduce"));
    if (rc == HIAR_SUCCESS && count > 0)
        rc = on_device(sendbuf, recvbuf, &device);
    if (rc == HIAR_SUCCESS && count > 0) {
        path = plan(comm, count * hiar_dtype_size(dtype), device);
        rc = capturable(path, device, stream);
    }
    if (hiar_comm_param(comm, HIAR_P_CHECK) == HIAR_ARGCHECK_GLOBAL)
        rc = check_global(comm, count, dtype, op, device, rc);
    if (rc == HIAR_SUCCESS && count > 0) {
        rc = run(comm, path, sendbuf, recvbuf, count, dtype, op, device, stream);
        if (rc != HIAR_SUCCESS)
            hiar_comm_fail(comm, rc);
    }
    hiar_comm_leave(comm);
    return rc;
}
