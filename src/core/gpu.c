/* The device side of a communicator: facts, grouping, transports, the MPS warning, teardown. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostmem.h"
#include "base/log.h"
#include "core/gpu.h"
#include "core/plan.h"
#include "net/coll.h"
#include "topo/nvml.h"
#include "transport/kernels.h"

/* This rank's facts: host, GPU and its PCI path, NVLink peers. */
static void own_facts(const hiar_gpu_env_t *env, const hiar_gpu_t *gpu, hiar_topo_fact_t *f)
{
    char host[HIAR_HOST_ID_MAX];

    hiar_topo_host_id(env->params->v[HIAR_P_HOST_ID].text, host);
    hiar_topo_fact_init(f, host);
    if (!gpu->bus_id[0])
        return;
    hiar_cuda_device_uuid(gpu->device, f->gpu_uuid);
    if (hiar_topo_fact_set_gpu(f, env->params->v[HIAR_P_SYSFS_ROOT].text, gpu->bus_id) != HIAR_SUCCESS) {
        /* Without its PCI path the GPU still groups: its path to others is SYS. */
        HIAR_INFO(TOPO, "%s; grouping GPU %s without its PCI path", hiar_last_error(), gpu->bus_id);
        hiar_pci_busid_normalize(gpu->bus_id, f->pci.bus_id);
    }
    hiar_nvml_add_nvlink(f);
}

/* Gathers every rank's facts and groups the ranks for device buffers. */
static hiar_result_t group_devices(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    hiar_topo_fact_t mine;
    hiar_grouping_t g = {0};

    own_facts(env, gpu, &mine);
    gpu->facts = malloc(sizeof(mine) * (size_t)env->size);
    if (!gpu->facts)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the topology of %d ranks", env->size);
    HIAR_CHECK(hiar_net_allgather(env->mpi, &mine, sizeof(mine), gpu->facts, "MPI_Allgather of topology facts"));
    HIAR_CHECK(hiar_groups_device(env->params, gpu->facts, env->size, &g));
    return hiar_tier_init(&gpu->side.tier, env->mpi, env->rank, &g);
}

/*
 * Ranks of the comm on this rank's GPU, itself included, by CUDA's UUID of
 * the GPU: bus ids repeat on identical machines, and host names differ
 * between containers on one machine; 0 without a GPU.  This counts ranks of
 * this comm only: other communicators' kernels on the GPU are not counted
 * (HIAR_GPU_SHARERS: declared_sharers).
 */
static int ranks_on_gpu(const hiar_gpu_env_t *env, const hiar_gpu_t *gpu)
{
    static const unsigned char unknown[16];
    const unsigned char *mine = gpu->facts[env->rank].gpu_uuid;
    int n = 0;

    if (!gpu->bus_id[0])
        return 0;
    if (memcmp(mine, unknown, sizeof(unknown)) == 0)
        return 1;
    for (int r = 0; r < env->size; r++)
        n += memcmp(gpu->facts[r].gpu_uuid, mine, sizeof(unknown)) == 0;
    return n;
}

/*
 * The ranks whose kernels may spin on this GPU at once: HIAR_GPU_SHARERS
 * where it counts more than this comm's own (other communicators' ranks
 * too), else on_gpu.  Their kernels' blocks must all be resident at once:
 * a simulated host per group on one GPU (hiar-bench --split) hung in a
 * push kernel of one group's comm at 1 MB, 4 ranks on one H100 under MPS,
 * while the other group's comm ran the same, each comm counting 2 ranks.
 * At most HIAR_GPU_SHARERS_MAX: past every GPU's block slots, each kernel
 * already gets one block.
 */
#define HIAR_GPU_SHARERS_MAX 1024
static int declared_sharers(const hiar_gpu_env_t *env, int on_gpu)
{
    long long declared = env->params->v[HIAR_P_GPU_SHARERS].num;

    declared = declared < HIAR_GPU_SHARERS_MAX ? declared : HIAR_GPU_SHARERS_MAX;
    return on_gpu > 0 && declared > on_gpu ? (int)declared : on_gpu;
}

