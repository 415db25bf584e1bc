/* Inputs with an exactly representable allreduce, and the independent reference. */
#include "config.h"

#include <string.h>

#include "bench-check.h"

/* ---- float16 / bfloat16 */

/* v >> shift rounded to nearest, ties to even (1 <= shift <= 31). */
static uint32_t shift_round(uint32_t v, int shift)
{
    uint32_t q = v >> shift, rem = v & ((1u << shift) - 1), half = 1u << (shift - 1);

    return q + (rem > half || (rem == half && (q & 1)));
}

float bench_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    float f;

    if (exp == 0) {
        /* Zero or subnormal: mant * 2^-24, exact in float. */
        f = (float)mant * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    if (exp == 31)
        bits = sign | 0x7f800000 | (mant << 13); /* infinity or NaN */
    else
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t bench_float_to_half(float f)
{
    uint32_t bits, sign, mant;
    int exp; /* biased as a half's */

    memcpy(&bits, &f, sizeof bits);
    sign = (bits >> 16) & 0x8000;
    if ((bits & 0x7fffffff) > 0x7f800000)
        return (uint16_t)(sign | 0x7e00); /* quiet NaN */
    exp = (int)((bits >> 23) & 0xff) - 127 + 15;
    mant = (bits & 0x7fffff) | 0x800000; /* with the implicit bit */
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00); /* too large, or infinity */
    if (exp >= 1)
        /* The implicit bit lands in the exponent field, hence exp - 1; a
         * rounding carry out of the significand bumps the exponent (65520
         * rounds to infinity). */
        return (uint16_t)(sign | ((((uint32_t)exp - 1) << 10) + shift_round(mant, 13)));
    if (exp < -17)
        return (uint16_t)sign; /* below half the smallest subnormal */
    /* Subnormal half: mant * 2^(exp - 14) units of 2^-24. */
    return (uint16_t)(sign | shift_round(mant, 14 - exp));
}

float bench_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;

    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t bench_float_to_bf16(float f)
{
    uint32_t bits;

    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((bits >> 16) | 0x40); /* quiet NaN */
    /* bfloat16 is the top half of a float: round the bottom half away. */
    return (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

/* ---- inputs */

/* Which values the ranks contribute to one allreduce. */
typedef struct {
    hiar_op_t op;
    int lo, hi;       /* sum, avg, min, max: each input is in lo..hi */
    int has_negative; /* prod: -1 occurs besides 1 and 2 (signed dtypes) */
} pattern_t;

/*
 * Largest |sum| the dtype holds exactly: integers without overflow, half
 * types within their significand (float16: 11 bits, bfloat16: 8 bits).
 */
static int64_t exact_limit(hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_INT8: return INT8_MAX;
    case HIAR_UINT8: return UINT8_MAX;
    case HIAR_FLOAT16: return 2048;
    case HIAR_BFLOAT16: return 256;
    default: return INT32_MAX;
    }
}

/*
 * Inputs in -3..3 (0..3 unsigned), narrowed so that nranks of them sum
 * exactly: bfloat16 at 64 ranks gets -3..3 (|sum| <= 192 <= 256), at 128
 * ranks -2..2.  Past exact_limit ranks (127 for int8) sums can overflow and
 * the check reports them.
 */
static pattern_t pattern_of(hiar_dtype_t dtype, hiar_op_t op, int nranks)
{
    int64_t vmax = op == HIAR_MIN || op == HIAR_MAX ? 3 : exact_limit(dtype) / nranks;
    pattern_t p;

    vmax = vmax < 1 ? 1 : vmax > 3 ? 3 : vmax;
    p.op = op;
    p.hi = (int)vmax;
    p.lo = dtype == HIAR_UINT8 ? 0 : -p.hi;
    p.has_negative = dtype != HIAR_UINT8;
    return p;
}

/* A hash of (element, rank), so that inputs look irregular along both. */
static uint32_t mix(size_t i, int rank)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank + 1) * 0xc2b2ae3d27d4eb4full;

    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32);
}

static int64_t input(const pattern_t *p, size_t i, int rank)
{
    uint32_t h = mix(i, rank);

    /* Products: mostly 1, a 2 on one rank in 8, so the result is +-2^k. */
    if (p->op == HIAR_PROD)
        return h % 8 == 0 ? 2 : (p->has_negative && h % 8 == 1) ? -1 : 1;
    return p->lo + (int64_t)(h % (uint32_t)(p->hi - p->lo + 1));
}

/* An exact result: `real` for float dtypes, `integer` for integer ones. */
typedef struct {
    double real;
    int64_t integer;
} exact_t;

