/*
 * Tuning of device buffers at creation: every path the plan can take at a
 * size of the device ladder (one group's LL, push, pull and two-shot
 * kernels, two-shot also with half and twice its blocks, and on CUDA IPC
 * the kernels over pinned host memory; over groups, the group over the
 * host against the hierarchical paths, their one kernel also with half and
 * twice its blocks) checked on a small sum, timed on bfloat16 and float32, eagerly and
 * as replays of a captured CUDA graph, agreed, and chosen per mode where
 * faster on both dtypes (core/tune_cache.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/wait.h"
#include "core/plan.h"
#include "core/run.h"
#include "core/tune_device.h"
#include "net/coll.h"

hiar_result_t hiar_tune_agree(MPI_Comm mpi, double *us, int n, uint64_t start, double *seconds)
{
    double *agreed = malloc(sizeof(double) * ((size_t)n + 1));
    hiar_result_t rc;

    if (!agreed)
        return hiar_error_set(HIAR_NO_MEMORY, "tuning: cannot allocate the agreement of %d timings", n);
    memcpy(agreed, us, sizeof(double) * (size_t)n);
    agreed[n] = (double)(hiar_now_ns() - start) / 1e9;
    rc = hiar_net_max_double(mpi, agreed, n + 1);
    if (rc == HIAR_SUCCESS) {
        memcpy(us, agreed, sizeof(double) * (size_t)n);
        *seconds = agreed[n];
    }
    free(agreed);
    return rc;
}

hiar_result_t hiar_tune_skew(const hiar_comm_t *comm, double *factor)
{
    const char *text = comm->params.v[HIAR_P_TUNE_TEST_SKEW].text;
    int rank, used = 0;
    double f;

    *factor = 1.0;
    if (!*text)
        return HIAR_SUCCESS;
    if (sscanf(text, "%d:%lf%n", &rank, &f, &used) != 2 || text[used] || f <= 0)
        return hiar_error_set(HIAR_INVALID_ARGUMENT, "HIAR_TUNE_TEST_SKEW=%s: expected RANK:FACTOR, e.g. 1:10",
                              text);
    if (rank == comm->rank)
        *factor = f;
    return HIAR_SUCCESS;
}

void hiar_tune_canary_fill(const hiar_comm_t *comm, int32_t *values, size_t count)
{
    for (size_t i = 0; i < count; i++)
        values[i] = (comm->rank + 1) * (int32_t)(i % 97 + 1);
}

int hiar_tune_canary_ok(const hiar_comm_t *comm, const char *candidate, int32_t *sums, size_t count)
{
    int32_t n = comm->size;

    if (comm->rank == 0 && strcmp(comm->params.v[HIAR_P_TUNE_TEST_FAIL].text, candidate) == 0)
        sums[count / 2]++;
    for (size_t i = 0; i < count; i++)
        if (sums[i] != (int32_t)(i % 97 + 1) * n * (n + 1) / 2)
            return 0;
    return 1;
}

/* Whether the choices of some mode name candidate k at some size. */
static int chooses(const hiar_tune_limits_t *l, int k)
{
    for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
        if (memchr(l->device[m], k, (size_t)l->device_n))
            return 1;
    return 0;
}

/* A cache's choice of the pinned-host transport that this comm cannot take (rank 0 says it once). */
static void pinned_not_taken(const hiar_comm_t *comm, const char *why)
{
    if (comm->rank == 0)
        HIAR_WARN(INIT, "tuning cache %s: its choice of the pinned-host transport is not taken (%s); those sizes "
                        "take the built-in paths",
                  comm->tune.path, why);
}

#ifdef HIAR_HAVE_CUDA
#include "cuda/api.h"
#include "transport/kernels.h"

/* The whole ladder's time bound, checked after each size (every rank stops after the same one). */
#define DEV_BUDGET_NS (3000ull * 1000 * 1000)
/* Timed calls per candidate, size and round: about 64 MB moved, 3 to 200 calls; the best of 3 rounds,
 * the candidates alternating (as on host buffers). */
#define DEV_BYTES_PER_ROUND ((size_t)64 << 20)
#define DEV_ROUNDS 3
/* Calls per captured graph: replays of 20 calls (of the 3-200 above) take as long as 20 eager ones' GPU time,
 * and its capture and instantiation stay under a millisecond.  Large messages, timed in 3 to 20 calls, put
 * only that many in a graph: 20 calls of 256 MB take 40 ms on 4 ranks of one H200, and the ladder's time
 * bound stopped it at 64 MB there. */
#define DEV_GRAPH_CALLS 20

