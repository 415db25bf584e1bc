/*
 * GPU tests of hiar_allreduce on device buffers (run under mpirun on a GPU
 * machine; exits 77 = skip without a GPU).
 *
 * Inputs are small integers so every result is exact in every dtype and can
 * be compared with a reference computed here in double from the same formula
 * (never from hiar's output).  Memory-ordering bugs only show under load, so
 * besides the case matrix there are thousands of back-to-back calls with
 * changing inputs, and replays of a captured CUDA graph.  The same cases
 * run again on registered memory (hiar_mem_alloc), where the two-shot kernel
 * writes into the peers' outputs directly.
 *
 * Options, in any order: --quick (fewer back-to-back calls), --replays N
 * (only captured calls, replayed N times), --stream (the cases' calls on a
 * non-blocking stream of the test's instead of the legacy default stream:
 * the matrix, the edge values and the back-to-back stress), --verbose (every
 * passed case named), --kill (tests/gpu/kill.sh).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "hiar.h"
#include "cuda_ok.h"

static int rank, nranks, passed, failed;
/* Replays of each captured graph (--replays N). */
static int replays = 50;
/* Device buffers of the cases come from hiar_mem_alloc (collective) instead of cudaMalloc. */
static int registered;
/* The calls' stream: the legacy default stream, or with --stream a non-blocking one of the test's. */
static cudaStream_t calls_stream;
/* --verbose: rank 0 names every case that passed too (a stalled case is then the one after the last). */
static int verbose;
/* Every rank alone on 5 or 7 (simulated) hosts (every_rank_alone_staged), or the step between groups over MPI
 * with HIAR_PROGRESS=0 in the environment or MPI below MPI_THREAD_MULTIPLE: device calls go through staged
 * MPI, and a graph's capture must be refused. */
static int graphs_refused;

static void capture_refused(hiar_comm_t *comm);

/* Waits for the calls (and, on the legacy stream, everything else of this rank). */
static void calls_sync(void)
{
    if (calls_stream)
        CUDA_OK(cudaStreamSynchronize(calls_stream));
    else
        CUDA_OK(cudaDeviceSynchronize());
}

/* Before a call on --stream's stream: the test's synchronous copies are done (they are the legacy stream's). */
static void calls_prepare(void)
{
    if (calls_stream)
        CUDA_OK(cudaDeviceSynchronize());
}

