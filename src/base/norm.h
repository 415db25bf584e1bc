/* The RMSNorm of hiar_allreduce_rmsnorm on the host (base/call.h says what it computes). */
#ifndef HIAR_NORM_H
#define HIAR_NORM_H

#include "base/call.h"

/* Activations and weights the norm takes: f32, f16, bf16. */
static inline int hiar_norm_dtype_ok(hiar_dtype_t dtype)
{
    return dtype == HIAR_FLOAT32 || dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16;
}

/* rows x nm->hidden elements of dtype in buf, holding the sums: normalised in place (residual updated). */
void hiar_norm_host(const hiar_norm_t *nm, void *buf, size_t rows, hiar_dtype_t dtype);

#endif