/* Over groups: the group over the host or the step between groups on the GPU (agreed at their setup); one group:
 * its kernels (agreed in the group, the comm). */
int hiar_tune_device_applies(const hiar_comm_t *comm, char *why, size_t len)
{
    const hiar_gpu_t *gpu = comm->gpu;
    int groups = gpu && gpu->side.tier.groups.ngroups > 1;

    if (hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_AUTO || hiar_comm_param(comm, HIAR_P_ONESHOT_MAX))
        snprintf(why, len, "device buffers: HIAR_ALGO or HIAR_ONESHOT_MAX is set");
    else if (groups && hiar_comm_param(comm, HIAR_P_FLAT_MAX))
        snprintf(why, len, "device buffers over groups: HIAR_FLAT_MAX is set");
    else if (groups && !gpu->flat.tp && !gpu->between.on_gpu)
        snprintf(why, len, "device buffers over groups: no group over the host, and the step between groups is "
                           "not on the GPU");
    else if (!groups && !hiar_gpu_has_kernels(gpu))
        snprintf(why, len, "device buffers: no group of GPU kernels");
    else
        return 1;
    return 0;
}

/* The plan of a call of bytes along candidate k (BUILTIN: the plan's own); *taken: whether it is k. */
static hiar_plan_t plan_along(const hiar_comm_t *comm, int k, size_t bytes, hiar_plan_input_t *in, int *taken)
{
    unsigned char all[HIAR_TUNE_DEV_NSIZES];
    hiar_plan_t p;

    memset(all, k, sizeof(all));
    hiar_comm_plan_input(comm, 1, bytes, in);
    in->floating = 1; /* tuning times bfloat16 and float32 */
    in->tuned_device = all;
    in->tuned_device_n = k == HIAR_TUNE_DEV_BUILTIN ? 0 : HIAR_TUNE_DEV_NSIZES;
    p = hiar_plan_choose(in);
    in->tuned_device = NULL;
    *taken = hiar_plan_tune_candidate(p) == k;
    return p;
}

/* Calls along a candidate's plan: count elements of dtype on device buffers, on stream (NULL: the legacy one). */
typedef struct {
    hiar_comm_t *comm;
    hiar_plan_t p;
    const hiar_plan_input_t *in;
    const void *send;
    void *recv;
    size_t count;
    hiar_dtype_t dtype;
    void *stream;
    size_t graph_calls; /* calls per captured graph */
} along_t;

/* One call along a. */
static hiar_result_t run_along(const along_t *a)
{
    hiar_comm_t *comm = a->comm;
    hiar_call_t c = {.sendbuf = a->send, .recvbuf = a->recv, .count = a->count, .esize = hiar_dtype_size(a->dtype),
                     .dtype = a->dtype, .op = HIAR_SUM, .device = 1, .device_known = 1, .stream = a->stream};
    hiar_wait_t wait = hiar_comm_wait(comm, "tuning");

    c.wait = &wait;
    c.plan = a->p;
    c.nshards = hiar_plan_nshards(a->in, a->p);
    return hiar_run(comm, &c);
}

/* A graph's worth of calls along arg (an along_t), for hiar_cuda_graph_capture. */
static hiar_result_t run_graph_calls(void *arg)
{
    const along_t *a = arg;

    for (size_t i = 0; i < a->graph_calls; i++)
        HIAR_CHECK(run_along(a));
    return HIAR_SUCCESS;
}

/* The bytes candidate k's check sums: HIAR_TUNE_CANARY_COUNT int32, or where k is no path at that size the
 * smallest ladder size above where it is one (the one kernel over groups' block counts: megabytes); 0: none. */
static size_t canary_bytes(hiar_comm_t *comm, int k)
{
    size_t least = HIAR_TUNE_CANARY_COUNT * sizeof(int32_t);
    hiar_plan_input_t in;
    int taken;

    for (int i = -1; i < HIAR_TUNE_DEV_NSIZES; i++) {
        size_t bytes = i < 0 ? least : hiar_tune_dev_size(i);
        if (bytes < least)
            continue;
        plan_along(comm, k, bytes, &in, &taken);
        if (taken)
            return bytes;
    }
    return 0;
}

/* The canary: candidate k sums known int32 right on this rank (HIAR_TUNE_TEST_FAIL spoils one on rank 0); no
 * host memory for the check fails it. */