static void dev_alloc(hiar_comm_t *comm, void *p, size_t bytes)
{
    hiar_result_t rc;

    if (!registered) {
        CUDA_OK(cudaMalloc((void **)p, bytes));
        return;
    }
    if ((rc = hiar_mem_alloc(comm, bytes, (void **)p)) != HIAR_SUCCESS) {
        fprintf(stderr, "rank %d: hiar_mem_alloc: %s: %s\n", rank, hiar_strerror(rc), hiar_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void dev_free(hiar_comm_t *comm, void *p)
{
    if (!registered) {
        cudaFree(p);
        return;
    }
    if (hiar_mem_free(comm, p) != HIAR_SUCCESS) {
        fprintf(stderr, "rank %d: hiar_mem_free: %s\n", rank, hiar_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* ---- dtype codecs (independent of the library) ---- */

static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void encode(hiar_dtype_t t, void *p, size_t i, double v)
{
    switch (t) {
    case HIAR_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case HIAR_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case HIAR_FLOAT16: ((_Float16 *)p)[i] = (_Float16)v; break;
    case HIAR_BFLOAT16: ((uint16_t *)p)[i] = to_bf16(v); break;
    case HIAR_FLOAT32: ((float *)p)[i] = (float)v; break;
    case HIAR_FLOAT64: ((double *)p)[i] = v; break;
    case HIAR_UINT8: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break;
    default: ((int8_t *)p)[i] = (int8_t)(int64_t)v; break;
    }
}

static double decode(hiar_dtype_t t, const void *p, size_t i)
{
    switch (t) {
    case HIAR_INT32: return ((const int32_t *)p)[i];
    case HIAR_INT64: return (double)((const int64_t *)p)[i];
    case HIAR_FLOAT16: return ((const _Float16 *)p)[i];
    case HIAR_BFLOAT16: return from_bf16(((const uint16_t *)p)[i]);
    case HIAR_FLOAT32: return ((const float *)p)[i];
    case HIAR_FLOAT64: return ((const double *)p)[i];
    case HIAR_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const int8_t *)p)[i];
    }
}

static int is_float(hiar_dtype_t t)
{
    return t == HIAR_FLOAT16 || t == HIAR_BFLOAT16 || t == HIAR_FLOAT32 || t == HIAR_FLOAT64;
}

/* Input of rank r, element i, variant k: small, so results are exact. */
static double input(hiar_op_t op, int r, size_t i, int k)
{
    if (op == HIAR_PROD)
        return (r + i + (size_t)k) % 5 == 0 ? 2 : 1;
    if (op == HIAR_MIN || op == HIAR_MAX)
        return (double)((r * 7 + i * 3 + (size_t)k) % 11);
    return (double)((r + i + (size_t)k) % 4);
}

/* The expected element, in the dtype's own wrap-around and rounding. */
static double expected(hiar_dtype_t t, hiar_op_t op, size_t i, int k)
{
    double acc = input(op, 0, i, k);
    unsigned char cell[8];

    for (int r = 1; r < nranks; r++) {
        double v = input(op, r, i, k);
        acc = op == HIAR_PROD ? acc * v : op == HIAR_MIN ? fmin(acc, v) : op == HIAR_MAX ? fmax(acc, v) : acc + v;
    }
    if (op == HIAR_AVG)
        acc = is_float(t) ? acc / nranks : trunc(acc / nranks);
    if (!is_float(t)) { /* wrap like the dtype: 256 in int8 is 0 */
        encode(HIAR_INT64, cell, 0, acc);
        int64_t w = *(int64_t *)cell;
        size_t sz = hiar_dtype_size(t);
        if (sz < 8) {
            w &= (int64_t)((1ull << (8 * sz)) - 1);
            if (t != HIAR_UINT8 && (w >> (8 * sz - 1)))
                w -= (int64_t)(1ull << (8 * sz));
        }
        return (double)w;
    }
    encode(t, cell, 0, acc);
    return decode(t, cell, 0);
}

static void fill(hiar_dtype_t t, hiar_op_t op, void *host, size_t count, int k)
{
    for (size_t i = 0; i < count; i++)
        encode(t, host, i, input(op, rank, i, k));
}

/* Agrees on a verdict: a case passes only if it passed on every rank. */
static int record(int ok, const char *what)
{
    int all;
    if (!ok)
        fprintf(stderr, "rank %d: failed: %s\n", rank, what);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        passed++;
        if (verbose && rank == 0) {
            printf("ok: %s\n", what);
            fflush(stdout);
        }
    }
    else {
        failed++;
        if (rank == 0)
            printf("FAIL: %s\n", what);
    }
    return all;
}

static uint64_t fnv(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* 1 if p holds the same bytes on every rank (compared by hash). */
static int same_on_every_rank(const void *p, size_t bytes)
{
    uint64_t h = fnv(p, bytes), lo, hi;

    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

/* Compares count results with the reference; also bit-identical across ranks. */
static int verify(hiar_dtype_t t, hiar_op_t op, const void *got, size_t count, int k)
{
    size_t bad = 0;

    for (size_t i = 0; i < count; i++) {
        double want = expected(t, op, i, k), have = decode(t, got, i);
        double tol = op == HIAR_AVG && is_float(t) ? fabs(want) / 64 + 1e-30 : 0;
        if (!(fabs(have - want) <= tol) && bad++ < 3)
            fprintf(stderr, "rank %d: %s %s element %zu: got %g want %g\n", rank, hiar_dtype_name(t),
                    hiar_op_name(op), i, have, want);
    }
    return same_on_every_rank(got, count * hiar_dtype_size(t)) && bad == 0;
}

/* One call on device buffers (offset elements into them; -1: rank % 2, unlike on the peers), checked. */
static void one_case(hiar_comm_t *comm, hiar_dtype_t t, hiar_op_t op, size_t count, int inplace, int offset)
{
    size_t es = hiar_dtype_size(t), guard = 64, bytes = (count + 2 * guard) * es;
    unsigned char *host = malloc(bytes), *back = malloc(bytes);
    char *dsend, *drecv, what[160];
    int ok = 1;
    hiar_result_t rc;

    if (offset < 0)
        offset = rank % 2;
    dev_alloc(comm, &dsend, bytes);
    dev_alloc(comm, &drecv, bytes);
    memset(host, 0xa5, bytes);
    fill(t, op, host + (guard + offset) * es, count, 0);
    CUDA_OK(cudaMemcpy(dsend, host, bytes, cudaMemcpyHostToDevice));
    memset(host, 0xa5, bytes);
    CUDA_OK(cudaMemcpy(drecv, inplace ? dsend : (char *)host, bytes,
                       inplace ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice));
    calls_prepare();
    rc = hiar_allreduce(dsend + (guard + offset) * es, (inplace ? dsend : drecv) + (guard + offset) * es, count,
                        t, op, comm, calls_stream);
    calls_sync();
    if (rc != HIAR_SUCCESS) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, hiar_strerror(rc), hiar_last_error());
        ok = 0;
    }
    CUDA_OK(cudaMemcpy(back, inplace ? dsend : drecv, bytes, cudaMemcpyDeviceToHost));
    ok &= verify(t, op, back + (guard + offset) * es, count, 0);
    for (size_t b = 0; b < (guard + offset) * es && !inplace; b++)
        ok &= back[b] == 0xa5;
    for (size_t b = (guard + offset + count) * es; b < bytes && !inplace; b++)
        ok &= back[b] == 0xa5;
    snprintf(what, sizeof(what), "%s%s %s count %zu %s offset %d", registered ? "registered " : "",
             hiar_dtype_name(t), hiar_op_name(op), count, inplace ? "in-place" : "out-of-place", offset);
    record(ok, what);
    dev_free(comm, dsend);
    dev_free(comm, drecv);
    free(host);
    free(back);
}

static void matrix(hiar_comm_t *comm)
{
    /* Across the LL one-shot / two-shot crossover (64 KB) and the LL limit (512 KB). */
    static const size_t sizes[] = {1, 7, 1000, 4097, 16383, 16385, 70001, 262147};
    for (int t = 0; t < HIAR_DTYPE_COUNT; t++)
        for (int op = 0; op < HIAR_OP_COUNT; op++)
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                size_t count = sizes[s] / (t == HIAR_INT64 || t == HIAR_FLOAT64 ? 2 : 1);
                one_case(comm, (hiar_dtype_t)t, (hiar_op_t)op, count, s % 2, (int)(s % 3 == 1));
            }
}

/* Every dtype once, each with another op, in place or not, with an offset or not: count + dtype index elements
 * when spread, else count. */
static void every_dtype(hiar_comm_t *comm, size_t count, int spread)
{
    for (int t = 0; t < HIAR_DTYPE_COUNT; t++)
        one_case(comm, (hiar_dtype_t)t, (hiar_op_t)(t % HIAR_OP_COUNT), count + (spread ? (size_t)t : 0), t % 2,
                 t % 3 == 1);
}

/*
 * Back-to-back calls, no synchronisation in between, inputs that change
 * every call, another kernel (a memset) between calls; every result checked.
 */
static void stress(hiar_comm_t *comm, hiar_dtype_t t, size_t count, int calls)
{
    enum { NIN = 4, NOUT = 32 };
    size_t bytes = count * hiar_dtype_size(t);
    void *in[NIN], *out[NOUT], *scratch, *host = malloc(bytes);
    int ok = 1;
    char what[96];

    for (int k = 0; k < NIN; k++) {
        CUDA_OK(cudaMalloc(&in[k], bytes));
        fill(t, HIAR_SUM, host, count, k);
        CUDA_OK(cudaMemcpy(in[k], host, bytes, cudaMemcpyHostToDevice));
    }
    for (int k = 0; k < NOUT; k++)
        dev_alloc(comm, &out[k], bytes);
    CUDA_OK(cudaMalloc(&scratch, 1 << 20));
    calls_prepare();
    for (int c = 0; c < calls && ok; c += NOUT) {
        for (int k = 0; k < NOUT; k++) {
            CUDA_OK(cudaMemsetAsync(out[k], 0xff, bytes, calls_stream));
            CUDA_OK(cudaMemsetAsync(scratch, c + k, 1 << 20, calls_stream));
            ok &= hiar_allreduce(in[(c + k) % NIN], out[k], count, t, HIAR_SUM, comm, calls_stream) == HIAR_SUCCESS;
        }
        calls_sync();
        for (int k = 0; k < NOUT; k++) {
            CUDA_OK(cudaMemcpy(host, out[k], bytes, cudaMemcpyDeviceToHost));
            ok &= verify(t, HIAR_SUM, host, count, (c + k) % NIN);
        }
    }
    snprintf(what, sizeof(what), "%sstress %d calls %s count %zu", registered ? "registered " : "", calls,
             hiar_dtype_name(t), count);
    record(ok, what);
    for (int k = 0; k < NIN; k++)
        cudaFree(in[k]);
    for (int k = 0; k < NOUT; k++)
        dev_free(comm, out[k]);
    cudaFree(scratch);
    free(host);
}

/*
 * Call c of stress_mixed: its dtype, op and count.  Counts up to 40000
 * elements (f32 and f64 reach the LL kernel's data-only packets) and, every
 * 7th call, 300001: the push or two-shot kernel between LL calls.
 */
static void mixed_call(int c, hiar_dtype_t *t, hiar_op_t *op, size_t *count)
{
    static const hiar_dtype_t types[] = {HIAR_FLOAT32, HIAR_INT32, HIAR_BFLOAT16, HIAR_INT8, HIAR_FLOAT64};
    *t = types[c % 5];
    *op = (hiar_op_t)(c / 5 % HIAR_OP_COUNT);
    *count = c % 7 == 6 ? 300001 : 1 + (size_t)c * 7919 % 40000;
}

/*
 * Back-to-back calls whose dtype, op and size change every call, so that
 * one call's packets land where the last one's, of another format or size,
 * were (the LL kernel's buffers must be left clean by every reader).
 */
static void stress_mixed(hiar_comm_t *comm, int calls)
{
    enum { N = 32, MAX_BYTES = 300001 * 8 };
    void *in[N], *out[N], *host = malloc(MAX_BYTES);
    hiar_dtype_t t;
    hiar_op_t op;
    size_t count;
    int ok = 1;
    char what[64];

    for (int k = 0; k < N; k++) {
        CUDA_OK(cudaMalloc(&in[k], MAX_BYTES));
        CUDA_OK(cudaMalloc(&out[k], MAX_BYTES));
    }
    for (int c = 0; c < calls && ok; c += N) {
        for (int k = 0; k < N; k++) {
            mixed_call(c + k, &t, &op, &count);
            fill(t, op, host, count, c + k);
            CUDA_OK(cudaMemcpy(in[k], host, count * hiar_dtype_size(t), cudaMemcpyHostToDevice));
        }
        calls_prepare();
        for (int k = 0; k < N; k++) {
            mixed_call(c + k, &t, &op, &count);
            ok &= hiar_allreduce(in[k], out[k], count, t, op, comm, calls_stream) == HIAR_SUCCESS;
        }
        calls_sync();
        for (int k = 0; k < N; k++) {
            mixed_call(c + k, &t, &op, &count);
            CUDA_OK(cudaMemcpy(host, out[k], count * hiar_dtype_size(t), cudaMemcpyDeviceToHost));
            ok &= verify(t, op, host, count, c + k);
        }
    }
    snprintf(what, sizeof(what), "mixed stress %d calls, dtype, op and size changing", calls);
    record(ok, what);
    for (int k = 0; k < N; k++) {
        cudaFree(in[k]);
        cudaFree(out[k]);
    }
    free(host);
}

/*
 * The bits of element i of rank r in case `seed` of edge_values, into cell:
 * all bits set (a NaN in float types, -1 in signed integers) on one rank,
 * -0.0 everywhere, bit patterns that hold the mark in part (an f32 of
 * 0x0000ffff, an f64 whose low word is all ones: denormals, so that sums
 * are exact in any order, as over several groups), and small values.
 */
static void edge_bits(hiar_dtype_t t, int r, size_t i, int seed, unsigned char *cell)
{
    static const double zero = 0.0;
    static const uint32_t f32_part = 0x0000ffffu;
    static const uint64_t f64_part = 0x00000000ffffffffull;
    size_t es = hiar_dtype_size(t);

    switch (i % 5) {
    case 0:
    case 2:
        if (r == (i % 5 == 0 ? 0 : nranks - 1))
            memset(cell, 0xff, es);
        else
            encode(t, cell, 0, 1 + (double)(i % 5));
        return;
    case 1: encode(t, cell, 0, -zero); return;
    case 3:
        if (t == HIAR_FLOAT32 || t == HIAR_FLOAT64) {
            memcpy(cell, t == HIAR_FLOAT32 ? (const void *)&f32_part : (const void *)&f64_part, es);
            return;
        } /* fall through */
    default: encode(t, cell, 0, (double)((r + i + (size_t)seed) % 3));
    }
}

/* One case of edge_values: count elements at element offset off of the device buffers. */
static void edge_case(hiar_comm_t *comm, hiar_dtype_t t, hiar_op_t op, size_t count, size_t off, int seed,
                      char *din, char *dout, unsigned char *host)
{
    size_t es = hiar_dtype_size(t), bad = 0;
    unsigned char cell[8];
    int ok;
    char what[112];

    for (size_t i = 0; i < count; i++)
        edge_bits(t, rank, i, seed, host + i * es);
    CUDA_OK(cudaMemcpy(din + off * es, host, count * es, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout, 0x5a, (count + off) * es)); /* an element left unwritten shows */
    calls_prepare();
    ok = hiar_allreduce(din + off * es, dout + off * es, count, t, op, comm, calls_stream) == HIAR_SUCCESS;
    calls_sync();
    CUDA_OK(cudaMemcpy(host, dout + off * es, count * es, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; i++) {
        double want = 0, have = decode(t, host, i);
        for (int r = 0; r < nranks; r++) {
            edge_bits(t, r, i, seed, cell);
            double v = decode(t, cell, 0);
            want = r == 0 ? v : op == HIAR_SUM ? want + v : (want > v || want != want) ? want : v;
        }
        if (!(isnan(want) ? isnan(have) : have == want && !signbit(have) == !signbit(want)) && bad++ < 3)
            fprintf(stderr, "rank %d: %s %s element %zu: got %g want %g\n", rank, hiar_dtype_name(t),
                    hiar_op_name(op), i, have, want);
    }
    snprintf(what, sizeof(what), "all-bits-set and -0.0 elements, %s %s count %zu offset %zu", hiar_dtype_name(t),
             hiar_op_name(op), count, off);
    record(same_on_every_rank(host, count * es) && ok && bad == 0, what);
}

/*
 * Values the LL kernel must carry through untouched: elements whose bits
 * are all set (its buffers' "nothing pending" mark), that hold it in part,
 * and -0.0.  The reference reduces the same values in double; NaN must stay
 * NaN, -0.0 keep its sign, and every rank get the same bits.  Messages just
 * below 2 KB and just above 128 KB: both LL packet formats (on 8 ranks the
 * larger goes through the push kernel); offsets 0 and 1: the vector and the
 * scalar path.
 */
static void edge_values(hiar_comm_t *comm)
{
    static const hiar_dtype_t types[] = {HIAR_FLOAT16, HIAR_BFLOAT16, HIAR_FLOAT32, HIAR_FLOAT64, HIAR_INT32,
                                         HIAR_INT8};
    enum { MAX_BYTES = 128 * 1024 + 64 };
    unsigned char *host = malloc(MAX_BYTES);
    char *din, *dout;
    int seed = 0;

    CUDA_OK(cudaMalloc((void **)&din, MAX_BYTES + 8));
    CUDA_OK(cudaMalloc((void **)&dout, MAX_BYTES + 8));
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
        for (int k = 0; k < 8; k++, seed++) {
            size_t es = hiar_dtype_size(types[ti]), count = k < 4 ? 2000 / es - 1 : 128 * 1024 / es + 3;
            edge_case(comm, types[ti], k % 2 ? HIAR_MAX : HIAR_SUM, count, (size_t)(k / 2 % 2), seed, din, dout,
                      host);
        }
    cudaFree(din);
    cudaFree(dout);
    free(host);
}

/* Calls captured in a CUDA graph, replayed with new inputs each time (refused where graphs_refused). */
static void graph(hiar_comm_t *comm, hiar_dtype_t t, size_t count)
{
    enum { CALLS = 4 };
    size_t bytes = count * hiar_dtype_size(t);
    void *in, *out[CALLS], *host = malloc(bytes);
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    int ok = 1;
    char what[96];

    if (graphs_refused) {
        free(host);
        capture_refused(comm);
        return;
    }
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&in, bytes));
    for (int k = 0; k < CALLS; k++)
        dev_alloc(comm, &out[k], bytes);
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < CALLS; k++)
        ok &= hiar_allreduce(in, out[k], count, t, HIAR_SUM, comm, s) == HIAR_SUCCESS;
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* replayed only where all captured */
    for (int r = 0; r < replays && ok; r++) {
        fill(t, HIAR_SUM, host, count, r);
        CUDA_OK(cudaMemcpyAsync(in, host, bytes, cudaMemcpyHostToDevice, s));
        CUDA_OK(cudaGraphLaunch(exec, s));
        CUDA_OK(cudaStreamSynchronize(s));
        for (int k = 0; k < CALLS; k++) {
            CUDA_OK(cudaMemcpy(host, out[k], bytes, cudaMemcpyDeviceToHost));
            ok &= verify(t, HIAR_SUM, host, count, r);
        }
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* verify is collective: stop alike */
    }
    snprintf(what, sizeof(what), "%sgraph %d x %d calls %s count %zu", registered ? "registered " : "", replays,
             CALLS, hiar_dtype_name(t), count);
    record(ok, what);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaFree(in);
    for (int k = 0; k < CALLS; k++)
        dev_free(comm, out[k]);
    cudaStreamDestroy(s);
    free(host);
}

