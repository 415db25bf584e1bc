/* hiar_comm_create / destroy / abort, the live-handle registry, and the comm's state. */
#include "config.h"

#include <pthread.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "core/comm.h"
#include "net/coll.h"

/*
 * Live communicators.  A handle is checked against this list on every call,
 * so using a destroyed comm fails with a message instead of touching freed
 * memory (the registry is small: one entry per communicator).
 */
static struct {
    pthread_mutex_t lock;
    hiar_comm_t **items;
    int count, cap;
} registry = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static int registry_find(const hiar_comm_t *comm)
{
    for (int i = 0; i < registry.count; i++)
        if (registry.items[i] == comm)
            return i;
    return -1;
}

hiar_result_t hiar_comm_register(hiar_comm_t *comm)
{
    hiar_result_t rc = HIAR_SUCCESS;

    pthread_mutex_lock(&registry.lock);
    if (registry.count == registry.cap) {
        int cap = registry.cap ? 2 * registry.cap : 8;
        hiar_comm_t **items = realloc(registry.items, sizeof(*items) * (size_t)cap);
        if (items) {
            registry.items = items;
            registry.cap = cap;
        }
    }
    if (registry.count < registry.cap)
        registry.items[registry.count++] = comm;
    else
        rc = hiar_error_set(HIAR_NO_MEMORY, "cannot grow the list of communicators");
    pthread_mutex_unlock(&registry.lock);
    return rc;
}

