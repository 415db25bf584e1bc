/* The step between groups on the GPU: one CUDA IPC group per owned shard, made of its counterparts. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/param.h"
#include "core/between.h"
#include "cuda/api.h"
#include "net/coll.h"
#include "transport/kernels.h"

/* The owner of shard s in group g: local index s % the group's size. */
static int owner_in(const hiar_grouping_t *g, int grp, int s)
{
    return g->members[g->start[grp] + s % hiar_group_size(g, grp)];
}

/*
 * Why the counterparts of some shard cannot exchange on the GPU; NULL if
 * every shard's can: on one host, or (*per_host groups on each) within each
 * host.  The same on every rank, but *per_host -1 where this rank had no
 * memory to count the groups.
 */
static const char *unfit(const hiar_tier_t *t, const hiar_topo_fact_t *facts, int *per_host)
{
    const hiar_grouping_t *g = &t->groups;
    int spans = 0, n;

    *per_host = 0;
    for (int s = 0; s < t->nshards; s++)
        for (int grp = 0; grp < g->ngroups; grp++) {
            const hiar_topo_fact_t *f = &facts[owner_in(g, grp, s)], *first = &facts[owner_in(g, 0, s)];
            if (!f->pci.bus_id[0])
                return "a rank has no GPU";
            spans |= !hiar_topo_same_host(f, first);
        }
    if (!spans)
        return g->ngroups > HIAR_IPC_MAX_GROUP ? "more than 8 groups" : NULL;
    n = hiar_topo_groups_per_host(facts, g);
    if (n == 1)
        return "the groups span hosts, one on each";
    if (n == 0)
        return "the groups span hosts unevenly: groups of different sizes, or hosts with different numbers of them";
    if (n < 0) { /* this rank's alone: the allocations' agreement (hiar_between_setup) takes it */
        *per_host = -1;
        return NULL;
    }
    if (n > HIAR_IPC_MAX_GROUP)
        return "more than 8 groups on a host";
    *per_host = n;
    return NULL;
}

/* Shard s's counterparts as a tier of their own: rank i of it is group i's owner (net/tier.c splits by group). */
static void counterparts(const hiar_tier_t *t, int s, hiar_tier_t *out)
{
    memset(out, 0, sizeof(*out));
    out->rank = t->rank;
    out->group = s;
    out->local = t->group;
    out->local_size = t->groups.ngroups;
    out->nshards = 1;
    out->group_comm = t->shard_comm[s]; /* borrowed: the device tier frees it */
}

/*
 * per_host: shard s's counterparts on this host as a tier of their own (rank
 * i of it: the i-th of their groups; part i of the shard is its), and the
 * owners of this rank's part on every host (b->hosts, by host).  Both
 * communicators are b's.
 */
static hiar_result_t per_host_tiers(hiar_between_t *b, const hiar_tier_t *t, const hiar_topo_fact_t *facts, int s)
{
    int host = hiar_topo_host_label(facts, t->rank), part = 0;
    hiar_tier_t *side = &b->shard[s].tier, *h = &b->hosts;

    for (int grp = 0; grp < t->group; grp++)
        part += hiar_topo_same_host(&facts[owner_in(&t->groups, grp, s)], &facts[t->rank]);
    h->rank = t->rank;
    h->group = s;
    h->local = part;
    HIAR_MPI_CHECK(MPI_Comm_split(t->shard_comm[s], host, t->group, &h->group_comm));
    HIAR_MPI_CHECK(MPI_Comm_split(t->shard_comm[s], part, host, &h->shard_comm[part]));
    *side = *h;
    side->nshards = 1;
    side->shard_comm = NULL; /* borrowed group_comm: b->hosts frees it */
    return HIAR_SUCCESS;
}

/* per_host: the links of the parts, allocated before any split (a rank that could not would leave the others
 * waiting in it). */
