/* hiar_allreduce and the calls built on it: validate, plan once, describe the call, run it.  No transport code here. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/log.h"
#include "base/reduce.h"
#include "core/allreduce.h"
#include "core/comm.h"
#include "core/run.h"
#include "net/coll.h"

hiar_result_t hiar_call_check(const hiar_call_t *c, const char *name)
{
    size_t esize = hiar_dtype_size(c->dtype), count = c->count;
    uintptr_t s = (uintptr_t)c->sendbuf, r = (uintptr_t)c->recvbuf;

    HIAR_ARG_CHECK(esize, "%s: dtype %d is not a hiar_dtype_t (expected 0..%d)", name, (int)c->dtype,
                   HIAR_DTYPE_COUNT - 1);
    HIAR_ARG_CHECK((unsigned)c->op < HIAR_OP_COUNT, "%s: op %d is not a hiar_op_t (expected 0..%d)", name,
                   (int)c->op, HIAR_OP_COUNT - 1);
    HIAR_ARG_CHECK(count <= PTRDIFF_MAX / esize, "%s: count %zu of %s overflows the address space", name, count,
                   hiar_dtype_name(c->dtype));
    if (count == 0)
        return HIAR_SUCCESS;
    HIAR_ARG_CHECK(s && r, "%s: %s is NULL with count %zu", name, s ? "recvbuf" : "sendbuf", count);
    HIAR_ARG_CHECK(s % esize == 0 && r % esize == 0, "%s: %s %p is not aligned to the %zu-byte size of %s", name,
                   s % esize ? "sendbuf" : "recvbuf", s % esize ? c->sendbuf : c->recvbuf, esize,
                   hiar_dtype_name(c->dtype));
    HIAR_ARG_CHECK(s == r || s + count * esize <= r || r + count * esize <= s,
                   "%s: sendbuf %p and recvbuf %p overlap by part of %zu bytes; pass the same pointer for in-place",
                   name, c->sendbuf, c->recvbuf, count * esize);
    return HIAR_SUCCESS;
}

/*
 * HIAR_CHECK=global: every rank compares every rank's arguments (and the
 * result of its local checks) with rank 0's, so a rank with bad arguments
 * fails every rank's call instead of leaving them waiting.  Non-blocking and
 * bounded by the call's deadline like every other wait.
 */
