/* hiar_comm_create / destroy / abort / describe, and the live-handle registry. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/error.h"
#include "net/inter.h"
#include "base/log.h"

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

static hiar_result_t registry_add(hiar_comm_t *comm)
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

/* Removes comm; HIAR_INVALID_USAGE if it was not live. */
static hiar_result_t registry_remove(hiar_comm_t *comm, const char *call)
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

/*
 * Frees what create made; collective = 0: without talking to peers (abort).
 *
 * A failed comm keeps its MPI communicators, its shared segment and its MPI scratch: the
 * call that failed may have left receives posted into them (mpi/inter.c),
 * and a peer that comes late completes them, into the segment and through
 * the communicator.  Freeing them let MPI write into
 * unmapped memory or use a freed communicator: SIGSEGV in the resumed-peer
 * test (tests/mpi/faults-stall.test).  The cost is one failed comm's buffers.
 */
static void comm_free(hiar_comm_t *comm, int collective)
{
    int keep_mpi = comm->failed != HIAR_SUCCESS;

#ifdef HIAR_HAVE_CUDA
    hiar_devcomm_destroy(comm, comm->dev, collective);
#else
    (void)collective;
#endif
    if (!keep_mpi) {
        hiar_shm_destroy(comm->shm);
        hiar_shard_comms_free(comm->nshards, comm->shard_comm);
        if (comm->group_comm != MPI_COMM_NULL)
            MPI_Comm_free(&comm->group_comm);
        if (comm->mpi != MPI_COMM_NULL)
            MPI_Comm_free(&comm->mpi);
        free(comm->scratch);
    } else {
        free(comm->shard_comm);
    }
    hiar_grouping_free(&comm->groups);
    hiar_params_free(&comm->params);
    free(comm);
}

/* The grouping every rank computes from the same gathered host identities. */
static hiar_result_t choose_groups(hiar_comm_t *comm, const char *ids, const char *real_ids)
{
    const char *groups = comm->params.v[HIAR_P_GROUPS].text;
    hiar_grouping_t *g = &comm->groups;

    if (*groups) {
        HIAR_CHECK(hiar_grouping_parse(groups, comm->size, g));
        snprintf(g->why, sizeof(g->why), "HIAR_GROUPS=%s", groups);
    } else if (hiar_comm_param(comm, HIAR_P_GROUP_LEVEL) == HIAR_LEVEL_RANK) {
        int *label = malloc(sizeof(int) * (size_t)comm->size);
        hiar_result_t rc;
        if (!label)
            return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d labels", comm->size);
        for (int r = 0; r < comm->size; r++)
            label[r] = r;
        rc = hiar_grouping_from_labels(label, comm->size, g);
        free(label);
        HIAR_CHECK(rc);
        snprintf(g->why, sizeof(g->why), "HIAR_GROUP_LEVEL=RANK: every rank alone, MPI only");
    } else {
        HIAR_CHECK(hiar_grouping_by_host(ids, comm->size, g));
        snprintf(g->why, sizeof(g->why), "host buffers: one group per host%s",
                 *comm->params.v[HIAR_P_HOST_ID].text ? " (HIAR_HOST_ID)" : "");
    }
    /* Shared memory needs one machine: a group must not span real hosts. */
    for (int r = 0; r < comm->size; r++) {
        int first = g->members[g->start[g->group_of[r]]];
        if (strncmp(real_ids + (size_t)r * HIAR_HOST_ID_MAX,
                    real_ids + (size_t)first * HIAR_HOST_ID_MAX, HIAR_HOST_ID_MAX) != 0)
            return hiar_error_set(HIAR_INVALID_ARGUMENT,
                                  "%s puts ranks %d and %d in one group, but they run on different "
                                  "hosts (%s, %s): a group must share memory",
                                  g->why, first, r, real_ids + (size_t)first * HIAR_HOST_ID_MAX,
                                  real_ids + (size_t)r * HIAR_HOST_ID_MAX);
    }
    return HIAR_SUCCESS;
}