/* Whether every rank of this rank's group has a GPU, and whether one shares ours. */
static int group_has_gpus(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    const hiar_grouping_t *g = &gpu->side.tier.groups;
    int grp = g->group_of[env->rank], all_gpu = 1;

    for (int m = g->start[grp]; m < g->start[grp + 1]; m++) {
        const hiar_topo_fact_t *f = &gpu->facts[g->members[m]];
        all_gpu &= f->pci.bus_id[0] != '\0';
        if (g->members[m] != env->rank && gpu->bus_id[0] && strcmp(f->pci.bus_id, gpu->facts[env->rank].pci.bus_id) == 0)
            gpu->shared_gpu = 1;
    }
    return all_gpu;
}

/* Marks the groups whose P2P probe failed (or that have no IPC) as shm. */
static hiar_result_t annotate_transports(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    int n = env->size, mine = hiar_gpu_has_ipc(gpu), *ipc = malloc(sizeof(int) * (size_t)n);
    unsigned char *p2p = calloc((size_t)n * (size_t)n, 1);
    const hiar_grouping_t *g = &gpu->side.tier.groups;
    hiar_result_t rc = HIAR_SUCCESS;

    if (!ipc || !p2p)
        rc = hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the P2P matrix of %d ranks", n);
    else
        rc = hiar_net_allgather(env->mpi, &mine, sizeof(mine), ipc, "MPI_Allgather of the P2P probe results");
    for (int a = 0; rc == HIAR_SUCCESS && a < n; a++)
        for (int b = 0; b < n; b++)
            p2p[a * n + b] = a == b || (ipc[a] && ipc[b] && g->group_of[a] == g->group_of[b]);
    if (rc == HIAR_SUCCESS)
        rc = hiar_topo_annotate(gpu->facts, p2p, &gpu->side.tier.groups);
    free(ipc);
    free(p2p);
    return rc;
}

static void topo_log_line(void *arg, const char *line)
{
    (void)arg;
    HIAR_INFO(TOPO, "%s", line);
}

static hiar_transport_config_t transport_config(const hiar_gpu_env_t *env, const hiar_gpu_t *gpu, int all_gpu,
                                                int on_gpu)
{
    const hiar_params_t *p = env->params;
    hiar_transport_config_t cfg = {.slot_bytes = env->slot_bytes,
                                   .pinned_slot_bytes = env->pinned_slot_bytes,
                                   .timeout_ms = (int)p->v[HIAR_P_TIMEOUT_MS].num,
                                   .max_blocks = (int)p->v[HIAR_P_MAX_BLOCKS].num,
                                   .pdl = (int)p->v[HIAR_P_PDL].num,
                                   .clusters = (int)p->v[HIAR_P_CLUSTERS].num,
                                   .device = gpu->device,
                                   .all_gpu = all_gpu,
                                   .on_gpu = on_gpu,
                                   .mixed = gpu->mixed,
                                   .host_run = env->host_run,
                                   .host_arg = env->host_arg,
                                   .control = &gpu->control};
    return cfg;
}

/*
 * The device group's transport: CUDA IPC, else pinned host memory (first
 * with HIAR_PINNED=1), or self alone; and the staged one.
 */
static hiar_result_t connect_transports(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    static const hiar_transport_t *const candidates[] = {&hiar_transport_ipc, &hiar_transport_pinned,
                                                         &hiar_transport_self};
    int pinned = (int)env->params->v[HIAR_P_PINNED].num;
    const hiar_transport_config_t cfg = gpu->cfg;
    char why[64];

    /* One that cannot be set up falls back to the next, then staging (its why says so): not a failure of the comm. */
    (void)hiar_side_connect(&gpu->side, candidates + pinned, 3 - pinned, &cfg);
    gpu->hier_slot = gpu->side.tp == &hiar_transport_ipc      ? (long long)cfg.slot_bytes
                     : gpu->side.tp == &hiar_transport_pinned ? (long long)cfg.pinned_slot_bytes
                                                              : LLONG_MAX;
    if (!hiar_transport_staged.usable(&gpu->side.tier, &cfg, why, sizeof(why)))
        return HIAR_SUCCESS; /* no GPU here: the device side goes (hiar_gpu_create) */
    return hiar_transport_staged.setup(&gpu->side.tier, &cfg, &gpu->staged, why, sizeof(why));
}

/* Chunks of hierarchical calls are the same in every group: they fit the smallest slot. */
static hiar_result_t agree_hier_slot(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    long long lo, hi;

    HIAR_CHECK(hiar_net_bounds(env->mpi, &gpu->hier_slot, &lo, &hi, 1));
    gpu->hier_slot = lo;
    return HIAR_SUCCESS;
}