/* Small messages on comm: every dtype at about 4K elements, 7 bfloat16 elements (op, in place or not, at an
 * offset), back-to-back calls, a graph. */
static void small_messages(hiar_comm_t *comm, hiar_op_t op, int inplace, int quick)
{
    every_dtype(comm, 4097, 1);
    one_case(comm, HIAR_BFLOAT16, op, 7, inplace, 1);
    stress(comm, HIAR_FLOAT32, 4096, quick ? 64 : 1024);
    graph(comm, HIAR_FLOAT32, 1000);
}

/*
 * Graphs captured, replayed once (checked) and destroyed, again and again:
 * between hosts, more captured calls than a comm keeps in graphs alive at
 * once (4064 steps), so it passes only if a destroyed graph's slots serve
 * the next captures.
 */
static void recapture(hiar_comm_t *comm, int graphs)
{
    enum { CALLS = 4, COUNT = 1000 };
    size_t bytes = COUNT * sizeof(float);
    void *in, *out[CALLS], *host = malloc(bytes);
    cudaStream_t s;
    int ok = 1, g;
    char what[160];

    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&in, bytes));
    for (int k = 0; k < CALLS; k++)
        CUDA_OK(cudaMalloc(&out[k], bytes));
    for (g = 0; g < graphs && ok; g++) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int k = 0; k < CALLS; k++)
            ok &= hiar_allreduce(in, out[k], COUNT, HIAR_FLOAT32, HIAR_SUM, comm, s) == HIAR_SUCCESS;
        CUDA_OK(cudaStreamEndCapture(s, &graph));
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
        /* Launched only where every rank captured all its calls: a peer's graph never waits for a missing one. */
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        fill(HIAR_FLOAT32, HIAR_SUM, host, COUNT, g);
        CUDA_OK(cudaMemcpyAsync(in, host, bytes, cudaMemcpyHostToDevice, s));
        for (int k = 0; k < CALLS; k++)
            CUDA_OK(cudaMemsetAsync(out[k], 0xff, bytes, s));
        int launched = ok; /* agreed: verify is collective, so every rank checks alike */
        if (launched)
            CUDA_OK(cudaGraphLaunch(exec, s));
        CUDA_OK(cudaStreamSynchronize(s));
        for (int k = 0; k < CALLS && launched; k++) {
            CUDA_OK(cudaMemcpy(host, out[k], bytes, cudaMemcpyDeviceToHost));
            ok &= verify(HIAR_FLOAT32, HIAR_SUM, host, COUNT, g);
        }
        CUDA_OK(cudaGraphExecDestroy(exec));
        CUDA_OK(cudaGraphDestroy(graph));
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* every rank stops alike */
    }
    snprintf(what, sizeof(what), "%d graphs of %d calls captured, replayed, checked and destroyed in turn "
             "(stopped after %d)", graphs, CALLS, g);
    record(ok, what);
    cudaFree(in);
    for (int k = 0; k < CALLS; k++)
        cudaFree(out[k]);
    cudaStreamDestroy(s);
    free(host);
}