static hiar_result_t canary(hiar_comm_t *comm, int k, void *send, void *recv, int *ok)
{
    size_t bytes = canary_bytes(comm, k), count = bytes / sizeof(int32_t);
    int32_t *host = bytes ? malloc(bytes) : NULL;
    hiar_plan_input_t in;
    int taken;
    hiar_plan_t p = plan_along(comm, k, bytes, &in, &taken);
    hiar_result_t rc = HIAR_SUCCESS;

    *ok = !bytes; /* not a path at any size: nothing to check */
    if (!host)
        return HIAR_SUCCESS;
    hiar_tune_canary_fill(comm, host, count);
    rc = hiar_cuda_copy(send, host, bytes, NULL);
    memset(host, 0xff, bytes);
    if (rc == HIAR_SUCCESS)
        rc = hiar_cuda_copy(recv, host, bytes, NULL);
    if (rc == HIAR_SUCCESS)
        rc = run_along(&(along_t){comm, p, &in, send, recv, count, HIAR_INT32, NULL, 0});
    if (rc == HIAR_SUCCESS)
        rc = hiar_cuda_copy(host, recv, bytes, NULL);
    if (rc == HIAR_SUCCESS)
        *ok = hiar_tune_canary_ok(comm, hiar_tune_dev_name(k), host, count);
    free(host);
    return rc;
}

/* One eager call along a (exec unused), or one replay of the graph exec: a round of time_rounds. */
static hiar_result_t eager_call(const along_t *a, void *exec)
{
    (void)exec;
    return run_along(a);
}

static hiar_result_t graph_replay(const along_t *a, void *exec)
{
    return hiar_cuda_graph_launch(exec, a->stream);
}

/*
 * Nanoseconds of n rounds on a's stream, after one that starts them (a
 * graph's upload); a rank whose first round failed tells the others, which
 * would wait for it in the barrier and the timed rounds.
 */
static hiar_result_t time_rounds(const along_t *a, hiar_result_t (*once)(const along_t *, void *), void *exec,
                                 size_t n, uint64_t *ns)
{
    hiar_result_t rc = once(a, exec);
    uint64_t t0;

    if (rc == HIAR_SUCCESS)
        rc = hiar_cuda_sync(a->stream);
    HIAR_CHECK(hiar_net_agree(a->comm->mpi, rc, "tuning: a first call"));
    HIAR_CHECK(hiar_net_barrier(a->comm->mpi));
    t0 = hiar_now_ns();
    for (size_t i = 0; i < n; i++)
        HIAR_CHECK(once(a, exec));
    HIAR_CHECK(hiar_cuda_sync(a->stream));
    *ns = hiar_now_ns() - t0;
    return HIAR_SUCCESS;
}

/* Nanoseconds of replays of a graph of a->graph_calls calls along a (its capture agreed over the comm). */
static hiar_result_t time_graph(const along_t *a, size_t replays, uint64_t *ns)
{
    void *exec = NULL;
    hiar_result_t rc = hiar_cuda_graph_capture(a->stream, run_graph_calls, (void *)a, &exec);

    rc = hiar_net_agree(a->comm->mpi, rc, "tuning: a captured graph");
    if (rc == HIAR_SUCCESS)
        rc = time_rounds(a, graph_replay, exec, replays, ns);
    hiar_cuda_graph_destroy(exec);
    return rc;
}

/*
 * Microseconds per call of candidate k on bytes of dtype in mode m, the best
 * of this round and *us (< 0: none yet).  A graph is not timed where the
 * candidate's calls wait on the host (they cannot be captured).
 */
static hiar_result_t time_along(hiar_comm_t *comm, int m, int k, const void *send, void *recv, size_t bytes,
                                hiar_dtype_t dtype, double skew, void *stream, double *us)
{
    size_t iters = DEV_BYTES_PER_ROUND / bytes;
    hiar_plan_input_t in;
    int taken;
    along_t a = {comm, plan_along(comm, k, bytes, &in, &taken), &in, send, recv, bytes / hiar_dtype_size(dtype),
                 dtype, stream, 0};
    uint64_t ns;
    double mean;

    if (!taken || (m == HIAR_TUNE_DEV_GRAPH && hiar_run_waits_on_host(comm, a.p)))
        return HIAR_SUCCESS;
    iters = iters < 3 ? 3 : iters > 200 ? 200 : iters;
    if (m == HIAR_TUNE_DEV_GRAPH) {
        a.graph_calls = iters < DEV_GRAPH_CALLS ? iters : DEV_GRAPH_CALLS;
        iters = (iters + a.graph_calls - 1) / a.graph_calls;
        HIAR_CHECK(time_graph(&a, iters, &ns));
        iters *= a.graph_calls;
    } else
        HIAR_CHECK(time_rounds(&a, eager_call, NULL, iters, &ns));
    mean = (double)ns / 1e3 / (double)iters;
    if (k == HIAR_TUNE_DEV_LL || k == HIAR_TUNE_DEV_FLAT) /* the small-message paths */
        mean *= skew;
    if (*us < 0 || mean < *us)
        *us = mean;
    return HIAR_SUCCESS;
}

