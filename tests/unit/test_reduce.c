/*
 * Host reductions (src/base/reduce.c) against a reference written here: the same
 * documented order (srcs[0] op srcs[1] op ...), float16 through the compiler's
 * _Float16 conversions, bfloat16 through this file's own rounding, integers
 * in unsigned arithmetic (two's-complement wrap).  Every dtype x op, odd
 * counts around the 256-element blocks, 1 to 8 sources.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/reduce.h"

static const size_t counts[] = {1, 7, 255, 256, 257, 1000};
static const int nsrcs[] = {1, 2, 3, 5, 8};
#define MAX_COUNT 1000
#define MAX_SRC 8

/* ---- reference conversions ---- */

static float f16_to_float(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, sizeof(x));
    return (float)x;
}

static uint16_t float_to_f16(float f)
{
    _Float16 x = (_Float16)f; /* round to nearest even, overflow to Inf */
    uint16_t h;
    memcpy(&h, &x, sizeof(h));
    return h;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Keep the top 16 bits of the float, rounding the low 16 to nearest even. */
static uint16_t float_to_bf16(float f)
{
    uint32_t u, rest;
    uint16_t top;

    memcpy(&u, &f, sizeof(u));
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40);
    top = (uint16_t)(u >> 16);
    rest = u & 0xffff;
    if (rest > 0x8000 || (rest == 0x8000 && (top & 1)))
        top++; /* a carry into the exponent is right, up to Inf */
    return top;
}

/* ---- one reference element ---- */

static double fmin_nan(double a, double b)
{
    return isnan(a) || isnan(b) ? NAN : b < a ? b : a;
}

static double fmax_nan(double a, double b)
{
    return isnan(a) || isnan(b) ? NAN : b > a ? b : a;
}

/* Float result in the accumulation type of dtype, before the final rounding. */
#define FLOAT_REFERENCE(T, acc, load)                                                      \
    do {                                                                                   \
        acc = (T)load(0);                                                                  \
        for (int s = 1; s < nsrc; s++) {                                                   \
            T v = (T)load(s);                                                              \
            switch (op) {                                                                  \
            case HIAR_PROD: acc = acc * v; break;                                          \
            case HIAR_MIN: acc = (T)fmin_nan(acc, v); break;                               \
            case HIAR_MAX: acc = (T)fmax_nan(acc, v); break;                               \
            default: acc = acc + v; break;                                                 \
            }                                                                              \
        }                                                                                  \
        if (divisor > 1)                                                                   \
            acc = acc / (T)divisor;                                                        \
    } while (0)

/* Integer result wrapped to `bits`, signed or not, as int64. */
static int64_t int_reference(const int64_t *v, int nsrc, hiar_op_t op, int divisor, int bits, int is_signed)
{
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t acc = (uint64_t)v[0];
    int64_t result;

    for (int s = 1; s < nsrc; s++) {
        switch (op) {
        case HIAR_PROD: acc = acc * (uint64_t)v[s]; break;
        case HIAR_MIN: acc = v[s] < (int64_t)acc ? (uint64_t)v[s] : acc; break;
        case HIAR_MAX: acc = v[s] > (int64_t)acc ? (uint64_t)v[s] : acc; break;
        default: acc = acc + (uint64_t)v[s]; break;
        }
        /* Min/max compare the values, which v[] holds sign- or zero-extended. */
        if (op == HIAR_SUM || op == HIAR_AVG || op == HIAR_PROD) {
            acc &= mask;
            if (is_signed && bits < 64 && (acc >> (bits - 1)) & 1)
                acc |= ~mask;
        }
    }
    result = (int64_t)acc;
    if (divisor > 1)
        result /= divisor; /* truncates toward zero */
    return result;
}

/* ---- buffers ---- */

typedef struct {
    hiar_dtype_t dtype;
    size_t count;
    int nsrc;
    _Alignas(64) unsigned char src[MAX_SRC][MAX_COUNT * 8]; /* aligned like any allreduce buffer */
    _Alignas(64) unsigned char dst[MAX_COUNT * 8 + 64];
} bufs_t;

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 17;
}