/* hiar_allreduce of count floats into out (device memory), checked. */
static int reduce_into(hiar_comm_t *comm, float *out, size_t count)
{
    size_t bytes = count * sizeof(float);
    void *in, *host = malloc(bytes);
    int ok;

    CUDA_OK(cudaMalloc(&in, bytes));
    fill(HIAR_FLOAT32, HIAR_SUM, host, count, 3);
    CUDA_OK(cudaMemcpy(in, host, bytes, cudaMemcpyHostToDevice));
    ok = hiar_allreduce(in, out, count, HIAR_FLOAT32, HIAR_SUM, comm, NULL) == HIAR_SUCCESS;
    CUDA_OK(cudaMemcpy(host, out, bytes, cudaMemcpyDeviceToHost));
    ok &= verify(HIAR_FLOAT32, HIAR_SUM, host, count, 3);
    cudaFree(in);
    free(host);
    return ok;
}

static int expect(const char *what, hiar_result_t rc, hiar_result_t want)
{
    if (rc == want)
        return 1;
    fprintf(stderr, "rank %d: %s: got %s (%s), want %s\n", rank, what, hiar_strerror(rc), hiar_last_error(),
            hiar_strerror(want));
    return 0;
}

/* hiar_mem_register inside a cudaMalloc'd allocation, and the errors of the hiar_mem_* calls. */
static void mem_api(hiar_comm_t *comm)
{
    size_t count = 300007, bytes = count * sizeof(float);
    char *big, host[64];
    void *p = &p, *pool;
    int ok = 1;

    CUDA_OK(cudaMalloc((void **)&big, bytes + 4096));
    ok &= expect("register inside an allocation", hiar_mem_register(comm, big + 4096, bytes), HIAR_SUCCESS);
    ok &= reduce_into(comm, (float *)(big + 4096), count);
    ok &= expect("register twice", hiar_mem_register(comm, big + 4096, bytes), HIAR_INVALID_ARGUMENT);
    ok &= expect("free what was registered", hiar_mem_free(comm, big + 4096), HIAR_INVALID_ARGUMENT);
    ok &= expect("deregister what is not", hiar_mem_deregister(comm, big), HIAR_INVALID_ARGUMENT);
    ok &= expect("NULL on rank 0 fails on every rank", hiar_mem_register(comm, rank ? big : NULL, 64),
                 HIAR_INVALID_ARGUMENT);
    ok &= expect("host memory", hiar_mem_register(comm, host, sizeof(host)), HIAR_INVALID_ARGUMENT);
    ok &= expect("alloc of 0 bytes", hiar_mem_alloc(comm, 0, &p), HIAR_INVALID_ARGUMENT) && p == NULL;
    CUDA_OK(cudaMallocAsync(&pool, 1 << 20, NULL));
    CUDA_OK(cudaStreamSynchronize(NULL));
    ok &= expect("stream-ordered pool memory", hiar_mem_register(comm, pool, 1 << 20), HIAR_UNSUPPORTED);
    CUDA_OK(cudaFreeAsync(pool, NULL));
    ok &= expect("deregister", hiar_mem_deregister(comm, big + 4096), HIAR_SUCCESS);
    ok &= reduce_into(comm, (float *)(big + 4096), count);
    /* Left for hiar_comm_destroy to release. */
    ok &= expect("alloc", hiar_mem_alloc(comm, bytes, &p), HIAR_SUCCESS);
    ok &= reduce_into(comm, p, count);
    /* Rank 0 frees another registration than the others: refused everywhere, nothing freed (one rank agrees
     * with itself). */
    ok &= expect("alloc a second", hiar_mem_alloc(comm, bytes, &pool), HIAR_SUCCESS);
    if (nranks > 1)
        ok &= expect("ranks free different registrations", hiar_mem_free(comm, rank ? p : pool),
                     HIAR_INVALID_USAGE);
    ok &= reduce_into(comm, pool, count) && reduce_into(comm, p, count);
    ok &= expect("free the second", hiar_mem_free(comm, pool), HIAR_SUCCESS);
    record(ok, "hiar_mem_register inside an allocation, hiar_mem_* errors agreed on every rank");
    cudaFree(big);
}

