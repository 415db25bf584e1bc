/* MPI allreduce of a shard between groups, with hiar's dtype and NaN rules. */
#include <limits.h>
#include <pthread.h>

#include "error.h"
#include "inter.h"
#include "reduce.h"

/* Elements per MPI call: MPI counts are int. */
#define MPI_COUNT_MAX ((size_t)INT_MAX / 2)

static struct {
    pthread_once_t once;
    int rc;
    MPI_Datatype f16, bf16;
    MPI_Op ops[HIAR_OP_COUNT]; /* hiar's own op per hiar_op_t (AVG unused) */
} inter = {PTHREAD_ONCE_INIT, MPI_SUCCESS, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, {0}};

static hiar_dtype_t dtype_of(MPI_Datatype t)
{
    if (t == inter.f16)
        return HIAR_FLOAT16;
    if (t == inter.bf16)
        return HIAR_BFLOAT16;
    return t == MPI_DOUBLE ? HIAR_FLOAT64 : HIAR_FLOAT32;
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *type, hiar_op_t op)
{
    const void *srcs[2] = {inout, in};
    hiar_reduce_host(inout, srcs, 2, (size_t)*len, dtype_of(*type), op, 0);
}

#define USER_OP(name, op)                                                                  \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)                  \
    {                                                                                      \
        user_op(in, inout, len, type, op);                                                 \
    }
USER_OP(op_sum, HIAR_SUM)
USER_OP(op_prod, HIAR_PROD)
USER_OP(op_min, HIAR_MIN)
USER_OP(op_max, HIAR_MAX)

static void inter_once(void)
{
    MPI_User_function *fns[] = {op_sum, op_prod, op_min, op_max};
    int rc = MPI_Type_contiguous(1, MPI_UINT16_T, &inter.f16);

    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&inter.f16);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_contiguous(1, MPI_UINT16_T, &inter.bf16);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&inter.bf16);
    for (int i = 0; i < 4 && rc == MPI_SUCCESS; i++)
        rc = MPI_Op_create(fns[i], 1, &inter.ops[i]);
    inter.rc = rc;
}

hiar_result_t hiar_inter_init(void)
{
    pthread_once(&inter.once, inter_once);
    return inter.rc == MPI_SUCCESS ? HIAR_SUCCESS
                                   : hiar_error_mpi(inter.rc, "creating hiar's MPI types and ops");
}

static MPI_Op builtin_op(hiar_op_t op)
{
    switch (op) {
    case HIAR_PROD: return MPI_PROD;
    case HIAR_MIN: return MPI_MIN;
    case HIAR_MAX: return MPI_MAX;
    default: return MPI_SUM; /* HIAR_SUM, HIAR_AVG */
    }
}

static void mpi_type_op(hiar_dtype_t dtype, hiar_op_t op, MPI_Datatype *type, MPI_Op *mop)
{
    hiar_op_t base = op == HIAR_AVG ? HIAR_SUM : op;
    int is_half = dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16;
    int is_float = dtype == HIAR_FLOAT32 || dtype == HIAR_FLOAT64;

    switch (dtype) {
    case HIAR_INT32: *type = MPI_INT32_T; break;
    case HIAR_INT64: *type = MPI_INT64_T; break;
    case HIAR_UINT8: *type = MPI_UINT8_T; break;
    case HIAR_INT8: *type = MPI_INT8_T; break;
    case HIAR_FLOAT16: *type = inter.f16; break;
    case HIAR_BFLOAT16: *type = inter.bf16; break;
    case HIAR_FLOAT32: *type = MPI_FLOAT; break;
    default: *type = MPI_DOUBLE; break;
    }
    *mop = is_half || (is_float && (base == HIAR_MIN || base == HIAR_MAX)) ? inter.ops[base]
                                                                          : builtin_op(base);
}

hiar_result_t hiar_mpi_wait(MPI_Request *req, hiar_wait_t *wait)
{
    for (;;) {
        int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return hiar_error_mpi(rc, "MPI_Test");
        if (done)
            return HIAR_SUCCESS;
        HIAR_CHECK(hiar_wait_poll(wait));
    }
}

hiar_result_t hiar_inter_allreduce(void *buf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                   MPI_Comm mpi_comm, hiar_wait_t *wait)
{
    size_t esize = hiar_dtype_size(dtype);
    MPI_Datatype type;
    MPI_Op mop;

    mpi_type_op(dtype, op, &type, &mop);
    for (size_t off = 0; off < count; off += MPI_COUNT_MAX) {
        size_t n = count - off < MPI_COUNT_MAX ? count - off : MPI_COUNT_MAX;
        MPI_Request req;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + off * esize, (int)n, type, mop, mpi_comm,
                                &req);
        if (rc != MPI_SUCCESS)
            return hiar_error_mpi(rc, "MPI_Iallreduce between groups");
        HIAR_CHECK(hiar_mpi_wait(&req, wait));
    }
    return HIAR_SUCCESS;
}