/*
 * The step between groups over MPI: asynchronous on the progress engine
 * where the MPI allows it (core/hosts.h).  It hands MPI device pointers
 * only where HIAR_MPI_DEVICE=1 says so: on the one MPI it was tried on that
 * takes them (Open MPI 4.1.6 with pml ucx over libucx-cu13 1.22, 4 ranks on
 * one H200 under MPS) graph replays now pass, but back-to-back eager calls
 * still stall a piece until HIAR_TIMEOUT_MS (doc/guide.md, "MPI between
 * hosts"), where staging passes.  A wrong yes costs results, a wrong no
 * speed.
 */
static hiar_result_t hosts_setup(const hiar_gpu_env_t *env, hiar_gpu_t *gpu, int on_gpu)
{
    int forced = (int)env->params->v[HIAR_P_MPI_DEVICE].num == HIAR_MPIDEV_YES;
    hiar_hosts_config_t cfg = {.setting = (int)env->params->v[HIAR_P_PROGRESS].num == HIAR_PROGRESS_AUTO,
                               .device_pointers = env->mpi_device && forced,
                               .timeout_ms = (int)env->params->v[HIAR_P_TIMEOUT_MS].num,
                               .sharers = on_gpu > 0 ? (unsigned)on_gpu : 1u,
                               .device = gpu->device,
                               .abort = env->abort,
                               .control = &gpu->control};

    /* Groups of several hosts, as many on each: only the parts of the shards cross between hosts. */
    const hiar_tier_t *t = gpu->between.per_host ? &gpu->between.hosts : &gpu->side.tier;

    HIAR_CHECK(hiar_hosts_setup(env->mpi, t, &cfg, &gpu->hosts, gpu->hosts_why, sizeof(gpu->hosts_why)));
    /* Where the groups of a host split their step (per_host), a rank's link carries parts of shards only. */
    gpu->hosts_whole = gpu->hosts && !gpu->between.per_host && hiar_hosts_whole_ok(gpu->hosts, t);
    gpu->hosts_alone_extra = gpu->hosts_whole ? hiar_hosts_alone_extra(gpu->hosts) : 0;
    if (env->mpi_device && !forced && gpu->hosts) {
        size_t len = strlen(gpu->hosts_why);
        snprintf(gpu->hosts_why + len, sizeof(gpu->hosts_why) - len,
                 "; the MPI takes device pointers, but hiar hands them over only with HIAR_MPI_DEVICE=1 (back-to-back calls stalled on the one tried)");
    }
    if (env->rank == 0)
        HIAR_INFO(MPI, "the step between hosts of device buffers: %s", gpu->hosts_why);
    return HIAR_SUCCESS;
}

/* Why the comm has no group over the host (NULL: it can have one): values every rank shares. */
static const char *flat_unfit(const hiar_gpu_env_t *env, const hiar_gpu_t *gpu)
{
    if (env->params->v[HIAR_P_FLAT].num == HIAR_FLAT_OFF)
        return "HIAR_FLAT=0";
    if (env->params->v[HIAR_P_ALGO].num != HIAR_ALGO_AUTO)
        return "HIAR_ALGO is set";
    if (gpu->side.tier.groups.ngroups < 2)
        return "one group";
    if (gpu->between.per_host)
        return "the groups span hosts";
    if (!gpu->between.on_gpu)
        return "the step between groups is not on the GPU";
    if (gpu->pinned)
        return "some group or step between groups uses pinned host memory";
    if (env->size > HIAR_IPC_MAX_GROUP)
        return "more than 8 ranks";
    for (int r = 0; r < env->size; r++)
        if (!gpu->facts[r].pci.bus_id[0] || !hiar_topo_same_host(&gpu->facts[r], &gpu->facts[0]))
            return "not every rank has a GPU on one host";
    return NULL;
}

/*
 * A second side over every rank of mpi as one group, on transport tp; one
 * that cannot be set up (on every rank alike) leaves the side without a
 * transport, its communicators gone and its why saying why: not a failure
 * of the comm (setup_may_fail: logged at INFO).
 */
