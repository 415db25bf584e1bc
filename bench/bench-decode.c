/*
 * --decode: the allreduce steps of tensor-parallel decode.  Per layer two
 * steps (after attention, after the MLP), each an allreduce of [tokens x
 * hidden] followed by residual add and RMSNorm, L layers captured in one
 * CUDA graph and replayed, as a serving engine replays its decode graph.
 * Columns: hiar_allreduce_rmsnorm (fused where hiar can: one kernel), hiar
 * allreduce then the norm kernel (bench-norm.cu), NCCL then the same kernel,
 * and hiar_allreduce alone (what the fused kernel cannot go below).
 * Each is checked once, eagerly, against a reference in double.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench-check.h"
#include "bench-decode.h"
#include "bench-mem.h"
#include "bench-norm.h"
#ifdef HIAR_HAVE_NCCL
#include "bench-nccl.h"
#endif

#define EPS 1e-6f

/* DEC_SUM: hiar_allreduce alone, the floor under both hiar columns (not checked: no norm). */
enum { DEC_FUSED, DEC_UNFUSED, DEC_NCCL, DEC_SUM, DEC_COUNT };
static const char *const dec_names[DEC_COUNT] = {"hiar fused", "hiar+norm", "nccl+norm", "hiar AR only"};

typedef struct {
    size_t tokens, hidden, n, bytes;
    void *in, *res, *w, *out;      /* device */
    char *res0;                    /* the residual's start, host */
} step_t;

/*
 * A value in [-2, 2) (weights [0.5, 1.5)) from its place, a multiple of 2^-6:
 * exact in every dtype, and every rank can make every rank's.
 */
static double value(int who, size_t i, int weight)
{
    uint64_t h = ((uint64_t)who << 40 ^ i) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    return weight ? 0.5 + (double)(h % 64) / 64.0 : -2.0 + (double)(h % 256) / 64.0;
}

/* Element i of a host buffer of dtype t, as a double. */
static double load(hiar_dtype_t t, const void *p, size_t i)
{
    return bench_load_real((const char *)p + i * hiar_dtype_size(t), t);
}

/* value()s into dev as the dtype (exact: multiples of 2^-6 below 2 in magnitude). */
static void fill(const bench_t *b, void *dev, size_t n, int who, int weight)
{
    char *h = malloc(n * b->esize);

    for (size_t i = 0; i < n; i++)
        bench_store_real(h + i * b->esize, b->opt.dtype, value(who, i, weight));
    bench_copy(b, dev, h, n * b->esize);
    free(h);
}

/* The largest error over the bound (8 ulp of the output, plus what rounding s and r may move it), 0: none. */
static double check(const bench_t *b, const step_t *s)
{
    hiar_dtype_t t = b->opt.dtype;
    double u = t == HIAR_FLOAT32 ? 0x1p-24 : t == HIAR_FLOAT16 ? 0x1p-11 : 0x1p-8, worst = 0;
    char *out = malloc(s->bytes), *w = malloc(s->hidden * b->esize);
    double *r = malloc(s->hidden * sizeof(double));

    bench_copy(b, out, s->out, s->bytes);
    bench_copy(b, w, s->w, s->hidden * b->esize);
    for (size_t row = 0; row < s->tokens; row++) {
        double sumsq = 0, scale;
        for (size_t j = 0; j < s->hidden; j++) {
            size_t i = row * s->hidden + j;
            r[j] = load(t, s->res0, i);
            for (int p = 0; p < b->nranks; p++)
                r[j] += value(p, i, 0);
            sumsq += r[j] * r[j];
        }
        scale = 1 / sqrt(sumsq / (double)s->hidden + EPS);
        for (size_t j = 0; j < s->hidden; j++) {
            double want = r[j] * scale * load(t, w, j), got = load(t, out, row * s->hidden + j);
            double bound = 8 * u * (fabs(want) + (b->nranks + 1) * 2 * scale * 1.5) + 64 * 0x1p-24 * fabs(want);
            double e = fabs(got - want) / bound;
            worst = e > worst || e != e ? e : worst;
        }
    }
    free(out);
    free(w);
    free(r);
    return worst;
}

/* One step of implementation `impl` on the stream. */
static int step(bench_t *b, int impl, const step_t *s)
{
    hiar_dtype_t t = b->opt.dtype;

    if (impl == DEC_FUSED)
        return hiar_allreduce_rmsnorm(s->in, s->res, s->w, s->out, s->tokens, s->hidden, t, t, EPS, 0, b->comm,
                                      b->stream) != HIAR_SUCCESS;
    if ((impl == DEC_UNFUSED || impl == DEC_SUM) &&
        hiar_allreduce(s->in, s->out, s->n, t, HIAR_SUM, b->comm, b->stream) != HIAR_SUCCESS)
        return 1;
    if (impl == DEC_SUM)
        return 0;
#ifdef HIAR_HAVE_NCCL
    if (impl == DEC_NCCL && ncclAllReduce(s->in, s->out, s->n, bench_nccl_type(t), ncclSum, b->nccl, b->stream) !=
                                ncclSuccess)
        return 1;
#endif
    return bench_norm(s->out, s->res, s->w, s->tokens, s->hidden, t, EPS, b->stream) != 0;
}

