/*
 * hiar_allreduce_rmsnorm checked against a reference computed here in double
 * from the inputs (regenerated on every rank from a formula, never read back
 * from hiar): every activation x weight dtype pair, with and without a
 * residual, the plain and the Gemma form, in place and not, element offsets,
 * shapes from one token to past the one-shot limit (device buffers: the
 * rows kernel, with rows that do not divide evenly among the ranks and
 * fewer rows than ranks) and hidden sizes that are and are not whole
 * 16-byte rows.  Then bad arguments, each of which
 * must fail with HIAR_INVALID_ARGUMENT and a message, the comm still usable.
 *
 *   test_rmsnorm [--device] [--graph] [--rounds=N]
 *
 * --device: buffers from cudaMalloc, calls on a stream of this test's (CUDA
 * builds); --graph: each call captured in a CUDA graph and replayed (device
 * buffers on one group only: other paths refuse capture); --rounds=N: run
 * the shapes N times over with other inputs (back-to-back calls).
 *
 * Tolerance, per element, u the dtype's unit roundoff (2^-24, 2^-11, 2^-8):
 * residual |got - ref| <= 4u (|residual| + sum |x_r|); out |got - ref| <=
 * 8u (|ref| + (|residual| + sum |x_r|) * scale * |w|) + 64 2^-24 |ref|,
 * where the second term is what the roundings of s and r (relative to the
 * operands) may move the normalised value, and the third the f32 sum of
 * squares (a tree on the GPU: a few dozen additions deep).  Every rank must get the same bits.  Rank 0
 * ends with "np=N: P passed, F failed (largest error x of the bound)".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hiar.h"
#include "reference.h"
#ifdef HIAR_TEST_CUDA
#include "../gpu/cuda_ok.h"
#endif

static int rank, nranks, device, graph, failed, passed;
static double worst; /* largest error over its bound */

static const hiar_dtype_t types[] = {HIAR_FLOAT32, HIAR_FLOAT16, HIAR_BFLOAT16};
static const struct {
    size_t tokens, hidden;
} shapes[] = {{1, 8},      {1, 4096},  {3, 33},     {4, 8192},     {16, 4096}, {17, 200},
               {5, 1},      {64, 1024}, {200, 4096}, {301, 1001},   {2, 70001},
               {1, 262144}, /* 512 KB of bf16: LL on 2 ranks, one row traded over 64 blocks */
               {32, 8192}}; /* 512 KB of bf16: LL past the budget on 4 ranks (a fused norm) */

static double unit_roundoff(hiar_dtype_t t)
{
    return t == HIAR_FLOAT32 ? 0x1p-24 : t == HIAR_FLOAT16 ? 0x1p-11 : 0x1p-8;
}

/* A value in [-2, 2) (weights: [0.5, 1.5), Gemma: [-0.5, 0.5)) from a hash of its place. */
static double value(unsigned seed, int who, size_t i, double lo)
{
    uint64_t h = (uint64_t)seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)who << 40) ^ i;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return lo + (double)(h % 4096) / 4096.0 * (lo < -1 ? 4.0 : 1.0);
}

typedef struct {
    hiar_dtype_t dt, wt;
    size_t tokens, hidden;
    int residual, gemma, inplace, offset;
    unsigned seed;
} kase_t;

static void fill(hiar_dtype_t t, void *buf, size_t n, unsigned seed, int who, double lo)
{
    for (size_t i = 0; i < n; i++)
        ref_store(t, buf, i, value(seed, who, i, lo));
}

#ifdef HIAR_TEST_CUDA
static cudaStream_t stream;

/*
 * A device copy of host's bytes, `pad` bytes into a fresh allocation (free
 * with dev_free), on the test's stream: a cudaMemcpy from pageable memory
 * may return before its DMA lands, and a non-blocking stream does not wait
 * for it (a kernel then read stale weights).
 */
