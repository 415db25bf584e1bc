/*
 * Grouping of ranks.  Every rank computes the same grouping from the same
 * gathered table, so these functions are pure: no MPI, no globals.
 */
#ifndef HIAR_TOPO_H
#define HIAR_TOPO_H

#include "hiar.h"

/* Longest host identity kept (hostname + boot id, or HIAR_HOST_ID). */
#define HIAR_HOST_ID_MAX 128

/*
 * Groups are numbered by their smallest rank; members of a group are sorted
 * by rank, and a rank's local index is its position there.
 */
typedef struct {
    int nranks;
    int ngroups;
    int *group_of;    /* [nranks] group of each rank */
    int *local_index; /* [nranks] position of each rank in its group */
    int *start;       /* [ngroups + 1] offsets into members */
    int *members;     /* [nranks] ranks, group after group */
    char why[160];    /* one line saying how the grouping was chosen */
} hiar_grouping_t;

/* Ranks with equal labels form a group. */
hiar_result_t hiar_grouping_from_labels(const int *label, int nranks, hiar_grouping_t *out);

/* Ranks whose host identities (HIAR_HOST_ID_MAX bytes each) are equal. */
hiar_result_t hiar_grouping_by_host(const char *host_ids, int nranks, hiar_grouping_t *out);

/* Parses HIAR_GROUPS: groups separated by '|', ranks by ',', ranges a-b. */
hiar_result_t hiar_grouping_parse(const char *text, int nranks, hiar_grouping_t *out);

void hiar_grouping_free(hiar_grouping_t *g);

static inline int hiar_group_size(const hiar_grouping_t *g, int group)
{
    return g->start[group + 1] - g->start[group];
}

/* Largest group size: the number of shards a message is cut into between groups. */
int hiar_grouping_max_size(const hiar_grouping_t *g);

/* This host's identity: HIAR_HOST_ID if set, else hostname + boot id. */
void hiar_topo_host_id(const char *override, char out[HIAR_HOST_ID_MAX]);

#endif