static exact_t reduce_ranks(const pattern_t *p, size_t i, int nranks)
{
    int64_t acc = input(p, i, 0);
    /* Products: +-2^k is exact in double; integers wrap modulo 2^64 as the
     * dtype's own arithmetic wraps modulo its width. */
    double real_prod = (double)acc;
    uint64_t wrapped_prod = (uint64_t)acc;

    for (int r = 1; r < nranks; r++) {
        int64_t v = input(p, i, r);
        switch (p->op) {
        case HIAR_PROD:
            real_prod *= (double)v;
            wrapped_prod *= (uint64_t)v;
            break;
        case HIAR_MIN: acc = v < acc ? v : acc; break;
        case HIAR_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; /* HIAR_SUM, HIAR_AVG */
        }
    }
    if (p->op == HIAR_PROD)
        return (exact_t){real_prod, (int64_t)wrapped_prod};
    if (p->op == HIAR_AVG) /* integers: C's division truncates toward zero, as hiar's AVG */
        return (exact_t){(double)acc / nranks, acc / nranks};
    return (exact_t){(double)acc, acc};
}

/* ---- element access */

#define STORE(_dst, _type, _value)                                                         \
    do {                                                                                   \
        _type store_ = (_value);                                                           \
        memcpy(_dst, &store_, sizeof store_);                                              \
    } while (0)

/* Writes v as one element of dtype; integers keep their low bits. */
static void store(void *dst, hiar_dtype_t dtype, exact_t v)
{
    switch (dtype) {
    case HIAR_INT32: STORE(dst, int32_t, (int32_t)v.integer); break;
    case HIAR_INT64: STORE(dst, int64_t, v.integer); break;
    case HIAR_FLOAT16: STORE(dst, uint16_t, bench_float_to_half((float)v.real)); break;
    case HIAR_BFLOAT16: STORE(dst, uint16_t, bench_float_to_bf16((float)v.real)); break;
    case HIAR_FLOAT32: STORE(dst, float, (float)v.real); break;
    case HIAR_FLOAT64: STORE(dst, double, v.real); break;
    case HIAR_UINT8: STORE(dst, uint8_t, (uint8_t)v.integer); break;
    default: STORE(dst, int8_t, (int8_t)v.integer); break; /* HIAR_INT8 */
    }
}

void bench_store_real(void *dst, hiar_dtype_t dtype, double v)
{
    store(dst, dtype, (exact_t){v, 0});
}

static int is_float(hiar_dtype_t dtype)
{
    return dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16 || dtype == HIAR_FLOAT32 ||
           dtype == HIAR_FLOAT64;
}

double bench_load_real(const void *src, hiar_dtype_t dtype)
{
    uint16_t h;
    float f;
    double d;

    switch (dtype) {
    case HIAR_FLOAT16: memcpy(&h, src, sizeof h); return bench_half_to_float(h);
    case HIAR_BFLOAT16: memcpy(&h, src, sizeof h); return bench_bf16_to_float(h);
    case HIAR_FLOAT32: memcpy(&f, src, sizeof f); return f;
    default: memcpy(&d, src, sizeof d); return d; /* HIAR_FLOAT64 */
    }
}

/* Spacing of the dtype's values in [2, 4), the magnitude of the inputs. */
static double input_ulp(hiar_dtype_t dtype)
{
    int bits = dtype == HIAR_FLOAT16 ? 10 : dtype == HIAR_BFLOAT16 ? 7 : dtype == HIAR_FLOAT32 ? 23 : 52;

    return 2.0 / (double)(1ull << bits);
}

static int matches(const void *got, const void *want, hiar_dtype_t dtype, double tolerance)
{
    double g, w, diff;

    if (!is_float(dtype))
        return memcmp(got, want, hiar_dtype_size(dtype)) == 0;
    g = bench_load_real(got, dtype);
    w = bench_load_real(want, dtype);
    if (g == w) /* also equal infinities: float16 products of many 2s */
        return 1;
    diff = g > w ? g - w : w - g;
    return diff <= tolerance; /* false for NaN */
}

/* ---- API */

void bench_check_fill(void *buf, size_t count, hiar_dtype_t dtype, hiar_op_t op, int rank,
                      int nranks)
{
    pattern_t p = pattern_of(dtype, op, nranks);
    size_t esize = hiar_dtype_size(dtype);

    for (size_t i = 0; i < count; i++) {
        int64_t v = input(&p, i, rank);
        store((char *)buf + i * esize, dtype, (exact_t){(double)v, v});
    }
}

size_t bench_check_count(const void *result, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                         int nranks, int max_ulps)
{
    pattern_t p = pattern_of(dtype, op, nranks);
    size_t esize = hiar_dtype_size(dtype), wrong = 0;
    double tolerance = is_float(dtype) ? max_ulps * input_ulp(dtype) : 0.0;

    for (size_t i = 0; i < count; i++) {
        unsigned char want[8];
        store(want, dtype, reduce_ranks(&p, i, nranks));
        wrong += !matches((const char *)result + i * esize, want, dtype, tolerance);
    }
    return wrong;
}