/* The candidates of this comm's device buffers: one group's kernels, or the group over the host and the groups. */
static int candidates(const hiar_comm_t *comm, int *cand)
{
    int n = 0;

    if (comm->gpu->side.tier.groups.ngroups > 1) {
        if (comm->gpu->flat.tp)
            cand[n++] = HIAR_TUNE_DEV_FLAT;
        cand[n++] = HIAR_TUNE_DEV_HIER;
        if (comm->gpu->between.on_gpu) { /* the one kernel over groups (core/plan.c): where it is taken */
            cand[n++] = HIAR_TUNE_DEV_HIER_HALF;
            cand[n++] = HIAR_TUNE_DEV_HIER_DOUBLE;
        }
        return n;
    }
    cand[n++] = HIAR_TUNE_DEV_LL;
    cand[n++] = HIAR_TUNE_DEV_PUSH;
    if (hiar_gpu_has_ipc(comm->gpu))
        cand[n++] = HIAR_TUNE_DEV_PULL; /* over CUDA IPC only (core/plan.c) */
    cand[n++] = HIAR_TUNE_DEV_TWOSHOT;
    cand[n++] = HIAR_TUNE_DEV_TWOSHOT_HALF;
    cand[n++] = HIAR_TUNE_DEV_TWOSHOT_DOUBLE;
    if (comm->gpu->alt.tp)
        cand[n++] = HIAR_TUNE_DEV_PINNED;
    return n;
}

/* The timed ladder on stream, each size's candidates alternating over the rounds, dtypes and modes. */
static hiar_result_t ladder(hiar_comm_t *comm, const int *cand, int ncand, void *send, void *recv, void *stream,
                            uint64_t start)
{
    hiar_tune_dev_table_t *t = &comm->tune.dev;
    int stop = 0;
    double skew;

    HIAR_CHECK(hiar_tune_skew(comm, &skew));
    for (t->nsizes = 0; t->nsizes < HIAR_TUNE_DEV_NSIZES && !stop;) {
        int i = t->nsizes++, taken;
        hiar_plan_input_t in;
        t->builtin[i] = (unsigned char)hiar_plan_tune_candidate(
            plan_along(comm, HIAR_TUNE_DEV_BUILTIN, hiar_tune_dev_size(i), &in, &taken));
        for (int r = 0; r < DEV_ROUNDS; r++)
            for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
                for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++)
                    for (int c = 0; c < ncand; c++)
                        if (!t->dropped[cand[c]])
                            HIAR_CHECK(time_along(comm, m, cand[c], send, recv, hiar_tune_dev_size(i),
                                                  hiar_tune_dev_dtype(d), skew, stream, &t->us[m][d][cand[c]][i]));
        stop = hiar_now_ns() - start > DEV_BUDGET_NS;
        HIAR_CHECK(hiar_net_max(comm->mpi, &stop, 1));
    }
    return HIAR_SUCCESS;
}

/* Canaries (agreed: a candidate wrong on any rank is dropped), then the timed ladder, agreed. */
static hiar_result_t measure(hiar_comm_t *comm, void *send, void *recv, double *seconds)
{
    enum { N = HIAR_TUNE_DEV_NMODES * HIAR_TUNE_DEV_NDTYPES * HIAR_TUNE_DEV_COUNT * HIAR_TUNE_DEV_NSIZES };
    hiar_tune_dev_table_t *t = &comm->tune.dev;
    int cand[HIAR_TUNE_DEV_COUNT], ok[HIAR_TUNE_DEV_COUNT], ncand = candidates(comm, cand);
    uint64_t start = hiar_now_ns();
    void *stream = NULL;
    hiar_result_t rc;

    memset(t, 0, sizeof(*t));
    for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
        for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++)
            for (int k = 0; k < HIAR_TUNE_DEV_COUNT; k++)
                for (int i = 0; i < HIAR_TUNE_DEV_NSIZES; i++)
                    t->us[m][d][k][i] = -1.0;
    for (int c = 0; c < ncand; c++)
        HIAR_CHECK(canary(comm, cand[c], send, recv, &ok[c]));
    HIAR_CHECK(hiar_net_min(comm->mpi, ok, ncand));
    for (int c = 0; c < ncand; c++) {
        t->dropped[cand[c]] = !ok[c];
        if (!ok[c] && comm->rank == 0)
            HIAR_WARN(INIT, "tuning: device path %s gave a wrong sum in its check (int32 of known values, %d or "
                            "more): dropped", hiar_tune_dev_name(cand[c]), HIAR_TUNE_CANARY_COUNT);
    }
    rc = hiar_net_agree(comm->mpi, hiar_cuda_stream_create(&stream), "tuning: cudaStreamCreate");
    if (rc == HIAR_SUCCESS)
        rc = ladder(comm, cand, ncand, send, recv, stream, start);
    hiar_cuda_stream_destroy(stream);
    HIAR_CHECK(rc);
    return hiar_tune_agree(comm->mpi, &t->us[0][0][0][0], N, start, seconds);
}