/* Over several groups exchanging over MPI without the progress thread
 * (HIAR_BETWEEN=mpi, HIAR_PROGRESS=0) a call waits on the host: capture is
 * refused before anything is sent (on every rank alike), and the comm still
 * works after. */
static void capture_refused(hiar_comm_t *comm)
{
    enum { COUNT = 1000 };
    float *in, *out;
    cudaStream_t s;
    cudaGraph_t g;
    int ok;

    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&in, COUNT * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&out, COUNT * sizeof(float)));
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    ok = expect("capture over several groups", hiar_allreduce(in, out, COUNT, HIAR_FLOAT32, HIAR_SUM, comm, s),
                HIAR_INVALID_USAGE);
    CUDA_OK(cudaStreamEndCapture(s, &g));
    cudaGraphDestroy(g);
    ok &= reduce_into(comm, out, COUNT);
    record(ok, "capture over several groups refused, the comm still usable");
    cudaFree(in);
    cudaFree(out);
    cudaStreamDestroy(s);
}

/*
 * The last rank skips a call: the others' kernels give up after
 * HIAR_TIMEOUT_MS.  Over groups 0,1|2,3 rank 2 waits for rank 3's packets in
 * the one LL kernel of the latency path, in its group's part, and ranks 0
 * and 1 in its part between groups (over MPI with HIAR_BETWEEN=mpi: rank 2
 * in the host's shared memory, ranks 0 and 1 in the MPI step), for what
 * rank 3 never brings.
 */
/* Threads of this process (/proc/self/task): hiar's progress thread must be gone after abort. */
static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;

    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static double seconds_since(struct timespec t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
}

/*
 * Waits for the device's work, at most `limit` seconds from t0: a kernel that waits without a bound (a cluster
 * barrier a block never reaches) would otherwise hang the test instead of failing it.
 */
static void finish_or_abort(struct timespec t0, double limit)
{
    cudaEvent_t done;
    cudaError_t err;

    CUDA_OK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_OK(cudaEventRecord(done, NULL));
    while ((err = cudaEventQuery(done)) == cudaErrorNotReady) {
        if (seconds_since(t0) > limit) {
            fprintf(stderr, "rank %d: the stalled call's kernels still run after %.0f s\n", rank, limit);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        sched_yield();
    }
    CUDA_OK(err);
    CUDA_OK(cudaEventDestroy(done));
    CUDA_OK(cudaDeviceSynchronize());
}

/* The stalled call: an allreduce of count floats, or with hidden > 0 one with a fused RMSNorm of rows of hidden. */
static hiar_result_t stalled_call(float *buf, const float *weight, size_t count, size_t hidden, hiar_comm_t *comm)
{
    if (!hidden)
        return hiar_allreduce(buf, buf, count, HIAR_FLOAT32, HIAR_SUM, comm, NULL);
    return hiar_allreduce_rmsnorm(buf, NULL, weight, buf, count / hidden, hidden, HIAR_FLOAT32, HIAR_FLOAT32, 1e-6f, 0,
                                  comm, NULL);
}

/* The stalled allreduce captured in a CUDA graph and launched once on the legacy stream, which finish_or_abort
 * waits for (over pinned host memory LL's lone poll exists only in graphs: cuda/oneshot.cu). */
static hiar_result_t stalled_graph(float *buf, size_t count, hiar_comm_t *comm)
{
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    hiar_result_t rc;

    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    rc = hiar_allreduce(buf, buf, count, HIAR_FLOAT32, HIAR_SUM, comm, s);
    CUDA_OK(cudaStreamEndCapture(s, &g));
    if (rc == HIAR_SUCCESS) {
        CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
        CUDA_OK(cudaGraphLaunch(exec, NULL));
        CUDA_OK(cudaGraphExecDestroy(exec)); /* freed when the launch completes */
    }
    CUDA_OK(cudaGraphDestroy(g));
    CUDA_OK(cudaStreamDestroy(s));
    return rc;
}

/*
 * A stalled peer in a call of count floats (1024: the latency paths; 1 << 20: the two-shot and bandwidth paths;
 * with hidden, the fused norm's LL kernel, whose blocks of a row trade partial sums: 1 x 4096 floats is a row cut
 * in 8 slices, a thread-block cluster where the GPU has them (HIAR_CLUSTERS=1, the default), or with HIAR_CLUSTERS=0 in
 * 2 slices of data-only packets at 2 ranks, 4 of flagged ones at more); captured: in a CUDA graph.
 */
static void timeout(const char *settings, size_t count, size_t hidden, int captured)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm;
    hiar_result_t err = HIAR_SUCCESS;
    float *buf;
    struct timespec t0;
    double secs = 0;
    int ok;
    char what[256];

    int before = threads();

    cfg.settings = settings;
    if (hiar_comm_create(MPI_COMM_WORLD, &cfg, &comm) != HIAR_SUCCESS) {
        record(0, "timeout: create");
        return;
    }
    /* The norm's weights after the buffer. */
    CUDA_OK(cudaMalloc((void **)&buf, (count + hidden) * sizeof(float)));
    CUDA_OK(cudaMemset(buf, 0, (count + hidden) * sizeof(float)));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rank != nranks - 1) {
        /* On the GPU the kernel gives up and says so at the next call; over
         * MPI between groups the MPI step may give up first, in the call itself. */
        hiar_result_t rc = captured ? stalled_graph(buf, count, comm)
                                    : stalled_call(buf, buf + count, count, hidden, comm);
        hiar_result_t queued = HIAR_SUCCESS;
        char first[256];
        snprintf(first, sizeof(first), "%s", hiar_last_error());
        /* A fused call queued behind the stalled one finds the comm failed on the GPU (comm_failed): its blocks,
         * in a cluster too, must end without waiting for each other. */
        if (hidden)
            queued = stalled_call(buf, buf + count, count, hidden, comm);
        finish_or_abort(t0, 10);
        secs = seconds_since(t0);
        /* The queued call may itself have seen the first one give up (then it failed the comm). */
        ok = rc == HIAR_TIMEOUT || queued == HIAR_TIMEOUT ||
             (rc == HIAR_SUCCESS && hiar_comm_get_async_error(comm, &err) == HIAR_SUCCESS && err == HIAR_TIMEOUT);
        ok &= queued == HIAR_SUCCESS || queued == HIAR_TIMEOUT || queued == HIAR_COMM_FAILED;
        ok &= stalled_call(buf, buf + count, count, hidden, comm) == HIAR_COMM_FAILED;
        ok &= secs < 1.5;
        if (!ok)
            fprintf(stderr, "rank %d: timeout after %.2f s: the call returned %s (%s), the queued one %s, async error %s\n",
                    rank, secs, hiar_strerror(rc), rc == HIAR_SUCCESS ? "" : first, hiar_strerror(queued),
                    hiar_strerror(err));
    } else {
        ok = 1;
    }
    ok &= hiar_comm_abort(comm) == HIAR_SUCCESS;
    if (threads() != before) {
        fprintf(stderr, "rank %d: %d threads before the comm, %d after its abort\n", rank, before, threads());
        ok = 0;
    }
    snprintf(what, sizeof(what), "timeout (%s, %zu floats%s%s): stalled peer -> HIAR_TIMEOUT within HIAR_TIMEOUT_MS + "
             "1 s, then COMM_FAILED, no thread left", settings, count, hidden ? ", fused RMSNorm" : "",
             captured ? ", in a graph" : "");
    record(ok, what);
    cudaFree(buf);
}

