/*
 * One call, described once: hiar_allreduce fills a hiar_call_t after the
 * argument checks and the plan, and every layer below reads it instead of a
 * list of arguments: the hierarchical drivers, the transports, the kernels'
 * launchers (cuda/ sees it too: no MPI, no CUDA types here).
 *
 * The plan says which algorithm runs and through which transport; the
 * transport id names the side of the communicator whose transport serves the
 * call (host buffers: shm; device buffers: CUDA IPC, or the one-rank "self"
 * transport in a group of one), so that every rank of every group runs the
 * same plan while groups may differ in transport.
 */
#ifndef HIAR_CALL_H
#define HIAR_CALL_H

#include <stddef.h>

#include "hiar.h"

typedef enum {
    HIAR_ALG_ONESHOT,      /* inside the one group: everyone reduces everything */
    HIAR_ALG_TWOSHOT,      /* inside the one group: reduce-scatter + all-gather */
    HIAR_ALG_HIER,         /* reduce-scatter in groups, MPI between, all-gather */
    HIAR_ALG_HIER_ONESHOT, /* small messages: one-shot in groups, every rank one-shot (or MPI) between */
    HIAR_ALG_MPI           /* hiar's MPI allreduce over all ranks */
} hiar_alg_t;

typedef enum {
    HIAR_VIA_HOST,   /* host buffers: the host side's transport (shm) */
    HIAR_VIA_DEVICE, /* device buffers: the device side's transport (CUDA IPC, or self) */
    HIAR_VIA_STAGED, /* device buffers through pinned host memory and the host side */
    HIAR_VIA_FLAT,   /* device buffers: one CUDA IPC group over every rank of the host (core/gpu.h) */
    HIAR_VIA_PINNED  /* device buffers: the one group's pinned-host transport beside its CUDA IPC (core/gpu.h alt) */
} hiar_via_t;

/* Kernel of a call in a group on CUDA IPC (and of the step between groups); NONE elsewhere. */
typedef enum { HIAR_KERNEL_NONE, HIAR_KERNEL_LL, HIAR_KERNEL_PUSH, HIAR_KERNEL_TWOSHOT, HIAR_KERNEL_PULL } hiar_kernel_t;

typedef struct {
    hiar_alg_t alg;
    hiar_via_t via;
    hiar_kernel_t kernel;
    size_t chunk; /* hierarchical device calls: bytes per chunk, the same in every group */
    hiar_kernel_t between; /* hierarchical device calls: the kernel between groups; NONE: MPI */
    /* One group's two-shot kernel and the one kernel over groups (ipc-hier-twoshot): their blocks by size
     * (hiar_blocks_for) times 2^blocks_log2, -1 to 1 (tuning's block-count candidates); 0 elsewhere. */
    int blocks_log2;
} hiar_plan_t;

/* What one run of a transport does with a call (bits: RS | AG is the whole). */
typedef enum {
    HIAR_STEP_REDUCE_SCATTER = 1, /* shards reduced over the group, each left with its owner */
    HIAR_STEP_ALLGATHER = 2,      /* the owners' final shards to every rank of the group */
    HIAR_STEP_ALLREDUCE = 3       /* the whole allreduce inside the group (plan.alg, plan.kernel) */
} hiar_step_t;

struct hiar_wait;
struct hiar_ipc_direct;

/*
 * The RMSNorm after a sum (hiar_allreduce_rmsnorm): per row of `hidden`
 * elements of the call's dtype, s the row's allreduced sum as the dtype,
 * r = round(residual + s) written back to residual (r = s without one),
 * then out = round(r * rsqrt(mean(r^2) + eps) * (weight + weight_offset)),
 * in f32.  Every path computes exactly this, fused or not.
 */
typedef struct hiar_norm {
    void *residual;     /* the call's memory kind; NULL: none */
    const void *weight; /* hidden elements of weight_dtype */
    size_t hidden;
    hiar_dtype_t weight_dtype;
    float eps;
    float weight_offset; /* 1 in the Gemma form, (1 + w); else 0 */
} hiar_norm_t;

typedef struct hiar_call {
    const void *sendbuf;
    void *recvbuf;
    size_t count, esize;
    hiar_dtype_t dtype;
    hiar_op_t op;
    int divisor;   /* HIAR_AVG: the comm's ranks, applied once, by the last step; else 0 */
    int device;    /* the buffers are device memory */
    int device_known; /* 1: the caller set device (it asked CUDA already): no pointer queries */
    void *stream;  /* a cudaStream_t; NULL: the legacy default stream */
    int nshards;   /* shards between groups: the largest group of the side that runs it */
    hiar_plan_t plan;
    struct hiar_wait *wait; /* the call's one deadline (base/wait.h) */
    /* recvbuf in registered memory on every rank of the group (cuda/api.h, core/reg.c); NULL: not */
    const struct hiar_ipc_direct *out_window;
    const hiar_norm_t *norm; /* an RMSNorm fused into the kernel (plan: one group, LL); NULL: none */
    void *completion;       /* asynchronous completion; NULL: stream order (reserved) */
    struct hiar_marks *marks; /* phase marks on the calling thread (base/marks.h, HIAR_CALL_MARKS); NULL: none */
} hiar_call_t;

static inline size_t hiar_call_bytes(const hiar_call_t *c)
{
    return c->count * c->esize;
}

/* Elements [first, first + n) of c as a call of their own (a chunk). */
static inline hiar_call_t hiar_call_slice(const hiar_call_t *c, size_t first, size_t n)
{
    hiar_call_t s = *c;

    s.sendbuf = (const char *)c->sendbuf + first * c->esize;
    s.recvbuf = (char *)c->recvbuf + first * c->esize;
    s.count = n;
    return s;
}

#endif
