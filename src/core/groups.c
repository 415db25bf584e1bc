/* Groupings of the two sides of a communicator, and their tiers and transports. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/groups.h"
#include "net/coll.h"

/* HIAR_GROUPS, when set: the same grouping on both sides. */
static hiar_result_t explicit_groups(const hiar_params_t *p, int size, hiar_grouping_t *g)
{
    const char *text = p->v[HIAR_P_GROUPS].text;

    HIAR_CHECK(hiar_grouping_parse(text, size, g));
    snprintf(g->why, sizeof(g->why), "HIAR_GROUPS=%s", text);
    return HIAR_SUCCESS;
}

/* Shared memory needs one machine: a group must not span real hosts. */
static hiar_result_t check_real_hosts(const hiar_grouping_t *g, const char *real_ids, int size)
{
    for (int r = 0; r < size; r++) {
        int first = g->members[g->start[g->group_of[r]]];
        const char *a = real_ids + (size_t)first * HIAR_HOST_ID_MAX, *b = real_ids + (size_t)r * HIAR_HOST_ID_MAX;
        if (strncmp(a, b, HIAR_HOST_ID_MAX) != 0)
            return hiar_error_set(HIAR_INVALID_ARGUMENT,
                                  "%s puts ranks %d and %d in one group, but they run on different hosts (%s, %s): "
                                  "a group must share memory",
                                  g->why, first, r, a, b);
    }
    return HIAR_SUCCESS;
}

static hiar_result_t choose_host(const hiar_params_t *p, const char *ids, const char *real_ids, int size,
                                 hiar_grouping_t *g)
{
    hiar_result_t rc;

    if (*p->v[HIAR_P_GROUPS].text)
        HIAR_CHECK(explicit_groups(p, size, g));
    else if (p->v[HIAR_P_GROUP_LEVEL].num == HIAR_LEVEL_RANK)
        HIAR_CHECK(hiar_grouping_singletons(size, g));
    else {
        HIAR_CHECK(hiar_grouping_by_host(ids, size, g));
        snprintf(g->why, sizeof(g->why), "host buffers: one group per host%s",
                 *p->v[HIAR_P_HOST_ID].text ? " (HIAR_HOST_ID)" : "");
    }
    rc = check_real_hosts(g, real_ids, size);
    if (rc != HIAR_SUCCESS)
        hiar_grouping_free(g);
    return rc;
}

/* The number of distinct identities in a table of n, and the most ranks that share one. */
static hiar_result_t count_distinct(const char *ids, int n, int *count, int *most)
{
    hiar_grouping_t g = {0};

    HIAR_CHECK(hiar_grouping_by_host(ids, n, &g));
    *count = g.ngroups;
    *most = hiar_grouping_max_size(&g);
    hiar_grouping_free(&g);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_groups_host(const hiar_params_t *p, MPI_Comm mpi, int rank, int size, hiar_grouping_t *out,
                               hiar_host_facts_t *facts)
{
    hiar_topo_rank_host_t mine, *all = malloc((size_t)size * sizeof(*all));
    char *ids = NULL;
    hiar_result_t rc;

    if (!all || !(ids = malloc((size_t)size * 2 * HIAR_HOST_ID_MAX))) {
        free(all);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the host table of %d ranks", size);
    }
    hiar_topo_rank_host(p->v[HIAR_P_HOST_ID].text, &mine);
    rc = hiar_net_allgather(mpi, &mine, sizeof(mine), all, "MPI_Allgather of host identities");
    /* Two contiguous tables of identities: as overridden, then real. */
    for (int r = 0; rc == HIAR_SUCCESS && r < size; r++) {
        memcpy(ids + (size_t)r * HIAR_HOST_ID_MAX, all[r].host, HIAR_HOST_ID_MAX);
        memcpy(ids + ((size_t)size + r) * HIAR_HOST_ID_MAX, all[r].machine, HIAR_HOST_ID_MAX);
    }
    if (rc == HIAR_SUCCESS) {
        facts->cpus = hiar_topo_machine_cpus(all, size, rank);
        rc = count_distinct(ids + (size_t)size * HIAR_HOST_ID_MAX, size, &facts->machines, &facts->machine_ranks);
    }
    if (rc == HIAR_SUCCESS)
        rc = choose_host(p, ids, ids + (size_t)size * HIAR_HOST_ID_MAX, size, out);
    free(ids);
    free(all);
    return rc;
}

hiar_result_t hiar_groups_device(const hiar_params_t *p, const hiar_topo_fact_t *facts, int size,
                                 hiar_grouping_t *out)
{
    if (!*p->v[HIAR_P_GROUPS].text)
        return hiar_topo_group(facts, size, (int)p->v[HIAR_P_GROUP_LEVEL].num, NULL, out);
    hiar_result_t rc;

    HIAR_CHECK(explicit_groups(p, size, out));
    rc = hiar_topo_annotate(facts, NULL, out);
    if (rc != HIAR_SUCCESS)
        hiar_grouping_free(out);
    return rc;
}

hiar_result_t hiar_side_connect(hiar_side_t *s, const hiar_transport_t *const *candidates, int n,
                                const hiar_transport_config_t *cfg)
{
    char first[sizeof(s->why)] = "", other[sizeof(s->why)];
    hiar_result_t rc = HIAR_SUCCESS;
    int tried = 0;

    for (int i = 0; i < n && !s->tp; i++) {
        const hiar_transport_t *tp = candidates[i];
        if (!tp->usable(&s->tier, cfg, i ? other : first, sizeof(first)))
            continue;
        tried = 1;
        rc = tp->setup(&s->tier, cfg, &s->state, s->why, sizeof(s->why));
        if (rc == HIAR_SUCCESS)
            s->tp = tp;
    }
    if (!tried)
        memcpy(s->why, first, sizeof(first));
    return rc;
}

void hiar_side_free(hiar_side_t *s, int flags)
{
    if (s->tp)
        s->tp->teardown(s->state, &s->tier, flags);
    s->tp = NULL;
    s->state = NULL;
    hiar_tier_free(&s->tier, flags & HIAR_TEARDOWN_KEEP);
}
