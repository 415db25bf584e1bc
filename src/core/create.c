/* hiar_comm_create / destroy / abort: the setup of both sides of a communicator, and its end. */
#include "config.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "base/error.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/run.h"
#include "core/tune.h"
#include "net/coll.h"

/* Where calls spent their time on the calling thread, under HIAR_CALL_MARKS=1 (base/marks.h). */
static void log_marks(const hiar_comm_t *comm)
{
    char text[640];

    for (int device = 0; device < 2; device++) {
        if (!comm->marks[device].calls || !hiar_log_enabled(HIAR_LOG_INFO, HIAR_SUB_CALL))
            continue;
        hiar_marks_report(&comm->marks[device], text, sizeof(text));
        HIAR_INFO(CALL, "call marks, rank %d, %s calls on the calling thread: %s", comm->rank,
                  device ? "device" : "host", text);
    }
}

/*
 * Frees what create made; collective = 0: without talking to peers (abort).
 *
 * A failed comm keeps its MPI communicators, its shared segment and its MPI
 * scratch: the call that failed may have left receives posted into them
 * (net/inter.c), and a peer that comes late completes them, into the segment
 * and through the communicator.  Freeing them let MPI write into unmapped
 * memory or use a freed communicator: SIGSEGV in the resumed-peer test
 * (tests/mpi/faults-stall.test).  The cost is one failed comm's buffers.
 */