hiar_result_t hiar_comm_unregister(hiar_comm_t *comm, const char *call)
{
    int i;

    pthread_mutex_lock(&registry.lock);
    i = registry_find(comm);
    if (i >= 0)
        registry.items[i] = registry.items[--registry.count];
    pthread_mutex_unlock(&registry.lock);
    if (i < 0)
        return hiar_error_set(HIAR_INVALID_USAGE,
                              "%s: comm %p is not a live hiar communicator (destroyed or aborted "
                              "already, or never created)",
                              call, (void *)comm);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_enter(hiar_comm_t *comm, const char *call)
{
    int live;

    if (!comm)
        return hiar_error_set(HIAR_INVALID_ARGUMENT, "%s: comm is NULL", call);
    pthread_mutex_lock(&registry.lock);
    live = registry_find(comm) >= 0;
    if (live && atomic_exchange(&comm->busy, 1)) {
        pthread_mutex_unlock(&registry.lock);
        return hiar_error_set(HIAR_INVALID_USAGE,
                              "%s: another thread is using this communicator; calls on one comm "
                              "must come from one thread at a time",
                              call);
    }
    pthread_mutex_unlock(&registry.lock);
    if (!live)
        return hiar_error_set(HIAR_INVALID_USAGE,
                              "%s: comm %p is not a live hiar communicator (destroyed or aborted, "
                              "or never created)",
                              call, (void *)comm);
    if (comm->failed != HIAR_SUCCESS) {
        atomic_store(&comm->busy, 0);
        return hiar_error_set(HIAR_COMM_FAILED,
                              "%s: the communicator failed earlier (%s); call hiar_comm_abort and "
                              "create a new one",
                              call, hiar_strerror(comm->failed));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_check_live(const hiar_comm_t *comm, const char *call)
{
    int live;

    pthread_mutex_lock(&registry.lock);
    live = comm && registry_find(comm) >= 0;
    pthread_mutex_unlock(&registry.lock);
    if (!live)
        return hiar_error_set(comm ? HIAR_INVALID_USAGE : HIAR_INVALID_ARGUMENT,
                              "%s: comm %p is not a live hiar communicator (destroyed or aborted, or "
                              "never created)",
                              call, (const void *)comm);
    return HIAR_SUCCESS;
}

int hiar_comm_checks_globally(const hiar_comm_t *comm)
{
    return hiar_comm_check_live(comm, "hiar_allreduce") == HIAR_SUCCESS &&
           hiar_comm_param(comm, HIAR_P_CHECK) == HIAR_ARGCHECK_GLOBAL;
}

void hiar_comm_leave(hiar_comm_t *comm)
{
    atomic_store(&comm->busy, 0);
}

void hiar_comm_fail(hiar_comm_t *comm, hiar_result_t rc)
{
    if (comm->failed == HIAR_SUCCESS) {
        comm->failed = rc;
        HIAR_WARN(INIT, "communicator failed: %s", hiar_last_error());
    }
}

const char *hiar_version(void)
{
    return HIAR_VERSION_STRING;
}

hiar_result_t hiar_comm_scratch(hiar_comm_t *comm, char **scratch)
{
    if (!comm->scratch && !(comm->scratch = malloc(HIAR_MPI_SCRATCH_BYTES)))
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %zu bytes of MPI scratch", HIAR_MPI_SCRATCH_BYTES);
    *scratch = comm->scratch;
    return HIAR_SUCCESS;
}

hiar_wait_t hiar_comm_wait(hiar_comm_t *comm, const char *what)
{
    hiar_wait_t w = hiar_wait_begin((int)hiar_comm_param(comm, HIAR_P_TIMEOUT_MS), &comm->abort, what);

    w.spin_ns = comm->spin_ns;
    return w;
}

void hiar_comm_plan_input(const hiar_comm_t *comm, int device, size_t bytes, hiar_plan_input_t *in)
{
    const hiar_tier_t *host = &comm->host.tier;

    memset(in, 0, sizeof(*in));
    in->nranks = comm->size;
    in->ngroups = in->host_ngroups = host->groups.ngroups;
    in->host_nshards = host->nshards;
    in->bytes = bytes;
    in->algo = (int)hiar_comm_param(comm, HIAR_P_ALGO);
    in->oneshot_max = (size_t)hiar_comm_param(comm, HIAR_P_ONESHOT_MAX);
    in->slot_bytes = (size_t)hiar_comm_param(comm, HIAR_P_BUFFER_SIZE);
    in->shm_free = comm->shm_free;
    in->machine_ranks = comm->machine_ranks;
    in->tuned = comm->tune.from != HIAR_TUNED_DEFAULTS;
    in->tuned_shm_oneshot_max = comm->tune.limits.shm_oneshot_max;
    in->tuned_hier_oneshot_max = comm->tune.limits.hier_oneshot_max;
    in->tuned_device = comm->tune.limits.device[HIAR_TUNE_DEV_EAGER]; /* captured calls: hiar_comm_plan_captured */
    in->tuned_device_n = in->tuned ? comm->tune.limits.device_n : 0;
#ifdef HIAR_HAVE_CUDA
    in->ipc_ll_max = hiar_ipc_oneshot_max();
    /* Device buffers follow the device grouping (topology), host ones the host's. */
    in->device = device;
    if (device && comm->gpu) {
        in->ngroups = comm->gpu->side.tier.groups.ngroups;
        in->device_nshards = comm->gpu->side.tier.nshards;
        in->ipc = hiar_gpu_has_kernels(comm->gpu);
        in->self = hiar_gpu_has_self(comm->gpu);
        in->pinned = comm->gpu->pinned;
        in->device_slot = comm->gpu->hier_slot == LLONG_MAX ? 0 : (size_t)comm->gpu->hier_slot;
        in->hier_ready = in->ngroups > 1 && comm->gpu->hier_ok;
        in->between_gpu = comm->gpu->between.on_gpu;
        in->between_slot = comm->gpu->between.slot;
        in->device_spread = comm->gpu->between.spread;
        in->hosts_async = comm->gpu->hosts != NULL;
        in->hosts_whole = comm->gpu->hosts_whole;
        in->hosts_alone_extra = comm->gpu->hosts_alone_extra;
        in->mixed = comm->gpu->mixed;
        in->flat_nranks = comm->gpu->flat.tp ? comm->gpu->flat.tier.local_size : 0;
        in->pinned_alt = comm->gpu->alt.tp != NULL;
        in->flat_max = (size_t)hiar_comm_param(comm, HIAR_P_FLAT_MAX);
    }
#else
    (void)device;
#endif
}

hiar_result_t hiar_comm_plan_captured(const hiar_comm_t *comm, void *stream, hiar_plan_input_t *in)
{
    const hiar_tune_limits_t *l = &comm->tune.limits;
    int i = hiar_tune_dev_bucket(in->bytes, in->tuned_device_n), capturing = 0;

    if (i < 0 || l->device[HIAR_TUNE_DEV_GRAPH][i] == l->device[HIAR_TUNE_DEV_EAGER][i])
        return HIAR_SUCCESS;
#ifdef HIAR_HAVE_CUDA
    HIAR_CHECK(hiar_cuda_is_capturing(stream, &capturing));
#else
    (void)stream;
#endif
    if (capturing)
        in->tuned_device = l->device[HIAR_TUNE_DEV_GRAPH];
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_get_async_error(hiar_comm_t *comm, hiar_result_t *error)
{
    hiar_result_t rc;

    HIAR_ARG_CHECK(error, "hiar_comm_get_async_error: error is NULL");
    rc = hiar_comm_enter(comm, "hiar_comm_get_async_error");
    if (rc == HIAR_COMM_FAILED) {
        *error = HIAR_COMM_FAILED;
        return HIAR_SUCCESS;
    }
    HIAR_CHECK(rc);
#ifdef HIAR_HAVE_CUDA
    rc = hiar_gpu_status(comm->gpu);
    if (rc != HIAR_SUCCESS)
        hiar_comm_fail(comm, rc);
#endif
    hiar_comm_leave(comm);
    *error = rc;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_group(const hiar_comm_t *comm, int device, int *ngroups, int *group,
                              int *local_rank, int *local_size)
{
    const hiar_grouping_t *g;

    HIAR_CHECK(hiar_comm_check_live(comm, "hiar_comm_group"));
    g = device && comm->gpu ? &comm->gpu->side.tier.groups : &comm->host.tier.groups;
    if (ngroups)
        *ngroups = g->ngroups;
    if (group)
        *group = g->group_of[comm->rank];
    if (local_rank)
        *local_rank = g->local_index[comm->rank];
    if (local_size)
        *local_size = hiar_group_size(g, g->group_of[comm->rank]);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_rank(const hiar_comm_t *comm, int *rank)
{
    HIAR_ARG_CHECK(rank, "hiar_comm_rank: rank is NULL");
    HIAR_CHECK(hiar_comm_check_live(comm, "hiar_comm_rank"));
    *rank = comm->rank;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_size(const hiar_comm_t *comm, int *size)
{
    HIAR_ARG_CHECK(size, "hiar_comm_size: size is NULL");
    HIAR_CHECK(hiar_comm_check_live(comm, "hiar_comm_size"));
    *size = comm->size;
    return HIAR_SUCCESS;
}