static int per_host_alloc(hiar_between_t *b, int per_host)
{
    hiar_tier_t *h = &b->hosts;

    h->group_comm = MPI_COMM_NULL;
    if (!(h->shard_comm = malloc(sizeof(MPI_Comm) * (size_t)per_host)))
        return 0;
    h->local_size = h->nshards = per_host;
    for (int i = 0; i < per_host; i++)
        h->shard_comm[i] = MPI_COMM_NULL;
    return 1;
}

/* per_host: the communicators of its tiers (the device tier's elsewhere). */
static void free_per_host(hiar_between_t *b, int keep_mpi)
{
    hiar_tier_t *h = &b->hosts;

    for (int i = 0; !keep_mpi && h->shard_comm && i < h->nshards; i++)
        if (h->shard_comm[i] != MPI_COMM_NULL)
            MPI_Comm_free(&h->shard_comm[i]);
    if (!keep_mpi && h->shard_comm && h->group_comm != MPI_COMM_NULL)
        MPI_Comm_free(&h->group_comm);
    free(h->shard_comm);
    memset(h, 0, sizeof(*h));
}

#define BETWEEN_SLOT_MIN ((size_t)1 << 20)

static size_t between_slot(size_t group_slot, int nshards)
{
    size_t slot = group_slot / (size_t)nshards;
    return slot > BETWEEN_SLOT_MIN ? slot : BETWEEN_SLOT_MIN;
}

/*
 * Every owned shard, in shard order on every rank (each setup is collective
 * over its counterparts, per_host over those on one host): CUDA IPC, else
 * pinned host memory (only that with pinned).
 */
static int connect_shards(hiar_between_t *b, const hiar_tier_t *t, const hiar_topo_fact_t *facts,
                          const hiar_transport_config_t *cfg, int pinned, int per_host)
{
    static const hiar_transport_t *const candidates[] = {&hiar_transport_ipc, &hiar_transport_pinned};
    hiar_transport_config_t c = *cfg;
    size_t slot;
    int ok = 1;

    /* A shard is at most a third of a slot of the group (hiar_ipc_hier_chunk), and the
     * two-shot kernel takes half a slot at once: one chunk per shard.  At least
     * BETWEEN_SLOT_MIN, which the push kernel's ring needs (a tiny HIAR_BUFFER_SIZE). */
    c.slot_bytes = between_slot(cfg->slot_bytes, t->nshards);
    c.pinned_slot_bytes = between_slot(cfg->pinned_slot_bytes, t->nshards);
    c.all_gpu = 1;
    for (int s = 0; s < t->nshards; s++) {
        hiar_side_t *side = &b->shard[s];
        if (!hiar_tier_owns(t, s))
            continue;
        if (per_host && per_host_tiers(b, t, facts, s) != HIAR_SUCCESS) {
            snprintf(b->why, sizeof(b->why), "mpi (shard %d: %s)", s, hiar_last_error());
            ok = 0;
            continue;
        }
        if (!per_host)
            counterparts(t, s, &side->tier);
        if (hiar_side_connect(side, candidates + pinned, 2 - pinned, &c) != HIAR_SUCCESS || !side->tp) {
            snprintf(b->why, sizeof(b->why), "mpi (shard %d: %s)", s, side->why);
            ok = 0;
            continue;
        }
        slot = side->tp == &hiar_transport_ipc ? c.slot_bytes : c.pinned_slot_bytes;
        b->slot = b->slot && b->slot < slot ? b->slot : slot;
        if (per_host)
            b->part_chunk = hiar_ipc_chunk_bytes(slot, per_host, per_host);
    }
    return ok;
}

/* The transports of this rank's shards, by kind (the others' may differ where IPC failed for them only). */
static void describe(hiar_between_t *b, const hiar_tier_t *t)
{
    int ipc = 0, pinned = 0;

    for (int s = t->local; s < t->nshards; s += t->local_size) {
        ipc += b->shard[s].tp == &hiar_transport_ipc;
        pinned += b->shard[s].tp == &hiar_transport_pinned;
    }
    snprintf(b->why, sizeof(b->why), "%s: %s",
             b->per_host ? "within each host on the GPU (the owners of a shard on a host reduce-scatter it, each "
                           "part crosses between the hosts over MPI among its owners, then they all-gather it)"
                         : "on the GPU",
             ipc && !pinned ? "ipc (P2P verified between the counterparts "
                                                                       "of this rank's shards)"
                                                      : !ipc ? "pinned host memory (kernels read and write a shared "
                                                               "segment registered with CUDA)"
                                                             : "ipc for some of this rank's shards, pinned host "
                                                               "memory for others");
}

