/* hiar_comm_describe: the groups, why they were chosen, and the paths. */
#include "config.h"

#include "core/comm.h"
#include "base/error.h"
#include "base/log.h"
#include "core/plan.h"

/* Writes to out, or to the log at INFO when out is NULL. */
#define EMIT(out, fmt, ...)                                                                \
    do {                                                                                   \
        if (out)                                                                           \
            fprintf(out, fmt "\n", ##__VA_ARGS__);                                       \
        else                                                                               \
            HIAR_INFO(INIT, fmt, ##__VA_ARGS__);                                           \
    } while (0)

hiar_result_t hiar_comm_describe(const hiar_comm_t *comm, FILE *out)
{
    const hiar_grouping_t *g;
    long long oneshot_max, buffer;

    HIAR_CHECK(hiar_comm_check_live(comm, "hiar_comm_describe"));
    g = &comm->groups;
    oneshot_max = hiar_comm_param(comm, HIAR_P_ONESHOT_MAX);
    buffer = hiar_comm_param(comm, HIAR_P_BUFFER_SIZE);
    if (!buffer)
        buffer = (long long)HIAR_SHM_SLOT_DEFAULT;
    EMIT(out, "hiar %s: %d ranks in %d groups (%s)", hiar_version(), comm->size, g->ngroups, g->why);
    for (int i = 0; i < g->ngroups; i++) {
        char members[512];
        int n = 0;
        for (int m = g->start[i]; m < g->start[i + 1] && n < (int)sizeof(members) - 16; m++)
            n += snprintf(members + n, sizeof(members) - (size_t)n, "%s%d", m > g->start[i] ? "," : "",
                          g->members[m]);
        EMIT(out, "  group %d: ranks %s  transport %s", i, members,
             hiar_group_size(g, i) > 1 ? "shm" : "none");
    }
    if (hiar_comm_param(comm, HIAR_P_ALGO) == HIAR_ALGO_MPI)
        EMIT(out, "  paths: mpi (HIAR_ALGO=mpi)");
    else if (g->ngroups == comm->size && comm->size > 1)
        EMIT(out, "  paths: mpi (every rank alone)");
    else if (g->ngroups > 1)
        EMIT(out, "  paths: hier-oneshot up to %zu bytes, then hier (reduce-scatter in groups, MPI on %d "
                  "shards, all-gather), chunks of %lld bytes",
             hiar_comm_hier_oneshot_max(comm), comm->nshards, buffer);
    else
        EMIT(out, "  host paths: oneshot up to %lld bytes, then twoshot, chunks of %lld bytes",
             oneshot_max ? oneshot_max : (long long)HIAR_SHM_ONESHOT_MAX_DEFAULT, buffer);
#ifdef HIAR_HAVE_CUDA
    {
        char gpu[480];
        hiar_devcomm_summary(comm->dev, gpu, sizeof(gpu));
        EMIT(out, "  rank %d: %s", comm->rank, gpu);
        if (out && comm->dev)
            hiar_devcomm_print_topology(comm->dev, out);
    }
#endif
    if (hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_AUTO && hiar_comm_param(comm, HIAR_P_ALGO) != HIAR_ALGO_MPI)
        EMIT(out, "  HIAR_ALGO=%s forces the path", comm->params.v[HIAR_P_ALGO].text);
    return HIAR_SUCCESS;
}