/* Random bits of the element size; no NaN unless allowed; small magnitudes for avg. */
static void fill_random(bufs_t *b, hiar_op_t op)
{
    size_t esize = hiar_dtype_size(b->dtype);

    for (int s = 0; s < b->nsrc; s++)
        for (size_t i = 0; i < b->count; i++) {
            unsigned char *p = b->src[s] + i * esize;
            uint64_t r = rng();
            switch (b->dtype) {
            case HIAR_FLOAT16: {
                uint16_t h = (uint16_t)r;
                if ((h & 0x7c00) == 0x7c00) /* Inf/NaN: take a finite value instead */
                    h &= 0xbfff;
                memcpy(p, &h, 2);
                break;
            }
            case HIAR_BFLOAT16: {
                uint16_t h = (uint16_t)r;
                if ((h & 0x7f80) == 0x7f80)
                    h &= 0xbfff;
                memcpy(p, &h, 2);
                break;
            }
            case HIAR_FLOAT32: {
                /* Mostly ordinary numbers, some subnormal or huge ones. */
                float f = (float)((int64_t)(r % 2000001) - 1000000) / 1024.0f;
                if (r % 17 == 0)
                    f *= 1e-40f;
                else if (r % 19 == 0)
                    f *= 1e33f;
                memcpy(p, &f, 4);
                break;
            }
            case HIAR_FLOAT64: {
                double d = (double)((int64_t)(r % 2000001) - 1000000) / 3.0;
                if (r % 17 == 0)
                    d *= 1e-310;
                memcpy(p, &d, 8);
                break;
            }
            default: {
                /* Integers: any bits, so sums and products wrap; for avg, values
                 * whose sum over 8 sources fits int8 (avg of a wrapped sum is
                 * not what a user means by an average). */
                int64_t v = (int64_t)r;
                if (op == HIAR_AVG)
                    v = (int64_t)(r % 31) - (b->dtype == HIAR_UINT8 ? 0 : 15);
                memcpy(p, &v, esize); /* little-endian: the low bytes */
                break;
            }
            }
        }
}

/* A float element of dtype at p, via the reference conversions. */
static double decode(hiar_dtype_t dtype, const unsigned char *p)
{
    uint16_t h;
    float f;
    double d;

    switch (dtype) {
    case HIAR_FLOAT16: memcpy(&h, p, 2); return f16_to_float(h);
    case HIAR_BFLOAT16: memcpy(&h, p, 2); return bf16_to_float(h);
    case HIAR_FLOAT32: memcpy(&f, p, 4); return f;
    default: memcpy(&d, p, 8); return d;
    }
}

static double load_float(const bufs_t *b, int s, size_t i)
{
    return decode(b->dtype, b->src[s] + i * hiar_dtype_size(b->dtype));
}

static int64_t load_int(hiar_dtype_t dtype, const unsigned char *p)
{
    int32_t i32;
    int64_t i64;

    switch (dtype) {
    case HIAR_INT32: memcpy(&i32, p, 4); return i32;
    case HIAR_INT64: memcpy(&i64, p, 8); return i64;
    case HIAR_UINT8: return *p;
    default: return (int8_t)*p;
    }
}

/* Whether dst[i] is the reference result; says why not. */
static int check_element(const bufs_t *b, const unsigned char *dst, hiar_op_t op, int divisor, size_t i,
                         char *why, size_t len)
{
    size_t esize = hiar_dtype_size(b->dtype);
    const unsigned char *got = dst + i * esize;
    int exact_zero_sign = op != HIAR_MIN && op != HIAR_MAX;
    unsigned char want[8];
    int nsrc = b->nsrc;

    switch (b->dtype) {
    case HIAR_FLOAT16:
    case HIAR_BFLOAT16: {
        float acc;
        uint16_t h;
#define LOAD(s) load_float(b, s, i)
        FLOAT_REFERENCE(float, acc, LOAD);
        h = b->dtype == HIAR_FLOAT16 ? float_to_f16(acc) : float_to_bf16(acc);
        memcpy(want, &h, 2);
        break;
    }
    case HIAR_FLOAT32: {
        float acc;
        FLOAT_REFERENCE(float, acc, LOAD);
        memcpy(want, &acc, 4);
        break;
    }
    case HIAR_FLOAT64: {
        double acc;
        FLOAT_REFERENCE(double, acc, LOAD);
#undef LOAD
        memcpy(want, &acc, 8);
        break;
    }
    default: {
        int64_t v[MAX_SRC], r;
        int bits = (int)esize * 8;
        for (int s = 0; s < nsrc; s++)
            v[s] = load_int(b->dtype, b->src[s] + i * esize);
        r = int_reference(v, nsrc, op, divisor, bits, b->dtype != HIAR_UINT8);
        memcpy(want, &r, esize); /* little-endian: the low bytes */
        if (memcmp(got, want, esize) != 0) {
            snprintf(why, len, "element %zu is %lld, expected %lld", i, (long long)load_int(b->dtype, got),
                     (long long)load_int(b->dtype, want));
            return 0;
        }
        return 1;
    }
    }
    /* Floats: the same bits; any NaN matches any NaN; min/max may pick either zero. */
    {
        double g = decode(b->dtype, got), w = decode(b->dtype, want);
        if ((isnan(g) && isnan(w)) || memcmp(got, want, esize) == 0 || (!exact_zero_sign && g == w))
            return 1;
        snprintf(why, len, "element %zu is %.9g, expected %.9g", i, g, w);
        return 0;
    }
}

