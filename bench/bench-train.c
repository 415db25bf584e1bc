/*
 * --train: the gradient allreduces of a data-parallel training step, as
 * PyTorch's DDP issues them.  A step runs L backward kernels (--buckets) of
 * a set time on a few SMs (bench-backward.cu), kernel i writing gradient
 * bucket i, and an in-place allreduce of each bucket once its kernel is
 * done, beside the kernels that follow:
 *
 *   compute stream   k0 | k1  | k2  | ... | kL-1
 *   comm stream           ar0 | ar1 | ar2 | ...  | arL-1
 *
 * How the calls are made:
 *   hiar, nccl  as DDP's hooks make them on the autograd thread: kernel i is
 *               queued, an event recorded after it, the comm stream waits on
 *               it and bucket i's call is made, then kernel i+1 is queued.
 *               A call that waits on the host for the GPU delays the next
 *               kernel's launch, and the step time shows it.
 *   mpi         a blocking call, run as its users (and gloo's worker thread)
 *               must: every kernel is queued first, then each bucket waits
 *               for its kernel's event and goes through MPI_Allreduce as
 *               the size sweep calls it (bench-mpi.c: staged through pinned
 *               host memory unless MPI takes device memory).
 * Each call is bench_impls' run, the one the size sweep times.
 *
 * Three phases of -w warm-up and -n timed steps, each step timed from a
 * barrier until both streams are idle: compute (the kernels alone, once for
 * all implementations), comm (the allreduces alone, back to back) and step
 * (both).  A phase's time is the median over steps of the slowest rank's;
 * overlap = (compute + comm - step) / min(compute, comm), 1 when the
 * shorter hides wholly behind the longer, 0 when they take turns; floor:
 * the least step the order allows (pipeline_floor), which step/floor is
 * measured against.  The
 * last step leaves every bucket reduced: it is checked against bench-check.c's
 * reference (a call that ran before its kernel, or beside it, reduced stale
 * data or was overwritten: wrong either way).  The check alone of 8 buckets
 * of 25 MB takes seconds (0.6 s per bucket on the CPU machine).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench-backward.h"
#include "bench-check.h"
#include "bench-mem.h"
#include "bench-print.h"
#include "bench-train.h"

enum { PH_COMPUTE, PH_COMM, PH_STEP, PH_COUNT };

/* Buckets start as cudaMalloc'ed buffers do: the backward kernel and hiar's vector loads want 16 bytes. */
#define BUCKET_ALIGN 256

typedef struct {
    bench_t *b;
    int nb;                /* buckets */
    size_t count, bytes;   /* per bucket */
    size_t stride;         /* from bucket to bucket: bytes rounded up to BUCKET_ALIGN */
    char *grad, *src;      /* nb buckets each, device: the gradients, reduced in place; their inputs */
    cudaStream_t compute;  /* the backward kernels'; the calls run on b->stream */
    cudaEvent_t *ready;    /* per bucket: its kernel is done */
    unsigned long long ns; /* per kernel */
    double *times;         /* per timed step, seconds */
} train_t;

typedef struct {
    run_t status;
    double comm_ms, step_ms;
    long long wrong; /* elements off the reference after the last step, all ranks */
} row_t;

static char *bucket(const train_t *t, char *base, int i)
{
    return base + (size_t)i * t->stride;
}

static void backward(train_t *t, int i)
{
    int rc = bench_backward(bucket(t, t->grad, i), bucket(t, t->src, i), t->bytes, t->b->opt.compute_sms, t->ns,
                            t->compute);

    if (rc != cudaSuccess)
        bench_die("the backward kernel: %s", cudaGetErrorString((cudaError_t)rc));
    CUDA_DIE(cudaEventRecord(t->ready[i], t->compute));
}

/* bench_impls' run reduces b->send into b->recv: for the call both are bucket i (in place: --train sets --inplace). */
static run_t allreduce(train_t *t, int impl, int i)
{
    bench_t *b = t->b;
    void *send = b->send, *recv = b->recv;
    run_t status;

    b->send = b->recv = bucket(t, t->grad, i);
    status = bench_impls[impl].run(b, impl, t->count);
    b->send = send;
    b->recv = recv;
    return status;
}

