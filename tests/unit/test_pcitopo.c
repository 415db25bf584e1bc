/*
 * Topology-aware grouping on the sysfs fixtures of tests/fixtures/sysfs:
 * the groups, levels and transports of every machine at every level, and
 * the same groups whatever the rank order.
 *
 * | file                     | what it checks                                     |
 * |--------------------------|----------------------------------------------------|
 * | test_pcitopo.c           | every machine at every level, in any rank order    |
 * | test_pcitopo_links.c     | P2P, shared GPUs, several hosts, no GPU, NVLink    |
 * | test_pcitopo_report.c    | explicit groups, the group format, the table       |
 * | test_pcitopo_reader.c    | the sysfs reader: paths, bus ids, bad input, trees |
 * | pcitopo_fixture.c        | the fixture machines and the shared helpers        |
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/param.h"
#include "pcitopo_fixture.h"

/* ---- every machine at every level */

typedef struct {
    int machine; /* index into machines */
    int level;   /* HIAR_LEVEL_* */
    outcome_t expect;
} level_case_t;

/* Singletons, as every level below the machine's nearest pair gives them. */
#define ALONE2 {"0|1", "none,none", "none,none"}
#define ALONE4 {"0|1|2|3", "none,none,none,none", "none,none,none,none"}
#define ALONE8                                                                             \
    {"0|1|2|3|4|5|6|7", "none,none,none,none,none,none,none,none",                       \
     "none,none,none,none,none,none,none,none"}

static level_case_t level_cases[] = {
    /* Pairs on two root ports of each socket's host bridge: PHB inside, SYS across. */
    {SEED, HIAR_LEVEL_AUTO, {"0,1|2,3", "PHB,PHB", "ipc,ipc"}},
    {SEED, HIAR_LEVEL_NVL, ALONE4},
    {SEED, HIAR_LEVEL_PIX, ALONE4},
    {SEED, HIAR_LEVEL_PXB, ALONE4},
    {SEED, HIAR_LEVEL_PHB, {"0,1|2,3", "PHB,PHB", "ipc,ipc"}},
    {SEED, HIAR_LEVEL_NODE, {"0,1|2,3", "PHB,PHB", "ipc,ipc"}},
    {SEED, HIAR_LEVEL_SYS, {"0,1,2,3", "SYS", "shm"}},
    {SEED, HIAR_LEVEL_HOST, {"0,1,2,3", "SYS", "shm"}},
    {SEED, HIAR_LEVEL_RANK, ALONE4},
    /* One switch of four GPUs per socket. */
    {SERVER, HIAR_LEVEL_AUTO, {"0,1,2,3|4,5,6,7", "PIX,PIX", "ipc,ipc"}},
    {SERVER, HIAR_LEVEL_NVL, ALONE8},
    {SERVER, HIAR_LEVEL_PIX, {"0,1,2,3|4,5,6,7", "PIX,PIX", "ipc,ipc"}},
    {SERVER, HIAR_LEVEL_PXB, {"0,1,2,3|4,5,6,7", "PIX,PIX", "ipc,ipc"}},
    {SERVER, HIAR_LEVEL_PHB, {"0,1,2,3|4,5,6,7", "PIX,PIX", "ipc,ipc"}},
    {SERVER, HIAR_LEVEL_NODE, {"0,1,2,3|4,5,6,7", "PIX,PIX", "ipc,ipc"}},
    {SERVER, HIAR_LEVEL_SYS, {"0,1,2,3,4,5,6,7", "SYS", "shm"}},
    {SERVER, HIAR_LEVEL_HOST, {"0,1,2,3,4,5,6,7", "SYS", "shm"}},
    {SERVER, HIAR_LEVEL_RANK, ALONE8},
    /* Four GPUs behind one switch. */
    {BOX, HIAR_LEVEL_AUTO, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_NVL, ALONE4},
    {BOX, HIAR_LEVEL_PIX, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_PXB, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_PHB, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_NODE, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_SYS, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_HOST, {"0,1,2,3", "PIX", "ipc"}},
    {BOX, HIAR_LEVEL_RANK, ALONE4},
    /* Two GPUs on a VM's root bus, NUMA node -1. */
    {VM, HIAR_LEVEL_AUTO, {"0,1", "PHB", "ipc"}},
    {VM, HIAR_LEVEL_NVL, ALONE2},
    {VM, HIAR_LEVEL_PIX, ALONE2},
    {VM, HIAR_LEVEL_PXB, ALONE2},
    {VM, HIAR_LEVEL_PHB, {"0,1", "PHB", "ipc"}},
    {VM, HIAR_LEVEL_NODE, {"0,1", "PHB", "ipc"}},
    {VM, HIAR_LEVEL_SYS, {"0,1", "PHB", "ipc"}},
    {VM, HIAR_LEVEL_HOST, {"0,1", "PHB", "ipc"}},
    {VM, HIAR_LEVEL_RANK, ALONE2},
    /* A top switch over two lower switches of two GPUs each. */
    {TREE, HIAR_LEVEL_AUTO, {"0,1,2,3", "PXB", "ipc"}},
    {TREE, HIAR_LEVEL_NVL, ALONE4},
    {TREE, HIAR_LEVEL_PIX, {"0,1|2,3", "PIX,PIX", "ipc,ipc"}},
    {TREE, HIAR_LEVEL_PXB, {"0,1,2,3", "PXB", "ipc"}},
    {TREE, HIAR_LEVEL_PHB, {"0,1,2,3", "PXB", "ipc"}},
    {TREE, HIAR_LEVEL_NODE, {"0,1,2,3", "PXB", "ipc"}},
    {TREE, HIAR_LEVEL_SYS, {"0,1,2,3", "PXB", "ipc"}},
    {TREE, HIAR_LEVEL_HOST, {"0,1,2,3", "PXB", "ipc"}},
    {TREE, HIAR_LEVEL_RANK, ALONE4},
    /* One host bridge per GPU, two per socket: no P2P assumed across host bridges. */
    {NODE4, HIAR_LEVEL_AUTO, {"0,1|2,3", "NODE,NODE", "shm,shm"}},
    {NODE4, HIAR_LEVEL_NVL, ALONE4},
    {NODE4, HIAR_LEVEL_PIX, ALONE4},
    {NODE4, HIAR_LEVEL_PXB, ALONE4},
    {NODE4, HIAR_LEVEL_PHB, ALONE4},
    {NODE4, HIAR_LEVEL_NODE, {"0,1|2,3", "NODE,NODE", "shm,shm"}},
    {NODE4, HIAR_LEVEL_SYS, {"0,1,2,3", "SYS", "shm"}},
    {NODE4, HIAR_LEVEL_HOST, {"0,1,2,3", "SYS", "shm"}},
    {NODE4, HIAR_LEVEL_RANK, ALONE4},
};