/*
 * --kill: bf16 calls over the sizes of every path, back to back; the last
 * rank SIGKILLs itself before call K.  What must happen (tests/gpu/kill.sh
 * checks it) is that mpirun ends the job, the survivors' kernels spinning on
 * the dead rank's memory included, long before HIAR_TIMEOUT_MS.
 */
static int kill_loop(hiar_comm_t *comm)
{
    enum { K = 200, COUNT = 1 << 22 };
    void *buf;

    CUDA_OK(cudaMalloc(&buf, COUNT * 2));
    CUDA_OK(cudaMemset(buf, 0, COUNT * 2));
    printf("rank %d: pid %d\n", rank, (int)getpid());
    fflush(stdout);
    for (int c = 0; c < 100 * K; c++) {
        if (rank == nranks - 1 && c == K)
            kill(getpid(), SIGKILL);
        if (hiar_allreduce(buf, buf, (size_t)1 << (c % 23), HIAR_BFLOAT16, HIAR_SUM, comm, NULL) != HIAR_SUCCESS)
            break;
        if (c % 16 == 0)
            CUDA_OK(cudaStreamSynchronize(NULL));
    }
    fprintf(stderr, "rank %d: %s\n", rank, hiar_last_error());
    return 1;
}

/* Whether comm's hiar_comm_describe has a line with both texts (on this rank). */
static int describes(hiar_comm_t *comm, const char *a, const char *b)
{
    FILE *f = tmpfile();
    char line[2048];
    int found = 0;

    if (!f || hiar_comm_describe(comm, f) != HIAR_SUCCESS) {
        if (f)
            fclose(f);
        return 0;
    }
    rewind(f);
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, a) && strstr(line, b);
    fclose(f);
    return found;
}

/*
 * Groups on one host exchanging on the GPU by CUDA IPC also get the group
 * over the host (HIAR_FLAT), every pair of GPUs mapping each other: here,
 * ranks on one GPU, it must be there, or the flat paths would go untested
 * while every case passes through the groups.
 */
static void flat_present(hiar_comm_t *comm, int want)
{
    char what[96];

    snprintf(what, sizeof(what), "the group over the host %s", want ? "set up" : "absent");
    record(describes(comm, "device group over the host:", want ? "ranks, ipc" : "none") == 1, what);
}

/*
 * Groups on several (simulated) hosts, as many on each (--per-host): the
 * owners of a shard on a host reduce it on the GPU and only its parts cross
 * between hosts.  A comm that fell back to every group over MPI would pass
 * every case too: so its description must say so.
 */
static void per_host_present(hiar_comm_t *comm)
{
    record(describes(comm, "device paths:", "within each host on the GPU") == 1,
           "the step between groups within each host on the GPU, then between hosts");
}

static hiar_comm_t *create(const char *settings)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm;
    cfg.settings = settings;
    if (hiar_comm_create(MPI_COMM_WORLD, &cfg, &comm) != HIAR_SUCCESS) {
        fprintf(stderr, "rank %d: hiar_comm_create(%s): %s\n", rank, settings ? settings : "", hiar_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return comm;
}

/* The tally, and the exit status. */
static int finish(void)
{
    if (rank == 0)
        printf("np=%d: %d passed, %d failed\n", nranks, passed, failed);
    if (calls_stream)
        cudaStreamDestroy(calls_stream);
    MPI_Finalize();
    return failed ? 1 : 0;
}

/* Whether the environment sets name to value (any case, as hiar reads its parameters). */
static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && strcasecmp(v, value) == 0;
}

/* The hosts of the ranks: distinct HIAR_HOST_IDs where set (simulated hosts), else the MPI's shared-memory nodes.
 * Collective. */
static int host_count(const char *hosts)
{
    unsigned h = 5381;
    int first, count;
    MPI_Comm same;

    if (hosts) {
        for (const char *p = hosts; *p; p++)
            h = h * 33 + (unsigned char)*p;
        MPI_Comm_split(MPI_COMM_WORLD, (int)(h & 0x7fffffff), rank, &same);
    } else
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &same);
    MPI_Comm_rank(same, &first);
    MPI_Comm_free(&same);
    count = first == 0;
    MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return count;
}

/* The groups of comm's device buffers. */
static int device_groups(hiar_comm_t *comm)
{
    int ngroups = 0;

    hiar_comm_group(comm, 1, &ngroups, NULL, NULL, NULL);
    return ngroups;
}

/* Whether n's prime factors are 2 and 3 only (the progress thread's rounds: core/hosts.c). */
static int factors_2_and_3(int n)
{
    while (n % 2 == 0)
        n /= 2;
    while (n % 3 == 0)
        n /= 3;
    return n == 1;
}

/*
 * Whether every rank alone in its group goes in rounds of more than one
 * (4 to 32 ranks, prime factors 2 and 3 only: core/hosts.c), where small
 * messages take the latency path too: a copy, then one job over every rank.
 */
static int alone_in_rounds(int ngroups, int group_size)
{
    return group_size == 1 && ngroups == nranks && factors_2_and_3(nranks) && nranks >= 4 && nranks <= 32;
}

/*
 * Whether small messages of comm take the latency path between groups over
 * MPI (ipc-hosts-ll: core/plan.c): device groups on several hosts (or on
 * one under HIAR_BETWEEN=mpi), on the progress engine (not staged), every
 * group of as many ranks, more than one or every rank alone in rounds of
 * more than one, not the per-host split (which hiar takes by itself where
 * each host has several groups of one size: the comm's description says),
 * HIAR_ALGO auto, oneshot or pull.  From the comm's own grouping: several
 * GPUs of a host may be split into groups.  Collective.
 */