hiar_result_t hiar_tune_device_now(hiar_comm_t *comm, double *seconds)
{
    size_t bytes = hiar_tune_dev_size(HIAR_TUNE_DEV_NSIZES - 1);
    void *send = NULL, *recv = NULL;
    hiar_result_t rc;
    int ok;

    /* Where P2P works, the kernels over pinned host memory are a candidate too (core/gpu.h alt). */
    if (hiar_gpu_alt_applies(comm->gpu))
        HIAR_CHECK(hiar_gpu_alt_setup(comm->gpu, comm->mpi, comm->rank, comm->size));
    rc = hiar_cuda_mem_alloc(comm->gpu->device, bytes, &send);
    if (rc == HIAR_SUCCESS)
        rc = hiar_cuda_mem_alloc(comm->gpu->device, bytes, &recv);
    if (rc == HIAR_SUCCESS) /* zeros: no bf16 bit pattern the LL kernels' marks could mistake */
        rc = hiar_cuda_zero(send, bytes);
    ok = rc == HIAR_SUCCESS;
    rc = hiar_net_min(comm->mpi, &ok, 1);
    if (rc == HIAR_SUCCESS && ok)
        rc = measure(comm, send, recv, seconds);
    else if (rc == HIAR_SUCCESS && comm->rank == 0)
        HIAR_WARN(INIT, "tuning: device paths keep the built-in choices: 2 x %zu bytes of GPU memory for the "
                        "timings could not be allocated on some rank", bytes);
    hiar_cuda_mem_free(send);
    hiar_cuda_mem_free(recv);
    if (rc != HIAR_SUCCESS) /* the comm fails: its teardown takes the pinned-host side too */
        return rc;
    for (int m = 0; ok && m < HIAR_TUNE_DEV_NMODES; m++)
        hiar_tune_dev_choose(&comm->tune.dev, m, comm->tune.limits.device[m]);
    if (ok) {
        comm->tune.limits.device_n = comm->tune.dev.nsizes;
        comm->tune.dev_measured = 1;
    }
    /* Alike on every rank (one agreed table, or none): the pinned-host side stays only where chosen. */
    if (!chooses(&comm->tune.limits, HIAR_TUNE_DEV_PINNED))
        hiar_gpu_alt_free(comm->gpu);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_tune_device_loaded(hiar_comm_t *comm)
{
    /* The choices are rank 0's cache, broadcast: every rank asks alike. */
    int applies = chooses(&comm->tune.limits, HIAR_TUNE_DEV_PINNED);

    if (!applies)
        return HIAR_SUCCESS;
    applies = hiar_gpu_alt_applies(comm->gpu);
    HIAR_CHECK(hiar_net_min(comm->mpi, &applies, 1));
    if (applies)
        HIAR_CHECK(hiar_gpu_alt_setup(comm->gpu, comm->mpi, comm->rank, comm->size));
    if (!applies || !comm->gpu->alt.tp)
        pinned_not_taken(comm, applies ? comm->gpu->alt.why : "the comm is not one group on CUDA IPC");
    return HIAR_SUCCESS;
}
#else
int hiar_tune_device_applies(const hiar_comm_t *comm, char *why, size_t len)
{
    (void)comm;
    snprintf(why, len, "device buffers: built without CUDA");
    return 0;
}

hiar_result_t hiar_tune_device_now(hiar_comm_t *comm, double *seconds)
{
    (void)comm;
    *seconds = 0;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_tune_device_loaded(hiar_comm_t *comm)
{
    if (chooses(&comm->tune.limits, HIAR_TUNE_DEV_PINNED))
        pinned_not_taken(comm, "built without CUDA");
    return HIAR_SUCCESS;
}
#endif
