/* hiar_allreduce: validate, choose the path, run it.  No transport code here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "inter.h"
#include "log.h"
#include "plan.h"
#include "reduce.h"
#include "shard.h"
#ifdef HIAR_HAVE_CUDA
#include "../cuda/kernels.h"
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

/* HIAR_CHECK=global: every rank compares every rank's arguments with rank 0's. */
static hiar_result_t check_global(hiar_comm_t *comm, size_t count, hiar_dtype_t dtype, hiar_op_t op)
{
    long long mine[3] = {(long long)count, dtype, op};
    long long *all = malloc(sizeof(mine) * (size_t)comm->size);
    hiar_result_t rc = HIAR_SUCCESS;
    int mrc;

    if (!all)
        return hiar_error_set(HIAR_NO_MEMORY, "HIAR_CHECK=global: cannot allocate %d entries", comm->size);
    mrc = MPI_Allgather(mine, 3, MPI_LONG_LONG, all, 3, MPI_LONG_LONG, comm->mpi);
    if (mrc != MPI_SUCCESS)
        rc = hiar_error_mpi(mrc, "HIAR_CHECK=global: MPI_Allgather");
    for (int r = 1; rc == HIAR_SUCCESS && r < comm->size; r++)
        if (memcmp(all, all + 3 * r, sizeof(mine)) != 0)
            rc = hiar_error_set(HIAR_INVALID_ARGUMENT,
                                "hiar_allreduce (HIAR_CHECK=global): rank %d passed count %lld, "
                                "dtype %lld, op %lld but rank 0 passed count %lld, dtype %lld, op %lld",
                                r, all[3 * r], all[3 * r + 1], all[3 * r + 2], all[0], all[1], all[2]);
    free(all);
    return rc;
}

/* Buffers this path cannot read: device memory until the GPU path exists. */
static hiar_result_t check_memory_kind(const void *sendbuf, const void *recvbuf)
{
#ifdef HIAR_HAVE_CUDA
    const void *bufs[2] = {sendbuf, recvbuf};
    for (int i = 0; i < 2; i++) {
        int on_device = 0;
        HIAR_CHECK(hiar_cuda_is_device_pointer(bufs[i], &on_device));
        if (on_device)
            return hiar_error_set(HIAR_UNSUPPORTED,
                                  "hiar_allreduce: %s %p is GPU memory; this build reduces host "
                                  "buffers only",
                                  i ? "recvbuf" : "sendbuf", bufs[i]);
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

/* One chunk (at most a slot) through the shm transport, and MPI between groups. */
static hiar_result_t run_chunk(hiar_comm_t *comm, hiar_path_t path, const void *send, void *recv,
                               size_t n, hiar_dtype_t dtype, hiar_op_t op, hiar_wait_t *wait)
{
    int divisor = op == HIAR_AVG ? comm->size : 0;

    switch (path) {
    case HIAR_PATH_ONESHOT:
        return hiar_shm_oneshot(comm->shm, send, recv, n, dtype, op, divisor, wait);
    case HIAR_PATH_TWOSHOT:
        HIAR_CHECK(hiar_shm_reduce_scatter(comm->shm, send, n, dtype, op, comm->local_size, divisor, wait));
        return hiar_shm_allgather(comm->shm, recv, n, dtype, comm->local_size, wait);
    default: /* HIAR_PATH_HIER */
        HIAR_CHECK(hiar_shm_reduce_scatter(comm->shm, send, n, dtype, op, comm->nshards, 0, wait));
        HIAR_CHECK(inter_step(comm, n, dtype, op, wait));
        return hiar_shm_allgather(comm->shm, recv, n, dtype, comm->nshards, wait);
    }
}

static hiar_result_t run_mpi(hiar_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             hiar_dtype_t dtype, hiar_op_t op, hiar_wait_t *wait)
{
    if (sendbuf != recvbuf)
        memcpy(recvbuf, sendbuf, count * hiar_dtype_size(dtype));
    HIAR_CHECK(hiar_inter_allreduce(recvbuf, count, dtype, op, comm->mpi, wait));
    if (op == HIAR_AVG)
        hiar_reduce_host(recvbuf, (const void *const *)&recvbuf, 1, count, dtype, HIAR_SUM, comm->size);
    return HIAR_SUCCESS;
}

static hiar_result_t run(hiar_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                         hiar_dtype_t dtype, hiar_op_t op)
{
    size_t esize = hiar_dtype_size(dtype);
    hiar_plan_input_t in = {comm->size, comm->groups.ngroups, count * esize,
                            (int)hiar_comm_param(comm, HIAR_P_ALGO),
                            (size_t)hiar_comm_param(comm, HIAR_P_ONESHOT_MAX)};
    hiar_path_t path = hiar_plan_choose(&in);
    hiar_wait_t wait = hiar_wait_begin((int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &comm->abort,
                                       "hiar_allreduce");
    size_t chunk;

    HIAR_TRACE(CALL, "allreduce %zu x %s %s: %s", count, hiar_dtype_name(dtype), hiar_op_name(op),
               hiar_path_name(path));
    if (path == HIAR_PATH_MPI)
        return run_mpi(comm, sendbuf, recvbuf, count, dtype, op, &wait);
    chunk = hiar_shm_slot_bytes(comm->shm) / esize;
    for (size_t off = 0; off < count; off += chunk) {
        size_t n = count - off < chunk ? count - off : chunk;
        HIAR_CHECK(run_chunk(comm, path, (const char *)sendbuf + off * esize,
                             (char *)recvbuf + off * esize, n, dtype, op, &wait));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_allreduce(const void *sendbuf, void *recvbuf, size_t count, hiar_dtype_t dtype,
                             hiar_op_t op, hiar_comm_t *comm, hiar_stream_t stream)
{
    hiar_result_t rc;

    (void)stream;
    HIAR_CHECK(check_args(sendbuf, recvbuf, count, dtype, op));
    HIAR_CHECK(hiar_comm_enter(comm, "hiar_allreduce"));
    rc = HIAR_SUCCESS;
    if (hiar_comm_param(comm, HIAR_P_CHECK) == HIAR_ARGCHECK_GLOBAL)
        rc = check_global(comm, count, dtype, op);
    if (rc == HIAR_SUCCESS && count > 0)
        rc = check_memory_kind(sendbuf, recvbuf);
    if (rc == HIAR_SUCCESS && count > 0) {
        rc = run(comm, sendbuf, recvbuf, count, dtype, op);
        if (rc != HIAR_SUCCESS)
            hiar_comm_fail(comm, rc);
    }
    hiar_comm_leave(comm);
    return rc;
}
