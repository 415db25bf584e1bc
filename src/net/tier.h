/*
 * One grouping tier: how the ranks group for one kind of memory, and the
 * MPI communicators that go with it: this rank's group, and for the step
 * between groups one communicator per shard.  The communicator builds one
 * tier for host buffers and one for device buffers, with the same code.
 */
#ifndef HIAR_NET_TIER_H
#define HIAR_NET_TIER_H

#include <mpi.h>

#include "topo/topo.h"

typedef struct hiar_tier {
    hiar_grouping_t groups;
    int rank, group, local, local_size;
    int nshards;          /* message shards between groups: the largest group's size */
    MPI_Comm group_comm;  /* this rank's group */
    /*
     * [nshards] for shard s, the ranks that own it, local index s % group
     * size, one per group, ordered by group; MPI_COMM_NULL where this rank
     * owns nothing, and everywhere for a single group.
     */
    MPI_Comm *shard_comm;
} hiar_tier_t;

/*
 * Collective over mpi: takes over *g (left empty) and splits the group and
 * shard communicators, one split per shard, in shard order on every rank,
 * so that the step between groups cannot deadlock.
 */
hiar_result_t hiar_tier_init(hiar_tier_t *t, MPI_Comm mpi, int rank, hiar_grouping_t *g);

/* keep_mpi: leave the communicators (a failed call may have left requests on them). */
void hiar_tier_free(hiar_tier_t *t, int keep_mpi);

/* Whether this rank owns shard s (s % group size == local index). */
static inline int hiar_tier_owns(const hiar_tier_t *t, int s)
{
    return s % t->local_size == t->local;
}

/*
 * Every rank of n alone in its group, the step between them in rounds, one
 * per prime factor of n, smallest first (mixed radix: core/hosts.c says
 * why): round r's link is the ranks that differ from this one (me) in
 * digit r only, size of them, ordered by key (that digit), all of one color
 * (MPI_Comm_split's).  Returns how many rounds, at most HIAR_TIER_ROUNDS_MAX
 * (every n that fits an int); 0 where n < 2 or a prime factor of n is above
 * max_factor.
 */
#define HIAR_TIER_ROUNDS_MAX 31

typedef struct {
    int color, key, size;
} hiar_tier_round_t;

int hiar_tier_rounds(int n, int me, int max_factor, hiar_tier_round_t *rounds);

#endif