static void check_all(const bufs_t *b, const unsigned char *dst, hiar_op_t op, int divisor)
{
    char why[160];

    for (size_t i = 0; i < b->count; i++)
        if (!check_element(b, dst, op, divisor, i, why, sizeof(why))) {
            cr_expect_fail("%s %s, %d sources, count %zu, divisor %d: %s", hiar_dtype_name(b->dtype),
                           hiar_op_name(op), b->nsrc, b->count, divisor, why);
            return;
        }
}

static void reduce(bufs_t *b, void *dst, hiar_op_t op, int divisor)
{
    const void *srcs[MAX_SRC];
    for (int s = 0; s < b->nsrc; s++)
        srcs[s] = b->src[s];
    hiar_reduce_host(dst, srcs, b->nsrc, b->count, b->dtype, op, divisor);
}

/* ---- every dtype x op ---- */

typedef struct {
    int dtype, op;
} combo_t;

/* Every dtype x op, as Criterion parameters (plain ints: no pointers in them). */
static combo_t *all_combos(void)
{
    static combo_t combos[HIAR_DTYPE_COUNT * HIAR_OP_COUNT];
    for (int d = 0; d < HIAR_DTYPE_COUNT; d++)
        for (int o = 0; o < HIAR_OP_COUNT; o++)
            combos[d * HIAR_OP_COUNT + o] = (combo_t){d, o};
    return combos;
}

ParameterizedTestParameters(reduce, matches_reference)
{
    return cr_make_param_array(combo_t, all_combos(), HIAR_DTYPE_COUNT * HIAR_OP_COUNT);
}

ParameterizedTest(combo_t *c, reduce, matches_reference)
{
    static bufs_t b;
    hiar_op_t op = (hiar_op_t)c->op;

    rng_state = (uint64_t)(c->dtype * 31 + c->op + 1);
    b.dtype = (hiar_dtype_t)c->dtype;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        for (size_t n = 0; n < sizeof(nsrcs) / sizeof(nsrcs[0]); n++) {
            int divisor = op == HIAR_AVG ? nsrcs[n] : 0;
            size_t esize = hiar_dtype_size(b.dtype);
            b.count = counts[k];
            b.nsrc = nsrcs[n];
            fill_random(&b, op);
            /* dst sits one element past the start; the bytes around it must survive. */
            memset(b.dst, 0x5a, sizeof(b.dst));
            reduce(&b, b.dst + esize, op, divisor);
            check_all(&b, b.dst + esize, op, divisor);
            cr_expect_eq(b.dst[0], 0x5a, "wrote before dst");
            cr_expect_eq(b.dst[esize * (b.count + 1)], 0x5a, "wrote past dst");
        }
}

/* dst may be one of the sources (in-place allreduce reduces into srcs[0]). */
ParameterizedTestParameters(reduce, dst_aliases_a_source)
{
    return cr_make_param_array(combo_t, all_combos(), HIAR_DTYPE_COUNT * HIAR_OP_COUNT);
}

ParameterizedTest(combo_t *c, reduce, dst_aliases_a_source)
{
    static bufs_t b, ref;
    hiar_op_t op = (hiar_op_t)c->op;
    size_t esize;
    int divisor = op == HIAR_AVG ? 3 : 0;

    rng_state = (uint64_t)(c->dtype * 7 + c->op + 99);
    b.dtype = (hiar_dtype_t)c->dtype;
    b.count = 1000;
    b.nsrc = 3;
    esize = hiar_dtype_size(b.dtype);
    fill_random(&b, op);
    ref = b;
    reduce(&ref, ref.dst, op, divisor);
    for (int target = 0; target < b.nsrc; target += b.nsrc - 1) {
        bufs_t alias = b;
        reduce(&alias, alias.src[target], op, divisor);
        cr_expect(memcmp(alias.src[target], ref.dst, b.count * esize) == 0,
                  "%s %s: dst == srcs[%d] gives other bytes than a separate dst",
                  hiar_dtype_name(b.dtype), hiar_op_name(op), target);
    }
}

