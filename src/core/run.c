/* Running a planned call: which side, which transport, which chunks. */
#include "config.h"

#include <string.h>

#include "base/log.h"
#include "base/norm.h"
#include "base/reduce.h"
#include "core/hier.h"
#include "core/run.h"
#include "net/inter.h"
#ifdef HIAR_HAVE_CUDA
#include "transport/kernels.h"
#endif

/*
 * MPI reduces in the comm's scratch buffer, chunk by chunk, not in recvbuf: a
 * call that times out leaves its receives posted (net/inter.c), and a late
 * peer would complete them into the caller's memory, perhaps freed by then.
 * A failed comm keeps its scratch (create.c).
 */
static hiar_result_t run_mpi(hiar_comm_t *comm, const hiar_call_t *c)
{
    size_t chunk = HIAR_MPI_SCRATCH_BYTES / c->esize;
    char *scratch;

    HIAR_CHECK(hiar_comm_scratch(comm, &scratch));
    for (size_t off = 0; off < c->count; off += chunk) {
        size_t n = c->count - off < chunk ? c->count - off : chunk;
        memcpy(scratch, (const char *)c->sendbuf + off * c->esize, n * c->esize);
        HIAR_CHECK(hiar_inter_allreduce(scratch, n, c->dtype, c->op, comm->mpi, c->wait));
        hiar_reduce_divide(scratch, n, c->dtype, c->divisor);
        memcpy((char *)c->recvbuf + off * c->esize, scratch, n * c->esize);
    }
    return HIAR_SUCCESS;
}

/* One chunk (at most what one run of the transport takes), and MPI between groups. */
static hiar_result_t run_chunk(hiar_comm_t *comm, const hiar_call_t *chunk)
{
    switch (chunk->plan.alg) {
    case HIAR_ALG_HIER: return hiar_hier_host(comm, chunk);
    case HIAR_ALG_HIER_ONESHOT: return hiar_hier_oneshot(comm, chunk);
    default: return comm->host.tp->run(comm->host.state, &comm->host.tier, chunk, HIAR_STEP_ALLREDUCE);
    }
}

/* Host memory through shm and MPI; synchronous. */
hiar_result_t hiar_run_host(void *arg, const hiar_call_t *c)
{
    hiar_comm_t *comm = arg;
    size_t chunk;

    if (c->plan.alg == HIAR_ALG_MPI)
        return run_mpi(comm, c);
    chunk = comm->host.tp->max_bytes(comm->host.state) / c->esize;
    if (c->count <= chunk)
        return run_chunk(comm, c); /* one chunk: no slice to copy */
    for (size_t off = 0; off < c->count; off += chunk) {
        hiar_call_t piece = hiar_call_slice(c, off, c->count - off < chunk ? c->count - off : chunk);
        HIAR_CHECK(run_chunk(comm, &piece));
    }
    return HIAR_SUCCESS;
}

#ifdef HIAR_HAVE_CUDA
/* Whether a plan runs on a GPU transport's side: the device grouping's or a second one (side_of). */
static int on_gpu_side(hiar_via_t via)
{
    return via == HIAR_VIA_DEVICE || via == HIAR_VIA_FLAT || via == HIAR_VIA_PINNED;
}

/* The side whose transport runs a one-group device plan: a second one (the group over the host, the pinned-host
 * transport beside CUDA IPC) or the device grouping's. */
static hiar_side_t *side_of(hiar_gpu_t *gpu, hiar_via_t via)
{
    return via == HIAR_VIA_FLAT ? &gpu->flat : via == HIAR_VIA_PINNED ? &gpu->alt : &gpu->side;
}

