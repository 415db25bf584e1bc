/* Grouping of ranks by topology, up to a HIAR_GROUP_LEVEL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/param.h"
#include "topo/topo.h"

/*
 * Ranks on one device (one GPU, or "no GPU" on one host) always share a
 * group, so grouping works on devices.  Devices are ordered by (host, bus id)
 * and groups grow greedily in that order: the result depends on the machine,
 * not on which rank sits where.
 */
typedef struct {
    const hiar_topo_fact_t *facts;
    int ndev;
    int *rep;    /* [ndev] smallest rank on each device, devices in (host, bus id) order */
    int *dev_of; /* [nranks] device of each rank */
    int *group;  /* [ndev] group of each device, -1 while unassigned */
    int *pick;   /* [ndev] scratch: the devices of the group being grown */
    int ngroups;
} devices_t;

static int cmp_device(const void *x, const void *y, void *arg)
{
    const hiar_topo_fact_t *facts = arg;
    int a = *(const int *)x, b = *(const int *)y;
    int c = strncmp(facts[a].host_id, facts[b].host_id, HIAR_HOST_ID_MAX);

    if (c == 0)
        c = strcmp(facts[a].pci.bus_id, facts[b].pci.bus_id);
    return c ? c : (a > b) - (a < b);
}

static void devices_free(devices_t *t)
{
    free(t->rep);
    free(t->dev_of);
    free(t->group);
    free(t->pick);
}

static hiar_result_t devices_find(const hiar_topo_fact_t *facts, int nranks, devices_t *t)
{
    int *order = malloc(sizeof(int) * (size_t)nranks);

    *t = (devices_t){.facts = facts};
    t->rep = malloc(sizeof(int) * (size_t)nranks);
    t->dev_of = malloc(sizeof(int) * (size_t)nranks);
    t->group = malloc(sizeof(int) * (size_t)nranks);
    t->pick = malloc(sizeof(int) * (size_t)nranks);
    if (!order || !t->rep || !t->dev_of || !t->group || !t->pick) {
        free(order);
        devices_free(t);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the device table of %d ranks", nranks);
    }
    for (int r = 0; r < nranks; r++)
        order[r] = r;
    qsort_r(order, (size_t)nranks, sizeof(int), cmp_device, (void *)facts);
    for (int i = 0; i < nranks; i++) {
        int r = order[i], prev = i ? order[i - 1] : -1;
        if (prev < 0 || !hiar_topo_same_host(&facts[r], &facts[prev]) ||
            strcmp(facts[r].pci.bus_id, facts[prev].pci.bus_id) != 0) {
            t->group[t->ndev] = -1;
            t->rep[t->ndev++] = r;
        }
        t->dev_of[r] = t->ndev - 1;
    }
    free(order);
    return HIAR_SUCCESS;
}

/* Whether device e is within limit of each of the n picked devices. */
static int fits(const devices_t *t, int n, int e, hiar_path_t limit)
{
    for (int i = 0; i < n; i++)
        if (hiar_topo_path(&t->facts[t->rep[t->pick[i]]], &t->facts[t->rep[e]], NULL, 0) > limit)
            return 0;
    return 1;
}

/*
 * Grows groups of unassigned devices whose every pair is within limit.  A
 * device left alone stays unassigned for a later, wider pass, unless this
 * is the last pass.  On a PCI tree "within limit" means "below one switch,
 * root port, host bridge, NUMA node, host": classes, which greedy growth
 * finds exactly.  NVLink links need not be transitive (a ring of four GPUs);
 * there the bus-id order decides, which is the same on every rank.
 */
static void grow_groups(devices_t *t, hiar_path_t limit, int last_pass)
{
    for (int d = 0; d < t->ndev; d++) {
        int n = 0;
        if (t->group[d] >= 0)
            continue;
        t->pick[n++] = d;
        for (int e = d + 1;
             e < t->ndev && hiar_topo_same_host(&t->facts[t->rep[d]], &t->facts[t->rep[e]]); e++)
            if (t->group[e] < 0 && fits(t, n, e, limit))
                t->pick[n++] = e;
        if (n == 1 && !last_pass)
            continue;
        for (int i = 0; i < n; i++)
            t->group[t->pick[i]] = t->ngroups;
        t->ngroups++;
    }
}