/* ---- documented special cases ---- */

static void put_float(hiar_dtype_t dtype, void *buf, size_t i, double v)
{
    unsigned char *p = (unsigned char *)buf + i * hiar_dtype_size(dtype);
    uint16_t h;
    float f = (float)v;

    switch (dtype) {
    case HIAR_FLOAT16: h = float_to_f16(f); memcpy(p, &h, 2); break;
    case HIAR_BFLOAT16: h = float_to_bf16(f); memcpy(p, &h, 2); break;
    case HIAR_FLOAT32: memcpy(p, &f, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

static double get_float(hiar_dtype_t dtype, const void *buf, size_t i)
{
    return decode(dtype, (const unsigned char *)buf + i * hiar_dtype_size(dtype));
}

Test(reduce, min_max_propagate_nan)
{
    static const hiar_dtype_t floats[] = {HIAR_FLOAT16, HIAR_BFLOAT16, HIAR_FLOAT32, HIAR_FLOAT64};
    static const hiar_op_t ops[] = {HIAR_MIN, HIAR_MAX};
    enum { NSRC = 3, COUNT = 5 };

    for (size_t d = 0; d < 4; d++)
        for (size_t o = 0; o < 2; o++) {
            double src[NSRC][COUNT * 8 / sizeof(double)];
            double dst[COUNT];
            const void *srcs[NSRC] = {src[0], src[1], src[2]};
            hiar_dtype_t dt = floats[d];
            /* Element k (k < NSRC) has a NaN in source k; element 3 in all; element 4 in none. */
            for (int s = 0; s < NSRC; s++)
                for (int i = 0; i < COUNT; i++)
                    put_float(dt, src[s], (size_t)i, (i == s || i == 3) ? NAN : (double)(s * 2 - i));
            hiar_reduce_host(dst, srcs, NSRC, COUNT, dt, ops[o], 0);
            for (int i = 0; i < 4; i++)
                cr_expect(isnan(get_float(dt, dst, (size_t)i)), "%s %s: element %d is %g, not NaN",
                          hiar_dtype_name(dt), hiar_op_name(ops[o]), i, get_float(dt, dst, (size_t)i));
            cr_expect_eq(get_float(dt, dst, 4), ops[o] == HIAR_MIN ? -4.0 : 0.0, "%s %s without NaN",
                         hiar_dtype_name(dt), hiar_op_name(ops[o]));
        }
}

Test(reduce, integers_wrap)
{
    struct {
        hiar_dtype_t dtype;
        hiar_op_t op;
        int64_t a, b, want;
    } cases[] = {
        {HIAR_INT32, HIAR_SUM, INT32_MAX, 1, INT32_MIN},
        {HIAR_INT32, HIAR_PROD, 65536, 65536, 0},
        {HIAR_INT32, HIAR_PROD, -65536, 32768, INT32_MIN},
        {HIAR_INT64, HIAR_SUM, INT64_MAX, 1, INT64_MIN},
        {HIAR_INT64, HIAR_PROD, INT64_C(1) << 32, INT64_C(1) << 32, 0},
        {HIAR_UINT8, HIAR_SUM, 200, 100, 44},
        {HIAR_UINT8, HIAR_PROD, 16, 17, 16},
        {HIAR_UINT8, HIAR_MIN, 200, 100, 100},
        {HIAR_UINT8, HIAR_MAX, 255, 1, 255},
        {HIAR_INT8, HIAR_SUM, 100, 100, -56},
        {HIAR_INT8, HIAR_SUM, -128, -1, 127},
        {HIAR_INT8, HIAR_PROD, 16, 16, 0},
        {HIAR_INT8, HIAR_MIN, -128, 127, -128},
        {HIAR_INT8, HIAR_MAX, -1, 1, 1},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        size_t esize = hiar_dtype_size(cases[k].dtype);
        unsigned char a[8], b[8], dst[8], want[8];
        const void *srcs[2] = {a, b};
        memcpy(a, &cases[k].a, esize); /* little-endian: the low bytes */
        memcpy(b, &cases[k].b, esize);
        memcpy(want, &cases[k].want, esize);
        hiar_reduce_host(dst, srcs, 2, 1, cases[k].dtype, cases[k].op, 0);
        cr_expect(memcmp(dst, want, esize) == 0, "%s %s of %lld and %lld: got %lld, expected %lld",
                  hiar_dtype_name(cases[k].dtype), hiar_op_name(cases[k].op), (long long)cases[k].a,
                  (long long)cases[k].b, (long long)load_int(cases[k].dtype, dst),
                  (long long)cases[k].want);
    }
}

Test(reduce, avg_divides_once)
{
    int32_t a[3] = {7, -7, 5}, b[3] = {-8, -1, 5}, c[3] = {2, 0, 6}, dst[3];
    const void *srcs[3] = {a, b, c};
    float fa[1] = {1}, fb[1] = {2}, fc[1] = {4}, fdst[1];
    const void *fsrcs[3] = {fa, fb, fc};

    /* Integers truncate toward zero: 1/3 -> 0, -8/3 -> -2 (not -3), 16/3 -> 5. */
    hiar_reduce_host(dst, srcs, 3, 3, HIAR_INT32, HIAR_AVG, 3);
    cr_expect(dst[0] == 0 && dst[1] == -2 && dst[2] == 5, "int32 avg: %d %d %d, expected 0 -2 5", dst[0],
              dst[1], dst[2]);
    hiar_reduce_host(fdst, fsrcs, 3, 1, HIAR_FLOAT32, HIAR_AVG, 3);
    cr_expect_eq(fdst[0], 7.0f / 3.0f, "float32 avg: %.9g", fdst[0]);
    /* Divisor 0 or 1: avg reduces as sum. */
    hiar_reduce_host(dst, srcs, 3, 3, HIAR_INT32, HIAR_AVG, 0);
    cr_expect(dst[0] == 1 && dst[1] == -8 && dst[2] == 16, "int32 avg, divisor 0: %d %d %d", dst[0],
              dst[1], dst[2]);
    hiar_reduce_host(fdst, fsrcs, 3, 1, HIAR_FLOAT32, HIAR_AVG, 1);
    cr_expect_eq(fdst[0], 7.0f);
    /* One source and a divisor: the last step of a hierarchical average. */
    hiar_reduce_host(dst, srcs, 1, 3, HIAR_INT32, HIAR_SUM, 2);
    cr_expect(dst[0] == 3 && dst[1] == -3 && dst[2] == 2, "int32 sum / 2: %d %d %d", dst[0], dst[1], dst[2]);
}

Test(reduce, half_types_round_once)
{
    /* float16: 2048 + 1 + 1 is 2050 when accumulated in f32 and rounded once,
     * but 2048 if each step were rounded to f16 (2049 ties to even 2048). */
    uint16_t a = float_to_f16(2048), b = float_to_f16(1), dst;
    const void *srcs[3] = {&a, &b, &b};

    hiar_reduce_host(&dst, srcs, 3, 1, HIAR_FLOAT16, HIAR_SUM, 0);
    cr_expect_eq(f16_to_float(dst), 2050.0f, "float16 2048+1+1 = %g", f16_to_float(dst));
    a = float_to_bf16(256);
    b = float_to_bf16(1);
    hiar_reduce_host(&dst, srcs, 3, 1, HIAR_BFLOAT16, HIAR_SUM, 0);
    cr_expect_eq(bf16_to_float(dst), 258.0f, "bfloat16 256+1+1 = %g", bf16_to_float(dst));
    /* Overflow rounds to Inf: 65504 + 16 = 65520 ties away to Inf in float16. */
    a = float_to_f16(65504);
    b = float_to_f16(16);
    hiar_reduce_host(&dst, srcs, 2, 1, HIAR_FLOAT16, HIAR_SUM, 0);
    cr_expect(isinf(f16_to_float(dst)), "float16 65504+16 = %g, expected Inf", f16_to_float(dst));
}

/* The float types, written out here (not from dtypes.def): the LL kernel's data-only packets are for these only. */
Test(reduce, dtype_floating)
{
    static const struct {
        hiar_dtype_t dtype;
        int floating;
    } want[] = {{HIAR_INT32, 0},   {HIAR_INT64, 0},   {HIAR_FLOAT16, 1}, {HIAR_BFLOAT16, 1},
                {HIAR_FLOAT32, 1}, {HIAR_FLOAT64, 1}, {HIAR_UINT8, 0},   {HIAR_INT8, 0}};

    cr_assert_eq(sizeof(want) / sizeof(want[0]), HIAR_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_expect_eq(hiar_dtype_floating(want[i].dtype), want[i].floating, "%s", hiar_dtype_name(want[i].dtype));
    cr_expect_eq(hiar_dtype_floating(HIAR_DTYPE_COUNT), 0);
    cr_expect_eq(hiar_dtype_floating((hiar_dtype_t)-1), 0);
}
