/* hiar-bench's NCCL implementation (built with NCCL only). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-nccl.h"

#define NCCL_DIE(_call)                                                                    \
    do {                                                                                   \
        ncclResult_t nccl_rc_ = (_call);                                                   \
        if (nccl_rc_ != ncclSuccess)                                                       \
            bench_die("%s: %s", #_call, ncclGetErrorString(nccl_rc_));                     \
    } while (0)

ncclDataType_t bench_nccl_type(hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_INT32: return ncclInt32;
    case HIAR_INT64: return ncclInt64;
    case HIAR_FLOAT16: return ncclFloat16;
    case HIAR_BFLOAT16: return ncclBfloat16;
    case HIAR_FLOAT32: return ncclFloat32;
    case HIAR_FLOAT64: return ncclFloat64;
    case HIAR_UINT8: return ncclUint8;
    default: return ncclInt8; /* HIAR_INT8 */
    }
}

static ncclRedOp_t nccl_op_of(hiar_op_t op)
{
    switch (op) {
    case HIAR_PROD: return ncclProd;
    case HIAR_MIN: return ncclMin;
    case HIAR_MAX: return ncclMax;
    case HIAR_AVG: return ncclAvg;
    default: return ncclSum;
    }
}

/*
 * NCCL refuses two ranks on one GPU ("Duplicate GPU detected", and the
 * communicator is not made): such runs (several ranks on one GPU under MPS)
 * show it n/a instead of ending there.  Collective.
 */
static int gpu_shared(const bench_t *b)
{
    struct cudaDeviceProp prop;
    char *all = malloc(sizeof prop.uuid * (size_t)b->nranks);
    int dev, shared = 0;

    if (!all)
        bench_die("cannot allocate the GPU table");
    CUDA_DIE(cudaGetDevice(&dev));
    CUDA_DIE(cudaGetDeviceProperties(&prop, dev));
    MPI_Allgather(&prop.uuid, sizeof prop.uuid, MPI_BYTE, all, sizeof prop.uuid, MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; i < b->nranks && !shared; i++)
        for (int j = i + 1; j < b->nranks && !shared; j++)
            shared = memcmp(all + i * sizeof prop.uuid, all + j * sizeof prop.uuid, sizeof prop.uuid) == 0;
    free(all);
    return shared;
}

void bench_nccl_setup(bench_t *b)
{
    ncclUniqueId id;

    if (gpu_shared(b)) {
        snprintf(b->na_reason[IMPL_NCCL], sizeof b->na_reason[IMPL_NCCL],
                 "several ranks share a GPU, which NCCL refuses");
        return;
    }
    if (b->rank == 0)
        NCCL_DIE(ncclGetUniqueId(&id));
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    NCCL_DIE(ncclCommInitRank(&b->nccl, b->nranks, id, b->rank));
    if (b->opt.reg) {
        NCCL_DIE(ncclCommRegister(b->nccl, b->send, b->opt.max_bytes, &b->nccl_reg[0]));
        if (b->recv != b->send)
            NCCL_DIE(ncclCommRegister(b->nccl, b->recv, b->opt.max_bytes, &b->nccl_reg[1]));
    }
}

void bench_nccl_teardown(bench_t *b)
{
    if (!b->nccl)
        return;
    if (b->dead[IMPL_NCCL]) {
        ncclCommAbort(b->nccl);
        return;
    }
    for (int i = 0; i < 2; i++)
        if (b->nccl_reg[i])
            ncclCommDeregister(b->nccl, b->nccl_reg[i]);
    ncclCommDestroy(b->nccl);
}

run_t bench_nccl_run(bench_t *b, int impl, size_t count)
{
    ncclResult_t rc;

    (void)impl;
    if (!b->nccl) /* gpu_shared: na_reason says why */
        return RUN_NA;
    rc = ncclAllReduce(b->send, b->recv, count, bench_nccl_type(b->opt.dtype), nccl_op_of(b->opt.op), b->nccl,
                       b->stream);
    if (rc == ncclSuccess)
        return RUN_OK;
    fprintf(stderr, "hiar-bench: rank %d: ncclAllReduce: %s: %s\n", b->rank, ncclGetErrorString(rc),
            ncclGetLastError(b->nccl));
    return RUN_FAILED;
}
