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

/* Unit k of row `row` of the residual (0 without one): loaded apart, so that a kernel can issue it early. */
template <int U>
__device__ __forceinline__ typename unit_bits<U>::type norm_old(const norm_row_args &nm, size_t row, size_t k)
{
    typename unit_bits<U>::type old = {};
    if (nm.residual)
        old = load_unit<U>(nm.residual + row * nm.row_bytes, k * U, nm.row_bytes, nm.esize);
    return old;
}

/*
 * Unit k of row `row`: s (the sum, as T) plus old (the residual's unit,
 * norm_old), rounded to T and written back to the residual (s as is without
 * one); returns the unit's sum of squares, in f32, and leaves r in s.
 */
template <typename T, int U>
__device__ __forceinline__ float norm_residual(const norm_row_args &nm, size_t row, size_t k,
                                               typename unit_bits<U>::type &s, const typename unit_bits<U>::type &old)
{
    unit_acc<T, U> acc;
    float sumsq = 0;

    acc.load(&s);
    if (nm.residual) {
        acc.fold(HIAR_SUM, &old);
        acc.store(&s, 1);
        store_unit<U>(nm.residual + row * nm.row_bytes, k * U, nm.row_bytes, nm.esize, s);
        acc.load(&s);
    }
#pragma unroll
    for (int i = 0; i < unit_acc<T, U>::N; i++)
        sumsq += (float)acc.v[i] * (float)acc.v[i];
    return sumsq;
}

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
 * The weights of unit k of a row, as loaded (W's bits, past hidden 0): one
 * or two vector loads where they are whole and aligned, not N element loads,
 * and half the registers of N floats for 2-byte weights (the fused LL kernel
 * keeps them across its wait, at its 64 registers).
 */
template <typename T, typename W, int U> struct norm_weights {
    enum { N = unit_acc<T, U>::N, BYTES = N * sizeof(W), VEC = BYTES < 16 ? BYTES : 16 };
    typedef typename unit_bits<VEC>::type vec;
    vec raw[BYTES / VEC];

    __device__ __forceinline__ void load(const norm_row_args &nm, size_t k)
    {
        const size_t first = k * U / sizeof(T);
        const W *w = reinterpret_cast<const W *>(nm.weight) + first;

        if (first + N <= nm.hidden && (uintptr_t)w % VEC == 0) {
#pragma unroll
            for (int j = 0; j < BYTES / VEC; j++)
                raw[j] = reinterpret_cast<const vec *>(w)[j];
            return;
        }
#pragma unroll
        for (int j = 0; j < BYTES / VEC; j++)
            raw[j] = vec{};
        W *e = reinterpret_cast<W *>(raw);
#pragma unroll
        for (int i = 0; i < N; i++)
            if (first + i < nm.hidden)
                e[i] = w[i];
    }
    /* r (as u) * scale * (w + offset): the normalised unit. */
    __device__ __forceinline__ typename unit_bits<U>::type apply(typename unit_bits<U>::type u, float scale,
                                                                 float offset) const
    {
        const W *e = reinterpret_cast<const W *>(raw);
        unit_acc<T, U> acc;
        acc.load(&u);
#pragma unroll
        for (int i = 0; i < N; i++)
            acc.v[i] = (float)acc.v[i] * scale * (to_acc<W>(e[i]) + offset);
        acc.store(&u, 1);
        return u;
    }
};

/* Unit k of a row, r (as u), normalised. */
template <typename T, typename W, int U>
__device__ __forceinline__ typename unit_bits<U>::type norm_unit(const norm_row_args &nm,
                                                                 typename unit_bits<U>::type u, size_t k, float scale)
{
    norm_weights<T, W, U> wk;
    wk.load(nm, k);
    return wk.apply(u, scale, nm.weight_offset);
}

/* Unit k of row `row`: r (from src, a row-major [rows x hidden] buffer) normalised into out. */
template <typename T, typename W, int U>
__device__ __forceinline__ void norm_store(const norm_row_args &nm, const char *src, char *out, size_t row, size_t k,
                                           float scale)
{
    const size_t off = row * nm.row_bytes;
    typename unit_bits<U>::type u = load_unit<U>(src + off, k * U, nm.row_bytes, nm.esize);

    store_unit<U>(out + off, k * U, nm.row_bytes, nm.esize, norm_unit<T, W, U>(nm, u, k, scale));
}

/*
 * The norm of rows already summed into x (in place), U = 16-byte units: the
 * unfused path's second kernel, also the benchmark's norm after NCCL.
 */
template <typename T, typename W>
__global__ void __launch_bounds__(HIAR_THREADS) norm_rows(norm_row_args nm, char *x, size_t rows)
{
    const size_t units = (nm.row_bytes + HIAR_UNIT - 1) / HIAR_UNIT;

    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const char *r = nm.residual ? nm.residual : x;
        float sumsq = 0, scale;
        for (size_t k = threadIdx.x; k < units; k += blockDim.x) {
            uint4 s = load_unit<HIAR_UNIT>(x + row * nm.row_bytes, k * HIAR_UNIT, nm.row_bytes, nm.esize);
            sumsq += norm_residual<T, HIAR_UNIT>(nm, row, k, s, norm_old<HIAR_UNIT>(nm, row, k));
        }
        scale = norm_scale(nm, norm_block_sum(sumsq));
        for (size_t k = threadIdx.x; k < units; k += blockDim.x)
            norm_store<T, W, HIAR_UNIT>(nm, r, x, row, k, scale);
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
