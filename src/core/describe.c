/* hiar_comm_describe: the groups, why they were chosen, and the paths, from the plan's own limits. */
#include "config.h"

#include "base/error.h"
#include "base/log.h"
#include "core/comm.h"
#include "core/plan.h"

/* Writes to out, or to the log at INFO when out is NULL. */
#define EMIT(out, fmt, ...)                                                                \
    do {                                                                                   \
        if (out)                                                                           \
            fprintf(out, fmt "\n", ##__VA_ARGS__);                                       \
        else                                                                               \
            HIAR_INFO(INIT, fmt, ##__VA_ARGS__);                                           \
    } while (0)

static void describe_paths(const hiar_comm_t *comm, FILE *out)
{
    const hiar_tier_t *t = &comm->host.tier;
    hiar_plan_input_t in;
    hiar_plan_limits_t l;
    size_t slot = comm->host.tp ? comm->host.tp->max_bytes(comm->host.state) : 0; /* the segment's, as run.c cuts */

    hiar_comm_plan_input(comm, 0, 0, &in);
    hiar_plan_limits(&in, &l);
    if (hiar_comm_param(comm, HIAR_P_ALGO) == HIAR_ALGO_MPI)
        EMIT(out, "  paths: mpi (HIAR_ALGO=mpi)");
    else if (t->groups.ngroups == comm->size && comm->size > 1)
        EMIT(out, "  paths: mpi (every rank alone)");
    else if (t->groups.ngroups > 1)
        EMIT(out, "  paths: hier-oneshot up to %zu bytes, then hier (reduce-scatter in groups, MPI on %d "
                  "shards, all-gather), chunks of %zu bytes",
             l.hier_oneshot_max, t->nshards, slot);
    else
        EMIT(out, "  host paths: oneshot up to %zu bytes, then twoshot, chunks of %zu bytes", l.shm_oneshot_max,
             slot);
}

/* The measured table: us per call, max over ranks; '*' marks the candidate the chosen limit takes at each size. */
static void describe_table(const hiar_tune_t *t, FILE *out)
{
    const hiar_tune_table_t *tb = &t->table;

    EMIT(out, "  tuning table (us per call, max over ranks; * the path taken; - dropped or not timed):");
    EMIT(out, "  %10s %14s %14s", "bytes", tb->names[0], tb->names[1]);
    for (int i = 0; i < tb->nsizes; i++) {
        char cell[HIAR_TUNE_NCAND][32];
        int taken = hiar_tune_size(i) <= t->chosen ? 0 : 1;
        for (int k = 0; k < HIAR_TUNE_NCAND; k++)
            if (tb->dropped[k] || tb->us[k][i] < 0)
                snprintf(cell[k], sizeof(cell[k]), "-");
            else
                snprintf(cell[k], sizeof(cell[k]), "%s%.1f", k == taken ? "*" : "", tb->us[k][i]);
        EMIT(out, "  %10zu %14s %14s", hiar_tune_size(i), cell[0], cell[1]);
    }
}

/* The device table of mode m: us per call of each path timed; '*' the path taken at each size, '-' not timed or
 * dropped. */
static void describe_dev_table(const hiar_tune_t *t, int m, FILE *out)
{
    const hiar_tune_dev_table_t *d = &t->dev;
    char line[256];
    size_t n;

    EMIT(out, "  device tuning table, %s calls (us per call on bfloat16/float32, max over ranks; * the path taken; - "
              "not a candidate there, or dropped)%s:", hiar_tune_dev_mode_name(m),
         m == HIAR_TUNE_DEV_GRAPH ? ", a call's time in a replayed graph of such calls" : "");
    n = (size_t)snprintf(line, sizeof(line), "  %10s", "bytes");
    for (int k = 1; k < HIAR_TUNE_DEV_COUNT && n < sizeof(line); k++)
        n += (size_t)snprintf(line + n, sizeof(line) - n, " %15s", hiar_tune_dev_name(k));
    EMIT(out, "%s", line);
    for (int i = 0; i < d->nsizes; i++) {
        int taken = t->limits.device[m][i] == HIAR_TUNE_DEV_BUILTIN ? d->builtin[i] : t->limits.device[m][i];
        n = (size_t)snprintf(line, sizeof(line), "  %10zu", hiar_tune_dev_size(i));
        for (int k = 1; k < HIAR_TUNE_DEV_COUNT && n < sizeof(line); k++) {
            char cell[32] = "-";
            if (!d->dropped[k] && d->us[m][0][k][i] > 0 && d->us[m][1][k][i] > 0)
                snprintf(cell, sizeof(cell), "%s%.1f/%.1f", k == taken ? "*" : "", d->us[m][0][k][i],
                         d->us[m][1][k][i]);
            n += (size_t)snprintf(line + n, sizeof(line) - n, " %15s", cell);
        }
        EMIT(out, "%s", line);
    }
}

/* The device paths a cache or a measurement chose for calls of mode m, per ladder size ("builtin": the plan's
 * own). */
static void describe_dev_choice(const hiar_tune_t *t, int m, FILE *out)
{
    char line[400];
    size_t n = (size_t)snprintf(line, sizeof(line), "  device paths tuned, %s calls:", hiar_tune_dev_mode_name(m));

    for (int i = 0; i < t->limits.device_n && n < sizeof(line); i++)
        n += (size_t)snprintf(line + n, sizeof(line) - n, " %zu:%s", hiar_tune_dev_size(i),
                              hiar_tune_dev_name(t->limits.device[m][i]));
    EMIT(out, "%s", line);
}

/* Where the crossovers came from: "tuning: cache <path>", "measured in 0.8 s", "built-in thresholds". */
static void describe_tuning(const hiar_comm_t *comm, FILE *out)
{
    const hiar_tune_t *t = &comm->tune;

    if (t->from == HIAR_TUNED_CACHE)
        EMIT(out, "  tuning: cache %s", t->path);
    else if (t->from == HIAR_TUNED_MEASURED && t->measured)
        EMIT(out, "  tuning: measured in %.2f s (%s up to %zu bytes), cache %s", t->seconds, t->table.names[0],
             t->chosen, t->path[0] ? t->path : "not written");
    else if (t->from == HIAR_TUNED_MEASURED)
        EMIT(out, "  tuning: measured in %.2f s (device paths), cache %s", t->seconds,
             t->path[0] ? t->path : "not written");
    else
        EMIT(out, "  tuning: built-in thresholds (%s)", t->why);
    if (t->measured)
        describe_table(t, out);
    for (int m = 0; t->from != HIAR_TUNED_DEFAULTS && t->limits.device_n && m < HIAR_TUNE_DEV_NMODES; m++)
        describe_dev_choice(t, m, out);
    for (int m = 0; t->dev_measured && m < HIAR_TUNE_DEV_NMODES; m++)
        describe_dev_table(t, m, out);
}

#ifdef HIAR_HAVE_CUDA
/* The chunk of the one kernel over groups (ipc-hier-twoshot), as a large message's plan has it. */
static size_t fused_chunk(const hiar_plan_input_t *in)
{
    hiar_plan_input_t big = *in;

    big.bytes = (size_t)1 << 30;
    big.algo = HIAR_ALGO_AUTO;
    big.tuned_device_n = big.flat_nranks = 0; /* the hierarchical path, whatever tuning chose */
    return hiar_plan_choose(&big).chunk;
}

/* What device buffers take, from the same limits as the plan. */
static void describe_device_paths(const hiar_comm_t *comm, FILE *out)
{
    hiar_plan_input_t in;
    hiar_plan_limits_t l, ints;
    char ints_ll[48] = "", push[64];

    hiar_comm_plan_input(comm, 1, 0, &in);
    hiar_plan_limits(&in, &ints);
    in.floating = 1; /* the float types' limits; integer ones' said where they differ */
    hiar_plan_limits(&in, &l);
    if (l.ipc_ll_max != ints.ipc_ll_max)
        snprintf(ints_ll, sizeof(ints_ll), " (integer types %zu)", ints.ipc_ll_max);
    if (l.ipc_push_max == SIZE_MAX)
        snprintf(push, sizeof(push), "ipc-push beyond");
    else
        snprintf(push, sizeof(push), "ipc-push up to %zu, then ipc-twoshot", l.ipc_push_max);
    if (in.ngroups == 1 && in.ipc) /* the group's kernels' slot, as set up (core/gpu.c hier_slot) */
        EMIT(out, "  device paths: ipc-ll up to %zu bytes%s, %s, slots of %zu bytes%s", l.ipc_ll_max, ints_ll, push,
             (size_t)comm->gpu->hier_slot, in.pinned ? " (the kernels over pinned host memory)" : "");
    else if (hiar_plan_self(&in))
        EMIT(out, "  device paths: self (one rank: the input copied to the output on the stream, in place "
                  "nothing to do; capturable)");
    else if (hiar_plan_alone_over_mpi(&in))
        EMIT(out, "  device paths: staged mpi (every rank alone, without a step between groups)");
    else if (in.hier_ready && in.between_gpu)
        EMIT(out, "  device paths: ipc-hier-ll up to %zu bytes (LL in the group, LL between groups), then ipc-hier "
                  "(three kernels: reduce-scatter, %d shards between groups, all-gather; chunks of %zu bytes) while "
                  "a shard takes LL or push between groups (push up to %d bytes, none where groups share a GPU), "
                  "then ipc-hier-twoshot (one kernel: "
                  "reduce-scatter in the group and between groups, all-gather back; chunks of %zu bytes); kernels "
                  "only, capturable; between groups: %s",
             l.device_hier_ll_max, in.device_nshards, hiar_ipc_hier_chunk(l.ipc_slot, in.device_nshards),
             HIAR_IPC_PUSH_MAX, fused_chunk(&in), comm->gpu->between.why);
    else if (in.hier_ready && in.hosts_async && l.device_hosts_ll_max)
        EMIT(out, "  device paths: ipc-hosts-ll up to %zu bytes (%s), then hier (GPU) in chunks of %zu bytes; between "
                  "groups: %s, %s",
             l.device_hosts_ll_max,
             in.hosts_alone_extra ? "a copy, then the whole message with every rank"
                                  : "the group's one-shot, then the whole message with the counterparts",
             hiar_ipc_hier_chunk(l.ipc_slot, in.device_nshards), comm->gpu->between.why, comm->gpu->hosts_why);
    else if (in.hier_ready && in.hosts_async)
        EMIT(out, "  device paths: hier (GPU) in chunks of %zu bytes at every size; between groups: %s, %s",
             hiar_ipc_hier_chunk(l.ipc_slot, in.device_nshards), comm->gpu->between.why, comm->gpu->hosts_why);
    else if (in.hier_ready)
        EMIT(out, "  device paths: staged up to %d bytes, then hier (GPU) in chunks of %zu bytes; between groups: "
                  "%s, %s",
             HIAR_DEVICE_HIER_MIN, hiar_ipc_hier_chunk(l.ipc_slot, in.device_nshards), comm->gpu->between.why,
             comm->gpu->hosts_why[0] ? comm->gpu->hosts_why : "on the calling thread, blocking");
    else
        EMIT(out, "  device paths: staged through host memory along the host groups");
    if (comm->gpu->alt.why[0])
        EMIT(out, "  device pinned-host transport beside CUDA IPC: %s%s", comm->gpu->alt.why,
             comm->gpu->alt.tp ? "; its kernels (pinned-ll, pinned-push, pinned-twoshot) take the sizes where tuning "
                                 "chose pinned"
                               : "");
    if (in.ngroups > 1 && l.device_flat_max)
        EMIT(out, "  device group over the host: %d ranks, %s; messages up to %zu bytes take its kernels "
                  "(flat-ll, or flat-push and flat-twoshot above its LL limit), larger ones the paths above "
                  "(or where tuning says otherwise)", in.flat_nranks, comm->gpu->flat.why, l.device_flat_max);
    else if (in.ngroups > 1)
        EMIT(out, "  device group over the host: %s", comm->gpu->flat.why);
}
#endif

hiar_result_t hiar_comm_describe(const hiar_comm_t *comm, FILE *out)
{
    const hiar_grouping_t *g;

    HIAR_CHECK(hiar_comm_check_live(comm, "hiar_comm_describe"));
    g = &comm->host.tier.groups;
    EMIT(out, "hiar %s: %d ranks in %d groups (%s)", hiar_version(), comm->size, g->ngroups, g->why);
    for (int i = 0; i < g->ngroups; i++) {
        char members[512];
        hiar_grouping_members(g, i, members, sizeof(members));
        EMIT(out, "  group %d: ranks %s  transport %s", i, members, hiar_group_size(g, i) > 1 ? "shm" : "none");
    }
    describe_paths(comm, out);
    EMIT(out, "  waits: %s", comm->yield_why);
    describe_tuning(comm, out);
    EMIT(out, "  mpi device pointers: %s (%s)", comm->mpi_device.yes ? "yes" : "no", comm->mpi_device.why);
#ifdef HIAR_HAVE_CUDA
    {
        char gpu[480];
        hiar_gpu_summary(comm->gpu, gpu, sizeof(gpu));
        EMIT(out, "  rank %d: %s", comm->rank, gpu);
        if (comm->gpu)
            describe_device_paths(comm, out);
        if (out && comm->gpu)
            hiar_gpu_print_topology(comm->gpu, out);
    }
#endif
    if (hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_AUTO && hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_MPI)
        EMIT(out, "  HIAR_ALGO=%s forces the path", comm->params.v[HIAR_P_ALGO].text);
    return HIAR_SUCCESS;
}
