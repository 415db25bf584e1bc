/*
 * Rows of the RMSNorm (base/call.h says what it computes): the residual add
 * and the sum of squares of a unit, one block's sum over a row, and the
 * normalised unit.  One block takes a row at a time; a row is cut in units
 * of U bytes (load_unit: vectors where aligned and whole, elements in the
 * tail), every unit of a row reduced in the same order on every rank.
 */
#ifndef HIAR_NORM_CUH
#define HIAR_NORM_CUH

#include "device.cuh"

struct norm_row_args {
    char *residual;     /* NULL: none */
    const char *weight; /* hidden elements of W */
    size_t hidden, row_bytes;
    int esize;
    float eps, weight_offset;
};

/* A type as a value, to dispatch on the norm's dtypes (f32, f16, bf16) only. */
template <typename F> static cudaError_t norm_dispatch(hiar_dtype_t dtype, F f)
{
    switch (dtype) {
    case HIAR_FLOAT32: return f(float());
    case HIAR_FLOAT16: return f(__half());
    case HIAR_BFLOAT16: return f(__nv_bfloat16());
    default: return cudaErrorInvalidValue;
    }
}

/*
 * Unit k of row `row` in registers: the residual's unit and the weights
 * (plus the offset), loaded ahead of the sum (the fused kernel loads them
 * before it waits for its peers), then r.
 */
template <typename T, typename W, int U> struct norm_unit {
    enum { N = U / sizeof(T) };
    typedef typename unit_bits<U>::type bits;
    bits res, r;
    float w[N];

    __device__ __forceinline__ void load_weights(const norm_row_args &nm, size_t k)
    {
        const W *wp = reinterpret_cast<const W *>(nm.weight);
        const size_t first = k * U / sizeof(T);
#pragma unroll
        for (int i = 0; i < N; i++)
            w[i] = first + i < nm.hidden ? to_acc<W>(wp[first + i]) + nm.weight_offset : 0.0f;
    }
    __device__ __forceinline__ void load(const norm_row_args &nm, size_t row, size_t k)
    {
        if (nm.residual)
            res = load_unit<U>(nm.residual + row * nm.row_bytes, k * U, nm.row_bytes, nm.esize);
        load_weights(nm, k);
    }
    /* r = s + the residual's unit, rounded to T and written back (s as is without one); r's sum of squares. */
    __device__ __forceinline__ float add(const norm_row_args &nm, size_t row, size_t k, const bits &s)
    {
        unit_acc<T, U> acc;
        float sumsq = 0;

        acc.load(&s);
        r = s;
        if (nm.residual) {
            acc.fold(HIAR_SUM, &res);
            acc.store(&r, 1);
            store_unit<U>(nm.residual + row * nm.row_bytes, k * U, nm.row_bytes, nm.esize, r);
            acc.load(&r);
        }
#pragma unroll
        for (int i = 0; i < N; i++)
            sumsq += (float)acc.v[i] * (float)acc.v[i];
        return sumsq;
    }
    /* For a unit not kept in registers: r back from src (the residual, or the sums), and the weights. */
    __device__ __forceinline__ void reload(const norm_row_args &nm, const char *src, size_t row, size_t k)
    {
        r = load_unit<U>(src + row * nm.row_bytes, k * U, nm.row_bytes, nm.esize);
        load_weights(nm, k);
    }
    /* out = r * scale * w, rounded to T. */
    __device__ __forceinline__ void store(const norm_row_args &nm, char *out, size_t row, size_t k, float scale) const
    {
        unit_acc<T, U> acc;
        bits u;

        acc.load(&r);
#pragma unroll
        for (int i = 0; i < N; i++)
            acc.v[i] = (float)acc.v[i] * scale * w[i];
        acc.store(&u, 1);
        store_unit<U>(out + row * nm.row_bytes, k * U, nm.row_bytes, nm.esize, u);
    }
};

/* The sum of v over the block, on every thread, in a fixed order (the same bits on every rank). */
__device__ __forceinline__ float norm_block_sum(float v)
{
    __shared__ float warps[HIAR_THREADS / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;

    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0)
        warps[warp] = v;
    __syncthreads();
    v = 0;
    for (int w = 0; w < nwarps; w++)
        v += warps[w];
    __syncthreads(); /* warps[] is free again for the next row */
    return v;
}

/* 1 / rms of a row: IEEE sqrt and division, as the host loop (base/norm.c). */
__device__ __forceinline__ float norm_scale(const norm_row_args &nm, float sumsq)
{
    return 1.0f / sqrtf(sumsq / (float)nm.hidden + nm.eps);
}

/*
 * The norm of rows already summed into x (in place), U = 16-byte units: the
 * unfused path's second kernel, also the benchmark's norm after NCCL.  A
 * thread's first unit of a row stays in registers; others are read again.
 */
template <typename T, typename W>
__global__ void __launch_bounds__(HIAR_THREADS) norm_rows(norm_row_args nm, char *x, size_t rows)
{
    const size_t units = (nm.row_bytes + HIAR_UNIT - 1) / HIAR_UNIT, k0 = threadIdx.x;

    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const char *src = nm.residual ? nm.residual : x;
        norm_unit<T, W, HIAR_UNIT> first, u;
        float sumsq = 0, scale;
        if (k0 < units)
            first.load(nm, row, k0);
        for (size_t k = k0; k < units; k += blockDim.x) {
            uint4 s = load_unit<HIAR_UNIT>(x + row * nm.row_bytes, k * HIAR_UNIT, nm.row_bytes, nm.esize);
            if (k == k0) {
                sumsq += first.add(nm, row, k, s);
            } else {
                u.load(nm, row, k);
                sumsq += u.add(nm, row, k, s);
            }
        }
        scale = norm_scale(nm, norm_block_sum(sumsq));
        if (k0 < units)
            first.store(nm, x, row, k0, scale);
        for (size_t k = k0 + blockDim.x; k < units; k += blockDim.x) {
            u.reload(nm, src, row, k);
            u.store(nm, x, row, k, scale);
        }
    }
}

/* Threads of a block for a row of `units`: whole warps, at most HIAR_THREADS. */
static inline unsigned norm_threads(size_t units)
{
    size_t t = (units + 31) / 32 * 32;
    return (unsigned)(t < HIAR_THREADS ? t : HIAR_THREADS);
}

/* Blocks of norm_rows: one per row, up to this many (then rows in turn). */
#define NORM_ROWS_BLOCKS (1u << 20)

/* norm_rows on stream: the unfused path's norm (and the benchmark's). */
template <typename T, typename W>
static cudaError_t norm_rows_launch(const norm_row_args &nm, char *x, size_t rows, cudaStream_t stream)
{
    unsigned blocks = (unsigned)(rows < NORM_ROWS_BLOCKS ? rows : NORM_ROWS_BLOCKS);

    norm_rows<T, W><<<blocks, norm_threads((nm.row_bytes + HIAR_UNIT - 1) / HIAR_UNIT), 0, stream>>>(nm, x, rows);
    return cudaGetLastError();
}

#endif