/* Allgathers host identities (as overridden, and real) and groups the ranks. */
static hiar_result_t gather_and_group(hiar_comm_t *comm)
{
    char mine[2][HIAR_HOST_ID_MAX];
    char *all = malloc((size_t)comm->size * 2 * HIAR_HOST_ID_MAX);
    char *ids, *real_ids;
    hiar_result_t rc = HIAR_SUCCESS;
    int mrc;

    if (!all)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the host table of %d ranks", comm->size);
    hiar_topo_host_id(comm->params.v[HIAR_P_HOST_ID].text, mine[0]);
    hiar_topo_host_id(NULL, mine[1]);
    mrc = MPI_Allgather(mine, 2 * HIAR_HOST_ID_MAX, MPI_CHAR, all, 2 * HIAR_HOST_ID_MAX, MPI_CHAR,
                        comm->mpi);
    if (mrc != MPI_SUCCESS) {
        free(all);
        return hiar_error_mpi(mrc, "MPI_Allgather of host identities");
    }
    /* Split the interleaved table into two contiguous ones. */
    ids = malloc((size_t)comm->size * 2 * HIAR_HOST_ID_MAX);
    if (!ids) {
        free(all);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the host table of %d ranks", comm->size);
    }
    real_ids = ids + (size_t)comm->size * HIAR_HOST_ID_MAX;
    for (int r = 0; r < comm->size; r++) {
        memcpy(ids + (size_t)r * HIAR_HOST_ID_MAX, all + (size_t)r * 2 * HIAR_HOST_ID_MAX, HIAR_HOST_ID_MAX);
        memcpy(real_ids + (size_t)r * HIAR_HOST_ID_MAX,
               all + ((size_t)r * 2 + 1) * HIAR_HOST_ID_MAX, HIAR_HOST_ID_MAX);
    }
    rc = choose_groups(comm, ids, real_ids);
    free(ids);
    free(all);
    return rc;
}

hiar_result_t hiar_shard_comms_create(MPI_Comm mpi, const hiar_grouping_t *g, int rank, int *nshards,
                                      MPI_Comm **out)
{
    int n = hiar_grouping_max_size(g), group = g->group_of[rank];
    int local = g->local_index[rank], size = hiar_group_size(g, group);
    MPI_Comm *comms = malloc(sizeof(MPI_Comm) * (size_t)n);

    if (!comms)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d shard communicators", n);
    for (int s = 0; s < n; s++)
        comms[s] = MPI_COMM_NULL;
    *nshards = n;
    *out = comms;
    for (int s = 0; g->ngroups > 1 && s < n; s++)
        HIAR_MPI_CHECK(MPI_Comm_split(mpi, s % size == local ? 0 : MPI_UNDEFINED, group, &comms[s]));
    return HIAR_SUCCESS;
}

void hiar_shard_comms_free(int nshards, MPI_Comm *comms)
{
    for (int s = 0; comms && s < nshards; s++)
        if (comms[s] != MPI_COMM_NULL)
            MPI_Comm_free(&comms[s]);
    free(comms);
}

