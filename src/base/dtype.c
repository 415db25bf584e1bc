/* Sizes and names of dtypes (base/dtypes.def) and ops. */
#include <stdint.h>

#include "base/reduce.h"
#include "hiar.h"

/* ARITH of dtypes.def: IEEE arithmetic or wrapping integers. */
#define FLOATING_FLT_ 1
#define FLOATING_INT_ 0

static const struct {
    const char *name;
    size_t size;
    int floating; /* IEEE arithmetic (ARITH FLT_) */
} dtypes[HIAR_DTYPE_COUNT] = {
#define HIAR_DTYPE(E, NAME, HOST_T, DEVICE_T, ACC_T, WRAP_T, ARITH, ...) \
    [HIAR_##E] = {NAME, sizeof(HOST_T), FLOATING_##ARITH},
#include "dtypes.def"
#undef HIAR_DTYPE
};

/* dtypes.def lists every hiar_dtype_t, in order. */
enum {
#define HIAR_DTYPE(E, ...) HIAR_DTYPE_ORDER_##E,
#include "dtypes.def"
#undef HIAR_DTYPE
    HIAR_DTYPES_LISTED
};
_Static_assert((int)HIAR_DTYPES_LISTED == (int)HIAR_DTYPE_COUNT, "dtypes.def lists every hiar_dtype_t");
#define HIAR_DTYPE(E, ...) _Static_assert((int)HIAR_DTYPE_ORDER_##E == (int)HIAR_##E, "dtypes.def in hiar_dtype_t's order");
#include "dtypes.def"
#undef HIAR_DTYPE

static const char *const ops[HIAR_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

size_t hiar_dtype_size(hiar_dtype_t dtype)
{
    return (unsigned)dtype < HIAR_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

int hiar_dtype_floating(hiar_dtype_t dtype)
{
    return (unsigned)dtype < HIAR_DTYPE_COUNT && dtypes[dtype].floating;
}

const char *hiar_dtype_name(hiar_dtype_t dtype)
{
    return (unsigned)dtype < HIAR_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

const char *hiar_op_name(hiar_op_t op)
{
    return (unsigned)op < HIAR_OP_COUNT ? ops[op] : NULL;
}