/* The smallest of each of n values over the comm (0: none on this rank; left 0 where no rank has one). */
static hiar_result_t agree_smallest(MPI_Comm mpi, size_t *values, int n)
{
    long long v[4], lo[4], hi[4];

    HIAR_ASSERT(n <= 4);
    for (int i = 0; i < n; i++)
        v[i] = values[i] ? (long long)values[i] : LLONG_MAX;
    HIAR_CHECK(hiar_net_bounds(mpi, v, lo, hi, n));
    for (int i = 0; i < n; i++)
        values[i] = lo[i] == LLONG_MAX ? 0 : (size_t)lo[i];
    return HIAR_SUCCESS;
}

/* The fewest blocks of LL and of two-shot kernels that any set of counterparts of this rank, or its group,
 * allows (hiar_ipc_hier's caps are agreed from them); 0 where none runs kernels. */
static hiar_ipc_caps_t fewest_blocks(const hiar_between_t *b, const hiar_side_t *group)
{
    hiar_ipc_caps_t fewest = {0, 0, 0}, caps;

    for (int s = -1; s < b->nshards; s++) {
        const hiar_side_t *side = s < 0 ? group : &b->shard[s];
        if (!hiar_transport_runs_kernels(side->tp))
            continue;
        hiar_ipc_get_caps(side->state, &caps);
        fewest.ll = fewest.ll && fewest.ll < caps.ll ? fewest.ll : caps.ll;
        fewest.twoshot = fewest.twoshot && fewest.twoshot < caps.twoshot ? fewest.twoshot : caps.twoshot;
    }
    return fewest;
}

/* The most shards a rank of any group receives from each sender, times its group's ranks (plan.h). */
static int shard_spread(const hiar_tier_t *t)
{
    int most = 0;

    for (int g = 0; g < t->groups.ngroups; g++) {
        int n = hiar_group_size(&t->groups, g), v = n * ((t->nshards + n - 1) / n);
        most = v > most ? v : most;
    }
    return most;
}

hiar_result_t hiar_between_setup(hiar_between_t *b, MPI_Comm mpi, const hiar_side_t *group,
                                 const hiar_topo_fact_t *facts, const hiar_transport_config_t *cfg, int mode,
                                 int pinned, int per_host_ok)
{
    const hiar_tier_t *t = &group->tier;
    int per_host = 0, ok;
    const char *why = mode == HIAR_BETWEEN_MPI ? "HIAR_BETWEEN=mpi" : unfit(t, facts, &per_host);

    /* Before any collective, on every rank alike: per_host -1 (this rank could not count the groups per host)
     * comes only where the others have per_host > 0 or a why of their own. */
    if (!why && per_host && !per_host_ok)
        why = "every rank alone, on several hosts of several ranks";

    memset(b, 0, sizeof(*b));
    b->nshards = t->nshards;
    if (t->groups.ngroups < 2)
        return HIAR_SUCCESS;
    if (why) {
        snprintf(b->why, sizeof(b->why), "mpi through pinned host memory (%s)", why);
        return HIAR_SUCCESS;
    }
    /* Agreed before any set of counterparts starts its collective setup. */
    b->shard = calloc((size_t)t->nshards, sizeof(*b->shard));
    ok = b->shard != NULL && per_host >= 0 && (!per_host || per_host_alloc(b, per_host));
    if (!ok)
        snprintf(b->why, sizeof(b->why), "mpi (cannot allocate the step between %d groups)", t->groups.ngroups);
    HIAR_CHECK(hiar_net_min(mpi, &ok, 1));
    if (ok) {
        ok = connect_shards(b, t, facts, cfg, pinned, per_host);
        HIAR_CHECK(hiar_net_min(mpi, &ok, 1));
    }
    if (ok) {
        hiar_ipc_caps_t caps = fewest_blocks(b, group);
        size_t v[4] = {b->part_chunk, b->slot, caps.ll, caps.twoshot};
        HIAR_CHECK(agree_smallest(mpi, v, 4));
        b->part_chunk = v[0];
        b->slot = v[1];
        b->caps = (hiar_ipc_caps_t){(unsigned)v[2], 0, (unsigned)v[3]};
        b->spread = shard_spread(t);
    }
    if (!ok) {
        if (!b->why[0])
            snprintf(b->why, sizeof(b->why), "mpi (neither CUDA IPC nor pinned host memory could connect the counterparts of another rank)");
        if (t->rank == 0)
            HIAR_WARN(IPC, "the step between groups goes over MPI through pinned host memory%s: %s",
                      per_host > 0 ? "" : ", blocking and not capturable", b->why);
        hiar_between_free(b, HIAR_TEARDOWN_COLLECTIVE);
        b->nshards = t->nshards;
        return HIAR_SUCCESS;
    }
    b->on_gpu = !per_host;
    b->per_host = per_host > 0;
    describe(b, t);
    return HIAR_SUCCESS;
}