static char *dev_copy(const void *host, size_t bytes, size_t pad)
{
    char *d;
    CUDA_OK(cudaMalloc((void **)&d, bytes + pad));
    CUDA_OK(cudaMemcpyAsync(d + pad, host, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    return d + pad;
}

static void dev_free(char *d, size_t pad)
{
    CUDA_OK(cudaFree(d - pad));
}
#endif

/* The call on host copies or device copies of the buffers; results copied back into the host ones. */
static hiar_result_t call(const kase_t *k, hiar_comm_t *comm, void *in, void *res, const void *w, void *out)
{
    unsigned flags = k->gemma ? HIAR_RMSNORM_GEMMA : 0;
    size_t bytes = k->tokens * k->hidden * hiar_dtype_size(k->dt);
    if (!device)
        return hiar_allreduce_rmsnorm(in, k->residual ? res : NULL, w, k->inplace ? in : out, k->tokens, k->hidden,
                                      k->dt, k->wt, 1e-6f, flags, comm, NULL);
#ifdef HIAR_TEST_CUDA
    hiar_result_t rc;
    size_t pad = k->offset * hiar_dtype_size(k->dt);
    char *din = dev_copy(in, bytes, pad), *dres = dev_copy(res, bytes, pad), *dout = dev_copy(out, bytes, pad);
    char *dw = dev_copy(w, k->hidden * hiar_dtype_size(k->wt), k->offset * hiar_dtype_size(k->wt));
    char *o = k->inplace ? din : dout;
    if (graph) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        rc = hiar_allreduce_rmsnorm(din, k->residual ? dres : NULL, dw, o, k->tokens, k->hidden, k->dt, k->wt, 1e-6f,
                                    flags, comm, stream);
        CUDA_OK(cudaStreamEndCapture(stream, &g));
        if (rc == HIAR_SUCCESS) {
            CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
            CUDA_OK(cudaGraphLaunch(ge, stream));
            CUDA_OK(cudaGraphExecDestroy(ge));
        }
        CUDA_OK(cudaGraphDestroy(g));
    } else {
        rc = hiar_allreduce_rmsnorm(din, k->residual ? dres : NULL, dw, o, k->tokens, k->hidden, k->dt, k->wt, 1e-6f,
                                    flags, comm, stream);
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(out, o, bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(res, dres, bytes, cudaMemcpyDeviceToHost));
    if (k->inplace)
        memcpy(in, out, bytes);
    dev_free(din, pad);
    dev_free(dres, pad);
    dev_free(dout, pad);
    dev_free(dw, k->offset * hiar_dtype_size(k->wt));
    return rc;
#else
    (void)bytes;
    return HIAR_UNSUPPORTED;
#endif
}

static void report(const kase_t *k, const char *what, size_t i, double got, double want, double bound)
{
    if (failed++ < 10)
        fprintf(stderr,
                "rank %d: %s x %s tokens %zu hidden %zu residual %d gemma %d inplace %d offset %d: %s[%zu] = %.9g, "
                "expected %.9g (bound %.3g)\n",
                rank, hiar_dtype_name(k->dt), hiar_dtype_name(k->wt), k->tokens, k->hidden, k->residual, k->gemma,
                k->inplace, k->offset, what, i, got, want, bound);
}

/* Element-wise against the double reference, row by row. */
static int check(const kase_t *k, const void *res0, const void *w, const void *res, const void *out)
{
    double u = unit_roundoff(k->dt), off = k->gemma ? 1 : 0;
    int ok = 1;

    for (size_t t = 0; t < k->tokens; t++) {
        double sumsq = 0, scale, *r = malloc(k->hidden * sizeof(double)), *mag = malloc(k->hidden * sizeof(double));
        for (size_t j = 0; j < k->hidden; j++) {
            size_t i = t * k->hidden + j;
            double s = 0, abs_s = 0;
            for (int p = 0; p < nranks; p++) {
                double x = ref_round(k->dt, value(k->seed, p, i, -2));
                s += x;
                abs_s += fabs(x);
            }
            r[j] = s + (k->residual ? ref_load(k->dt, res0, i) : 0);
            mag[j] = abs_s + (k->residual ? fabs(ref_load(k->dt, res0, i)) : 0);
            sumsq += r[j] * r[j];
            if (k->residual && fabs(ref_load(k->dt, res, i) - r[j]) > 4 * u * mag[j]) {
                report(k, "residual", i, ref_load(k->dt, res, i), r[j], 4 * u * mag[j]);
                ok = 0;
            }
        }
        scale = 1 / sqrt(sumsq / (double)k->hidden + 1e-6);
        for (size_t j = 0; j < k->hidden; j++) {
            size_t i = t * k->hidden + j;
            double wj = ref_load(k->wt, w, j) + off, want = r[j] * scale * wj, got = ref_load(k->dt, out, i);
            double bound = 8 * u * (fabs(want) + mag[j] * scale * fabs(wj)) + 64 * 0x1p-24 * fabs(want) + 1e-30;
            double err = fabs(got - want);
            worst = err / bound > worst ? err / bound : worst;
            if (!(err <= bound)) {
                report(k, "out", i, got, want, bound);
                ok = 0;
            }
        }
        free(r);
        free(mag);
    }
    return ok;
}

/* Rank 0's bytes against everyone's. */
static int same_bits(const void *buf, size_t bytes)
{
    char *mine = malloc(bytes), *root = malloc(bytes);
    int same, all;

    memcpy(mine, buf, bytes);
    memcpy(root, buf, bytes);
    MPI_Bcast(root, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    same = memcmp(mine, root, bytes) == 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    free(mine);
    free(root);
    return all;
}

static void run_case(const kase_t *k, hiar_comm_t *comm)
{
    size_t n = k->tokens * k->hidden, esize = hiar_dtype_size(k->dt), bytes = n * esize, pad = k->offset * esize;
    char *in = malloc(bytes + pad), *res = malloc(bytes + pad), *out = malloc(bytes + pad), *res0 = malloc(bytes);
    size_t wpad = k->offset * hiar_dtype_size(k->wt);
    char *w = malloc(k->hidden * hiar_dtype_size(k->wt) + wpad);
    hiar_result_t rc;
    int ok;

    fill(k->dt, in + pad, n, k->seed, rank, -2);
    fill(k->dt, res + pad, n, k->seed, 100, -2);
    fill(k->wt, w + wpad, k->hidden, k->seed, 200, k->gemma ? -0.5 : 0.5);
    memset(out + pad, 0x7f, bytes);
    memcpy(res0, res + pad, bytes);
    rc = call(k, comm, in + pad, res + pad, w + wpad, out + pad);
    ok = rc == HIAR_SUCCESS;
    if (!ok && failed++ < 10)
        fprintf(stderr, "rank %d: %s x %s tokens %zu hidden %zu: %s: %s\n", rank, hiar_dtype_name(k->dt),
                hiar_dtype_name(k->wt), k->tokens, k->hidden, hiar_strerror(rc), hiar_last_error());
    ok = ok && check(k, res0, w + wpad, res + pad, k->inplace ? in + pad : out + pad);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (ok && !(same_bits(k->inplace ? in + pad : out + pad, bytes) && same_bits(res + pad, bytes))) {
        if (rank == 0 && failed++ < 10)
            fprintf(stderr, "%s x %s tokens %zu hidden %zu: ranks got different bits\n", hiar_dtype_name(k->dt),
                    hiar_dtype_name(k->wt), k->tokens, k->hidden);
        ok = 0;
    }
    passed += ok;
    free(in);
    free(res);
    free(out);
    free(res0);
    free(w);
}

/* Bad arguments: HIAR_INVALID_ARGUMENT with a message on every rank, nothing written. */
static void bad_inputs(hiar_comm_t *comm)
{
    float x[16] = {0}, r[16] = {0}, w[16] = {0}, o[16];
    const struct {
        const char *what;
        const void *in;
        void *res;
        const void *w;
        void *out;
        size_t tokens, hidden;
        hiar_dtype_t dt, wt;
        float eps;
        unsigned flags;
    } bad[] = {
        {"hidden 0", x, r, w, o, 2, 0, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"NULL weight", x, r, NULL, o, 2, 8, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"int32 activations", x, r, w, o, 2, 8, HIAR_INT32, HIAR_FLOAT32, 1e-6f, 0},
        {"float64 weights", x, r, w, o, 2, 8, HIAR_FLOAT32, HIAR_FLOAT64, 1e-6f, 0},
        {"misaligned input", (char *)x + 1, r, w, o, 1, 4, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"misaligned weight", x, r, (char *)w + 2, o, 1, 4, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"tokens x hidden overflows", x, r, w, o, SIZE_MAX / 2, 4, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"residual overlaps out", x, o + 2, w, o, 1, 8, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"weight overlaps out", x, r, o + 4, o, 1, 8, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0},
        {"eps NaN", x, r, w, o, 1, 8, HIAR_FLOAT32, HIAR_FLOAT32, NAN, 0},
        {"unknown flag", x, r, w, o, 1, 8, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0x10},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hiar_result_t rc = hiar_allreduce_rmsnorm(bad[i].in, bad[i].res, bad[i].w, bad[i].out, bad[i].tokens,
                                                  bad[i].hidden, bad[i].dt, bad[i].wt, bad[i].eps, bad[i].flags,
                                                  comm, NULL);
        if (rc != HIAR_INVALID_ARGUMENT || !strstr(hiar_last_error(), "hiar_allreduce_rmsnorm")) {
            if (failed++ < 10)
                fprintf(stderr, "rank %d: %s: got %s (%s), expected HIAR_INVALID_ARGUMENT\n", rank, bad[i].what,
                        hiar_strerror(rc), hiar_last_error());
        } else {
            passed++;
        }
        if (rank == 0 && i == 0)
            printf("bad input message, e.g.: %s\n", hiar_last_error());
    }
}

#ifdef HIAR_TEST_CUDA
/* Device activations with host weights (or residual): refused, the comm still usable. */
static void bad_kinds(hiar_comm_t *comm)
{
    float hw[8] = {1, 1, 1, 1, 1, 1, 1, 1}, hr[8] = {0};
    char *x = dev_copy(hw, sizeof(hw), 0), *w = dev_copy(hw, sizeof(hw), 0);

    for (int i = 0; i < 2; i++) {
        hiar_result_t rc = hiar_allreduce_rmsnorm(x, i ? hr : NULL, i ? (const void *)w : hw, x, 1, 8, HIAR_FLOAT32,
                                                  HIAR_FLOAT32, 1e-6f, 0, comm, stream);
        if (rc != HIAR_INVALID_ARGUMENT || !strstr(hiar_last_error(), i ? "residual" : "weight")) {
            if (failed++ < 10)
                fprintf(stderr, "rank %d: host %s with device input: got %s (%s), expected HIAR_INVALID_ARGUMENT\n",
                        rank, i ? "residual" : "weight", hiar_strerror(rc), hiar_last_error());
        } else {
            passed++;
        }
    }
    dev_free(x, 0);
    dev_free(w, 0);
}
#endif

int main(int argc, char **argv)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm;
    int rounds = 1, total_failed;

    int mpi_thread_level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0)
            device = 1;
        else if (strcmp(argv[i], "--graph") == 0)
            device = graph = 1;
        else if (strncmp(argv[i], "--rounds=", 9) == 0)
            rounds = atoi(argv[i] + 9);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: %s [--device] [--graph] [--rounds=N]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
#ifdef HIAR_TEST_CUDA
    if (device) {
        int ndev = 0;
        CUDA_OK(cudaGetDeviceCount(&ndev));
        CUDA_OK(cudaSetDevice(rank % ndev));
        CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
#else
    if (device) {
        if (rank == 0)
            printf("SKIP: --device needs a CUDA build\n");
        MPI_Finalize();
        return 77;
    }
#endif
    cfg.settings = "HIAR_TIMEOUT_MS=100000";
    if (hiar_comm_create(MPI_COMM_WORLD, &cfg, &comm) != HIAR_SUCCESS) {
        fprintf(stderr, "rank %d: hiar_comm_create: %s\n", rank, hiar_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int round = 0; round < rounds; round++)
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
            for (int d = 0; d < 3; d++)
                for (int wd = 0; wd < 3; wd++) {
                    /* Every flag combination over the shapes and pairs, not all of them for each. */
                    unsigned v = (unsigned)(s * 9 + d * 3 + wd + round * 5);
                    kase_t k = {types[d], types[wd], shapes[s].tokens, shapes[s].hidden, v & 1, (v >> 1) & 1,
                                (v >> 2) & 1, (v >> 3) & 1, 1 + v + 977 * (unsigned)round};
                    run_case(&k, comm);
                }
    if (!device)
        bad_inputs(comm);
#ifdef HIAR_TEST_CUDA
    else
        bad_kinds(comm);
#endif
    hiar_comm_destroy(comm);
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&failed, &total_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d%s: %d passed, %d failed (largest error %.3f of the bound)\n", nranks,
               graph ? " graph" : device ? " device" : "", passed, total_failed, worst);
    MPI_Finalize();
    return total_failed ? 1 : 0;
}
