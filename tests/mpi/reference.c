/* Reference inputs and results for test_allreduce; see reference.h. */
#include <math.h>
#include <string.h>

#include "reference.h"

/*
 * A 16-bit binary float: `mant` stored significand bits, normal exponents
 * emin..emax (the bias is emax).  float16: 10, -14, 15; bfloat16: 7, -126, 127.
 */
typedef struct {
    int mant, emin, emax;
} half_format_t;

static const half_format_t FLOAT16 = {10, -14, 15};
static const half_format_t BFLOAT16 = {7, -126, 127};

/* 2^k as a double, -1022 <= k <= 1023 (built from its bits: no libm). */
static double pow2(int k)
{
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

static unsigned exponent_all_ones(const half_format_t *f)
{
    return (unsigned)(2 * f->emax + 1);
}

/*
 * v rounded to nearest even in format f, as its 16 bits.  The double is
 * sig * 2^e2 with an integer sig; the result keeps the bits of sig down to the
 * quantum 2^(e - mant) of v's binade (clamped to emin for subnormals) and
 * rounds on the dropped bits.  Example, float16 of 1 + 2^-11 (a tie): sig
 * 2^52 + 2^41, quantum 2^-10, the dropped bits are exactly half -> round to
 * even -> 1.0 (0x3c00).
 */
static uint16_t half_encode(const half_format_t *f, double v)
{
    uint16_t inf = (uint16_t)(exponent_all_ones(f) << f->mant);
    uint64_t bits, sig, q;
    uint16_t sign;
    int biased, e2, e, shift;

    memcpy(&bits, &v, sizeof(bits));
    sign = (uint16_t)((bits >> 63) << 15);
    biased = (int)((bits >> 52) & 0x7ff);
    sig = bits & ((UINT64_C(1) << 52) - 1);
    if (biased == 0x7ff)
        return (uint16_t)(sign | inf | (sig ? 1u << (f->mant - 1) : 0));
    if (biased == 0 && sig == 0)
        return sign;
    if (biased == 0) {
        e2 = -1074;
    } else {
        sig |= UINT64_C(1) << 52;
        e2 = biased - 1075;
    }
    e = e2 + 63 - __builtin_clzll(sig);
    if (e < f->emin)
        e = f->emin;
    shift = e - f->mant - e2;
    if (shift <= 0) {
        q = sig << -shift;
    } else if (shift > 63) {
        q = 0;
    } else {
        uint64_t rem = sig & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
        q = sig >> shift;
        if (rem > half || (rem == half && (q & 1)))
            q++;
    }
    if (q >> (f->mant + 1)) { /* rounded up into the next binade */
        q >>= 1;
        e++;
    }
    if (e > f->emax)
        return (uint16_t)(sign | inf);
    if (q < (UINT64_C(1) << f->mant)) /* subnormal */
        return (uint16_t)(sign | q);
    return (uint16_t)(sign | (unsigned)(e + f->emax) << f->mant | (q - (UINT64_C(1) << f->mant)));
}

static double half_decode(const half_format_t *f, uint16_t h)
{
    unsigned e = (h >> f->mant) & exponent_all_ones(f), m = h & ((1u << f->mant) - 1);
    double s = (h & 0x8000) ? -1.0 : 1.0;

    if (e == exponent_all_ones(f))
        return m ? NAN : s * INFINITY;
    if (e == 0)
        return s * m * pow2(f->emin - f->mant);
    return s * ((1u << f->mant) + m) * pow2((int)e - f->emax - f->mant);
}

int ref_is_float(hiar_dtype_t dtype)
{
    return dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16 || dtype == HIAR_FLOAT32 ||
           dtype == HIAR_FLOAT64;
}

/* Two's-complement wrap to the width of an integer dtype. */
static int64_t wrap(hiar_dtype_t dtype, int64_t v)
{
    switch (dtype) {
    case HIAR_INT32: return (int32_t)(uint32_t)(uint64_t)v;
    case HIAR_UINT8: return (uint8_t)(uint64_t)v;
    case HIAR_INT8: return (int8_t)(uint8_t)(uint64_t)v;
    default: return v;
    }
}

double ref_round(hiar_dtype_t dtype, double v)
{
    switch (dtype) {
    case HIAR_FLOAT16: return half_decode(&FLOAT16, half_encode(&FLOAT16, v));
    case HIAR_BFLOAT16: return half_decode(&BFLOAT16, half_encode(&BFLOAT16, v));
    case HIAR_FLOAT32: return (float)v;
    case HIAR_FLOAT64: return v;
    default: return (double)wrap(dtype, (int64_t)v);
    }
}

void ref_store(hiar_dtype_t dtype, void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * hiar_dtype_size(dtype);

    switch (dtype) {
    case HIAR_INT32: {
        int32_t x = (int32_t)wrap(dtype, (int64_t)v);
        memcpy(p, &x, sizeof(x));
        break;
    }
    case HIAR_INT64: {
        int64_t x = (int64_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case HIAR_UINT8: *(uint8_t *)p = (uint8_t)wrap(dtype, (int64_t)v); break;
    case HIAR_INT8: *(int8_t *)p = (int8_t)wrap(dtype, (int64_t)v); break;
    case HIAR_FLOAT16: {
        uint16_t x = half_encode(&FLOAT16, v);
        memcpy(p, &x, sizeof(x));
        break;
    }
    case HIAR_BFLOAT16: {
        uint16_t x = half_encode(&BFLOAT16, v);
        memcpy(p, &x, sizeof(x));
        break;
    }
    case HIAR_FLOAT32: {
        float x = (float)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    default: memcpy(p, &v, sizeof(v)); break;
    }
}

double ref_load(hiar_dtype_t dtype, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * hiar_dtype_size(dtype);

    switch (dtype) {
    case HIAR_INT32: {
        int32_t x;
        memcpy(&x, p, sizeof(x));
        return x;
    }
    case HIAR_INT64: {
        int64_t x;
        memcpy(&x, p, sizeof(x));
        return (double)x;
    }
    case HIAR_UINT8: return *(const uint8_t *)p;
    case HIAR_INT8: return *(const int8_t *)p;
    case HIAR_FLOAT16:
    case HIAR_BFLOAT16: {
        uint16_t x;
        memcpy(&x, p, sizeof(x));
        return half_decode(dtype == HIAR_FLOAT16 ? &FLOAT16 : &BFLOAT16, x);
    }
    case HIAR_FLOAT32: {
        float x;
        memcpy(&x, p, sizeof(x));
        return x;
    }
    default: {
        double x;
        memcpy(&x, p, sizeof(x));
        return x;
    }
    }
}

double ref_input(hiar_dtype_t dtype, hiar_op_t op, int rank, size_t i)
{
    /* Powers of two (and signs): every product over up to 8 ranks is exact. */
    static const double prod_float[7] = {1, 2, -1, 0.5, -2, 1, -0.5};
    static const double prod_signed[7] = {1, 2, -1, 1, -2, 1, -1};
    static const double prod_unsigned[7] = {1, 2, 1, 1, 2, 1, 1};
    size_t r = (size_t)rank;
    int v;

    if (op == HIAR_PROD) {
        size_t k = (i * 5 + r * 3) % 7;
        return ref_is_float(dtype)    ? prod_float[k]
               : dtype == HIAR_UINT8 ? prod_unsigned[k]
                                     : prod_signed[k];
    }
    /* One NaN every 61 elements, on rank 0 or 1 in turn: min/max must propagate it. */
    if (ref_is_float(dtype) && (op == HIAR_MIN || op == HIAR_MAX) && i % 61 == 17 && (i / 61) % 2 == r)
        return NAN;
    /* 0..30, or -15..15: a sum over 8 ranks fits int8 and is exact in bfloat16. */
    v = (int)((i * 7 + r * 13 + 3) % 31);
    if (dtype == HIAR_UINT8)
        return v;
    return ref_is_float(dtype) ? (v - 15) * 0.5 : v - 15;
}

size_t ref_period(hiar_op_t op)
{
    /* prod: (i * 5) % 7; others: (i * 7) % 31 and the NaN every 61 on rank (i / 61) % 2. */
    return op == HIAR_PROD ? 7 : 31 * 122;
}

double ref_expected(hiar_dtype_t dtype, hiar_op_t op, int nranks, size_t i)
{
    if (ref_is_float(dtype)) {
        double acc = ref_input(dtype, op, 0, i);
        for (int r = 1; r < nranks; r++) {
            double v = ref_input(dtype, op, r, i);
            switch (op) {
            case HIAR_PROD: acc *= v; break;
            case HIAR_MIN: acc = isnan(acc) || isnan(v) ? NAN : v < acc ? v : acc; break;
            case HIAR_MAX: acc = isnan(acc) || isnan(v) ? NAN : v > acc ? v : acc; break;
            default: acc += v; break;
            }
        }
        if (op == HIAR_AVG)
            acc /= nranks;
        return ref_round(dtype, acc);
    } else {
        int64_t acc = (int64_t)ref_input(dtype, op, 0, i);
        for (int r = 1; r < nranks; r++) {
            int64_t v = (int64_t)ref_input(dtype, op, r, i);
            switch (op) {
            case HIAR_PROD: acc *= v; break;
            case HIAR_MIN: acc = v < acc ? v : acc; break;
            case HIAR_MAX: acc = v > acc ? v : acc; break;
            default: acc += v; break;
            }
        }
        if (op == HIAR_AVG)
            acc /= nranks; /* C division truncates toward zero, as documented */
        return (double)wrap(dtype, acc);
    }
}

/* Position of a float on the number line, in ulps of dtype (v must be representable). */
static int64_t ordinal(hiar_dtype_t dtype, double v)
{
    int64_t magnitude;
    int negative;

    if (dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16) {
        uint16_t h = half_encode(dtype == HIAR_FLOAT16 ? &FLOAT16 : &BFLOAT16, v);
        negative = h >> 15;
        magnitude = h & 0x7fff;
    } else if (dtype == HIAR_FLOAT32) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, sizeof(u));
        negative = (int)(u >> 31);
        magnitude = u & 0x7fffffffu;
    } else {
        uint64_t u;
        memcpy(&u, &v, sizeof(u));
        negative = (int)(u >> 63);
        magnitude = (int64_t)(u & ~(UINT64_C(1) << 63));
    }
    return negative ? -magnitude : magnitude;
}

int ref_matches(hiar_dtype_t dtype, hiar_op_t op, double got, double want)
{
    int64_t distance;

    if (isnan(got) || isnan(want))
        return isnan(got) && isnan(want);
    if (got == want)
        return 1;
    if (op != HIAR_AVG || !ref_is_float(dtype))
        return 0;
    /* Float avg: the sum is exact, the division may round twice (f32, then f16). */
    distance = ordinal(dtype, got) - ordinal(dtype, want);
    return distance >= -1 && distance <= 1;
}