void hiar_between_free(hiar_between_t *b, int flags)
{
    for (int s = 0; b->shard && s < b->nshards; s++)
        if (b->shard[s].tp)
            b->shard[s].tp->teardown(b->shard[s].state, &b->shard[s].tier, flags);
    free_per_host(b, flags & HIAR_TEARDOWN_KEEP);
    free(b->shard);
    b->shard = NULL;
    b->on_gpu = b->per_host = 0;
}

int hiar_between_pinned(const hiar_between_t *b)
{
    for (int s = 0; b->shard && s < b->nshards; s++)
        if (b->shard[s].tp == &hiar_transport_pinned)
            return 1;
    return 0;
}

hiar_result_t hiar_between_status(const hiar_between_t *b)
{
    for (int s = 0; b->shard && s < b->nshards; s++)
        if (b->shard[s].tp)
            HIAR_CHECK(b->shard[s].tp->status(b->shard[s].state));
    return HIAR_SUCCESS;
}

void hiar_between_abort(hiar_between_t *b)
{
    for (int s = 0; b->shard && s < b->nshards; s++)
        if (b->shard[s].tp)
            b->shard[s].tp->abort(b->shard[s].state);
}

hiar_result_t hiar_between_fused(hiar_between_t *b, const hiar_side_t *group, const hiar_call_t *c)
{
    const hiar_tier_t *t = &group->tier;
    hiar_ipc_t *g = hiar_transport_runs_kernels(group->tp) ? group->state : NULL, *sets[HIAR_IPC_MAX_GROUP];
    int n = 0;

    if (g)
        HIAR_CHECK(hiar_ipc_status(g));
    for (int s = t->local; s < t->nshards; s += t->local_size) {
        HIAR_ASSERT(hiar_transport_runs_kernels(b->shard[s].tp) && n < HIAR_IPC_MAX_GROUP);
        HIAR_CHECK(hiar_ipc_status(b->shard[s].state));
        sets[n++] = b->shard[s].state;
    }
    return hiar_ipc_hier(g, sets, n, &b->caps, c);
}

hiar_result_t hiar_between_part(hiar_between_t *b, int s, const hiar_call_t *c, hiar_step_t step)
{
    hiar_side_t *side = &b->shard[s];

    HIAR_ASSERT(b->per_host && c->nshards == b->hosts.nshards && c->plan.chunk == b->part_chunk);
    return side->tp->run(side->state, &side->tier, c, step);
}

hiar_result_t hiar_between_run(hiar_between_t *b, int s, const hiar_call_t *c)
{
    hiar_side_t *side = &b->shard[s];

    return side->tp->run(side->state, &side->tier, c, HIAR_STEP_ALLREDUCE);
}