static hiar_result_t connect_whole(MPI_Comm mpi, int rank, int size, hiar_side_t *s, const hiar_transport_t *tp,
                                   hiar_transport_config_t cfg)
{
    hiar_grouping_t g = {0};
    hiar_result_t rc;
    int *label = calloc((size_t)size, sizeof(int));

    rc = label ? hiar_grouping_from_labels(label, size, &g)
               : hiar_error_set(HIAR_NO_MEMORY, "cannot allocate a group of all %d ranks (%s)", size, tp->name);
    free(label);
    /* Agreed: a rank that failed here must not leave the others in the tier's MPI_Comm_split. */
    rc = hiar_net_agree(mpi, rc, "a group of all ranks");
    if (rc != HIAR_SUCCESS) {
        hiar_grouping_free(&g);
        return rc;
    }
    HIAR_CHECK(hiar_tier_init(&s->tier, mpi, rank, &g));
    cfg.setup_may_fail = 1;
    (void)hiar_side_connect(s, &tp, 1, &cfg);
    if (!s->tp) /* on every rank: the setup was agreed; its why stays */
        hiar_side_free(s, HIAR_TEARDOWN_COLLECTIVE);
    return HIAR_SUCCESS;
}

/*
 * The group over the host: CUDA IPC between every pair, with the P2P check
 * (across PCIe switches it may fail: then none, logged at INFO), slots of
 * HIAR_FLAT_SLOT (its default limit takes the LL kernel only).
 */
static hiar_result_t flat_setup(const hiar_gpu_env_t *env, hiar_gpu_t *gpu, int on_gpu)
{
    const char *no = flat_unfit(env, gpu);
    hiar_transport_config_t cfg = transport_config(env, gpu, 1, on_gpu);

    if (no) {
        snprintf(gpu->flat.why, sizeof(gpu->flat.why), "none (%s)", no);
        return HIAR_SUCCESS;
    }
    cfg.slot_bytes = cfg.slot_bytes < HIAR_FLAT_SLOT ? cfg.slot_bytes : HIAR_FLAT_SLOT;
    HIAR_CHECK(connect_whole(env->mpi, env->rank, env->size, &gpu->flat, &hiar_transport_ipc, cfg));
    if (env->rank == 0)
        HIAR_INFO(IPC, "the group over the host: %s", gpu->flat.why);
    return HIAR_SUCCESS;
}

int hiar_gpu_alt_applies(const hiar_gpu_t *gpu)
{
    return gpu && gpu->side.tier.groups.ngroups == 1 && gpu->side.tier.local_size > 1 && hiar_gpu_has_ipc(gpu);
}

/* Its segment, n x (16.5 + 2n) MB at the default 4 MB slot (41 MB for 2 ranks, 98 for 4, 260 for 8), each rank
 * pinning all of it, is in /dev/shm only while tuning times it or chose it. */
hiar_result_t hiar_gpu_alt_setup(hiar_gpu_t *gpu, MPI_Comm mpi, int rank, int size)
{
    HIAR_CHECK(connect_whole(mpi, rank, size, &gpu->alt, &hiar_transport_pinned, gpu->cfg));
    if (rank == 0)
        HIAR_INFO(IPC, "the pinned-host transport beside CUDA IPC: %s", gpu->alt.why);
    return HIAR_SUCCESS;
}

void hiar_gpu_alt_free(hiar_gpu_t *gpu)
{
    if (!gpu->alt.tp)
        return;
    hiar_side_free(&gpu->alt, HIAR_TEARDOWN_COLLECTIVE);
    gpu->alt.why[0] = '\0'; /* nothing to describe */
}

static void warn_shared_without_mps(const hiar_gpu_t *gpu)
{
    if (gpu->shared_gpu && !hiar_cuda_mps_running() && gpu->side.tier.local == 0)
        HIAR_WARN(IPC, "several ranks share GPU %s but CUDA MPS is not running: their spinning "
                       "kernels time-slice (milliseconds per call instead of microseconds); start it "
                       "with nvidia-cuda-mps-control -d",
                  gpu->bus_id);
}