/* HIAR_LEVEL_* -> the farthest path it allows; AUTO and RANK are handled apart. */
static hiar_path_t level_limit(int level)
{
    static const hiar_path_t limits[] = {
        [HIAR_LEVEL_NVL] = HIAR_PATH_NVL,   [HIAR_LEVEL_PIX] = HIAR_PATH_PIX,
        [HIAR_LEVEL_PXB] = HIAR_PATH_PXB,   [HIAR_LEVEL_PHB] = HIAR_PATH_PHB,
        [HIAR_LEVEL_NODE] = HIAR_PATH_NODE, [HIAR_LEVEL_SYS] = HIAR_PATH_SYS,
        [HIAR_LEVEL_HOST] = HIAR_PATH_HOST,
    };
    return limits[level];
}

/* Labels ranks with their device's group, following the level's passes. */
static hiar_result_t label_by_level(const hiar_topo_fact_t *facts, int nranks, int level, int *label)
{
    /* auto: NVLink first, then a PCIe switch tree, then a host bridge or NUMA node. */
    static const hiar_path_t auto_passes[] = {HIAR_PATH_NVL, HIAR_PATH_PXB, HIAR_PATH_NODE};
    enum { AUTO_PASSES = sizeof(auto_passes) / sizeof(auto_passes[0]) };
    devices_t t;

    if (level == HIAR_LEVEL_RANK) {
        for (int r = 0; r < nranks; r++)
            label[r] = r;
        return HIAR_SUCCESS;
    }
    HIAR_CHECK(devices_find(facts, nranks, &t));
    if (level == HIAR_LEVEL_AUTO)
        for (int i = 0; i < AUTO_PASSES; i++)
            grow_groups(&t, auto_passes[i], i == AUTO_PASSES - 1);
    else
        grow_groups(&t, level_limit(level), 1);
    for (int r = 0; r < nranks; r++)
        label[r] = t.group[t.dev_of[r]];
    devices_free(&t);
    return HIAR_SUCCESS;
}

static void describe_level(int level, char *why, size_t len)
{
    if (level == HIAR_LEVEL_AUTO)
        snprintf(why, len, "HIAR_GROUP_LEVEL=auto: NVLink peers, else one PCIe switch tree (PXB), "
                           "else one host bridge or NUMA node (NODE)");
    else if (level == HIAR_LEVEL_RANK)
        snprintf(why, len, HIAR_GROUPING_RANK_WHY);
    else if (level == HIAR_LEVEL_HOST)
        snprintf(why, len, "HIAR_GROUP_LEVEL=HOST: one group per host");
    else
        snprintf(why, len, "HIAR_GROUP_LEVEL=%s: every pair in a group within %s",
                 hiar_path_name(level_limit(level)), hiar_path_name(level_limit(level)));
}

hiar_result_t hiar_topo_group(const hiar_topo_fact_t *facts, int nranks, int level,
                              const unsigned char *p2p, hiar_grouping_t *out)
{
    hiar_grouping_t g;
    hiar_result_t rc;
    int *label;

    HIAR_ARG_CHECK(facts && nranks > 0, "hiar_topo_group: expected the facts of at least one rank");
    HIAR_ARG_CHECK(level >= HIAR_LEVEL_AUTO && level <= HIAR_LEVEL_RANK,
                   "hiar_topo_group: level %d is not a HIAR_GROUP_LEVEL value", level);
    label = malloc(sizeof(int) * (size_t)nranks);
    if (!label)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d labels", nranks);
    HIAR_CHECK_GOTO(label_by_level(facts, nranks, level, label), rc, out_free);
    HIAR_CHECK_GOTO(hiar_grouping_from_labels(label, nranks, &g), rc, out_free);
    describe_level(level, g.why, sizeof(g.why));
    rc = hiar_topo_annotate(facts, p2p, &g);
    if (rc != HIAR_SUCCESS)
        hiar_grouping_free(&g);
    else
        *out = g;
out_free:
    free(label);
    return rc;
}