/* The step of stream-ordered calls: bucket i's call made right after kernel i is queued. */
static run_t step_ordered(train_t *t, int impl)
{
    run_t status = RUN_OK;

    for (int i = 0; i < t->nb && status == RUN_OK; i++) {
        backward(t, i);
        CUDA_DIE(cudaStreamWaitEvent(t->b->stream, t->ready[i], 0));
        status = allreduce(t, impl, i);
    }
    return status;
}

/* The step of a blocking call: the kernels all queued, then each bucket after its kernel. */
static run_t step_blocking(train_t *t, int impl)
{
    run_t status = RUN_OK;

    for (int i = 0; i < t->nb; i++)
        backward(t, i);
    for (int i = 0; i < t->nb && status == RUN_OK; i++) {
        CUDA_DIE(cudaEventSynchronize(t->ready[i]));
        status = allreduce(t, impl, i);
    }
    return status;
}

/* One step of a phase, from idle streams to idle streams. */
static run_t step(train_t *t, int impl, int phase)
{
    run_t status = RUN_OK;

    if (phase == PH_COMPUTE)
        for (int i = 0; i < t->nb; i++)
            backward(t, i);
    else if (phase == PH_COMM)
        for (int i = 0; i < t->nb && status == RUN_OK; i++)
            status = allreduce(t, impl, i);
    else
        status = impl == IMPL_MPI ? step_blocking(t, impl) : step_ordered(t, impl);
    CUDA_DIE(cudaStreamSynchronize(t->compute));
    bench_stream_sync(t->b);
    return status;
}