static int hosts_ll_expected(hiar_comm_t *comm, int nhosts, int staged)
{
    int ngroups = 0, size[2] = {0, 0};

    hiar_comm_group(comm, 1, &ngroups, NULL, NULL, &size[0]);
    size[1] = -size[0];
    MPI_Allreduce(MPI_IN_PLACE, size, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* the fewest, and the most negated */
    return ngroups > 1 && (nhosts > 1 || env_is("HIAR_BETWEEN", "mpi")) && size[0] == -size[1] &&
           (size[0] > 1 || alone_in_rounds(ngroups, size[0])) && !staged &&
           !describes(comm, "device paths:", "within each host on the GPU") &&
           (!getenv("HIAR_ALGO") || env_is("HIAR_ALGO", "auto") || env_is("HIAR_ALGO", "oneshot") ||
            env_is("HIAR_ALGO", "pull"));
}

/* A comm that kept the three steps would pass every case too: so its description must say which. */
static void hosts_ll_present(hiar_comm_t *comm, int want)
{
    char what[96];

    snprintf(what, sizeof(what), "small messages between hosts: the latency path %s", want ? "taken" : "not taken");
    record(describes(comm, "device paths:", "ipc-hosts-ll up to") == want, what);
}

/*
 * Whether every rank is alone in its device group (HIAR_GROUPS of one rank
 * each, one rank per simulated host) and their number has a prime factor
 * above 3 (5 or 7 ranks here): the step between groups over MPI is then the
 * blocking, staged one, which refuses captures (the progress thread takes
 * such comms in rounds over the factors 2 and 3 only: doc/guide.md).
 */
static int every_rank_alone_staged(hiar_comm_t *comm)
{
    return !factors_2_and_3(nranks) && device_groups(comm) == nranks;
}

int main(int argc, char **argv)
{
    MPI_Comm local;
    int lrank, ndev = 0, quick = 0, only_graphs = 0, killed = 0, per_host = 0, staged, nhosts, hosts_ll;
    const char *hosts = getenv("HIAR_HOST_ID");
    int groups = getenv("HIAR_GROUPS") && strchr(getenv("HIAR_GROUPS"), '|');
    hiar_comm_t *comm;

    int mpi_thread_level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0)
            printf("SKIP: no GPU\n");
        MPI_Finalize();
        return 77;
    }
    nhosts = host_count(hosts);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    CUDA_OK(cudaSetDevice(lrank % ndev));
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--replays") == 0 && a + 1 < argc)
            only_graphs = replays = atoi(argv[++a]);
        quick |= strcmp(argv[a], "--quick") == 0;
        killed |= strcmp(argv[a], "--kill") == 0;
        verbose |= strcmp(argv[a], "--verbose") == 0;
        per_host |= strcmp(argv[a], "--per-host") == 0;
        if (strcmp(argv[a], "--stream") == 0 && !calls_stream)
            CUDA_OK(cudaStreamCreateWithFlags(&calls_stream, cudaStreamNonBlocking));
    }
    comm = create(NULL);
    /* Where the step between groups goes through MPI, whether it is staged (blocking; without
     * MPI_THREAD_MULTIPLE there is no progress thread: core/hosts.h); the default comm's goes through MPI between
     * hosts, or on one host under HIAR_BETWEEN=mpi. */
    staged = env_is("HIAR_PROGRESS", "0") || mpi_thread_level < MPI_THREAD_MULTIPLE || every_rank_alone_staged(comm);
    graphs_refused = (nhosts > 1 || (device_groups(comm) > 1 && env_is("HIAR_BETWEEN", "mpi"))) && staged;
    if (killed)
        return kill_loop(comm);
    if (only_graphs) {
        /* Only captured calls, replayed that often (checked every time); a line per graph. */
        graph(comm, HIAR_FLOAT32, 1000);
        if (rank == 0)
            printf("graph of float32 count 1000: %d passed, %d failed so far\n", passed, failed);
        graph(comm, HIAR_BFLOAT16, 1 << 18);
        if (rank == 0)
            printf("graph of bfloat16 count 262144: %d passed, %d failed so far\n", passed, failed);
        fflush(stdout);
        hiar_comm_destroy(comm);
        /* Chunks of a third of a megabyte: between hosts, more pieces than the ring has positions
         * (a tenth as many replays: 1000 did not end within 120 s on the H200 machine). */
        comm = create("HIAR_BUFFER_SIZE=1M");
        replays = (replays + 9) / 10;
        graph(comm, HIAR_BFLOAT16, 3 << 20);
        hiar_comm_destroy(comm);
        return finish();
    }
    if (rank == 0)
        hiar_comm_describe(comm, stdout);
    if (per_host)
        per_host_present(comm);
    hosts_ll = hosts_ll_expected(comm, nhosts, staged);
    hosts_ll_present(comm, hosts_ll);
    matrix(comm);
    edge_values(comm);
    stress_mixed(comm, quick ? 64 : 1024);
    stress(comm, HIAR_FLOAT32, 4096, quick ? 64 : 2048);
    stress(comm, HIAR_BFLOAT16, 65539, quick ? 64 : 1024);
    stress(comm, HIAR_FLOAT32, 1 << 20, quick ? 32 : 256);
    /* Shards of several MB between groups, eager first, then in graphs. */
    one_case(comm, HIAR_FLOAT32, HIAR_SUM, 3 << 20, 0, 0);
    one_case(comm, HIAR_FLOAT32, HIAR_SUM, 3 << 20, 1, 0);
    one_case(comm, HIAR_BFLOAT16, HIAR_AVG, 5 << 20, 0, 1);
    /* Between hosts: more pieces than the ring's positions (reused), over several chunks. */
    one_case(comm, HIAR_FLOAT32, HIAR_SUM, (12 << 20) + 5, 1, 0);
    /* One group, several on one host exchanging on the GPU, or groups on (simulated, HIAR_HOST_ID)
     * hosts exchanging over MPI on the progress thread: kernels only, capturable.  A step between
     * groups that fell back to the blocking MPI path would fail here, as it should. */
    graph(comm, HIAR_FLOAT32, 1000);
    /* Over pinned host memory on 2 ranks, LL with the lone poll (cuda/oneshot.cu): its largest message, and one
     * whose last warp has one lane. */
    graph(comm, HIAR_BFLOAT16, 32768);
    graph(comm, HIAR_BFLOAT16, 24577);
    graph(comm, HIAR_BFLOAT16, 1 << 20);
    graph(comm, HIAR_FLOAT32, 3 << 20);
    graph(comm, HIAR_BFLOAT16, 12 << 20);
    if (hosts && !graphs_refused)
        recapture(comm, 1100);
    hiar_comm_destroy(comm);
    if (groups || hosts) {
        /* The step between groups over MPI, as across hosts: on the progress thread, capturable (but
         * for every rank alone on 5 or 7 ranks: blocking)... */
        comm = create("HIAR_BETWEEN=mpi");
        one_case(comm, HIAR_BFLOAT16, HIAR_AVG, 300007, 1, 0);
        one_case(comm, HIAR_FLOAT32, HIAR_SUM, 4097, 0, 1);
        stress(comm, HIAR_FLOAT32, 1 << 20, quick ? 16 : 64);
        if (staged)
            capture_refused(comm);
        else
            graph(comm, HIAR_BFLOAT16, 1 << 20);
        hiar_comm_destroy(comm);
        /* ...and on the calling thread, blocking. */
        comm = create("HIAR_BETWEEN=mpi;HIAR_PROGRESS=0");
        capture_refused(comm);
        one_case(comm, HIAR_BFLOAT16, HIAR_AVG, 300007, 1, 0);
        one_case(comm, HIAR_FLOAT32, HIAR_SUM, 4097, 0, 1);
        stress(comm, HIAR_FLOAT32, 1 << 20, quick ? 16 : 64);
        hiar_comm_destroy(comm);
    }
    if (hosts_ll) {
        /* Small messages along the three steps, which the latency path takes from the default comm: every
         * dtype, in place, offsets, back to back, captured. */
        comm = create("HIAR_ALGO=hier");
        hosts_ll_present(comm, 0);
        small_messages(comm, HIAR_AVG, 1, quick);
        hiar_comm_destroy(comm);
    }
    if (per_host) {
        /* Within each host on the GPU, between hosts on the calling thread (blocking, not capturable)... */
        comm = create("HIAR_PROGRESS=0");
        per_host_present(comm);
        capture_refused(comm);
        every_dtype(comm, 300007, 0);
        one_case(comm, HIAR_BFLOAT16, HIAR_AVG, (3 << 20) + 5, 1, 0);
        stress(comm, HIAR_FLOAT32, 1 << 20, quick ? 16 : 64);
        hiar_comm_destroy(comm);
        /* ...and through pinned host memory within each host; small slots: many chunks and parts. */
        comm = create("HIAR_PINNED=1;HIAR_BUFFER_SIZE=1M");
        per_host_present(comm);
        every_dtype(comm, 300007, 1);
        one_case(comm, HIAR_FLOAT32, HIAR_SUM, (12 << 20) + 5, 0, 0);
        stress(comm, HIAR_BFLOAT16, 1000003, quick ? 16 : 64);
        graph(comm, HIAR_BFLOAT16, 3 << 20);
        hiar_comm_destroy(comm);
    }
    if (groups && !hosts) {
        const char *pinned = getenv("HIAR_PINNED"), *between = getenv("HIAR_BETWEEN"), *off = getenv("HIAR_FLAT"),
                   *algo = getenv("HIAR_ALGO");
        int flat = !(pinned && strcmp(pinned, "1") == 0) && !(between && strcmp(between, "mpi") == 0) &&
                   !(off && strcmp(off, "0") == 0) && !(algo && strcmp(algo, "auto") != 0) && nranks <= 8;
        comm = create(NULL);
        flat_present(comm, flat);
        hiar_comm_destroy(comm);
        /* Groups on one host without the group over the host: small messages take the latency path
         * (LL in the group, LL between groups) that the default comm leaves to that group... */
        comm = create("HIAR_FLAT=0");
        flat_present(comm, 0);
        small_messages(comm, HIAR_SUM, 0, quick);
        hiar_comm_destroy(comm);
        /* ...and that group at every size: push or two-shot over every rank of the host. */
        comm = create("HIAR_FLAT_MAX=1G");
        every_dtype(comm, 300007, 0);
        one_case(comm, HIAR_FLOAT32, HIAR_SUM, (3 << 20) + 1, 1, 0);
        stress(comm, HIAR_BFLOAT16, 1000003, quick ? 32 : 256);
        graph(comm, HIAR_BFLOAT16, 1 << 20);
        hiar_comm_destroy(comm);
    }
    /* Small slots: two-shot in many chunks. */
    comm = create("HIAR_BUFFER_SIZE=64K");
    one_case(comm, HIAR_FLOAT32, HIAR_SUM, 300007, 0, 1);
    one_case(comm, HIAR_BFLOAT16, HIAR_AVG, 300007, 1, 0);
    stress(comm, HIAR_FLOAT32, 100003, quick ? 32 : 256);
    hiar_comm_destroy(comm);
    /* Two-shot, which the size rules pick only for more than 2 ranks. */
    comm = create("HIAR_ALGO=twoshot;HIAR_BUFFER_SIZE=1M");
    every_dtype(comm, 300007, 0);
    stress(comm, HIAR_BFLOAT16, 1000003, quick ? 32 : 256);
    graph(comm, HIAR_FLOAT32, 70001);
    hiar_comm_destroy(comm);
    /* The one-shot kernel that reads its peers' inputs (one group; elsewhere as oneshot): every dtype, a few
     * bytes, and 12 MB, whose pieces come round the ring many times. */
    comm = create("HIAR_ALGO=pull");
    every_dtype(comm, 300007, 0);
    one_case(comm, HIAR_BFLOAT16, HIAR_SUM, 7, 0, 1);
    one_case(comm, HIAR_FLOAT32, HIAR_MAX, 3 << 20, 1, 0);
    stress(comm, HIAR_BFLOAT16, 1000003, quick ? 32 : 256);
    graph(comm, HIAR_FLOAT32, 70001);
    hiar_comm_destroy(comm);
    /* The same on registered memory: zero copy where offsets match, else the slots. */
    comm = create("HIAR_ALGO=twoshot;HIAR_BUFFER_SIZE=1M");
    registered = 1;
    every_dtype(comm, 300007, 0);
    one_case(comm, HIAR_FLOAT32, HIAR_SUM, 300007, 0, -1);
    one_case(comm, HIAR_BFLOAT16, HIAR_MAX, 4097, 0, 0);
    stress(comm, HIAR_BFLOAT16, 1000003, quick ? 32 : 256);
    graph(comm, HIAR_FLOAT32, 70001);
    registered = 0;
    mem_api(comm);
    hiar_comm_destroy(comm);
    timeout("HIAR_TIMEOUT_MS=500", 1024, 0, 0);
    timeout("HIAR_TIMEOUT_MS=500", 1 << 20, 0, 0);
    timeout("HIAR_TIMEOUT_MS=500", 4096, 4096, 0);
    timeout("HIAR_TIMEOUT_MS=500", 4 * 4096, 4096, 0);
    timeout("HIAR_TIMEOUT_MS=500;HIAR_CLUSTERS=0", 4096, 4096, 0);
    /* 48 KB over pinned host memory, 2 ranks, in a graph: LL's lone poll (cuda/oneshot.cu) gives up. */
    if (nranks == 2 && !groups && !hosts)
        timeout("HIAR_TIMEOUT_MS=500;HIAR_PINNED=1", 12288, 0, 1);
    if (per_host)
        timeout("HIAR_TIMEOUT_MS=500;HIAR_PROGRESS=0", 1024, 0, 0);
    if (groups || hosts) {
        timeout("HIAR_TIMEOUT_MS=500;HIAR_BETWEEN=mpi", 1024, 0, 0);
        timeout("HIAR_TIMEOUT_MS=500;HIAR_BETWEEN=mpi;HIAR_PROGRESS=0", 1024, 0, 0);
    }
    return finish();
}
