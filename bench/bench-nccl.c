/* hiar-bench's NCCL implementation (built with NCCL only). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-mem.h"
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
static int gpu_shared(void)
{
    int most;

    bench_gpu_ranks(&most);
    return most > 1;
}

/* A communicator of all ranks in *comm; 0 (na_reason set) where ranks share a GPU.  Collective. */
static int nccl_init(bench_t *b, int impl, ncclComm_t *comm)
{
    ncclUniqueId id;

    if (gpu_shared()) {
        snprintf(b->na_reason[impl], sizeof b->na_reason[impl], "several ranks share a GPU, which NCCL refuses");
        return 0;
    }
    if (b->rank == 0)
        NCCL_DIE(ncclGetUniqueId(&id));
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    NCCL_DIE(ncclCommInitRank(comm, b->nranks, id, b->rank));
    return 1;
}

void bench_nccl_setup(bench_t *b)
{
    if (!nccl_init(b, IMPL_NCCL, &b->nccl))
        return;
    if (b->opt.reg) {
        NCCL_DIE(ncclCommRegister(b->nccl, b->send, b->opt.max_bytes, &b->nccl_reg[0]));
        if (b->recv != b->send)
            NCCL_DIE(ncclCommRegister(b->nccl, b->recv, b->opt.max_bytes, &b->nccl_reg[1]));
    }
}

/* A failure on the way out: said, not fatal (the rows are printed already). */
static void nccl_warn(const bench_t *b, ncclResult_t rc, const char *what)
{
    if (rc != ncclSuccess)
        fprintf(stderr, "hiar-bench: rank %d: %s: %s\n", b->rank, what, ncclGetErrorString(rc));
}

/* Destroys comm, or aborts it after a failure; cleanup (registrations) only on the way to a destroy. */
static void nccl_end(bench_t *b, int impl, ncclComm_t comm, void (*cleanup)(bench_t *b))
{
    if (b->dead[impl]) {
        nccl_warn(b, ncclCommAbort(comm), "ncclCommAbort");
        return;
    }
    cleanup(b);
    nccl_warn(b, ncclCommDestroy(comm), "ncclCommDestroy");
}

static void deregister(bench_t *b)
{
    for (int i = 0; i < 2; i++)
        if (b->nccl_reg[i])
            nccl_warn(b, ncclCommDeregister(b->nccl, b->nccl_reg[i]), "ncclCommDeregister");
}

void bench_nccl_teardown(bench_t *b)
{
    if (b->nccl)
        nccl_end(b, IMPL_NCCL, b->nccl, deregister);
}

#ifdef BENCH_NCCL_SYM
/*
 * NCCL's symmetric kernels (2.27 and later: its fastest small-message path
 * on NVLink; with NCCL_NVLS_ENABLE=0 the unicast ones only) take buffers
 * from ncclMemAlloc registered on every rank as a symmetric window; they
 * are nccl-sym's own (buffer_of).  NCCL picks them only for sum on
 * float16, bfloat16 and float32 (2.27-2.28), where every pair of GPUs has
 * P2P and cuMem is on; elsewhere it runs its plain kernels on that memory,
 * which this column would mislabel: other ops and dtypes show n/a.
 */
static const char *sym_unfit(const bench_t *b)
{
    hiar_dtype_t t = b->opt.dtype;
    int version = 0;

    if (ncclGetVersion(&version) != ncclSuccess || version < NCCL_VERSION(2, 27, 0))
        return "the NCCL loaded is older than 2.27 (no symmetric windows)";
    if (b->opt.op != HIAR_SUM || (t != HIAR_FLOAT16 && t != HIAR_BFLOAT16 && t != HIAR_FLOAT32))
        return "NCCL's symmetric kernels take sum on float16, bfloat16 and float32 only";
    return NULL;
}