/* -w, then -n timed steps of a phase; *ms: the median over steps of the slowest rank's time. */
static run_t time_phase(train_t *t, int impl, int phase, double *ms)
{
    bench_t *b = t->b;
    int n = b->opt.iters, warmup = b->opt.warmup;
    run_t status = RUN_OK;

    for (int s = 0; s < warmup + n && status == RUN_OK; s++) {
        double t0;
        /* No kernel writes the buckets here: their inputs are copied in, untimed. */
        if (phase == PH_COMM)
            bench_copy(b, t->grad, t->src, (size_t)t->nb * t->stride);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        status = step(t, impl, phase);
        if (s >= warmup)
            t->times[s - warmup] = MPI_Wtime() - t0;
        status = bench_agree(phase == PH_COMPUTE ? status : bench_async_status(b, impl, status));
    }
    if (status != RUN_OK)
        return status;
    MPI_Allreduce(MPI_IN_PLACE, t->times, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *ms = bench_median(t->times, n) * 1e3;
    return RUN_OK;
}

/* Elements of the buckets off the reference, summed over the ranks. */
static long long wrong_elements(train_t *t, int impl)
{
    bench_t *b = t->b;
    long long mine = 0, all;

    for (int i = 0; i < t->nb; i++) {
        bench_copy(b, b->host, bucket(t, t->grad, i), t->bytes);
        mine += (long long)bench_check_count(b->host, t->count, b->opt.dtype, b->opt.op, b->nranks,
                                             bench_avg_ulps(b, impl));
    }
    MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* A phase of an implementation, the last step checked; a failure marks the implementation dead (teardown aborts). */
static void measure(train_t *t, int impl, int phase, row_t *r)
{
    if (r->status != RUN_OK)
        return;
    r->status = time_phase(t, impl, phase, phase == PH_COMM ? &r->comm_ms : &r->step_ms);
    if (r->status == RUN_OK && phase == PH_STEP && t->b->opt.check)
        r->wrong = wrong_elements(t, impl);
    t->b->dead[impl] = r->status == RUN_FAILED;
}

/* --compute-us, or hiar's comm-only time over the buckets (else the first measured's; else 2 ms), in 10 us steps. */
static unsigned long long kernel_ns(const bench_t *b, const row_t *rows)
{
    double ms = 0;

    if (b->opt.compute_us)
        return (unsigned long long)b->opt.compute_us * 1000;
    for (int i = 0; i < IMPL_MAIN_COUNT && ms == 0; i++)
        if (has(b, i) && rows[i].status == RUN_OK)
            ms = rows[i].comm_ms;
    if (ms == 0)
        return 2000000;
    ms /= b->opt.buckets;
    return ms < 0.01 ? 10000 : (unsigned long long)(ms * 100 + 0.5) * 10000;
}

static void setup(train_t *t, bench_t *b)
{
    t->b = b;
    t->nb = b->opt.buckets;
    t->count = b->opt.bucket_bytes / b->esize;
    t->bytes = t->count * b->esize;
    t->stride = (t->bytes + BUCKET_ALIGN - 1) / BUCKET_ALIGN * BUCKET_ALIGN;
    t->grad = bench_alloc(b, (size_t)t->nb * t->stride, 0);
    t->src = bench_alloc(b, (size_t)t->nb * t->stride, 0);
    t->ready = malloc(sizeof t->ready[0] * (size_t)t->nb);
    t->times = malloc(sizeof t->times[0] * (size_t)b->opt.iters);
    if (!t->ready || !t->times)
        bench_die("cannot allocate --train's tables");
    CUDA_DIE(cudaStreamCreateWithFlags(&t->compute, cudaStreamNonBlocking));
    for (int i = 0; i < t->nb; i++)
        CUDA_DIE(cudaEventCreateWithFlags(&t->ready[i], cudaEventDisableTiming));
    /* b->host holds one bucket (-e is the bucket size): this rank's inputs, the same in every bucket. */
    bench_check_fill(b->host, t->count, b->opt.dtype, b->opt.op, b->rank, b->nranks);
    for (int i = 0; i < t->nb; i++)
        bench_copy(b, bucket(t, t->src, i), b->host, t->bytes);
}

static void teardown(train_t *t)
{
    for (int i = 0; i < t->nb; i++)
        cudaEventDestroy(t->ready[i]);
    cudaStreamDestroy(t->compute);
    bench_release(t->b, t->grad, 0);
    bench_release(t->b, t->src, 0);
    free(t->ready);
    free(t->times);
}

/* ---- output (rank 0) */

static void print_intro(const train_t *t)
{
    const bench_t *b = t->b;
    FILE *out = b->info;

    fprintf(out, "# train: %d buckets of %zu B (%zu %s, %s, in place), each after a backward kernel of %llu us on "
                 "%d SMs (%s; longer if its copy of the bucket takes longer)\n",
            t->nb, t->bytes, t->count, hiar_dtype_name(b->opt.dtype), hiar_op_name(b->opt.op), t->ns / 1000,
            b->opt.compute_sms, b->opt.compute_us ? "--compute-us" : "hiar's comm-only time over the buckets");
    fprintf(out, "# compute: the kernels alone; comm: the allreduces alone, back to back; step: both, hiar and "
                 "nccl called as DDP does (bucket i's call right after kernel i is queued), mpi blocking (all "
                 "kernels queued, then each bucket after its kernel)\n");
    fprintf(out, "# ms: median over %d steps (after %d) of the slowest rank's; busbw: of comm; overlap = (compute "
                 "+ comm - step) / min(compute, comm): 1 all hidden, 0 none; floor: the least step the order "
                 "allows, max(compute + comm / L, compute / L + comm); #wrong: elements of all buckets after the "
                 "last step\n",
            b->opt.iters, b->opt.warmup);
    if (!b->opt.json)
        printf("#%5s %12s %10s %12s %10s %8s %9s %10s %11s %7s\n", "impl", "compute(ms)", "comm(ms)",
               "busbw(GB/s)", "step(ms)", "overlap", "step/max", "floor(ms)", "step/floor", "#wrong");
}

/*
 * The shortest step the order allows, with L equal buckets: bucket i's call
 * starts after kernel i and after call i-1, so either the last call follows
 * the last kernel (compute + comm / L) or the calls run back to back after
 * the first kernel (compute / L + comm).  So step/max cannot reach 1: at
 * compute = comm its floor is 1 + 1/L (9/8 for 8 buckets).
 */
static double pipeline_floor(double compute_ms, double comm_ms, int buckets)
{
    double last_after_kernels = compute_ms + comm_ms / buckets, calls_in_a_row = compute_ms / buckets + comm_ms;

    return last_after_kernels > calls_in_a_row ? last_after_kernels : calls_in_a_row;
}

static void print_row(const train_t *t, int impl, double compute_ms, const row_t *r)
{
    const bench_t *b = t->b;
    double longer = compute_ms > r->comm_ms ? compute_ms : r->comm_ms;
    double shorter = compute_ms > r->comm_ms ? r->comm_ms : compute_ms;
    double overlap = (compute_ms + r->comm_ms - r->step_ms) / shorter;
    double floor_ms = pipeline_floor(compute_ms, r->comm_ms, t->nb);
    double busbw = (double)t->nb * (double)t->bytes / (r->comm_ms * 1e6) * 2.0 * (b->nranks - 1) / b->nranks;
    const char *name = bench_impls[impl].name;
    char wrong[24] = "-";

    if (b->opt.check)
        snprintf(wrong, sizeof wrong, "%lld", r->wrong);
    if (b->opt.json && r->status == RUN_OK)
        printf("{\"mode\":\"train\",\"impl\":\"%s\",\"nranks\":%d,\"dtype\":\"%s\",\"op\":\"%s\",\"buckets\":%d,"
               "\"bucket_bytes\":%zu,\"kernel_us\":%llu,\"compute_ms\":%.4f,\"comm_ms\":%.4f,\"busbw_GBps\":%.3f,"
               "\"step_ms\":%.4f,\"overlap\":%.3f,\"step_over_max\":%.3f,\"floor_ms\":%.4f,"
               "\"step_over_floor\":%.3f,\"wrong\":%lld}\n",
               name, b->nranks, hiar_dtype_name(b->opt.dtype), hiar_op_name(b->opt.op), t->nb, t->bytes,
               t->ns / 1000, compute_ms, r->comm_ms, busbw, r->step_ms, overlap, r->step_ms / longer, floor_ms,
               r->step_ms / floor_ms, b->opt.check ? r->wrong : -1);
    else if (b->opt.json)
        printf("{\"mode\":\"train\",\"impl\":\"%s\",\"nranks\":%d,\"status\":\"%s\"}\n", name, b->nranks,
               r->status == RUN_NA ? "n/a" : "failed");
    else if (r->status == RUN_OK)
        printf("%6s %12.3f %10.3f %12.2f %10.3f %8.2f %9.3f %10.3f %11.3f %7s\n", name, compute_ms, r->comm_ms,
               busbw, r->step_ms, overlap, r->step_ms / longer, floor_ms, r->step_ms / floor_ms, wrong);
    else
        printf("%6s %12s\n", name, r->status == RUN_NA ? "n/a" : "failed");
}

static void print_table(const train_t *t, double compute_ms, const row_t *rows)
{
    const bench_t *b = t->b;

    print_intro(t);
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i))
            print_row(t, i, compute_ms, &rows[i]);
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i) && rows[i].status == RUN_NA && b->na_reason[i][0])
            fprintf(b->info, "# %s n/a: %s\n", bench_impls[i].name, b->na_reason[i]);
    fflush(NULL);
}

int bench_train(bench_t *b)
{
    train_t t = {0};
    row_t rows[IMPL_MAIN_COUNT] = {{0}};
    double compute_ms = 0;
    int bad = 0;

    setup(&t, b);
    bench_print_header(b);
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i))
            measure(&t, i, PH_COMM, &rows[i]);
    t.ns = kernel_ns(b, rows);
    /* No implementation (-1), and RUN_OK: the kernels' failures end the job. */
    (void)time_phase(&t, -1, PH_COMPUTE, &compute_ms);
    for (int i = 0; i < IMPL_MAIN_COUNT; i++) {
        if (!has(b, i))
            continue;
        measure(&t, i, PH_STEP, &rows[i]);
        bad |= rows[i].status == RUN_FAILED || rows[i].wrong != 0;
    }
    if (b->rank == 0)
        print_table(&t, compute_ms, rows);
    teardown(&t);
    return bad;
}
