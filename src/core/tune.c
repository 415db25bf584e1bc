/* Tuning at creation: the candidates checked, timed and agreed, or the cache read by rank 0 and broadcast. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "core/run.h"
#include "core/tune.h"
#include "core/tune_device.h"
#include "net/coll.h"

/* The measurement's time bound, checked after each size of the ladder (one
 * size more may run past it): the whole stays within about 2 s. */
#define TUNE_BUDGET_NS (1500ull * 1000 * 1000)
/* Timed calls per candidate, size and round: about 16 MB moved, 3 to 300
 * calls.  Rounds alternate the candidates and the best round counts: on a
 * 2-core VM one 50-call sample of a path moved by 16% from run to run. */
#define TUNE_BYTES_PER_ROUND ((size_t)16 << 20)
#define TUNE_ROUNDS 3

/* The crossover this comm has, if any. */
typedef struct {
    hiar_alg_t alg[HIAR_TUNE_NCAND]; /* small path, large path */
    size_t def;                      /* the built-in limit */
    int hier;                        /* 1: hier_oneshot_max, 0: shm_oneshot_max */
    int nsizes;                      /* ladder sizes the small path can take */
} crossover_t;

/* 0 (and why) where nothing is tuned: a pure function of agreed values, the same on every rank; names the candidates. */
static int crossover_of(hiar_comm_t *comm, crossover_t *x, char *why, size_t len)
{
    static const char *const names[2][HIAR_TUNE_NCAND] = {{"oneshot", "twoshot"}, {"hier-oneshot", "hier"}};
    const hiar_tier_t *t = &comm->host.tier;
    size_t fits = HIAR_MPI_SCRATCH_BYTES / ((size_t)t->nshards + 1);

    if (comm->size == 1 || t->groups.ngroups == comm->size) {
        snprintf(why, len, "nothing to tune: every rank alone");
        return 0;
    }
    if (hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_AUTO || hiar_comm_param(comm, HIAR_P_ONESHOT_MAX)) {
        snprintf(why, len, "nothing to tune: HIAR_%s is set", hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_AUTO
                                                                  ? "ALGO"
                                                                  : "ONESHOT_MAX");
        return 0;
    }
    x->hier = t->groups.ngroups > 1;
    x->alg[0] = x->hier ? HIAR_ALG_HIER_ONESHOT : HIAR_ALG_ONESHOT;
    x->alg[1] = x->hier ? HIAR_ALG_HIER : HIAR_ALG_TWOSHOT;
    x->def = x->hier ? HIAR_HIER_ONESHOT_MAX_DEFAULT : hiar_shm_oneshot_default(comm->size);
    /* hier-oneshot's copies of the group sum must fit the MPI scratch (core/plan.c). */
    for (x->nsizes = 0; x->nsizes < HIAR_TUNE_NSIZES && (!x->hier || hiar_tune_size(x->nsizes) <= fits);)
        x->nsizes++;
    comm->tune.table.names[0] = names[x->hier][0];
    comm->tune.table.names[1] = names[x->hier][1];
    return 1;
}

/* One host-buffer call of count int32 along alg, as hiar_allreduce would run it. */
static hiar_result_t run_alg(hiar_comm_t *comm, hiar_alg_t alg, const int32_t *send, int32_t *recv, size_t count)
{
    hiar_call_t c = {.sendbuf = send, .recvbuf = recv, .count = count, .esize = sizeof(int32_t),
                     .dtype = HIAR_INT32, .op = HIAR_SUM, .nshards = comm->host.tier.nshards};
    hiar_wait_t wait = hiar_comm_wait(comm, "tuning");

    c.wait = &wait;
    c.plan.alg = alg;
    c.plan.via = HIAR_VIA_HOST;
    return hiar_run_host(comm, &c);
}

/* *ok: candidate k summed known integers right on this rank (HIAR_TUNE_TEST_FAIL spoils one on rank 0). */
static hiar_result_t canary(hiar_comm_t *comm, const crossover_t *x, int k, int32_t *send, int32_t *recv, int *ok)
{
    hiar_tune_canary_fill(comm, send, HIAR_TUNE_CANARY_COUNT);
    memset(recv, 0xff, HIAR_TUNE_CANARY_COUNT * sizeof(int32_t));
    HIAR_CHECK(run_alg(comm, x->alg[k], send, recv, HIAR_TUNE_CANARY_COUNT));
    *ok = hiar_tune_canary_ok(comm, comm->tune.table.names[k], recv, HIAR_TUNE_CANARY_COUNT);
    return HIAR_SUCCESS;
}