/* A two-shot call into registered memory on every rank of the group writes straight into the peers' outputs. */
static hiar_result_t run_device(hiar_comm_t *comm, const hiar_call_t *c)
{
    hiar_gpu_t *gpu = comm->gpu;
    hiar_side_t *side = side_of(gpu, c->plan.via);
    hiar_call_t call = *c;
    hiar_ipc_direct_t direct;

    if (side != &gpu->side)
        return side->tp->run(side->state, &side->tier, c, HIAR_STEP_ALLREDUCE);
    if (c->plan.alg == HIAR_ALG_HIER_ONESHOT && c->plan.between == HIAR_KERNEL_NONE)
        return hiar_hier_device_hosts_ll(comm, c);
    if ((c->plan.alg == HIAR_ALG_HIER || c->plan.alg == HIAR_ALG_HIER_ONESHOT) && c->plan.kernel != HIAR_KERNEL_NONE)
        return hiar_hier_device_fused(comm, c);
    if (c->plan.alg == HIAR_ALG_HIER)
        return hiar_hier_device(comm, c);
    if (c->plan.kernel == HIAR_KERNEL_TWOSHOT && hiar_reg_direct(&gpu->reg, c->recvbuf, hiar_call_bytes(c), &direct))
        call.out_window = &direct;
    return gpu->side.tp->run(gpu->side.state, &gpu->side.tier, &call, HIAR_STEP_ALLREDUCE);
}
#endif

/* The allreduce of a call, without a norm or with it fused (the transport's kernel applies c->norm). */
static hiar_result_t run_sum(hiar_comm_t *comm, const hiar_call_t *c)
{
#ifdef HIAR_HAVE_CUDA
    if (on_gpu_side(c->plan.via))
        return run_device(comm, c);
    if (c->plan.via == HIAR_VIA_STAGED && comm->gpu)
        return hiar_transport_staged.run(comm->gpu->staged, &comm->gpu->side.tier, c, HIAR_STEP_ALLREDUCE);
    if (c->plan.via == HIAR_VIA_STAGED)
        return hiar_error_set(HIAR_NO_MEMORY, "hiar_allreduce: no pinned staging buffer for device buffers (is a GPU "
                                              "selected on this rank?)");
#endif
    return hiar_run_host(comm, c);
}

/*
 * The norm goes into the kernel of one group's call (cuda/norm.cu): the
 * one-shot LL kernel, or the rows kernel in place of the push or
 * two-shot one, where the transport says its layout takes the call.
 */
static int norm_fuses(const hiar_comm_t *comm, const hiar_call_t *c)
{
#ifdef HIAR_HAVE_CUDA
    const hiar_side_t *side;

    if (!on_gpu_side(c->plan.via) || (c->plan.alg != HIAR_ALG_ONESHOT && c->plan.alg != HIAR_ALG_TWOSHOT))
        return 0;
    side = side_of(comm->gpu, c->plan.via);
    return hiar_transport_runs_kernels(side->tp) && hiar_ipc_norm_fuses(side->state, c);
#else
    (void)comm;
    (void)c;
    return 0;
#endif
}

hiar_result_t hiar_run(hiar_comm_t *comm, const hiar_call_t *c)
{
    hiar_call_t sum;
    int fused = c->norm && norm_fuses(comm, c);

    HIAR_TRACE(CALL, "allreduce %zu x %s %s on %s buffers: %s%s", c->count, hiar_dtype_name(c->dtype),
               hiar_op_name(c->op), c->device ? "device" : "host", hiar_plan_name(c->plan),
               !c->norm ? "" : fused ? ", RMSNorm fused" : ", then RMSNorm");
    if (!c->norm || fused)
        return run_sum(comm, c);
    sum = *c; /* the call without its norm: the sum first, then the norm step */
    sum.norm = NULL;
    HIAR_CHECK(run_sum(comm, &sum));
#ifdef HIAR_HAVE_CUDA
    if (c->device)
        return hiar_cuda_norm(c);
#endif
    hiar_norm_host(c->norm, c->recvbuf, c->count / c->norm->hidden, c->dtype);
    return HIAR_SUCCESS;
}