static hiar_result_t gpu_setup(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    int all_gpu, on_gpu, alone;

    HIAR_CHECK(group_devices(env, gpu));
    all_gpu = group_has_gpus(env, gpu);
    on_gpu = ranks_on_gpu(env, gpu);
    gpu->shared_gpu |= on_gpu > 1; /* ranks of other groups on this GPU spin beside ours too */
    /* [mixed, others]: ranks of several groups of this comm, or other communicators' ranks (HIAR_GPU_SHARERS), on a GPU */
    int declared = declared_sharers(env, on_gpu), beside[2] = {on_gpu > 1, declared > on_gpu};
    HIAR_CHECK(hiar_net_max(env->mpi, beside, 2));
    /* Over the whole comm: the plan (no push where mixed) must be the same on every rank. */
    gpu->mixed = (beside[0] && gpu->side.tier.groups.ngroups > 1) || beside[1];
    on_gpu = declared;
    gpu->cfg = transport_config(env, gpu, all_gpu, on_gpu);
    HIAR_CHECK(connect_transports(env, gpu));
    HIAR_CHECK(agree_hier_slot(env, gpu));
    HIAR_CHECK(annotate_transports(env, gpu));
    /* One group without IPC makes every group stage through the host paths:
     * groups on different paths would wait on different communicators. */
    gpu->hier_ok = gpu->side.tp != NULL;
    HIAR_CHECK(hiar_net_min(env->mpi, &gpu->hier_ok, 1));
    /* Every rank alone too (but HIAR_GROUP_LEVEL=RANK, pure MPI): its one shard's counterparts are all the ranks,
     * on the GPU over one host; between hosts on the progress engine in rounds over the prime factors of the
     * ranks where none is above 3 (core/hosts.c: the message log2(n) times a rank for n a power of 2, where MPI's
     * ring sends it about twice, but asynchronous and capturable), else on staged MPI. */
    alone = gpu->side.tier.groups.ngroups == env->size;
    if (gpu->hier_ok && !(alone && env->params->v[HIAR_P_GROUP_LEVEL].num == HIAR_LEVEL_RANK)) {
        /* Alone on hosts of several ranks, no sets within each host: they serve only the engine's parts between
         * hosts, which such comms do not get (below). */
        HIAR_CHECK(hiar_between_setup(&gpu->between, env->mpi, &gpu->side, gpu->facts, &gpu->cfg,
                                      (int)env->params->v[HIAR_P_BETWEEN].num,
                                      (int)env->params->v[HIAR_P_PINNED].num, !alone));
        /* Groups whose step is not on the GPU take it over MPI. */
        if (gpu->side.tier.groups.ngroups > 1 && !gpu->between.on_gpu && (!alone || hiar_hosts_alone_ok(env->size)))
            HIAR_CHECK(hosts_setup(env, gpu, on_gpu));
    }
    gpu->pinned = gpu->side.tp == &hiar_transport_pinned || hiar_between_pinned(&gpu->between);
    HIAR_CHECK(hiar_net_max(env->mpi, &gpu->pinned, 1));
    HIAR_CHECK(flat_setup(env, gpu, on_gpu));
    if (env->rank == 0 && hiar_log_enabled(HIAR_LOG_INFO, HIAR_SUB_TOPO))
        hiar_topo_table(gpu->facts, &gpu->side.tier.groups, topo_log_line, NULL);
    warn_shared_without_mps(gpu);
    return HIAR_SUCCESS;
}

/* The comm's control words, agreed: a rank without them would leave the others waiting in the setup. */
static hiar_result_t control_setup(const hiar_gpu_env_t *env, hiar_gpu_t *gpu)
{
    hiar_result_t rc = gpu->device < 0 ? HIAR_SUCCESS : hiar_cuda_control_create(&gpu->control);

    return hiar_net_agree(env->mpi, rc, "the kernels' control words");
}

hiar_result_t hiar_gpu_create(const hiar_gpu_env_t *env, hiar_gpu_t **out)
{
    hiar_gpu_t *gpu = calloc(1, sizeof(*gpu));
    hiar_result_t rc;

    if (!gpu)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the GPU state");
    hiar_cuda_current_device(&gpu->device, gpu->bus_id);
    rc = control_setup(env, gpu);
    if (rc == HIAR_SUCCESS)
        rc = gpu_setup(env, gpu);
    if (rc != HIAR_SUCCESS || gpu->device < 0) {
        hiar_gpu_destroy(gpu, rc == HIAR_SUCCESS ? HIAR_TEARDOWN_COLLECTIVE : 0);
        gpu = NULL;
    } else
        hiar_host_memory_prime(); /* the first call's pointer checks: base/hostmem.h */
    *out = gpu;
    return rc;
}