/* Microseconds per call of alg on bytes, the best of this round and *us (< 0: none yet); one warm-up call first. */
static hiar_result_t time_alg(hiar_comm_t *comm, hiar_alg_t alg, int32_t *send, int32_t *recv, size_t bytes,
                              double *us)
{
    size_t iters = TUNE_BYTES_PER_ROUND / bytes;
    uint64_t t0;
    double mean;

    iters = iters < 3 ? 3 : iters > 300 ? 300 : iters;
    HIAR_CHECK(run_alg(comm, alg, send, recv, bytes / sizeof(int32_t)));
    t0 = hiar_now_ns();
    for (size_t i = 0; i < iters; i++)
        HIAR_CHECK(run_alg(comm, alg, send, recv, bytes / sizeof(int32_t)));
    mean = (double)(hiar_now_ns() - t0) / 1e3 / (double)iters;
    if (*us < 0 || mean < *us)
        *us = mean;
    return HIAR_SUCCESS;
}

/* The table: canaries (agreed: a candidate wrong on any rank is dropped), then the timed ladder, agreed. */
static hiar_result_t measure(hiar_comm_t *comm, const crossover_t *x, int32_t *send, int32_t *recv)
{
    enum { N = HIAR_TUNE_NCAND * HIAR_TUNE_NSIZES };
    hiar_tune_table_t *t = &comm->tune.table;
    int ok[HIAR_TUNE_NCAND], stop = 0;
    uint64_t start = hiar_now_ns();
    double skew;

    HIAR_CHECK(hiar_tune_skew(comm, &skew));
    for (int k = 0; k < HIAR_TUNE_NCAND; k++)
        HIAR_CHECK(canary(comm, x, k, send, recv, &ok[k]));
    HIAR_CHECK(hiar_net_min(comm->mpi, ok, HIAR_TUNE_NCAND));
    for (int k = 0; k < HIAR_TUNE_NCAND; k++) {
        t->dropped[k] = !ok[k];
        if (!ok[k] && comm->rank == 0)
            HIAR_WARN(INIT, "tuning: candidate %s gave a wrong sum in its check (%d int32 of known values): "
                            "dropped", t->names[k], HIAR_TUNE_CANARY_COUNT);
    }
    for (int i = 0; i < HIAR_TUNE_NSIZES; i++)
        t->us[0][i] = t->us[1][i] = -1.0;
    for (t->nsizes = 0; t->nsizes < x->nsizes && !stop;) {
        int i = t->nsizes++;
        for (int r = 0; r < TUNE_ROUNDS; r++)
            for (int k = 0; k < HIAR_TUNE_NCAND; k++)
                if (!t->dropped[k])
                    HIAR_CHECK(time_alg(comm, x->alg[k], send, recv, hiar_tune_size(i), &t->us[k][i]));
        t->us[0][i] *= t->us[0][i] > 0 ? skew : 1.0;
        /* The bound must be agreed too: every rank stops after the same size. */
        stop = hiar_now_ns() - start > TUNE_BUDGET_NS;
        HIAR_CHECK(hiar_net_max(comm->mpi, &stop, 1));
    }
    /* The one agreement on the timings, and the time it took: every rank then holds the same table. */
    HIAR_CHECK(hiar_tune_agree(comm->mpi, &t->us[0][0], N, start, &comm->tune.seconds));
    comm->tune.chosen = hiar_tune_choose(t, x->def);
    comm->tune.measured = 1;
    return HIAR_SUCCESS;
}

#ifdef HIAR_HAVE_CUDA
/* The device grouping's sizes, whether ranks share a GPU, whether there is the group over the host: a
 * measurement on ranks that share one GPU is no guide where each has its own. */