/* A parameter as a number to compare across ranks: free text by its FNV-1a hash. */
static long long agreed_value(const hiar_comm_t *comm, hiar_param_id_t id)
{
    unsigned long long h = 14695981039346656037ull;

    if (hiar_param_table[id].type != HIAR_PTYPE_STR)
        return hiar_comm_param(comm, id);
    for (const char *c = comm->params.v[id].text; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return (long long)(h >> 1);
}

/*
 * Values that decide the grouping or the path of a call must be equal on
 * every rank, or the ranks would group differently or take different paths
 * and wait for each other forever.
 */
static hiar_result_t check_params_agree(hiar_comm_t *comm)
{
    static const hiar_param_id_t agreed[] = {HIAR_P_GROUPS,      HIAR_P_GROUP_LEVEL, HIAR_P_ALGO,
                                             HIAR_P_ONESHOT_MAX, HIAR_P_BUFFER_SIZE, HIAR_P_MAX_BLOCKS,
                                             HIAR_P_CHECK};
    enum { N = sizeof(agreed) / sizeof(agreed[0]) };
    long long mine[2 * N], all[2 * N];

    for (int i = 0; i < N; i++) {
        mine[i] = agreed_value(comm, agreed[i]);
        mine[N + i] = -mine[i];
    }
    HIAR_MPI_CHECK(PMPI_Allreduce(mine, all, 2 * N, MPI_LONG_LONG, MPI_MAX, comm->mpi));
    for (int i = 0; i < N; i++)
        if (all[i] != -all[N + i])
            return hiar_error_set(HIAR_INVALID_ARGUMENT,
                                  "%s differs across ranks (this rank: %s): it must be the same "
                                  "on every rank",
                                  hiar_param_table[agreed[i]].name, comm->params.v[agreed[i]].text);
    return HIAR_SUCCESS;
}

static hiar_result_t comm_setup(hiar_comm_t *comm)
{
    const hiar_grouping_t *g;
    size_t slot;

    HIAR_CHECK(check_params_agree(comm));
    HIAR_CHECK(gather_and_group(comm));
    g = &comm->groups;
    comm->group = g->group_of[comm->rank];
    comm->local = g->local_index[comm->rank];
    comm->local_size = hiar_group_size(g, comm->group);
    HIAR_MPI_CHECK(MPI_Comm_split(comm->mpi, comm->group, comm->rank, &comm->group_comm));
    HIAR_CHECK(hiar_shard_comms_create(comm->mpi, g, comm->rank, &comm->nshards, &comm->shard_comm));
#ifdef HIAR_HAVE_CUDA
    HIAR_CHECK(hiar_devcomm_create(comm, &comm->dev));
#endif
    /* Every rank alone: no shared memory, MPI carries everything. */
    if (g->ngroups == comm->size && comm->size > 1)
        return HIAR_SUCCESS;
    slot = (size_t)hiar_comm_param(comm, HIAR_P_BUFFER_SIZE);
    return hiar_shm_create(comm->group_comm, slot ? slot : HIAR_SHM_SLOT_DEFAULT, &comm->shm);
}

/*
 * Every rank learns whether any rank failed, so all return an error together.
 * hiar's own allreduces call PMPI_Allreduce: under libhiar_mpi.so's preload
 * MPI_Allreduce would come back into hiar and give each of hiar's internal
 * communicators a hiar communicator of its own.
 */
int hiar_mpi_all(MPI_Comm mpi, int cond)
{
    int all = 0;
    return PMPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_MIN, mpi) == MPI_SUCCESS && all;
}

hiar_result_t hiar_comm_agree(hiar_comm_t *comm, hiar_result_t rc, const char *call)
{
    int mine = rc, worst = rc;

    if (PMPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm->mpi) != MPI_SUCCESS)
        return rc != HIAR_SUCCESS ? rc : hiar_error_set(HIAR_MPI_ERROR, "%s: agreeing on the outcome failed", call);
    if (rc == HIAR_SUCCESS && worst != HIAR_SUCCESS)
        return hiar_error_set((hiar_result_t)worst, "%s failed on another rank (%s; its log says why)", call,
                              hiar_strerror((hiar_result_t)worst));
    return rc;
}

