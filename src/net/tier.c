/* A grouping tier's communicators: this rank's group and one per shard between groups. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "net/coll.h"
#include "net/tier.h"

static hiar_result_t shard_comms(hiar_tier_t *t, MPI_Comm mpi)
{
    t->shard_comm = malloc(sizeof(MPI_Comm) * (size_t)t->nshards);
    for (int s = 0; t->shard_comm && s < t->nshards; s++)
        t->shard_comm[s] = MPI_COMM_NULL; /* before the agreement: a failure frees the tier */
    /* Agreed: a rank that failed here must not leave the others in the splits below. */
    HIAR_CHECK(hiar_net_agree(mpi,
                              t->shard_comm ? HIAR_SUCCESS
                                            : hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d shard communicators",
                                                             t->nshards),
                              "the shard communicators"));
    for (int s = 0; t->groups.ngroups > 1 && s < t->nshards; s++)
        HIAR_MPI_CHECK(MPI_Comm_split(mpi, hiar_tier_owns(t, s) ? 0 : MPI_UNDEFINED, t->group, &t->shard_comm[s]));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_tier_init(hiar_tier_t *t, MPI_Comm mpi, int rank, hiar_grouping_t *g)
{
    memset(t, 0, sizeof(*t));
    t->groups = *g;
    memset(g, 0, sizeof(*g));
    t->group_comm = MPI_COMM_NULL;
    t->rank = rank;
    t->group = t->groups.group_of[rank];
    t->local = t->groups.local_index[rank];
    t->local_size = hiar_group_size(&t->groups, t->group);
    t->nshards = hiar_grouping_max_size(&t->groups);
    HIAR_MPI_CHECK(MPI_Comm_split(mpi, t->group, rank, &t->group_comm));
    return shard_comms(t, mpi);
}

void hiar_tier_free(hiar_tier_t *t, int keep_mpi)
{
    if (!t->groups.group_of) /* never initialised */
        return;
    for (int s = 0; !keep_mpi && t->shard_comm && s < t->nshards; s++)
        if (t->shard_comm[s] != MPI_COMM_NULL)
            MPI_Comm_free(&t->shard_comm[s]);
    if (!keep_mpi && t->group_comm != MPI_COMM_NULL)
        MPI_Comm_free(&t->group_comm);
    free(t->shard_comm);
    hiar_grouping_free(&t->groups);
    memset(t, 0, sizeof(*t));
    t->group_comm = MPI_COMM_NULL;
}

int hiar_tier_rounds(int n, int me, int max_factor, hiar_tier_round_t *rounds)
{
    int k = 0, weight = 1, left = n;

    for (int p = 2; p <= max_factor && left > 1; p++)
        for (; left % p == 0; left /= p, weight *= p, k++) {
            int digit = me / weight % p;
            rounds[k] = (hiar_tier_round_t){.color = me - digit * weight, .key = digit, .size = p};
        }
    return n >= 2 && left == 1 ? k : 0;
}