hiar_reg_group_t hiar_gpu_reg_group(const hiar_gpu_t *gpu)
{
    const hiar_tier_t *t = &gpu->side.tier;
    hiar_reg_group_t g = {t->group_comm, t->local, t->local_size, hiar_gpu_has_ipc(gpu), gpu->device};
    return g;
}

void hiar_gpu_destroy(hiar_gpu_t *gpu, int flags)
{
    hiar_reg_group_t g;

    if (!gpu)
        return;
    g = hiar_gpu_reg_group(gpu);
    /* On abort every kernel must stop before any teardown waits for the GPU. */
    if (!(flags & HIAR_TEARDOWN_COLLECTIVE))
        hiar_gpu_abort(gpu);
    else if (gpu->hosts)
        hiar_cuda_device_sync(gpu->device); /* its kernels finish only while the thread serves them */
    hiar_hosts_free(gpu->hosts);
    hiar_between_free(&gpu->between, flags);
    hiar_side_free(&gpu->flat, flags);
    hiar_side_free(&gpu->alt, flags);
    if (gpu->side.tp)
        gpu->side.tp->teardown(gpu->side.state, &gpu->side.tier, flags);
    gpu->side.tp = NULL;
    hiar_reg_clear(&gpu->reg, &g, flags & HIAR_TEARDOWN_COLLECTIVE);
    hiar_transport_staged.teardown(gpu->staged, &gpu->side.tier, flags);
    hiar_side_free(&gpu->side, flags);
    hiar_cuda_control_destroy(&gpu->control); /* after every kernel that could read it */
    free(gpu->facts);
    free(gpu);
}

int hiar_gpu_has_ipc(const hiar_gpu_t *gpu)
{
    return gpu && gpu->side.tp == &hiar_transport_ipc;
}

int hiar_gpu_has_kernels(const hiar_gpu_t *gpu)
{
    return gpu && hiar_transport_runs_kernels(gpu->side.tp);
}

int hiar_gpu_has_self(const hiar_gpu_t *gpu)
{
    return gpu && gpu->side.tp == &hiar_transport_self;
}

hiar_result_t hiar_gpu_status(const hiar_gpu_t *gpu)
{
    if (gpu && gpu->side.tp)
        HIAR_CHECK(gpu->side.tp->status(gpu->side.state));
    if (gpu && gpu->flat.tp)
        HIAR_CHECK(gpu->flat.tp->status(gpu->flat.state));
    if (gpu && gpu->alt.tp)
        HIAR_CHECK(gpu->alt.tp->status(gpu->alt.state));
    if (gpu && gpu->hosts)
        HIAR_CHECK(hiar_hosts_status(gpu->hosts));
    return gpu ? hiar_between_status(&gpu->between) : HIAR_SUCCESS;
}

void hiar_gpu_abort(hiar_gpu_t *gpu)
{
    if (gpu && gpu->side.tp)
        gpu->side.tp->abort(gpu->side.state);
    if (gpu && gpu->flat.tp)
        gpu->flat.tp->abort(gpu->flat.state);
    if (gpu && gpu->alt.tp)
        gpu->alt.tp->abort(gpu->alt.state);
    if (gpu)
        hiar_between_abort(&gpu->between);
    if (gpu && gpu->hosts)
        hiar_hosts_abort(gpu->hosts);
}

void hiar_gpu_summary(const hiar_gpu_t *gpu, char *buf, size_t size)
{
    if (!gpu)
        snprintf(buf, size, "no GPU on this rank");
    else
        snprintf(buf, size, "GPU %d (%s)%s: device buffers %s", gpu->device, gpu->bus_id,
                 gpu->shared_gpu ? ", shared with another rank" : "", gpu->side.why);
}

static void print_line(void *out, const char *text)
{
    fprintf(out, "%s\n", text);
}

hiar_result_t hiar_gpu_print_topology(const hiar_gpu_t *gpu, FILE *out)
{
    if (!gpu)
        return HIAR_SUCCESS;
    HIAR_CHECK(hiar_topo_print(out, gpu->facts, &gpu->side.tier.groups));
    hiar_topo_between(gpu->facts, NULL, &gpu->side.tier.groups, print_line, out);
    return HIAR_SUCCESS;
}