static hiar_result_t check_create_args(MPI_Comm mpi_comm, const hiar_config_t *cfg, hiar_comm_t **out)
{
    int initialized = 0, finalized = 0, inter = 0;

    HIAR_ARG_CHECK(out, "hiar_comm_create: out is NULL");
    HIAR_ARG_CHECK(!cfg || cfg->size == sizeof(hiar_config_t),
                   "hiar_comm_create: cfg->size is %zu, expected %zu: initialise cfg with "
                   "HIAR_CONFIG_INIT",
                   cfg ? cfg->size : 0, sizeof(hiar_config_t));
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return hiar_error_set(HIAR_INVALID_USAGE,
                              "hiar_comm_create: MPI is %s; call it between MPI_Init and MPI_Finalize",
                              finalized ? "finalized" : "not initialized");
    HIAR_ARG_CHECK(mpi_comm != MPI_COMM_NULL, "hiar_comm_create: mpi_comm is MPI_COMM_NULL");
    MPI_Comm_test_inter(mpi_comm, &inter);
    if (inter)
        return hiar_error_set(HIAR_UNSUPPORTED,
                              "hiar_comm_create: mpi_comm is an intercommunicator; expected an "
                              "intracommunicator");
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_create(MPI_Comm mpi_comm, const hiar_config_t *cfg, hiar_comm_t **out)
{
    hiar_comm_t *comm;
    hiar_result_t rc;
    int world_rank;

    HIAR_CHECK(check_create_args(mpi_comm, cfg, out));
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    hiar_log_set_rank(world_rank);
    comm = calloc(1, sizeof(*comm));
    if (!comm)
        return hiar_error_set(HIAR_NO_MEMORY, "hiar_comm_create: cannot allocate the communicator");
    comm->mpi = comm->group_comm = MPI_COMM_NULL;
    if (MPI_Comm_dup(mpi_comm, &comm->mpi) != MPI_SUCCESS) {
        comm_free(comm, 0);
        return hiar_error_set(HIAR_MPI_ERROR, "hiar_comm_create: MPI_Comm_dup failed");
    }
    MPI_Comm_rank(comm->mpi, &comm->rank);
    MPI_Comm_size(comm->mpi, &comm->size);
    /* Agree after loading the settings: a rank with a bad one must not skip
     * the collective calls of the setup that its peers enter. */
    rc = hiar_comm_agree(comm, hiar_params_load(&comm->params, cfg ? cfg->settings : NULL), "hiar_comm_create");
    if (rc == HIAR_SUCCESS)
        rc = hiar_comm_agree(comm, comm_setup(comm), "hiar_comm_create");
    if (rc == HIAR_SUCCESS)
        rc = registry_add(comm);
    if (rc != HIAR_SUCCESS) {
        comm_free(comm, 0);
        return rc;
    }
    if (comm->rank == 0 && hiar_log_enabled(HIAR_LOG_INFO, HIAR_SUB_INIT))
        hiar_comm_describe(comm, NULL);
    *out = comm;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_destroy(hiar_comm_t *comm)
{
    if (!comm)
        return HIAR_SUCCESS;
    HIAR_CHECK(registry_remove(comm, "hiar_comm_destroy"));
    /* Peers may still read this rank's shared slots: leave together, unless
     * the comm failed and a peer may never come. */
    if (comm->failed == HIAR_SUCCESS)
        MPI_Barrier(comm->mpi);
    comm_free(comm, comm->failed == HIAR_SUCCESS);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_abort(hiar_comm_t *comm)
{
    if (!comm)
        return HIAR_SUCCESS;
    HIAR_CHECK(registry_remove(comm, "hiar_comm_abort"));
    atomic_store(&comm->abort, 1);
#ifdef HIAR_HAVE_CUDA
    hiar_devcomm_abort(comm->dev);
#endif
    /* A call running in another thread sees the abort flag at its next poll. */
    while (atomic_load(&comm->busy))
        sched_yield();
    comm_free(comm, 0);
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
    rc = hiar_devcomm_status(comm->dev);
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
    g = &comm->groups;
#ifdef HIAR_HAVE_CUDA
    if (device && comm->dev)
        g = hiar_devcomm_groups(comm->dev);
#else
    (void)device;
#endif
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