ParameterizedTestParameters(pcitopo, level)
{
    return cr_make_param_array(level_case_t, level_cases, sizeof(level_cases) / sizeof(level_cases[0]));
}

ParameterizedTest(level_case_t *c, pcitopo, level)
{
    const machine_t *m = &machines[c->machine];
    hiar_topo_fact_t *facts;
    outcome_t got;
    int n = load(m->machine, m->gpus, "host", &facts);

    group(facts, n, c->level, NULL, &got);
    cr_expect_str_eq(got.groups, c->expect.groups, "%s level %d: groups", m->machine, c->level);
    cr_expect_str_eq(got.levels, c->expect.levels, "%s level %d: levels", m->machine, c->level);
    cr_expect_str_eq(got.transports, c->expect.transports, "%s level %d: transports", m->machine,
                     c->level);
    free(facts);
}

/* ---- rank order does not matter */

/* Rank orders that break grouping code (UCC's): reversed, halves swapped, odd/even, a shuffle. */
static void permutation(int kind, int n, int *perm)
{
    for (int i = 0; i < n; i++)
        perm[i] = kind == 0 ? n - 1 - i
                : kind == 1 ? (i + n / 2) % n
                : kind == 2 ? (i < (n + 1) / 2 ? 2 * i : 2 * (i - (n + 1) / 2) + 1)
                            : (i * 5 + 3) % n; /* n is 2, 4 or 8: 5 is coprime to it */
}

/* Joins the bus ids of list in the order perm (rank i gets GPU perm[i]). */
static void permute_list(const char *list, const int *perm, int n, char *out, size_t len)
{
    char copy[256], *ids[16], *save = NULL;
    size_t used = 0;
    int k = 0;

    snprintf(copy, sizeof(copy), "%s", list);
    for (char *t = strtok_r(copy, ",", &save); t && k < 16; t = strtok_r(NULL, ",", &save))
        ids[k++] = t;
    cr_assert_eq(k, n);
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? "," : "", ids[perm[i]]);
}

/*
 * Groups the permuted machine and relabels the result by GPU position, so it
 * can be compared with the grouping of the machine in bus-id order.
 */
static void group_permuted(const machine_t *m, int level, const int *perm, int n, outcome_t *out)
{
    hiar_topo_fact_t *facts;
    hiar_grouping_t g, back;
    int label[16];
    char list[256];

    permute_list(m->gpus, perm, n, list, sizeof(list));
    cr_assert_eq(load(m->machine, list, "host", &facts), n);
    cr_assert_eq(hiar_topo_group(facts, n, level, NULL, &g), HIAR_SUCCESS);
    for (int i = 0; i < n; i++)
        label[perm[i]] = g.group_of[i];
    cr_assert_eq(hiar_grouping_from_labels(label, n, &back), HIAR_SUCCESS);
    /* back numbers groups by smallest GPU position; carry each group's info over. */
    back.info = calloc((size_t)back.ngroups, sizeof(*back.info));
    for (int i = 0; i < n; i++)
        back.info[back.group_of[perm[i]]] = g.info[g.group_of[i]];
    cr_assert_eq(hiar_grouping_format(&back, out->groups, sizeof(out->groups)), HIAR_SUCCESS);
    describe(&back, out->levels, out->transports, sizeof(out->levels));
    hiar_grouping_free(&back);
    hiar_grouping_free(&g);
    free(facts);
}

ParameterizedTestParameters(pcitopo, rank_order)
{
    return cr_make_param_array(level_case_t, level_cases, sizeof(level_cases) / sizeof(level_cases[0]));
}

ParameterizedTest(level_case_t *c, pcitopo, rank_order)
{
    const machine_t *m = &machines[c->machine];
    int n = 1, perm[16];

    for (const char *p = m->gpus; *p; p++)
        n += *p == ',';
    for (int kind = 0; kind < 4; kind++) {
        outcome_t got;
        permutation(kind, n, perm);
        group_permuted(m, c->level, perm, n, &got);
        cr_expect_str_eq(got.groups, c->expect.groups, "%s level %d order %d", m->machine,
                         c->level, kind);
        cr_expect_str_eq(got.levels, c->expect.levels, "%s level %d order %d", m->machine,
                         c->level, kind);
        cr_expect_str_eq(got.transports, c->expect.transports, "%s level %d order %d",
                         m->machine, c->level, kind);
    }
}
