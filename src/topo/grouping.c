/* The grouping of ranks as a table: built from labels or host identities, sized, freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topo/topo.h"

void hiar_grouping_free(hiar_grouping_t *g)
{
    free(g->group_of);
    free(g->local_index);
    free(g->start);
    free(g->members);
    free(g->info);
    memset(g, 0, sizeof(*g));
}

int hiar_grouping_max_size(const hiar_grouping_t *g)
{
    int max = 0;
    for (int i = 0; i < g->ngroups; i++)
        if (hiar_group_size(g, i) > max)
            max = hiar_group_size(g, i);
    return max;
}

hiar_result_t hiar_grouping_from_labels(const int *label, int nranks, hiar_grouping_t *out)
{
    hiar_grouping_t g = {.nranks = nranks};
    int *fill;

    g.group_of = malloc(sizeof(int) * (size_t)nranks);
    g.local_index = malloc(sizeof(int) * (size_t)nranks);
    g.start = calloc((size_t)nranks + 1, sizeof(int));
    g.members = malloc(sizeof(int) * (size_t)nranks);
    fill = calloc((size_t)nranks + 1, sizeof(int));
    if (!g.group_of || !g.local_index || !g.start || !g.members || !fill) {
        free(fill);
        hiar_grouping_free(&g);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the grouping of %d ranks", nranks);
    }
    /* Number groups in order of their first (= smallest) rank. */
    for (int r = 0; r < nranks; r++) {
        int same = -1;
        for (int q = 0; q < r && same < 0; q++)
            if (label[q] == label[r])
                same = q;
        g.group_of[r] = same < 0 ? g.ngroups++ : g.group_of[same];
        g.start[g.group_of[r] + 1]++;
    }
    for (int i = 0; i < g.ngroups; i++)
        g.start[i + 1] += g.start[i];
    for (int r = 0; r < nranks; r++) {
        int grp = g.group_of[r];
        g.local_index[r] = fill[grp]++;
        g.members[g.start[grp] + g.local_index[r]] = r;
    }
    free(fill);
    *out = g;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_grouping_by_host(const char *host_ids, int nranks, hiar_grouping_t *out)
{
    int *label = malloc(sizeof(int) * (size_t)nranks);
    hiar_result_t rc;

    if (!label)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d labels", nranks);
    for (int r = 0; r < nranks; r++) {
        label[r] = r;
        for (int q = 0; q < r; q++)
            if (strncmp(host_ids + (size_t)q * HIAR_HOST_ID_MAX,
                        host_ids + (size_t)r * HIAR_HOST_ID_MAX, HIAR_HOST_ID_MAX) == 0) {
                label[r] = label[q];
                break;
            }
    }
    rc = hiar_grouping_from_labels(label, nranks, out);
    free(label);
    return rc;
}

hiar_result_t hiar_grouping_singletons(int nranks, hiar_grouping_t *out)
{
    int *label = malloc(sizeof(int) * (size_t)nranks);
    hiar_result_t rc;

    if (!label)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d labels", nranks);
    for (int r = 0; r < nranks; r++)
        label[r] = r;
    rc = hiar_grouping_from_labels(label, nranks, out);
    free(label);
    if (rc == HIAR_SUCCESS)
        snprintf(out->why, sizeof(out->why), HIAR_GROUPING_RANK_WHY);
    return rc;
}
