/*
 * The RMSNorm on the host, row by row, with the device kernels' roundings
 * (base/call.h); the sum of squares in double, which the host has at no cost.
 */
#include <math.h>
#include <stdint.h>

#include "base/half.h"
#include "base/norm.h"

static float load_f32(const void *p, size_t i, hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_FLOAT16: return f16_to_f32(((const uint16_t *)p)[i]);
    case HIAR_BFLOAT16: return bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Stores v rounded to dtype; returns the value stored, as f32. */
static float store_f32(void *p, size_t i, hiar_dtype_t dtype, float v)
{
    switch (dtype) {
    case HIAR_FLOAT16: ((uint16_t *)p)[i] = f32_to_f16(v); return f16_to_f32(((uint16_t *)p)[i]);
    case HIAR_BFLOAT16: ((uint16_t *)p)[i] = f32_to_bf16(v); return bf16_to_f32(((uint16_t *)p)[i]);
    default: ((float *)p)[i] = v; return v;
    }
}

void hiar_norm_host(const hiar_norm_t *nm, void *buf, size_t rows, hiar_dtype_t dtype)
{
    size_t esize = hiar_dtype_size(dtype), h = nm->hidden;

    for (size_t t = 0; t < rows; t++) {
        char *x = (char *)buf + t * h * esize;
        char *res = nm->residual ? (char *)nm->residual + t * h * esize : NULL;
        double sumsq = 0;
        float scale;

        for (size_t i = 0; i < h; i++) {
            float r = load_f32(x, i, dtype);
            if (res)
                r = store_f32(res, i, dtype, load_f32(res, i, dtype) + r);
            store_f32(x, i, dtype, r);
            sumsq += (double)r * r;
        }
        scale = 1.0f / sqrtf((float)(sumsq / (double)h) + nm->eps);
        for (size_t i = 0; i < h; i++)
            store_f32(x, i, dtype, load_f32(x, i, dtype) * scale * (load_f32(nm->weight, i, nm->weight_dtype) +
                                                                     nm->weight_offset));
    }
}