/* Every rank's ok, agreed: a rank that failed makes the column n/a everywhere (the other columns go on). */
static int all_ok(int ok)
{
    int all = 0;

    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The bench's own buffers in nccl-sym's place: the check before a run that says n/a fills them. */
static void sym_na(bench_t *b, const char *why, ncclResult_t rc)
{
    if (why)
        snprintf(b->na_reason[IMPL_NCCL_SYM], sizeof b->na_reason[IMPL_NCCL_SYM], "%s%s%s", why,
                 rc != ncclSuccess ? ": " : "", rc != ncclSuccess ? ncclGetErrorString(rc) : "");
    b->sym_send = b->send;
    b->sym_recv = b->recv;
}

/* After a failure agreed by every rank: nothing of nccl-sym's stays (registration is NCCL's own to undo). */
static void sym_undo(bench_t *b, void *send, void *recv)
{
    nccl_warn(b, ncclCommAbort(b->nccl_sym), "ncclCommAbort");
    b->nccl_sym = NULL;
    b->sym_win[0] = b->sym_win[1] = NULL;
    if (recv && recv != send)
        nccl_warn(b, ncclMemFree(recv), "ncclMemFree");
    if (send)
        nccl_warn(b, ncclMemFree(send), "ncclMemFree");
}

void bench_nccl_sym_setup(bench_t *b)
{
    const char *unfit = sym_unfit(b); /* the same on every rank: the options and the library are */
    void *send = NULL, *recv = NULL;
    ncclResult_t rc;

    if (unfit || !nccl_init(b, IMPL_NCCL_SYM, &b->nccl_sym)) {
        sym_na(b, unfit, ncclSuccess);
        return;
    }
    rc = ncclMemAlloc(&send, b->opt.max_bytes);
    recv = send;
    if (rc == ncclSuccess && !b->opt.inplace)
        rc = ncclMemAlloc(&recv, b->opt.max_bytes);
    /* Registration is collective: every rank starts it, or none. */
    if (!all_ok(rc == ncclSuccess)) {
        sym_undo(b, send, rc == ncclSuccess ? recv : NULL);
        sym_na(b, "ncclMemAlloc failed on a rank", rc);
        return;
    }
    for (int i = 0; i < (recv != send ? 2 : 1); i++) {
        rc = ncclCommWindowRegister(b->nccl_sym, i ? recv : send, b->opt.max_bytes, &b->sym_win[i],
                                    NCCL_WIN_COLL_SYMMETRIC);
        if (!all_ok(rc == ncclSuccess)) { /* before the next registration, which every rank must start */
            sym_undo(b, send, recv);
            sym_na(b, "ncclCommWindowRegister failed on a rank", rc);
            return;
        }
    }
    b->sym_send = send;
    b->sym_recv = recv;
}

static void window_deregister(bench_t *b)
{
    for (int i = 0; i < 2; i++)
        if (b->sym_win[i])
            nccl_warn(b, ncclCommWindowDeregister(b->nccl_sym, b->sym_win[i]), "ncclCommWindowDeregister");
}

void bench_nccl_sym_teardown(bench_t *b)
{
    if (!b->nccl_sym)
        return;
    nccl_end(b, IMPL_NCCL_SYM, b->nccl_sym, window_deregister);
    if (b->sym_recv != b->sym_send)
        nccl_warn(b, ncclMemFree(b->sym_recv), "ncclMemFree");
    nccl_warn(b, ncclMemFree(b->sym_send), "ncclMemFree");
}
#endif

run_t bench_nccl_run(bench_t *b, int impl, size_t count)
{
    ncclComm_t comm = b->nccl;
    ncclResult_t rc;

#ifdef BENCH_NCCL_SYM
    if (impl == IMPL_NCCL_SYM)
        comm = b->nccl_sym;
#endif
    if (!comm) /* gpu_shared or sym_unfit: na_reason says why */
        return RUN_NA;
    rc = ncclAllReduce(buffer_of(b, impl, 0), buffer_of(b, impl, 1), count, bench_nccl_type(b->opt.dtype),
                       nccl_op_of(b->opt.op), comm, b->stream);
    if (rc == ncclSuccess)
        return RUN_OK;
    fprintf(stderr, "hiar-bench: rank %d: ncclAllReduce (%s): %s: %s\n", b->rank, bench_impls[impl].name,
            ncclGetErrorString(rc), ncclGetLastError(comm));
    return RUN_FAILED;
}