static void comm_free(hiar_comm_t *comm, int collective)
{
    int keep = comm->failed != HIAR_SUCCESS;
    int flags = (collective ? HIAR_TEARDOWN_COLLECTIVE : 0) | (keep ? HIAR_TEARDOWN_KEEP : 0);

    log_marks(comm);
#ifdef HIAR_HAVE_CUDA
    hiar_gpu_destroy(comm->gpu, flags);
#endif
    hiar_side_free(&comm->host, flags);
    if (!keep) {
        if (comm->mpi != MPI_COMM_NULL)
            MPI_Comm_free(&comm->mpi);
        free(comm->scratch);
    }
    hiar_params_free(&comm->params);
    free(comm);
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

/* Free bytes of /dev/shm for this user (at least 1: 0 says not known), LLONG_MAX where they cannot be read. */
static long long shm_free_bytes(void)
{
    struct statvfs v;
    unsigned long long bytes;

    if (statvfs("/dev/shm", &v) != 0)
        return LLONG_MAX;
    bytes = (unsigned long long)v.f_bavail * v.f_frsize;
    return bytes < 1 ? 1 : bytes < (unsigned long long)LLONG_MAX ? (long long)bytes : LLONG_MAX - 1;
}

/*
 * Values that decide the grouping or the path of a call must be equal on
 * every rank, or the ranks would group differently or take different paths
 * and wait for each other forever; HIAR_CLUSTERS, or the fused norm's rows
 * would be summed in other orders on other ranks (not the same bits).  The
 * same exchange finds the least free /dev/shm, which sizes the default host
 * slots (plan.h HIAR_SHM_SLOT_FLOOR): that too must be one value.
 */
static hiar_result_t check_params_agree(hiar_comm_t *comm)
{
    static const hiar_param_id_t agreed[] = {HIAR_P_GROUPS,      HIAR_P_GROUP_LEVEL, HIAR_P_ALGO,
                                             HIAR_P_ONESHOT_MAX, HIAR_P_BUFFER_SIZE, HIAR_P_MAX_BLOCKS,
                                             HIAR_P_BETWEEN,     HIAR_P_PINNED,      HIAR_P_CHECK,
                                             HIAR_P_TUNE,        HIAR_P_FLAT,        HIAR_P_FLAT_MAX,
                                             HIAR_P_PROGRESS,    HIAR_P_CLUSTERS};
    enum { N = sizeof(agreed) / sizeof(agreed[0]) };
    long long mine[N + 1], lo[N + 1], hi[N + 1];

    _Static_assert(N + 1 <= HIAR_NET_BOUNDS_MAX, "hiar_net_bounds takes the agreed values and /dev/shm's");
    for (int i = 0; i < N; i++)
        mine[i] = agreed_value(comm, agreed[i]);
    mine[N] = shm_free_bytes(); /* a rank that cannot read it does not lower the least */
    HIAR_CHECK(hiar_net_bounds(comm->mpi, mine, lo, hi, N + 1));
    comm->shm_free = lo[N] == LLONG_MAX || (unsigned long long)lo[N] > SIZE_MAX ? 0 : (size_t)lo[N];
    for (int i = 0; i < N; i++)
        if (lo[i] != hi[i])
            return hiar_error_set(HIAR_INVALID_ARGUMENT,
                                  "%s differs across ranks (this rank: %s): it must be the same "
                                  "on every rank",
                                  hiar_param_table[agreed[i]].name, comm->params.v[agreed[i]].text);
    return HIAR_SUCCESS;
}

/* Host buffers: grouped by host (collective over the comm); *facts: what the same exchange tells beside. */
static hiar_result_t host_groups(hiar_comm_t *comm, hiar_host_facts_t *facts)
{
    hiar_grouping_t g = {0};

    HIAR_CHECK(hiar_groups_host(&comm->params, comm->mpi, comm->rank, comm->size, &g, facts));
    comm->machines = facts->machines;
    comm->machine_ranks = facts->machine_ranks;
    return hiar_tier_init(&comm->host.tier, comm->mpi, comm->rank, &g);
}

/*
 * Shared memory in the host group (none where every rank is alone).  A group
 * that cannot map it fails the comm: host buffers have no other path.  Its
 * failure is agreed in the group only, so it comes last, after every
 * collective over the whole comm (then all ranks meet in the final agreement).
 */
static hiar_result_t host_transport(hiar_comm_t *comm, const hiar_plan_slots_t *slots)
{
    static const hiar_transport_t *const shm[] = {&hiar_transport_shm};
    hiar_transport_config_t cfg = {0};

    cfg.slot_bytes = slots->shm;
    cfg.device = -1;
    return hiar_side_connect(&comm->host, shm, 1, &cfg);
}

#ifdef HIAR_HAVE_CUDA
static hiar_result_t device_side(hiar_comm_t *comm, const hiar_plan_limits_t *limits,
                                 const hiar_plan_slots_t *slots)
{
    hiar_gpu_env_t env = {comm->mpi,        comm->rank,    comm->size,    &comm->params,
                          limits->ipc_slot, slots->pinned, hiar_run_host, comm,
                          &comm->abort,     comm->mpi_device.yes};

    return hiar_gpu_create(&env, &comm->gpu);
}
#endif

/* Default slots made smaller to fit /dev/shm (plan.c shm_default_slot, pinned_default_slot) are logged. */
static void note_shm_budget(const hiar_comm_t *comm, hiar_plan_input_t in, const hiar_plan_slots_t *slots)
{
    hiar_plan_slots_t roomy;

    in.shm_free = 0;
    hiar_plan_slots(&in, &roomy);
    if (roomy.shm > slots->shm && comm->rank == 0)
        HIAR_INFO(SHM, "host slots of %zu bytes instead of %zu: the least free /dev/shm of the ranks was %zu MB, "
                       "and the slots of a machine's %d ranks take at most a quarter of it",
                  slots->shm, roomy.shm, comm->shm_free >> 20, comm->machine_ranks);
    if (roomy.pinned > slots->pinned && comm->rank == 0)
        HIAR_INFO(SHM, "pinned-host transport (where it serves): slots of %zu bytes instead of %zu, so that a "
                       "machine's %d ranks take at most half of the %zu MB of /dev/shm free",
                  slots->pinned, roomy.pinned, comm->machine_ranks, comm->shm_free >> 20);
}

static hiar_result_t comm_setup(hiar_comm_t *comm)
{
    hiar_plan_input_t in;
    hiar_plan_limits_t limits;
    hiar_plan_slots_t slots;
    hiar_host_facts_t facts;

    HIAR_CHECK(check_params_agree(comm));
    HIAR_CHECK(hiar_net_mpi_device(comm->mpi, (int)hiar_comm_param(comm, HIAR_P_MPI_DEVICE), &comm->mpi_device));
    HIAR_CHECK(host_groups(comm, &facts));
    hiar_comm_plan_input(comm, 0, 0, &in);
    hiar_plan_limits(&in, &limits);
    hiar_plan_slots(&in, &slots); /* parameters and /dev/shm's agreed space: the same on every rank */
    note_shm_budget(comm, in, &slots);
#ifdef HIAR_HAVE_CUDA
    HIAR_CHECK(device_side(comm, &limits, &slots));
#else
    (void)limits;
#endif
    hiar_comm_set_yield(comm, &facts.cpus); /* after the device side: a progress thread it started counts */
    return host_transport(comm, &slots);
}

/* MPI must be usable: between MPI_Init and MPI_Finalize. */
static hiar_result_t check_mpi_live(const char *call)
{
    int initialized = 0, finalized = 0;

    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return hiar_error_set(HIAR_INVALID_USAGE, "%s: MPI is %s; call it between MPI_Init and MPI_Finalize",
                              call, finalized ? "finalized" : "not initialized");
    return HIAR_SUCCESS;
}

static hiar_result_t check_create_args(MPI_Comm mpi_comm, const hiar_config_t *cfg, hiar_comm_t **out)
{
    int inter = 0;

    HIAR_ARG_CHECK(out, "hiar_comm_create: out is NULL");
    HIAR_ARG_CHECK(!cfg || cfg->size == sizeof(hiar_config_t),
                   "hiar_comm_create: cfg->size is %zu, expected %zu: initialise cfg with "
                   "HIAR_CONFIG_INIT",
                   cfg ? cfg->size : 0, sizeof(hiar_config_t));
    HIAR_CHECK(check_mpi_live("hiar_comm_create"));
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
    comm->mpi = MPI_COMM_NULL;
    if (MPI_Comm_dup(mpi_comm, &comm->mpi) != MPI_SUCCESS) {
        comm_free(comm, 0);
        return hiar_error_set(HIAR_MPI_ERROR, "hiar_comm_create: MPI_Comm_dup failed");
    }
    MPI_Comm_rank(comm->mpi, &comm->rank);
    MPI_Comm_size(comm->mpi, &comm->size);
    /* Agree after loading the settings: a rank with a bad one must not skip
     * the collective calls of the setup that its peers enter. */
    rc = hiar_net_agree(comm->mpi, hiar_params_load(&comm->params, cfg ? cfg->settings : NULL), "hiar_comm_create");
    if (rc == HIAR_SUCCESS)
        rc = hiar_net_agree(comm->mpi, comm_setup(comm), "hiar_comm_create");
    if (rc == HIAR_SUCCESS) /* on the connected transports: it times real calls */
        rc = hiar_net_agree(comm->mpi, hiar_tune_comm(comm), "hiar_comm_create");
    if (rc == HIAR_SUCCESS)
        rc = hiar_comm_register(comm);
    if (rc != HIAR_SUCCESS) {
        comm_free(comm, 0);
        return rc;
    }
    if (comm->rank == 0 && hiar_log_enabled(HIAR_LOG_INFO, HIAR_SUB_INIT))
        hiar_comm_describe(comm, NULL);
    *out = comm;
    return HIAR_SUCCESS;
}

/*
 * MPI_Comm_f2c of a handle that names no communicator gives an invalid C
 * handle without raising an MPI error, and MPI handed that handle crashes
 * or stops the job (Intel MPI 2021.19 on hiar_comm_create_f(-1): a fatal
 * "Invalid communicator" in MPI_Comm_test_inter).  Open MPI's is NULL (its
 * MPI_COMM_NULL points to a real object).  MPICH's handles (Intel MPI's,
 * and MPICH-derived MPIs') are the Fortran integers themselves: a kind in
 * bits 30-31 (0: invalid) and an object type in bits 26-29 (1: a
 * communicator), a layout its ABI keeps (MPI_COMM_WORLD 0x44000000,
 * MPI_COMM_NULL 0x04000000); a handle of another shape is refused.  One
 * of the right shape that names no communicator still reaches MPI.
 */
static int comm_handle_invalid(MPI_Comm c)
{
#ifdef MPICH
    _Static_assert(sizeof(MPI_Comm) == sizeof(int), "MPICH's communicators are integer handles");
    unsigned h = (unsigned)c;

    return (h >> 30) == 0 || ((h >> 26) & 0xfu) != 1u;
#else
    static const MPI_Comm zero;

    return memcmp(&c, &zero, sizeof(c)) == 0;
#endif
}

hiar_result_t hiar_comm_create_f(MPI_Fint fcomm, const hiar_config_t *cfg, hiar_comm_t **out)
{
    MPI_Comm c;

    HIAR_CHECK(check_mpi_live("hiar_comm_create_f"));
    c = MPI_Comm_f2c(fcomm);
    HIAR_ARG_CHECK(!comm_handle_invalid(c),
                   "hiar_comm_create_f: %d is no MPI communicator's Fortran handle; expected "
                   "MPI_Comm_c2f's result (mpi4py: comm.py2f())",
                   (int)fcomm);
    return hiar_comm_create(c, cfg, out);
}

hiar_result_t hiar_comm_destroy(hiar_comm_t *comm)
{
    if (!comm)
        return HIAR_SUCCESS;
    HIAR_CHECK(hiar_comm_unregister(comm, "hiar_comm_destroy"));
    /* Peers may still read this rank's shared slots: leave together, unless
     * the comm failed and a peer may never come. */
    if (comm->failed == HIAR_SUCCESS)
        hiar_net_barrier(comm->mpi);
    comm_free(comm, comm->failed == HIAR_SUCCESS);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_comm_abort(hiar_comm_t *comm)
{
    if (!comm)
        return HIAR_SUCCESS;
    HIAR_CHECK(hiar_comm_unregister(comm, "hiar_comm_abort"));
    atomic_store(&comm->abort, 1);
#ifdef HIAR_HAVE_CUDA
    hiar_gpu_abort(comm->gpu);
#endif
    /* A call running in another thread sees the abort flag at its next poll. */
    while (atomic_load(&comm->busy))
        sched_yield();
    comm_free(comm, 0);
    return HIAR_SUCCESS;
}