static void device_layout(const hiar_gpu_t *gpu, char *out, size_t len)
{
    const hiar_grouping_t *d = &gpu->side.tier.groups;
    size_t n = (size_t)snprintf(out, len, "groups=");

    for (int i = 0; i < d->ngroups && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%d", i ? "," : "", hiar_group_size(d, i));
    if (n < len)
        snprintf(out + n, len - n, " shared=%d flat=%d", gpu->shared_gpu, gpu->flat.tp != NULL);
}
#endif

/* This rank's signature. */
static hiar_result_t signature_of(const hiar_comm_t *comm, char *sig, size_t len)
{
    const hiar_grouping_t *g = &comm->host.tier.groups;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "", gpu[160] = "none", layout[320] = "none";
    int sizes[64], n = 0;
    hiar_tune_facts_t f = {comm->size, g->ngroups < 64 ? g->ngroups : 64, sizes, comm->machines, "shm", "none", mpi,
                           gpu, layout, 0, 0, hiar_shm_oneshot_default(comm->size)};

    for (int i = 0; i < f.ngroups; i++)
        sizes[i] = hiar_group_size(g, i);
    MPI_Get_library_version(mpi, &n);
    mpi[strcspn(mpi, "\n")] = '\0';
    if (comm->host.tp == NULL)
        f.host_transport = "none";
    else
        f.host_slot = comm->host.tp->max_bytes(comm->host.state);
#ifdef HIAR_HAVE_CUDA
    /* The GPU's model, SM count and driver: a cache from another GPU or driver is never read. */
    if (comm->gpu) {
        f.device_transport = comm->gpu->side.tp ? comm->gpu->side.tp->name : "staged";
        hiar_cuda_device_facts(comm->gpu->device, gpu, sizeof(gpu));
        device_layout(comm->gpu, layout, sizeof(layout));
        f.device_slot = comm->gpu->hier_slot == LLONG_MAX ? 0 : (size_t)comm->gpu->hier_slot;
    }
#endif
    return hiar_tune_signature(&f, sig, len);
}

/* What rank 0 found in the cache, for every rank. */
typedef struct {
    int status; /* hiar_tune_cache_t */
    unsigned long long sig_hash;
    hiar_tune_limits_t limits;
    char path[512];
} loaded_t;

/* HIAR_TUNE_CACHE, else the default file of sig; "" (and a WARN) where there is none. */
static void cache_path(const hiar_comm_t *comm, const char *sig, char *path, size_t len)
{
    const char *set = comm->params.v[HIAR_P_TUNE_CACHE].text;

    if (*set)
        snprintf(path, len, "%s", set);
    else if (hiar_tune_default_path(sig, path, len) != HIAR_SUCCESS) {
        HIAR_WARN(INIT, "tuning: %s", hiar_last_error());
        path[0] = '\0';
    }
}

/*
 * HIAR_TUNE=auto: rank 0 reads the cache and broadcasts what it found, so
 * one file is read once (other hosts may have no such file, or another
 * home) and every rank takes the same values by construction; a rank whose
 * own signature differs from rank 0's makes every rank keep the defaults.
 */
static hiar_result_t load(hiar_comm_t *comm, const char *sig)
{
    hiar_tune_t *t = &comm->tune;
    loaded_t got = {HIAR_TUNE_CACHE_ABSENT, 0, {0}, ""};
    int differs;
    char why[3400];

    if (comm->rank == 0) {
        cache_path(comm, sig, got.path, sizeof(got.path));
        got.sig_hash = hiar_tune_hash(sig);
        if (got.path[0])
            got.status = hiar_tune_cache_read(got.path, sig, &got.limits, why, sizeof(why), NULL, 0);
        if (got.status == HIAR_TUNE_CACHE_IGNORED)
            HIAR_WARN(INIT, "tuning cache %s ignored: %s; using the built-in thresholds", got.path, why);
    }
    HIAR_CHECK(hiar_net_bcast(comm->mpi, &got, sizeof(got), 0));
    differs = got.sig_hash != hiar_tune_hash(sig);
    HIAR_CHECK(hiar_net_max(comm->mpi, &differs, 1));
    snprintf(t->path, sizeof(t->path), "%s", got.path);
    if (differs) {
        if (comm->rank == 0)
            HIAR_WARN(INIT, "tuning: the ranks' signatures differ (GPUs or MPI libraries unlike rank 0's); "
                            "using the built-in thresholds");
        snprintf(t->why, sizeof(t->why), "the ranks' signatures differ");
        return HIAR_SUCCESS;
    }
    if (got.status != HIAR_TUNE_CACHE_LOADED) {
        snprintf(t->why, sizeof(t->why), "%s %s", got.status == HIAR_TUNE_CACHE_IGNORED ? "ignored" : "no cache",
                 got.path[0] ? got.path : "(no cache folder)");
        return HIAR_SUCCESS;
    }
    t->limits = got.limits;
    t->from = HIAR_TUNED_CACHE;
    return hiar_tune_device_loaded(comm);
}

/* The host crossover, timed (x NULL: none to time; the built-in limits stand). */
static hiar_result_t tune_host(hiar_comm_t *comm, const crossover_t *x)
{
    hiar_tune_t *t = &comm->tune;
    int32_t *send, *recv;
    hiar_result_t rc;

    t->limits.shm_oneshot_max = hiar_shm_oneshot_default(comm->size);
    t->limits.hier_oneshot_max = HIAR_HIER_ONESHOT_MAX_DEFAULT;
    if (!x)
        return HIAR_SUCCESS;
    send = malloc(hiar_tune_size(HIAR_TUNE_NSIZES - 1));
    recv = malloc(hiar_tune_size(HIAR_TUNE_NSIZES - 1));
    rc = send && recv ? HIAR_SUCCESS : hiar_error_set(HIAR_NO_MEMORY, "tuning: cannot allocate its buffers");
    if (rc == HIAR_SUCCESS) {
        memset(send, 0, hiar_tune_size(HIAR_TUNE_NSIZES - 1));
        rc = measure(comm, x, send, recv);
    }
    free(send);
    free(recv);
    HIAR_CHECK(rc);
    *(x->hier ? &t->limits.hier_oneshot_max : &t->limits.shm_oneshot_max) = t->chosen;
    if (comm->rank == 0)
        HIAR_INFO(INIT, "tuning: %s up to %zu bytes (built-in: %zu), measured in %.2f s", t->table.names[0],
                  t->chosen, x->def, t->seconds);
    return HIAR_SUCCESS;
}

/* HIAR_TUNE=1: measure what applies, take the choices, and rank 0 writes the cache (a failed write only WARNs). */
static hiar_result_t tune_now(hiar_comm_t *comm, const crossover_t *x, int device, const char *sig)
{
    hiar_tune_t *t = &comm->tune;
    double dev_seconds = 0;

    HIAR_CHECK(tune_host(comm, x));
    if (device)
        HIAR_CHECK(hiar_tune_device_now(comm, &dev_seconds));
    if (!t->measured && !t->dev_measured) { /* the device's buffers could not be allocated (WARNed) */
        snprintf(t->why, sizeof(t->why), "nothing measured: no GPU memory for the device timings");
        return HIAR_SUCCESS;
    }
    t->seconds += dev_seconds;
    t->from = HIAR_TUNED_MEASURED;
    if (comm->rank == 0) {
        cache_path(comm, sig, t->path, sizeof(t->path));
        if (t->path[0] && hiar_tune_cache_write(t->path, sig, &t->limits, t->measured ? &t->table : NULL,
                                                t->dev_measured ? &t->dev : NULL, t->seconds) != HIAR_SUCCESS) {
            HIAR_WARN(INIT, "tuning: the cache was not written: %s", hiar_last_error());
            t->path[0] = '\0';
        }
        HIAR_INFO(INIT, "tuning: measured in %.2f s (device paths %.2f s), cache %s", t->seconds, dev_seconds,
                  t->path[0] ? t->path : "not written");
    }
    /* Every rank describes the same cache. */
    return hiar_net_bcast(comm->mpi, t->path, sizeof(t->path), 0);
}

hiar_result_t hiar_tune_comm(hiar_comm_t *comm)
{
    long long mode = hiar_comm_param(comm, HIAR_P_TUNE);
    crossover_t x;
    char sig[1536], dev_why[160] = "";
    int host, device;

    memset(&x, 0, sizeof(x));
    comm->tune.from = HIAR_TUNED_DEFAULTS;
    if (mode == HIAR_TUNE_OFF) {
        snprintf(comm->tune.why, sizeof(comm->tune.why), "HIAR_TUNE=0");
        return HIAR_SUCCESS;
    }
    host = crossover_of(comm, &x, comm->tune.why, sizeof(comm->tune.why));
    device = hiar_tune_device_applies(comm, dev_why, sizeof(dev_why));
    /* One answer for every rank (a rank without a GPU says no): what follows is collective. */
    HIAR_CHECK(hiar_net_min(comm->mpi, &device, 1));
    if (!device && !dev_why[0])
        snprintf(dev_why, sizeof(dev_why), "device buffers: not every rank has GPU kernels");
    if (!host && !device) {
        size_t len = strlen(comm->tune.why);
        snprintf(comm->tune.why + len, sizeof(comm->tune.why) - len, "; %s", dev_why);
        return HIAR_SUCCESS;
    }
    HIAR_CHECK(signature_of(comm, sig, sizeof(sig)));
    return mode == HIAR_TUNE_AUTO ? load(comm, sig) : tune_now(comm, host ? &x : NULL, device, sig);
}
