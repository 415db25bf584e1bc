/*
 * hiar-bench: allreduce time and bandwidth of hiar beside MPI_Allreduce and
 * NCCL, measured the same way in one run, in nccl-tests' columns:
 *
 *     mpirun -np 4 hiar-bench -b 8 -e 64M -f 2 -d bfloat16 -o avg
 *
 * Per size and implementation: a check call on fresh inputs, WARMUP calls,
 * then calls back to back after a barrier under MPI_Wtime (device buffers:
 * until the stream is synchronized): -n N, N calls; -n auto (the default),
 * rounds of the implementations in turn (in_rounds, below).
 *   time  = max over ranks of the per-rank mean time of one call (auto: the
 *           median round of those maxima)
 *   algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests' definition)
 * --split times hiar's parts the same way (bench-split.h).
 *
 * Exit status: 0 all results right, 1 a wrong result or a failed call,
 * 2 bad usage.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "bench-check.h"
#ifdef HIAR_HAVE_CUDA
#include "bench-decode.h"
#include "bench-train.h"
#endif
#include "bench-mem.h"
#include "bench-mpi.h"
#include "bench-nccl.h"
#include "bench-opts.h"
#include "bench-print.h"
#include "bench-split.h"
#include "bench.h"
#include "hiar.h"

/* ---- errors */

/* Setup and CUDA failures end the job: the CUDA context is lost anyway. */
__attribute__((format(printf, 1, 2), noreturn)) void bench_die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    int rank = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hiar-bench: rank %d: %s\n", rank, msg); /* one write: ranks interleave */
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* ---- implementations: one allreduce of `count` elements each */

static int is_hiar(int impl)
{
    return impl == IMPL_HIAR || impl == IMPL_HIAR_INTRA || impl == IMPL_HIAR_FLAT;
}

/* The hiar communicator an implementation calls; NULL: not made (flat: n/a). */
static hiar_comm_t *comm_of(const bench_t *b, int impl)
{
    switch (impl) {
    case IMPL_HIAR_INTRA: return b->split.intra;
    case IMPL_HIAR_FLAT: return b->split.flat;
    default: return b->comm;
    }
}

static run_t run_hiar(bench_t *b, int impl, size_t count)
{
    hiar_stream_t stream = NULL;
    hiar_result_t rc;

#ifdef HIAR_HAVE_CUDA
    stream = b->stream;
#endif
    rc = hiar_allreduce(b->send, b->recv, count, b->opt.dtype, b->opt.op, comm_of(b, impl), stream);
    if (rc == HIAR_SUCCESS)
        return RUN_OK;
    if (rc == HIAR_UNSUPPORTED && b->device) {
        snprintf(b->na_reason[impl], sizeof b->na_reason[impl], "%s", hiar_last_error());
        return RUN_NA;
    }
    fprintf(stderr, "hiar-bench: rank %d: %s: hiar_allreduce: %s: %s\n", b->rank,
            bench_impls[impl].name, hiar_strerror(rc), hiar_last_error());
    return RUN_FAILED;
}

/* Indexed by IMPL_*; hiar's setup and teardown are the bench's own (bench.h says why). */
const bench_impl_t bench_impls[IMPL_COUNT] = {
    [IMPL_HIAR] = {"hiar", NULL, run_hiar, NULL},
    [IMPL_MPI] = {"mpi", NULL, bench_mpi_run, NULL},
#ifdef HIAR_HAVE_NCCL
    [IMPL_NCCL] = {"nccl", bench_nccl_setup, bench_nccl_run, bench_nccl_teardown},
#else
    [IMPL_NCCL] = {"nccl", NULL, NULL, NULL}, /* not built: options reject it */
#endif
#ifdef BENCH_NCCL_SYM
    [IMPL_NCCL_SYM] = {"nccl-sym", bench_nccl_sym_setup, bench_nccl_run, bench_nccl_sym_teardown},
#else
    [IMPL_NCCL_SYM] = {"nccl-sym", NULL, NULL, NULL}, /* options reject it */
#endif
    [IMPL_HIAR_INTRA] = {"hiar-intra", NULL, run_hiar, NULL},
    [IMPL_MPI_SHARD] = {"mpi-shard", NULL, bench_mpi_run_shards, NULL},
    [IMPL_MPI_LINK] = {"mpi-link", NULL, bench_mpi_run_shards, NULL}, /* its buffers: split_setup's */
    [IMPL_HIAR_FLAT] = {"hiar-flat", NULL, run_hiar, NULL},
};

