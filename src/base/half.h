/* Half types on the host: f16 and bf16 to and from f32, rounding to nearest even. */
#ifndef HIAR_HALF_H
#define HIAR_HALF_H

#include <stdint.h>
#include <string.h>

static inline float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Round to nearest even; NaN stays NaN (quieted). */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
    float f;

    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (mant << 13);
    } else if (exp) {
        u = sign | ((exp + 112u) << 23) | (mant << 13);
    } else {
        /* Zero or subnormal: mant * 2^-24, exact in f32. */
        f = (float)mant * 0x1p-24f;
        memcpy(&u, &f, sizeof(u));
        u |= sign;
    }
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Round to nearest even, overflow to Inf, NaN stays NaN. */
static inline uint16_t f32_to_f16(float value)
{
    /* Adding 0.5 * 2^-13 (as a float with the right exponent) makes the FPU
     * round subnormal halves for us; the low bits are then the half's bits. */
    const float subnormal_bias = 0.5f;
    uint32_t u, sign;
    float f;

    memcpy(&u, &value, sizeof(u));
    sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    if (u >= 0x47800000u) /* >= 65536, Inf or NaN */
        return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (u < 0x38800000u) { /* below the smallest normal half, 2^-14 */
        memcpy(&f, &u, sizeof(f));
        f += subnormal_bias;
        memcpy(&u, &f, sizeof(u));
        return (uint16_t)(sign | (u - 0x3f000000u));
    }
    /* Rebias the exponent and round the 13 dropped bits to nearest even;
     * a carry into the exponent is the right answer (up to Inf at 65520). */
    u += 0xc8000fffu + ((u >> 13) & 1u);
    return (uint16_t)(sign | (u >> 13));
}

#endif
