/* Sizes and names of dtypes and ops. */
#include "hiar.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[HIAR_DTYPE_COUNT] = {
    [HIAR_INT32] = {"int32", 4},     [HIAR_INT64] = {"int64", 8},
    [HIAR_FLOAT16] = {"float16", 2}, [HIAR_BFLOAT16] = {"bfloat16", 2},
    [HIAR_FLOAT32] = {"float32", 4}, [HIAR_FLOAT64] = {"float64", 8},
    [HIAR_UINT8] = {"uint8", 1},     [HIAR_INT8] = {"int8", 1},
};

static const char *const ops[HIAR_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

size_t hiar_dtype_size(hiar_dtype_t dtype)
{
    return (unsigned)dtype < HIAR_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

const char *hiar_dtype_name(hiar_dtype_t dtype)
{
    return (unsigned)dtype < HIAR_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

const char *hiar_op_name(hiar_op_t op)
{
    return (unsigned)op < HIAR_OP_COUNT ? ops[op] : NULL;
}