static run_t run_once(bench_t *b, int impl, size_t count)
{
    return bench_impls[impl].run ? bench_impls[impl].run(b, impl, count) : RUN_FAILED;
}

/* ---- measuring */

run_t bench_agree(run_t status)
{
    int v = (int)status;

    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return (run_t)v;
}

/* `n` calls back to back, up to the first that does not succeed. */
static run_t run_many(bench_t *b, int impl, size_t count, int n)
{
    run_t status = RUN_OK;

    for (int i = 0; i < n && status == RUN_OK; i++) {
        status = run_once(b, impl, count);
        if (b->opt.sync)
            bench_stream_sync(b);
    }
    return status;
}

/*
 * Float AVG: hiar and MPI divide the exact sum once (1 ulp); NCCL sums
 * inputs pre-multiplied by 1/n, rounding every term and partial sum.
 */
int bench_avg_ulps(const bench_t *b, int impl)
{
    if (b->opt.op != HIAR_AVG)
        return 0;
    return impl == IMPL_NCCL || impl == IMPL_NCCL_SYM ? 2 * b->nranks : 1;
}

/*
 * hiar reports a failure of an asynchronous call (device buffers: a kernel
 * that gave up on a peer) only afterwards; ask once the stream is idle.
 */
run_t bench_async_status(bench_t *b, int impl, run_t status)
{
    hiar_result_t error = HIAR_SUCCESS, rc;

    if (status != RUN_OK || !is_hiar(impl) || !b->device)
        return status;
    rc = hiar_comm_get_async_error(comm_of(b, impl), &error);
    if (rc == HIAR_SUCCESS && error == HIAR_SUCCESS)
        return RUN_OK;
    fprintf(stderr, "hiar-bench: rank %d: %s: hiar_allreduce on the GPU: %s: %s\n", b->rank,
            bench_impls[impl].name, hiar_strerror(rc != HIAR_SUCCESS ? rc : error), hiar_last_error());
    return RUN_FAILED;
}

/*
 * The ranks whose inputs an implementation reduces, and this rank's index
 * among them: --split's intra reduces over this rank's group only.
 */
static void reduced_ranks(const bench_t *b, int impl, int *rank, int *nranks)
{
    *rank = impl == IMPL_HIAR_INTRA ? b->split.local_rank : b->rank;
    *nranks = impl == IMPL_HIAR_INTRA ? b->split.local_size : b->nranks;
}

