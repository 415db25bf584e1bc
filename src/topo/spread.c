/* How groups spread over hosts: host labels, and whether every host holds the same number of like groups. */
#include <stdlib.h>

#include "topo/topo.h"

int hiar_topo_host_label(const hiar_topo_fact_t *facts, int r)
{
    for (int q = 0; q < r; q++)
        if (hiar_topo_same_host(&facts[q], &facts[r]))
            return q;
    return r;
}

/* The host of group grp, where all its members share one; -1 where they do not. */
static int group_host(const hiar_topo_fact_t *facts, const hiar_grouping_t *g, int grp)
{
    int first = g->members[g->start[grp]];

    for (int m = g->start[grp] + 1; m < g->start[grp + 1]; m++)
        if (!hiar_topo_same_host(&facts[g->members[m]], &facts[first]))
            return -1;
    return hiar_topo_host_label(facts, first);
}

/* The groups on each group's host, where every host has as many: else 0. */
static int count_alike(const int *host, const hiar_grouping_t *g)
{
    int per_host = 0;

    for (int grp = 0; grp < g->ngroups; grp++) {
        int n = 0;
        if (host[grp] < 0 || hiar_group_size(g, grp) != hiar_group_size(g, 0))
            return 0;
        for (int k = 0; k < g->ngroups; k++)
            n += host[k] == host[grp];
        if (per_host && n != per_host)
            return 0;
        per_host = n;
    }
    return per_host;
}

int hiar_topo_groups_per_host(const hiar_topo_fact_t *facts, const hiar_grouping_t *g)
{
    int *host = malloc(sizeof(int) * (size_t)g->ngroups), n = 0;

    if (!host)
        return -1;
    for (int grp = 0; grp < g->ngroups; grp++)
        host[grp] = group_host(facts, g, grp);
    n = count_alike(host, g);
    free(host);
    return n;
}
