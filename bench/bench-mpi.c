/* hiar-bench's MPI_Allreduce: types, half ops, staging, avg's division. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif

#include "bench-check.h"
#include "bench-mem.h"
#include "bench-mpi.h"

/* --split's link messages: any tag apart from hiar's (its shard communicators are its own). */
#define LINK_TAG 0x4c4b

/* MPI has no half types: reduce their bits in float, round back to nearest even. */
#define HALF_OP(_name, _load, _store, _expr)                                               \
    static void _name(void *in, void *inout, int *len, MPI_Datatype *type)                 \
    {                                                                                      \
        const uint16_t *a = in;                                                            \
        uint16_t *b = inout;                                                               \
        (void)type;                                                                        \
        for (int i = 0; i < *len; i++) {                                                   \
            float x = _load(a[i]), y = _load(b[i]);                                        \
            b[i] = _store(_expr);                                                          \
        }                                                                                  \
    }
#define HALF_OPS(_kind, _load, _store)                                                     \
    HALF_OP(_kind##_sum, _load, _store, x + y)                                             \
    HALF_OP(_kind##_prod, _load, _store, x * y)                                            \
    HALF_OP(_kind##_min, _load, _store, x < y ? x : y)                                     \
    HALF_OP(_kind##_max, _load, _store, x > y ? x : y)
HALF_OPS(fp16, bench_half_to_float, bench_float_to_half)
HALF_OPS(bf16, bench_bf16_to_float, bench_float_to_bf16)

/* [bfloat16?][HIAR_SUM..HIAR_MAX] */
static MPI_User_function *const half_ops[2][4] = {{fp16_sum, fp16_prod, fp16_min, fp16_max},
                                                  {bf16_sum, bf16_prod, bf16_min, bf16_max}};

static MPI_Datatype mpi_type_of(hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_INT32: return MPI_INT32_T;
    case HIAR_INT64: return MPI_INT64_T;
    case HIAR_FLOAT32: return MPI_FLOAT;
    case HIAR_FLOAT64: return MPI_DOUBLE;
    case HIAR_UINT8: return MPI_UINT8_T;
    case HIAR_INT8: return MPI_INT8_T;
    default: return MPI_UINT16_T; /* float16, bfloat16: reduced by half_ops */
    }
}

static MPI_Op mpi_op_of(hiar_op_t op)
{
    switch (op) {
    case HIAR_PROD: return MPI_PROD;
    case HIAR_MIN: return MPI_MIN;
    case HIAR_MAX: return MPI_MAX;
    default: return MPI_SUM; /* HIAR_SUM; HIAR_AVG divides afterwards */
    }
}

static int mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

/* MPI takes device pointers: it says so, or the run does (--mpi-device). */
static int mpi_takes_device(const bench_t *b)
{
    return mpi_cuda_aware() || b->opt.mpi_device;
}

void bench_mpi_setup(bench_t *b)
{
    hiar_dtype_t dtype = b->opt.dtype;
    hiar_op_t op = b->opt.op == HIAR_AVG ? HIAR_SUM : b->opt.op;

    MPI_Comm_dup(MPI_COMM_WORLD, &b->mpi_comm);
    b->mpi_type = mpi_type_of(dtype);
    b->mpi_op = mpi_op_of(op);
    b->mpi_user_op = dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16;
    if (b->mpi_user_op)
        MPI_Op_create(half_ops[dtype == HIAR_BFLOAT16][op], 1, &b->mpi_op);
    /* AVG's division runs on the host, so it is staged even with CUDA-aware MPI. */
    b->mpi_staged = b->device && !(mpi_takes_device(b) && b->opt.op != HIAR_AVG);
}

/* AVG on top of MPI_SUM, as an MPI user writes it; integers truncate toward zero. */
static void divide(void *buf, size_t count, hiar_dtype_t dtype, int n)
{
#define DIVIDE(_type)                                                                      \
    for (size_t i = 0; i < count; i++)                                                     \
        ((_type *)buf)[i] = (_type)(((_type *)buf)[i] / n)
#define DIVIDE_HALF(_load, _store)                                                         \
    for (size_t i = 0; i < count; i++)                                                     \
        ((uint16_t *)buf)[i] = _store(_load(((uint16_t *)buf)[i]) / (float)n)

    switch (dtype) {
    case HIAR_INT32: DIVIDE(int32_t); break;
    case HIAR_INT64: DIVIDE(int64_t); break;
    case HIAR_FLOAT16: DIVIDE_HALF(bench_half_to_float, bench_float_to_half); break;
    case HIAR_BFLOAT16: DIVIDE_HALF(bench_bf16_to_float, bench_float_to_bf16); break;
    case HIAR_FLOAT32: DIVIDE(float); break;
    case HIAR_FLOAT64: DIVIDE(double); break;
    case HIAR_UINT8: DIVIDE(uint8_t); break;
    default: DIVIDE(int8_t); break; /* HIAR_INT8 */
    }
#undef DIVIDE
#undef DIVIDE_HALF
}

/*
 * MPI_Allreduce over `comm` of elements [first, first + count), as users get
 * it: device buffers go through host memory (copies timed) unless MPI is
 * CUDA-aware; AVG divides by all ranks.  Errors abort (MPI's default).
 */
static void mpi_range(bench_t *b, MPI_Comm comm, size_t first, size_t count)
{
    size_t offset = first * b->esize, bytes = count * b->esize;
    char *send = (char *)b->send + offset, *recv = (char *)b->recv + offset;
    char *host = (char *)b->host + offset;
    const void *mpi_send = b->opt.inplace ? MPI_IN_PLACE : send;
    void *mpi_recv = recv;

    if (b->mpi_staged) {
        bench_copy(b, host, send, bytes);
        mpi_send = MPI_IN_PLACE;
        mpi_recv = host;
    }
    MPI_Allreduce(mpi_send, mpi_recv, (int)count, b->mpi_type, b->mpi_op, comm);
    if (b->opt.op == HIAR_AVG)
        divide(mpi_recv, count, b->opt.dtype, b->nranks);
    if (b->mpi_staged)
        bench_copy(b, recv, host, bytes);
}

run_t bench_mpi_run(bench_t *b, int impl, size_t count)
{
    (void)impl;
    mpi_range(b, b->mpi_comm, 0, count);
    return RUN_OK;
}

void bench_mpi_link_setup(bench_t *b)
{
    size_t first, n, peers = (size_t)(b->split.ngroups - 1), bytes;

    b->link_device = b->device && mpi_takes_device(b);
    bench_split_shard(&b->split, b->opt.max_bytes / b->esize, b->esize, 0, &first, &n);
    bytes = peers * n * b->esize;
    /* -e below one element: no row is timed, but bench_alloc wants a size. */
    b->link_recv = bench_alloc(b, bytes ? bytes : 1, !b->link_device);
    if (!(b->link_req = malloc(2 * peers * sizeof(MPI_Request))))
        bench_die("--split: cannot allocate %zu MPI requests for the link column", 2 * peers);
}

void bench_mpi_link_teardown(bench_t *b)
{
    if (b->link_recv)
        bench_release(b, b->link_recv, !b->link_device);
    free(b->link_req);
    b->link_recv = NULL;
    b->link_req = NULL;
}

/*
 * --split's link: elements [first, first + count) of the memory hiar sends
 * from to every other rank of `comm` while the same number arrive from each,
 * all posted at once: the transfers of hiar's step between groups without
 * its reductions.
 */
static void link_range(bench_t *b, MPI_Comm comm, size_t first, size_t count)
{
    const char *send = (const char *)(b->link_device ? b->send : b->host) + first * b->esize;
    int me, size, k = 0;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    for (int peer = 0; peer < size; peer++) {
        if (peer == me)
            continue;
        MPI_Irecv((char *)b->link_recv + (size_t)k * count * b->esize, (int)count, b->mpi_type, peer, LINK_TAG, comm,
                  &b->link_req[2 * k]);
        MPI_Isend(send, (int)count, b->mpi_type, peer, LINK_TAG, comm, &b->link_req[2 * k + 1]);
        k++;
    }
    MPI_Waitall(2 * k, b->link_req, MPI_STATUSES_IGNORE);
}

/*
 * --split's inter (MPI_Allreduce) and link (point-to-point): this rank's
 * shards of the message, one after the other, as hiar's MPI step
 * (src/core/hier.c), which skips empty ones.
 */
run_t bench_mpi_run_shards(bench_t *b, int impl, size_t count)
{
    for (int sh = 0; sh < b->split.nshards; sh++) {
        size_t first, n;
        if (b->split.shard_comm[sh] == MPI_COMM_NULL)
            continue;
        bench_split_shard(&b->split, count, b->esize, sh, &first, &n);
        if (n > 0 && impl == IMPL_MPI_LINK)
            link_range(b, b->split.shard_comm[sh], first, n);
        else if (n > 0)
            mpi_range(b, b->split.shard_comm[sh], first, n);
    }
    return RUN_OK;
}