/* Microseconds per step, max over ranks, of a graph of 2 x layers steps; -1: failed (on any rank). */
static double time_graph(bench_t *b, int impl, const step_t *s)
{
    int steps = 2 * b->opt.layers, failed = 0;
    cudaGraph_t g;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t t0, t1;
    float ms = 0;
    double us;

    CUDA_DIE(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < steps && !failed; i++)
        failed = step(b, impl, s);
    CUDA_DIE(cudaStreamEndCapture(b->stream, &g));
    if (!failed)
        failed = cudaGraphInstantiate(&ge, g, 0) != cudaSuccess;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!failed) {
        CUDA_DIE(cudaEventCreate(&t0));
        CUDA_DIE(cudaEventCreate(&t1));
        for (int i = 0; i < b->opt.warmup; i++)
            CUDA_DIE(cudaGraphLaunch(ge, b->stream));
        CUDA_DIE(cudaStreamSynchronize(b->stream));
        MPI_Barrier(MPI_COMM_WORLD);
        CUDA_DIE(cudaEventRecord(t0, b->stream));
        for (int i = 0; i < b->opt.iters; i++)
            CUDA_DIE(cudaGraphLaunch(ge, b->stream));
        CUDA_DIE(cudaEventRecord(t1, b->stream));
        CUDA_DIE(cudaEventSynchronize(t1));
        CUDA_DIE(cudaEventElapsedTime(&ms, t0, t1));
        cudaEventDestroy(t0);
        cudaEventDestroy(t1);
        CUDA_DIE(cudaGraphExecDestroy(ge));
    }
    CUDA_DIE(cudaGraphDestroy(g));
    us = failed ? -1 : ms * 1000.0 / (b->opt.iters * (double)steps);
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return failed ? -1 : us;
}

/* One eager step from the start residual, checked (worst error over the bound, max over ranks); -1: failed. */
static double run_checked(bench_t *b, int impl, const step_t *s)
{
    double worst;
    int failed;

    bench_copy(b, s->res, s->res0, s->bytes);
    failed = step(b, impl, s);
    bench_stream_sync(b);
    worst = failed ? -1 : check(b, s);
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return failed ? -1 : worst;
}

static void shape(bench_t *b, size_t tokens, size_t hidden, int *bad)
{
    step_t s = {tokens, hidden, tokens * hidden, tokens * hidden * b->esize, NULL, NULL, NULL, NULL, NULL};
    double us[DEC_COUNT], worst = 0;
    int run[DEC_COUNT] = {has(b, IMPL_HIAR), has(b, IMPL_HIAR), has(b, IMPL_NCCL), has(b, IMPL_HIAR)};

#ifdef HIAR_HAVE_NCCL
    run[DEC_NCCL] = run[DEC_NCCL] && b->nccl; /* NULL where ranks share a GPU (bench-nccl.h): n/a */
#endif

    s.in = bench_alloc(b, s.bytes, 0);
    s.res = bench_alloc(b, s.bytes, 0);
    s.out = bench_alloc(b, s.bytes, 0);
    s.w = bench_alloc(b, hidden * b->esize, 0);
    s.res0 = malloc(s.bytes);
    fill(b, s.in, s.n, b->rank, 0);
    fill(b, s.res, s.n, 1000, 0);
    fill(b, s.w, hidden, 2000, 1);
    bench_copy(b, s.res0, s.res, s.bytes);
    for (int i = 0; i < DEC_COUNT; i++) {
        double e = run[i] && i != DEC_SUM ? run_checked(b, i, &s) : 0;
        us[i] = run[i] && e >= 0 ? time_graph(b, i, &s) : -1;
        *bad |= run[i] && (e < 0 || !(e <= 1) || us[i] < 0);
        worst = e > worst ? e : worst;
    }
    if (b->rank == 0) {
        double ratio[3] = {us[1] > 0 && us[0] > 0 ? us[0] / us[1] : -1, us[2] > 0 && us[0] > 0 ? us[0] / us[2] : -1,
                           us[0] > 0 ? (double)tokens * 1e6 / (2.0 * b->opt.layers * us[0]) : -1};
        static const char *const ratio_fmt[3] = {" %9.2f", " %10.2f", " %12.0f"};
        static const int ratio_width[3] = {9, 10, 12};
        printf("%8zu %7zu", tokens, hidden);
        for (int i = 0; i < DEC_COUNT; i++)
            us[i] > 0 ? printf(" %12.2f", us[i]) : printf(" %12s", "n/a");
        for (int i = 0; i < 3; i++)
            ratio[i] > 0 ? printf(ratio_fmt[i], ratio[i]) : printf(" %*s", ratio_width[i], "n/a");
        printf("  %s (%.2f)\n", worst <= 1 ? "ok" : "WRONG", worst);
    }
    bench_release(b, s.in, 0);
    bench_release(b, s.res, 0);
    bench_release(b, s.out, 0);
    bench_release(b, s.w, 0);
    free(s.res0);
}

int bench_decode(bench_t *b)
{
    int bad = 0;

    if (b->rank == 0) {
        printf("# decode: %d ranks, %s activations and weights, %d layers x 2 steps (allreduce + residual add + "
               "RMSNorm) per CUDA graph, %d replays; us per step (max over ranks)\n",
               b->nranks, hiar_dtype_name(b->opt.dtype), b->opt.layers, b->opt.iters);
        printf("# tok/s: tokens per second if the steps were all of a decode step; check: largest error over the "
               "bound (<= 1)\n");
        printf("%8s %7s %12s %12s %12s %12s %9s %10s %12s  %s\n", "tokens", "hidden", dec_names[0], dec_names[1],
               dec_names[2], dec_names[3], "fused/unf", "fused/nccl", "fused tok/s", "check");
    }
    for (int h = 0; h < b->opt.nhidden; h++)
        for (int t = 0; t < b->opt.ntokens; t++)
            shape(b, b->opt.tokens[t], b->opt.hidden[h], &bad);
    return bad;
}