static hiar_result_t check_global(hiar_comm_t *comm, const hiar_call_t *c, hiar_result_t local_rc)
{
    enum { N = 5 };
    static const char *const what[N] = {"count", "dtype", "op", "device buffers", "result of local checks"};
    long long mine[N] = {(long long)c->count, c->dtype, c->op, c->device, local_rc};
    long long *all = malloc(sizeof(mine) * (size_t)comm->size);
    hiar_result_t rc;

    if (!all)
        return hiar_error_set(HIAR_NO_MEMORY, "HIAR_CHECK=global: cannot allocate %d entries", comm->size);
    rc = hiar_net_allgather_wait(comm->mpi, mine, sizeof(mine), all, c->wait, "HIAR_CHECK=global: MPI_Iallgather");
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

#ifdef HIAR_HAVE_CUDA
/* The fused norm's buffers must be of the call's memory kind (its kernels and host loop take one). */
static hiar_result_t norm_on_device(const hiar_norm_t *nm, int device)
{
    const void *bufs[2] = {nm->weight, nm->residual};
    static const char *const names[2] = {"weight", "residual"};

    for (int i = 0; i < 2; i++) {
        int d = device;
        if (bufs[i])
            HIAR_CHECK(hiar_cuda_is_device_pointer(bufs[i], &d));
        HIAR_ARG_CHECK(d == device, "hiar_allreduce_rmsnorm: %s %p is %s memory but input and out are %s memory "
                       "(expected the same kind)", names[i], bufs[i], d ? "device" : "host", device ? "device" : "host");
    }
    return HIAR_SUCCESS;
}
#endif

/*
 * 1 if either buffer is GPU memory (then both are treated as such).  Buffers
 * in registered memory are device memory without asking CUDA, which costs a
 * driver call per buffer (0.25-1 us each, as others measured).
 */
static hiar_result_t on_device(const hiar_comm_t *comm, const hiar_call_t *c, int *device)
{
    *device = 0;
#ifdef HIAR_HAVE_CUDA
    int d;
    size_t bytes = hiar_call_bytes(c);
    if (comm->gpu && hiar_reg_holds(&comm->gpu->reg, c->sendbuf, bytes) &&
        (c->recvbuf == c->sendbuf || hiar_reg_holds(&comm->gpu->reg, c->recvbuf, bytes))) {
        *device = 1;
    } else {
        HIAR_CHECK(hiar_cuda_is_device_pointer(c->sendbuf, &d));
        *device = d;
        if (c->recvbuf != c->sendbuf) {
            HIAR_CHECK(hiar_cuda_is_device_pointer(c->recvbuf, &d));
            *device |= d;
        }
    }
    if (c->norm)
        HIAR_CHECK(norm_on_device(c->norm, *device));
#else
    (void)comm;
    (void)c;
#endif
    return HIAR_SUCCESS;
}

/*
 * The plan, and the shards between groups of the side that runs it.  A host
 * call of the last host call's size takes its plan again: building the
 * input and choosing cost about 200 of the 1123 instructions of an 8-byte
 * host call on one rank (callgrind).
 */
static hiar_result_t plan(hiar_comm_t *comm, hiar_call_t *c)
{
    size_t bytes = hiar_call_bytes(c);
    int host = !c->device && !c->norm, ngroups = comm->host.tier.groups.ngroups;
    hiar_plan_input_t in;

    if (host && comm->last_host_plan.valid && comm->last_host_plan.bytes == bytes) {
        c->plan = comm->last_host_plan.plan;
        c->nshards = comm->last_host_plan.nshards;
    } else {
        hiar_comm_plan_input(comm, c->device, bytes, &in);
        /* Only where the LL kernel can fuse it (rows of whole packets: cuda/norm.cu); else plain LL's limit. */
        in.norm = c->norm && c->norm->hidden * c->esize % 16 == 0;
        in.floating = hiar_dtype_floating(c->dtype);
        if (c->device)
            HIAR_CHECK(hiar_comm_plan_captured(comm, c->stream, &in));
        c->plan = hiar_plan_choose(&in);
        c->nshards = hiar_plan_nshards(&in, c->plan);
        ngroups = in.ngroups;
        if (host) {
            comm->last_host_plan.bytes = bytes;
            comm->last_host_plan.plan = c->plan;
            comm->last_host_plan.nshards = c->nshards;
            comm->last_host_plan.valid = 1;
        }
    }
    HIAR_TRACE(PLAN, "%zu bytes over %d groups: %s, %d shards between groups", bytes, ngroups,
               hiar_plan_name(c->plan), c->nshards);
    return HIAR_SUCCESS;
}

int hiar_run_waits_on_host(const hiar_comm_t *comm, hiar_plan_t plan)
{
#ifdef HIAR_HAVE_CUDA
    return plan.via == HIAR_VIA_STAGED ||
           (plan.alg == HIAR_ALG_HIER && plan.between == HIAR_KERNEL_NONE && !(comm->gpu && comm->gpu->hosts));
#else
    (void)comm;
    (void)plan;
    return 1;
#endif
}

/*
 * Device calls off the GPU transports wait on the host (MPI, copies): no
 * graph capture; over MPI between groups on the progress engine they do not.
 * Checked with the arguments, before anything is sent, so that a refused
 * call leaves the comm usable (eager calls, say).
 */
static hiar_result_t capturable(const hiar_comm_t *comm, const hiar_call_t *c)
{
#ifdef HIAR_HAVE_CUDA
    int capturing = 0;

    if (c->device && hiar_run_waits_on_host(comm, c->plan))
        HIAR_CHECK(hiar_cuda_is_capturing(c->stream, &capturing));
    if (capturing)
        return hiar_error_set(HIAR_INVALID_USAGE,
                              "hiar_allreduce: device buffers that go through the host (a group without "
                              "CUDA IPC, or several groups exchanging over MPI without the progress thread: see "
                              "HIAR_BETWEEN and HIAR_PROGRESS) wait for MPI or copies on the host and cannot be "
                              "captured in a CUDA graph");
#else
    (void)comm;
    (void)c;
#endif
    return HIAR_SUCCESS;
}

/*
 * Everything a call needs to run, checked; rc: the local checks' outcome so
 * far.  The memory kind first: it picks the marks the rest stamps (marked,
 * t0: HIAR_CALL_MARKS and the call's entry).
 */
static hiar_result_t describe_call(hiar_comm_t *comm, hiar_call_t *c, hiar_result_t rc, int marked, uint64_t t0)
{
    if (rc == HIAR_SUCCESS && c->count > 0 && !c->device_known)
        rc = on_device(comm, c, &c->device);
    if (marked) {
        c->marks = &comm->marks[c->device];
        hiar_marks_begin(c->marks, t0);
        HIAR_MARK(c, "memory kind");
    }
    if (rc == HIAR_SUCCESS && c->count > 0)
        rc = plan(comm, c);
    HIAR_MARK(c, "planned");
    if (rc == HIAR_SUCCESS && c->count > 0)
        rc = capturable(comm, c);
    if (hiar_comm_param(comm, HIAR_P_CHECK) == HIAR_ARGCHECK_GLOBAL)
        rc = check_global(comm, c, rc);
    HIAR_MARK(c, "checked");
    return rc;
}

hiar_result_t hiar_call_run(hiar_comm_t *comm, hiar_call_t *call, hiar_result_t rc, const char *name)
{
    hiar_wait_t wait;
    int marked;
    uint64_t t0;

    /* With HIAR_CHECK=global a local failure is shared with the peers. */
    if (rc != HIAR_SUCCESS && !hiar_comm_checks_globally(comm))
        return rc;
    HIAR_CHECK(hiar_comm_enter(comm, name));
    marked = hiar_comm_param(comm, HIAR_P_CALL_MARKS) != 0; /* HIAR_CALL_MARKS: base/marks.h */
    t0 = marked ? hiar_now_ns() : 0;
    /* One deadline for the whole call: checks, chunks, barriers and MPI steps. */
    wait = hiar_comm_wait(comm, name);
    call->wait = &wait;
    call->divisor = call->op == HIAR_AVG ? comm->size : 0;
    rc = describe_call(comm, call, rc, marked, t0);
    if (rc == HIAR_SUCCESS && call->count > 0) {
        rc = hiar_run(comm, call);
        if (rc != HIAR_SUCCESS)
            hiar_comm_fail(comm, rc);
    }
    if (marked)
        hiar_marks_end(call->marks, "returned");
    call->wait = NULL;
    hiar_comm_leave(comm);
    return rc;
}

/* hiar_allreduce; device: the buffers' kind (0 host, 1 device), or -1: ask CUDA. */
static hiar_result_t allreduce(const void *sendbuf, void *recvbuf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                               int device, hiar_comm_t *comm, hiar_stream_t stream)
{
    hiar_call_t call = {.sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .esize = hiar_dtype_size(dtype),
                        .dtype = dtype, .op = op, .stream = stream, .device = device > 0, .device_known = device >= 0};

    return hiar_call_run(comm, &call, hiar_call_check(&call, "hiar_allreduce"), "hiar_allreduce");
}

hiar_result_t hiar_allreduce(const void *sendbuf, void *recvbuf, size_t count, hiar_dtype_t dtype,
                             hiar_op_t op, hiar_comm_t *comm, hiar_stream_t stream)
{
    return allreduce(sendbuf, recvbuf, count, dtype, op, -1, comm, stream);
}

hiar_result_t hiar_allreduce_of_kind(const void *sendbuf, void *recvbuf, size_t count, hiar_dtype_t dtype,
                                     hiar_op_t op, int device, hiar_comm_t *comm, hiar_stream_t stream)
{
    return allreduce(sendbuf, recvbuf, count, dtype, op, device ? 1 : 0, comm, stream);
}