/* One call on fresh inputs; *wrong: elements off the reference, summed over ranks. */
static run_t check(bench_t *b, int impl, size_t count, long long *wrong)
{
    size_t bytes = count * b->esize;
    long long mine;
    run_t status;
    int rank, nranks;

    reduced_ranks(b, impl, &rank, &nranks);
    bench_check_fill(b->host, count, b->opt.dtype, b->opt.op, rank, nranks);
    bench_copy(b, buffer_of(b, impl, 0), b->host, bytes);
    if (!b->opt.inplace)
        bench_poison(b, buffer_of(b, impl, 1), bytes);
    status = run_once(b, impl, count);
    bench_stream_sync(b);
    status = bench_agree(bench_async_status(b, impl, status));
    if (status != RUN_OK)
        return status;
    bench_copy(b, b->host, buffer_of(b, impl, 1), bytes);
    mine = (long long)bench_check_count(b->host, count, b->opt.dtype, b->opt.op, nranks,
                                        bench_avg_ulps(b, impl));
    MPI_Allreduce(&mine, wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return RUN_OK;
}

static run_t warm_up(bench_t *b, int impl, size_t count)
{
    run_t status = run_many(b, impl, count, b->opt.warmup);

    bench_stream_sync(b);
    return bench_agree(bench_async_status(b, impl, status));
}

/* The slowest rank's value of a time (every rank gets it). */
static double slowest_of(double mine)
{
    double slowest;

    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* n timed calls after a barrier: *seconds per call on this rank. */
static run_t time_many(bench_t *b, int impl, size_t count, int n, double *seconds)
{
    run_t status;
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    status = run_many(b, impl, count, n);
    bench_stream_sync(b);
    *seconds = (MPI_Wtime() - t0) / n;
    return bench_agree(bench_async_status(b, impl, status));
}

static run_t time_eager(bench_t *b, int impl, size_t count, double *seconds)
{
    run_t status = warm_up(b, impl, count);

    return status != RUN_OK ? status : time_many(b, impl, count, b->opt.iters, seconds);
}

#ifdef HIAR_HAVE_CUDA
/* MPI calls cannot be captured in a graph: they stay eager under --graph. */
static int is_mpi(int impl)
{
    return impl == IMPL_MPI || impl == IMPL_MPI_SHARD || impl == IMPL_MPI_LINK;
}
#endif

/* Whether impl's calls are timed in a CUDA graph (--graph; not MPI's). */
static int graphed(const bench_t *b, int impl)
{
#ifdef HIAR_HAVE_CUDA
    return b->opt.graph && !is_mpi(impl);
#else
    (void)b;
    (void)impl;
    return 0;
#endif
}

#ifdef HIAR_HAVE_CUDA
/* ITERS calls captured into *exec; the warm-up runs eagerly first (NCCL connects then). */
static run_t capture(bench_t *b, int impl, size_t count, cudaGraphExec_t *exec)
{
    cudaGraph_t graph = NULL;
    cudaError_t err;
    run_t status = warm_up(b, impl, count);

    if (status != RUN_OK)
        return status;
    CUDA_DIE(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
    status = run_many(b, impl, count, b->opt.iters);
    err = cudaStreamEndCapture(b->stream, &graph);
    if (status == RUN_OK && err != cudaSuccess) {
        fprintf(stderr, "hiar-bench: rank %d: %s calls cannot be captured in a CUDA graph: %s\n",
                b->rank, bench_impls[impl].name, cudaGetErrorString(err));
        status = RUN_FAILED;
    }
    (void)cudaGetLastError(); /* a broken capture's error is not sticky: forget it */
    status = bench_agree(status);
    if (status == RUN_OK)
        CUDA_DIE(cudaGraphInstantiateWithFlags(exec, graph, 0));
    if (graph)
        cudaGraphDestroy(graph);
    return status;
}

/* One replay after a barrier: *seconds on this rank. */
static run_t replay(bench_t *b, int impl, cudaGraphExec_t exec, int times, double *seconds)
{
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int r = 0; r < times; r++)
        CUDA_DIE(cudaGraphLaunch(exec, b->stream));
    bench_stream_sync(b);
    *seconds = MPI_Wtime() - t0;
    return bench_agree(bench_async_status(b, impl, RUN_OK));
}

/*
 * -n auto: replays of the graph back to back, as many as take about
 * BENCH_AUTO_SECONDS on the slowest rank (1 to BENCH_AUTO_MAX_REPLAYS),
 * judged from one: a replay of 20 calls of 2-3 us alone is timed with a
 * launch and a stream sync of about 5 us each on the GPU machine (a VM), up
 * to 0.5 us a call; back to back, each launch overlaps the replay before it.
 */
static run_t time_graph(bench_t *b, int impl, size_t count, double *seconds)
{
    cudaGraphExec_t exec;
    run_t status = capture(b, impl, count, &exec);
    double one = 0.0, slowest;
    int replays = 1;

    if (status != RUN_OK)
        return status;
    status = replay(b, impl, exec, 1, &one); /* the first replay uploads the graph */
    if (status == RUN_OK && b->opt.iters_auto && !b->opt.overlap) {
        status = replay(b, impl, exec, 1, &one);
        slowest = slowest_of(one);
        replays = slowest * BENCH_AUTO_MAX_REPLAYS <= BENCH_AUTO_SECONDS ? BENCH_AUTO_MAX_REPLAYS
                  : slowest >= BENCH_AUTO_SECONDS                        ? 1
                                                                        : (int)(BENCH_AUTO_SECONDS / slowest);
    }
    if (status == RUN_OK)
        status = replay(b, impl, exec, replays, &one);
    *seconds = one / ((double)b->opt.iters * replays);
    cudaGraphExecDestroy(exec);
    return status;
}
#endif

/*
 * --overlap: each call behind OVERLAP_MS of work on the stream, timed from
 * the call to its return: what a training loop waits before it can launch
 * its next kernel.  A call that waits on the host for the GPU takes the
 * whole OVERLAP_MS and more; one that only launches kernels, microseconds.
 * Beside the mean, this rank's median and most of a call (spread): on the
 * GPU machine (a VM) a launch took 4-26 us and a few 40, so a mean of 10
 * calls moved by 10-30 us between machine starts (2026-12-05).
 */
static run_t time_overlap(bench_t *b, int impl, size_t count, double *seconds, double spread[2])
{
    run_t status = warm_up(b, impl, count);
    double total = 0.0, *each = calloc((size_t)b->opt.iters, sizeof(double));
    int n = 0;

    if (!each)
        bench_die("--overlap: cannot allocate %d timings", b->opt.iters);
    for (; n < b->opt.iters && status == RUN_OK; n++) {
        double t0;
        bench_stream_sync(b);
        MPI_Barrier(MPI_COMM_WORLD);
        bench_stream_busy(b, OVERLAP_MS);
        t0 = MPI_Wtime();
        status = run_once(b, impl, count);
        each[n] = MPI_Wtime() - t0;
        total += each[n];
    }
    bench_stream_sync(b);
    *seconds = total / b->opt.iters;
    spread[0] = n ? bench_median(each, n) : 0.0; /* sorts each: its last is the most */
    spread[1] = n ? each[n - 1] : 0.0;
    free(each);
    return bench_agree(bench_async_status(b, impl, status));
}

/* *seconds: this rank's mean per call; spread: --overlap's median and most (else untouched). */
static run_t time_calls(bench_t *b, int impl, size_t count, double *seconds, double spread[2])
{
#ifdef HIAR_HAVE_CUDA
    if (graphed(b, impl))
        return time_graph(b, impl, count, seconds);
#endif
    if (b->opt.overlap)
        return time_overlap(b, impl, count, seconds, spread);
    return time_eager(b, impl, count, seconds);
}

/*
 * -n auto times eager calls in BENCH_AUTO_ROUNDS rounds, the implementations
 * in turn in each, and takes each one's median round: a slow stretch of the
 * machine then falls on both sides of a ratio, or on one round of each.  A
 * round makes as many calls as take about BENCH_AUTO_SECONDS /
 * BENCH_AUTO_ROUNDS on the slowest rank (every rank makes as many), judged
 * from a first timing (calls_per_round); at least ITERS / BENCH_AUTO_ROUNDS,
 * at most BENCH_AUTO_MAX_ITERS in all.  Measured, 2 ranks on a 2-core VM,
 * host buffers: at a fixed 20 calls of each implementation after the other,
 * the quick start's ratio against MPI_Allreduce at 32 B came out 3.31, 1.00
 * and 0.27 in three runs; timed for 20 ms each, but one after the other,
 * 0.96, 0.64 and 1.04.  On the GPU machine one slow launch moved a 4 KB
 * ratio from 0.5 to 0.8 at 20 calls (scripts/gpu-session.sh).
 */
static int in_rounds(const bench_t *b, int impl)
{
    return b->opt.iters_auto && !b->opt.overlap && !graphed(b, impl);
}

/*
 * Warm-up, then the calls per round (*n, the same on every rank), from
 * timings of a round's least calls, doubled (up to a round's most) until
 * they take BENCH_AUTO_PROBE_SECONDS on the slowest rank: a slow call costs
 * a few calls more than the fixed count did, a fast one is timed over
 * enough calls to judge it.
 */
static run_t calls_per_round(bench_t *b, int impl, size_t count, int *n)
{
    int least = (b->opt.iters + BENCH_AUTO_ROUNDS - 1) / BENCH_AUTO_ROUNDS;
    int most = BENCH_AUTO_MAX_ITERS / BENCH_AUTO_ROUNDS, k = least;
    double mine = 0.0, slowest = 0.0, fits;
    run_t status = warm_up(b, impl, count);

    while (status == RUN_OK) {
        status = time_many(b, impl, count, k, &mine);
        slowest = slowest_of(mine);
        if (slowest * k >= BENCH_AUTO_PROBE_SECONDS || k >= most)
            break;
        k = 2 * k < most ? 2 * k : most;
    }
    if (status != RUN_OK)
        return status;
    fits = BENCH_AUTO_SECONDS / BENCH_AUTO_ROUNDS / slowest;
    *n = fits >= most ? most : fits <= least ? least : (int)fits;
    return RUN_OK;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The rounds of every implementation in res still RUN_OK that takes them: time_us their median. */
static void time_rounds(bench_t *b, size_t count, result_t *res)
{
    double t[IMPL_COUNT][BENCH_AUTO_ROUNDS];
    int n[IMPL_COUNT];

    for (int i = 0; i < IMPL_COUNT; i++)
        if (res[i].status == RUN_OK && in_rounds(b, i))
            res[i].status = calls_per_round(b, i, count, &n[i]);
    for (int r = 0; r < BENCH_AUTO_ROUNDS; r++)
        for (int i = 0; i < IMPL_COUNT; i++) {
            double mine = 0.0;
            if (res[i].status != RUN_OK || !in_rounds(b, i))
                continue;
            res[i].status = time_many(b, i, count, n[i], &mine);
            t[i][r] = slowest_of(mine);
        }
    for (int i = 0; i < IMPL_COUNT; i++)
        if (res[i].status == RUN_OK && in_rounds(b, i)) {
            res[i].time_us = bench_median(t[i], BENCH_AUTO_ROUNDS) * 1e6;
        }
}

/*
 * Check, then (unless it takes rounds) warm up and time; an implementation
 * that failed once is not run again, one whose hiar comm could not be made
 * (--split's flat) shows n/a.
 */
static result_t measure(bench_t *b, int impl, size_t count)
{
    result_t r = {RUN_FAILED, 0.0, -1, 0.0, 0.0};
    double seconds = 0.0, spread[2] = {0.0, 0.0};

    if (b->dead[impl])
        return r;
    if (is_hiar(impl) && !comm_of(b, impl)) {
        snprintf(b->na_reason[impl], sizeof b->na_reason[impl], "%s", b->split.flat_na);
        r.status = RUN_NA;
        return r;
    }
    r.status = checked(b, impl) ? check(b, impl, count, &r.wrong) : RUN_OK;
    if (r.status != RUN_OK || in_rounds(b, impl))
        return r;
    r.status = time_calls(b, impl, count, &seconds, spread);
    r.time_us = slowest_of(seconds) * 1e6;
    if (b->opt.overlap) {
        r.median_us = slowest_of(spread[0]) * 1e6;
        r.max_us = slowest_of(spread[1]) * 1e6;
    }
    return r;
}

/* ---- main */

/* A send or receive buffer of the largest size: with --register, hiar's. */
static void *buffer(bench_t *b)
{
    void *p = NULL;
    hiar_result_t rc;

    if (!b->opt.reg)
        return bench_alloc(b, b->opt.max_bytes, 0);
    if ((rc = hiar_mem_alloc(b->comm, b->opt.max_bytes, &p)) != HIAR_SUCCESS)
        bench_die("hiar_mem_alloc: %s: %s", hiar_strerror(rc), hiar_last_error());
    return p;
}

/* Buffers from buffer(); hiar_mem_free before the comm goes (a failed comm frees them itself). */
static void release_buffers(bench_t *b)
{
    void *bufs[2] = {b->recv != b->send ? b->recv : NULL, b->send};

    for (int i = 0; i < 2; i++) {
        if (!bufs[i])
            continue;
        if (!b->opt.reg)
            bench_release(b, bufs[i], 0);
        else if (!b->dead[IMPL_HIAR])
            hiar_mem_free(b->comm, bufs[i]);
    }
}

static void setup(bench_t *b)
{
    const options_t *o = &b->opt;
    hiar_result_t rc;

    b->esize = hiar_dtype_size(o->dtype);
    b->info = o->csv || o->json ? stderr : stdout;
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        bench_device_setup(b);
#endif
    b->host = bench_alloc(b, o->max_bytes, 1);
    bench_mpi_setup(b);
    if (has(b, IMPL_HIAR) && (rc = hiar_comm_create(MPI_COMM_WORLD, NULL, &b->comm)) != HIAR_SUCCESS)
        bench_die("hiar_comm_create: %s: %s", hiar_strerror(rc), hiar_last_error());
    b->send = buffer(b);
    b->recv = o->inplace ? b->send : buffer(b);
    bench_copy_reference(b);
    for (int i = 0; i < IMPL_COUNT; i++)
        if (has(b, i) && bench_impls[i].setup)
            bench_impls[i].setup(b);
}

/* The job's ranks on this rank's GPU, 0 for host buffers.  Collective where device. */
static int gpu_ranks(const bench_t *b)
{
#ifdef HIAR_HAVE_CUDA
    int most;
    if (b->device)
        return bench_gpu_ranks(&most);
#endif
    (void)b;
    return 0;
}

/*
 * --split's communicators, and the link's buffers (they need the groups);
 * 2 (bad usage, err set) when hiar's ranks form one group.
 */
static int split_setup(bench_t *b, char *err)
{
    int rc;

    if (!b->opt.split)
        return 0;
    rc = bench_split_setup(&b->split, b->comm, b->device, gpu_ranks(b), b->opt.flat_only, err, ERR_LEN);
    if (rc == 1)
        bench_die("%s", err);
    if (rc == 0 && has(b, IMPL_MPI_LINK))
        bench_mpi_link_setup(b);
    return rc;
}

static void teardown(bench_t *b)
{
    /* A failed communicator cannot be destroyed collectively: its peers may be gone. */
    for (int i = IMPL_COUNT - 1; i >= 0; i--)
        if (has(b, i) && bench_impls[i].teardown)
            bench_impls[i].teardown(b);
    bench_mpi_link_teardown(b);
    bench_split_teardown(&b->split, b->dead[IMPL_HIAR_INTRA], b->dead[IMPL_HIAR_FLAT]);
    release_buffers(b);
    if (b->comm && b->dead[IMPL_HIAR])
        hiar_comm_abort(b->comm);
    else if (b->comm)
        hiar_comm_destroy(b->comm);
    if (b->mpi_user_op)
        MPI_Op_free(&b->mpi_op);
    if (b->mpi_comm != MPI_COMM_NULL)
        MPI_Comm_free(&b->mpi_comm);
    bench_release(b, b->host, 1);
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        cudaStreamDestroy(b->stream);
#endif
}

/* Every size from -b to -e, every implementation; returns the exit status. */
static int run_sizes(bench_t *b)
{
    const options_t *o = &b->opt;
    totals_t totals[IMPL_COUNT] = {{0}};
    int status = 0;

    bench_print_header(b);
    for (size_t size = o->min_bytes;; size *= (size_t)o->factor) {
        size_t count = size / b->esize;
        result_t res[IMPL_COUNT];
        for (int i = 0; count > 0 && i < IMPL_COUNT; i++) {
            res[i] = (result_t){RUN_NA, 0.0, -1, 0.0, 0.0};
            if (has(b, i))
                res[i] = measure(b, i, count);
        }
        if (count > 0)
            time_rounds(b, count, res);
        for (int i = 0; count > 0 && i < IMPL_COUNT; i++)
            if (has(b, i)) {
                b->dead[i] = b->dead[i] || res[i].status == RUN_FAILED;
                bench_account(&totals[i], b, i, count, &res[i]);
            }
        if (count > 0 && b->rank == 0)
            bench_print_rows(b, count, res);
        if (size > o->max_bytes / (size_t)o->factor)
            break;
    }
    if (b->rank == 0)
        bench_print_footer(b, totals);
    for (int i = 0; i < IMPL_COUNT; i++)
        if (has(b, i) && (totals[i].wrong || totals[i].failed))
            status = 1;
    if (b->rank == 0 && bench_print_close(b))
        status = 1;
    return status;
}

/* --tune: a comm that measures its choices now and writes the cache; rank 0 prints how it chose.  Where
 * every rank has a GPU (host mode too: the device paths are tuned as well) each takes its own, as an
 * application's ranks would: timings of ranks crowded on one GPU are no guide for them. */
static int run_tune(bench_t *b)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm;
    hiar_result_t rc;

#ifdef HIAR_HAVE_CUDA
    if (b->ngpu > 0)
        bench_device_setup(b);
#endif
    cfg.settings = "HIAR_TUNE=1";
    if ((rc = hiar_comm_create(MPI_COMM_WORLD, &cfg, &comm)) != HIAR_SUCCESS) {
        if (b->rank == 0)
            fprintf(stderr, "hiar-bench --tune: hiar_comm_create: %s: %s\n", hiar_strerror(rc), hiar_last_error());
        return 1;
    }
    if (b->rank == 0)
        hiar_comm_describe(comm, stdout);
    hiar_comm_destroy(comm);
    return 0;
}

int main(int argc, char **argv)
{
    bench_t b = {0};
    char err[ERR_LEN] = "";
    int rc;

    b.mpi_comm = MPI_COMM_NULL;
    int mpi_thread_level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    rc = bench_parse_options(argc, argv, &b.opt, err);
    if (rc == 0)
        rc = bench_resolve_mode(&b, err);
    if (rc == 0)
        rc = bench_print_open(&b, err);
    if (rc != 0) {
        if (b.rank == 0 && rc == 1)
            bench_usage(stdout);
        else if (b.rank == 0)
            fprintf(stderr, "hiar-bench: %s\nTry 'hiar-bench --help'.\n", err);
        MPI_Finalize();
        return rc == 1 ? 0 : 2;
    }
    if (b.opt.tune) {
        rc = run_tune(&b);
        MPI_Finalize();
        return rc;
    }
    setup(&b);
    rc = split_setup(&b, err);
#ifdef HIAR_HAVE_CUDA
    if (rc == 0 && b.opt.decode)
        rc = bench_decode(&b);
    else if (rc == 0 && b.opt.train)
        rc = bench_train(&b);
    else
#endif
    if (rc == 0)
        rc = run_sizes(&b);
    else if (b.rank == 0)
        fprintf(stderr, "hiar-bench: %s\n", err);
    teardown(&b);
    MPI_Finalize();
    return rc;
}
