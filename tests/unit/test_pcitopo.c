/*
 * Topology-aware grouping on the sysfs fixtures of tests/fixtures/sysfs:
 * the groups, levels and transports of every machine at every level, the
 * same groups whatever the rank order, and clear errors for bad input.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "param.h"
#include "pcitopo.h"
#include "topo.h"

/* ---- helpers */

/* The fixture tree of a machine; srcdir comes from the automake test harness. */
static void fixture_root(const char *machine, char *root, size_t len)
{
    const char *srcdir = getenv("srcdir");
    snprintf(root, len, "%s/tests/fixtures/sysfs/%s", srcdir ? srcdir : ".", machine);
}

static int load(const char *machine, const char *gpus, const char *host, hiar_topo_fact_t **facts)
{
    char root[4096];
    int n = 0;

    fixture_root(machine, root, sizeof(root));
    cr_assert_eq(hiar_topo_facts_for_gpus(root, gpus, host, facts, &n), HIAR_SUCCESS,
                 "%s: %s", machine, hiar_last_error());
    return n;
}

/* "PHB,PHB" and "ipc,ipc": the per-group levels and transports. */
static void describe(const hiar_grouping_t *g, char *levels, char *transports, size_t len)
{
    size_t nl = 0, nt = 0;

    levels[0] = transports[0] = '\0';
    for (int i = 0; i < g->ngroups; i++) {
        nl += (size_t)snprintf(levels + nl, len - nl, "%s%s", i ? "," : "",
                               hiar_path_name(g->info[i].level));
        nt += (size_t)snprintf(transports + nt, len - nt, "%s%s", i ? "," : "",
                               hiar_transport_name(g->info[i].transport));
    }
}

typedef struct {
    char groups[64], levels[96], transports[96];
} outcome_t;

static void group(const hiar_topo_fact_t *facts, int n, int level, const unsigned char *p2p,
                  outcome_t *out)
{
    hiar_grouping_t g;

    cr_assert_eq(hiar_topo_group(facts, n, level, p2p, &g), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_assert_eq(hiar_grouping_format(&g, out->groups, sizeof(out->groups)), HIAR_SUCCESS);
    describe(&g, out->levels, out->transports, sizeof(out->levels));
    hiar_grouping_free(&g);
}

/* ---- every machine at every level */

typedef struct {
    char machine[24];
    char gpus[128];
} machine_t;

/* The GPUs of each fixture, in bus-id order. */
static const machine_t machines[] = {
    {"seed-4gpu", "0000:01:00.0,0000:02:00.0,0000:81:00.0,0000:82:00.0"},
    {"server-8gpu", "0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0,"
                    "0000:83:00.0,0000:84:00.0,0000:85:00.0,0000:86:00.0"},
    {"box-4gpu-switch", "0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0"},
    {"vm-2gpu", "0000:00:05.0,0000:00:06.0"},
    {"tree-2level", "0000:05:00.0,0000:06:00.0,0000:09:00.0,0000:0a:00.0"},
    {"node-4gpu", "0000:01:00.0,0000:41:00.0,0000:81:00.0,0000:c1:00.0"},
};
enum { NMACHINES = sizeof(machines) / sizeof(machines[0]) };

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

enum { SEED, SERVER, BOX, VM, TREE, NODE4 };

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

/* ---- P2P */

Test(pcitopo, no_p2p_keeps_groups_with_shm)
{
    for (int i = 0; i < NMACHINES; i++) {
        hiar_topo_fact_t *facts;
        int n = load(machines[i].machine, machines[i].gpus, "host", &facts);
        unsigned char *p2p;
        outcome_t with, without;
        cr_assert_eq(hiar_topo_p2p_none(facts, n, &p2p), HIAR_SUCCESS);
        group(facts, n, HIAR_LEVEL_AUTO, NULL, &with);
        group(facts, n, HIAR_LEVEL_AUTO, p2p, &without);
        cr_expect_str_eq(without.groups, with.groups, "%s", machines[i].machine);
        cr_expect(strstr(without.transports, "ipc") == NULL, "%s: %s", machines[i].machine,
                  without.transports);
        cr_expect(strstr(without.transports, "shm") != NULL, "%s: %s", machines[i].machine,
                  without.transports);
        free(p2p);
        free(facts);
    }
}

Test(pcitopo, one_failing_pair_makes_the_group_shm)
{
    hiar_topo_fact_t *facts;
    int n = load("box-4gpu-switch", machines[BOX].gpus, "host", &facts);
    unsigned char p2p[16];
    hiar_grouping_t g;

    memset(p2p, 1, sizeof(p2p));
    p2p[2 * n + 1] = 0; /* rank 2 cannot reach rank 1 */
    cr_assert_eq(hiar_topo_group(facts, n, HIAR_LEVEL_AUTO, p2p, &g), HIAR_SUCCESS);
    cr_expect_eq(g.ngroups, 1);
    cr_expect_eq(g.info[0].transport, HIAR_TRANSPORT_SHM);
    cr_expect(strstr(g.info[0].why, "P2P fails between ranks 1 and 2"), "%s", g.info[0].why);
    hiar_grouping_free(&g);
    memset(p2p, 1, sizeof(p2p));
    cr_assert_eq(hiar_topo_group(facts, n, HIAR_LEVEL_AUTO, p2p, &g), HIAR_SUCCESS);
    cr_expect_eq(g.info[0].transport, HIAR_TRANSPORT_IPC);
    cr_expect(strstr(g.info[0].why, "P2P ok for every pair"), "%s", g.info[0].why);
    hiar_grouping_free(&g);
    free(facts);
}

/* ---- ranks sharing GPUs, several hosts, ranks without GPU, NVLink */

Test(pcitopo, ranks_on_one_gpu_share_a_group)
{
    hiar_topo_fact_t *facts;
    int n = load("vm-2gpu", "0000:00:05.0,0000:00:06.0,0000:00:05.0,0000:00:06.0", "host", &facts);
    outcome_t got;

    group(facts, n, HIAR_LEVEL_AUTO, NULL, &got);
    cr_expect_str_eq(got.groups, "0,1,2,3");
    cr_expect_str_eq(got.levels, "PHB");
    group(facts, n, HIAR_LEVEL_PIX, NULL, &got);
    cr_expect_str_eq(got.groups, "0,2|1,3");
    cr_expect_str_eq(got.levels, "LOC,LOC");
    cr_expect_str_eq(got.transports, "ipc,ipc");
    group(facts, n, HIAR_LEVEL_RANK, NULL, &got);
    cr_expect_str_eq(got.groups, "0|1|2|3");
    free(facts);
}

Test(pcitopo, groups_never_span_hosts)
{
    hiar_topo_fact_t *facts;
    int n = load("seed-4gpu", "0000:01:00.0,0000:01:00.0,0000:02:00.0,0000:02:00.0", "a", &facts);
    outcome_t got;

    /* Ranks 1 and 3 play a second host with the same bus ids. */
    snprintf(facts[1].host_id, HIAR_HOST_ID_MAX, "b");
    snprintf(facts[3].host_id, HIAR_HOST_ID_MAX, "b");
    for (int level = HIAR_LEVEL_AUTO; level < HIAR_LEVEL_RANK; level++) {
        group(facts, n, level, NULL, &got);
        cr_expect_str_eq(got.groups, level == HIAR_LEVEL_NVL || level == HIAR_LEVEL_PIX ||
                                             level == HIAR_LEVEL_PXB
                                         ? "0|1|2|3"
                                         : "0,2|1,3",
                         "level %d", level);
    }
    free(facts);
}

Test(pcitopo, ranks_without_gpu_group_by_host)
{
    hiar_topo_fact_t *facts;
    int n = load("seed-4gpu", "0000:01:00.0,0000:01:00.0,0000:02:00.0,0000:02:00.0", "a", &facts);
    outcome_t got;

    hiar_topo_fact_init(&facts[0], "a");
    hiar_topo_fact_init(&facts[2], "a");
    group(facts, n, HIAR_LEVEL_AUTO, NULL, &got);
    cr_expect_str_eq(got.groups, "0,2|1,3");
    cr_expect_str_eq(got.levels, "HOST,PHB");
    cr_expect_str_eq(got.transports, "shm,ipc");
    group(facts, n, HIAR_LEVEL_HOST, NULL, &got);
    cr_expect_str_eq(got.groups, "0,1,2,3");
    cr_expect_str_eq(got.levels, "HOST");
    cr_expect_str_eq(got.transports, "shm");
    free(facts);
}

Test(pcitopo, nvlink_peers_come_first)
{
    hiar_topo_fact_t *facts;
    int n = load("seed-4gpu", machines[SEED].gpus, "host", &facts);
    outcome_t got;

    /* An NVLink bridge across the sockets, between ranks 0 and 2. */
    cr_assert_eq(hiar_topo_fact_add_nvlink_peer(&facts[0], "81:00.0"), HIAR_SUCCESS);
    cr_assert_eq(hiar_topo_fact_add_nvlink_peer(&facts[0], "0000:81:00.0"), HIAR_SUCCESS);
    cr_expect_eq(facts[0].nvlink_npeers, 1, "a second link to one peer is one peer");
    group(facts, n, HIAR_LEVEL_AUTO, NULL, &got);
    cr_expect_str_eq(got.groups, "0,2|1|3");
    cr_expect_str_eq(got.levels, "NVL,none,none");
    cr_expect_str_eq(got.transports, "ipc,none,none");
    group(facts, n, HIAR_LEVEL_NVL, NULL, &got);
    cr_expect_str_eq(got.groups, "0,2|1|3");
    free(facts);
}

Test(pcitopo, nvlink_ring_splits_in_bus_order)
{
    static const int ring[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
    hiar_topo_fact_t *facts;
    int n = load("box-4gpu-switch", machines[BOX].gpus, "host", &facts);
    outcome_t got;

    for (int i = 0; i < 4; i++)
        cr_assert_eq(hiar_topo_fact_add_nvlink_peer(&facts[ring[i][0]], facts[ring[i][1]].pci.bus_id),
                     HIAR_SUCCESS);
    /* Not every pair of the ring is linked: NVL groups are cliques, grown in bus-id order. */
    group(facts, n, HIAR_LEVEL_NVL, NULL, &got);
    cr_expect_str_eq(got.groups, "0,1|2,3");
    cr_expect_str_eq(got.levels, "NVL,NVL");
    group(facts, n, HIAR_LEVEL_PIX, NULL, &got);
    cr_expect_str_eq(got.groups, "0,1,2,3");
    cr_expect_str_eq(got.levels, "PIX");
    free(facts);
}

Test(pcitopo, nvswitch_group)
{
    hiar_topo_fact_t *facts;
    int n = load("server-8gpu", machines[SERVER].gpus, "host", &facts);
    outcome_t got;

    for (int r = 0; r < n; r++)
        facts[r].nvlink_group = 7;
    group(facts, n, HIAR_LEVEL_AUTO, NULL, &got);
    cr_expect_str_eq(got.groups, "0,1,2,3,4,5,6,7");
    cr_expect_str_eq(got.levels, "NVL");
    cr_expect_str_eq(got.transports, "ipc");
    free(facts);
}

/* ---- explicit groups, formatting, the table */

Test(pcitopo, annotate_explicit_groups)
{
    hiar_topo_fact_t *facts;
    int n = load("seed-4gpu", machines[SEED].gpus, "host", &facts);
    hiar_grouping_t g;
    char levels[64], transports[64];

    cr_assert_eq(hiar_grouping_parse("0,2|1,3", n, &g), HIAR_SUCCESS);
    cr_assert_eq(hiar_topo_annotate(facts, NULL, &g), HIAR_SUCCESS);
    describe(&g, levels, transports, sizeof(levels));
    cr_expect_str_eq(levels, "SYS,SYS");
    cr_expect_str_eq(transports, "shm,shm");
    cr_expect(strstr(g.info[0].why, "NUMA nodes 0 and 1"), "%s", g.info[0].why);
    hiar_grouping_free(&g);
    free(facts);
}

Test(pcitopo, format_round_trips_and_checks_its_buffer)
{
    hiar_grouping_t g, again;
    char text[32], small[6];

    cr_assert_eq(hiar_grouping_parse("0,3|1,2|4", 5, &g), HIAR_SUCCESS);
    cr_assert_eq(hiar_grouping_format(&g, text, sizeof(text)), HIAR_SUCCESS);
    cr_expect_str_eq(text, "0,3|1,2|4");
    cr_assert_eq(hiar_grouping_parse(text, 5, &again), HIAR_SUCCESS);
    cr_expect_eq(again.ngroups, 3);
    memset(small, 'x', sizeof(small));
    cr_expect_eq(hiar_grouping_format(&g, small, sizeof(small)), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), "need 10 bytes"), "%s", hiar_last_error());
    cr_expect_eq(small[0], 'x', "the buffer is written only on success");
    hiar_grouping_free(&again);
    hiar_grouping_free(&g);
}

Test(pcitopo, table_names_switches_groups_and_reasons)
{
    hiar_topo_fact_t *facts;
    int n = load("tree-2level", machines[TREE].gpus, "host", &facts);
    hiar_grouping_t g;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    cr_assert_eq(hiar_topo_group(facts, n, HIAR_LEVEL_PIX, NULL, &g), HIAR_SUCCESS);
    cr_assert_eq(hiar_topo_print(out, facts, &g), HIAR_SUCCESS);
    fclose(out);
    cr_expect(strstr(text, "rank  bus id        NUMA  switch        group  transport\n"), "%s", text);
    cr_expect(strstr(text, "0     0000:05:00.0  0     0000:03:00.0  0      ipc\n"), "%s", text);
    cr_expect(strstr(text, "3     0000:0a:00.0  0     0000:07:00.0  1      ipc\n"), "%s", text);
    cr_expect(strstr(text, "group 1 (ranks 2,3): level PIX, transport ipc; farthest ranks 2 and "
                           "3: one PCIe switch (upstream port 0000:07:00.0)"),
              "%s", text);
    free(text);
    hiar_grouping_free(&g);
    free(facts);
}

Test(pcitopo, alone_says_what_is_nearest)
{
    hiar_topo_fact_t *facts;
    int n = load("tree-2level", machines[TREE].gpus, "host", &facts);
    hiar_grouping_t g;

    cr_assert_eq(hiar_topo_group(facts, n, HIAR_LEVEL_NVL, NULL, &g), HIAR_SUCCESS);
    cr_expect_str_eq(g.info[2].why, "alone: nearest is rank 3, PIX: one PCIe switch (upstream "
                                    "port 0000:07:00.0)");
    hiar_grouping_free(&g);
    free(facts);
}

Test(pcitopo, path_names_the_switches)
{
    hiar_topo_fact_t *facts;
    char why[128];

    load("tree-2level", machines[TREE].gpus, "host", &facts);
    cr_expect_eq(hiar_pci_path(&facts[0].pci, &facts[2].pci, why, sizeof(why)), HIAR_PATH_PXB);
    cr_expect_str_eq(why, "3 PCIe switches below 0000:01:00.0, no host bridge");
    cr_expect_str_eq(hiar_pci_switch(&facts[0].pci), "0000:03:00.0");
    cr_expect_eq(facts[0].pci.depth, 7);
    cr_expect_str_eq(facts[0].pci.path[0], "pci0000:00");
    free(facts);
    load("vm-2gpu", machines[VM].gpus, "host", &facts);
    cr_expect_null(hiar_pci_switch(&facts[0].pci));
    cr_expect_eq(facts[0].pci.numa_node, -1);
    free(facts);
}

/* ---- bus ids */

typedef struct {
    char text[24], expect[24]; /* expect "" when text is invalid */
} busid_case_t;

static busid_case_t busid_cases[] = {
    {"0000:3b:00.0", "0000:3b:00.0"},  {"0000:3B:00.0", "0000:3b:00.0"},
    {"00000000:3B:00.0", "0000:3b:00.0"}, {"3b:00.0", "0000:3b:00.0"},
    {"10000:e1:1f.7", "10000:e1:1f.7"}, {"3b:00", ""},
    {"0000:3b:20.0", ""},              {"0000:3b:00.8", ""},
    {"zz:00.0", ""},                   {"0000:3b:00.0x", ""},
    {"", ""},                          {"0000::00.0", ""},
};

ParameterizedTestParameters(pcitopo, busid)
{
    return cr_make_param_array(busid_case_t, busid_cases, sizeof(busid_cases) / sizeof(busid_cases[0]));
}

ParameterizedTest(busid_case_t *c, pcitopo, busid)
{
    char out[HIAR_BUSID_MAX];
    hiar_result_t rc = hiar_pci_busid_normalize(c->text, out);

    if (*c->expect) {
        cr_assert_eq(rc, HIAR_SUCCESS, "%s: %s", c->text, hiar_last_error());
        cr_expect_str_eq(out, c->expect);
    } else {
        cr_assert_eq(rc, HIAR_INVALID_ARGUMENT, "\"%s\" accepted", c->text);
        cr_expect(strstr(hiar_last_error(), "expected [domain:]bus:device.function"), "%s",
                  hiar_last_error());
    }
}

/* ---- bad input */

typedef struct {
    char machine[24];
    char gpus[64];
    char message[96]; /* a part of the expected error message */
} bad_case_t;

static bad_case_t bad_cases[] = {
    {"seed-4gpu", "0000:01:00.0,0000:09:00.0", "no PCI device 0000:09:00.0"},
    {"seed-4gpu", "0000:01:00.1", "class 0x040300 (not a GPU): expected a GPU"},
    {"seed-4gpu", "0000:00:01.0", "class 0x060400 (a PCI bridge): expected a GPU"},
    {"vm-2gpu", "0000:00:00.0", "class 0x060000 (not a GPU): expected a GPU"},
    {"server-8gpu", "0000:07:00.0", "class 0x020000 (not a GPU)"},
    {"seed-4gpu", "0000:01:00", "PCI bus id \"0000:01:00\" is invalid"},
    {"seed-4gpu", "0000:01:00.0,,0000:02:00.0", "entry 1 is empty"},
    {"seed-4gpu", "", "the GPU list is empty"},
    {"no-such-machine", "0000:01:00.0", "cannot be resolved"},
};

ParameterizedTestParameters(pcitopo, bad_input)
{
    return cr_make_param_array(bad_case_t, bad_cases, sizeof(bad_cases) / sizeof(bad_cases[0]));
}

ParameterizedTest(bad_case_t *c, pcitopo, bad_input)
{
    hiar_topo_fact_t *facts = NULL;
    char root[4096];
    int n = -1;

    fixture_root(c->machine, root, sizeof(root));
    cr_assert_eq(hiar_topo_facts_for_gpus(root, c->gpus, "host", &facts, &n), HIAR_INVALID_ARGUMENT,
                 "%s accepted on %s", c->gpus, c->machine);
    cr_expect(strstr(hiar_last_error(), c->message), "%s", hiar_last_error());
    cr_expect_null(facts, "outputs are written only on success");
    cr_expect_eq(n, -1);
}

Test(pcitopo, bad_level)
{
    hiar_topo_fact_t fact;
    hiar_grouping_t g;

    hiar_topo_fact_init(&fact, "host");
    cr_expect_eq(hiar_topo_group(&fact, 1, 42, NULL, &g), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), "not a HIAR_GROUP_LEVEL value"), "%s", hiar_last_error());
}

/* ---- trees the reader must refuse: built in a temporary directory */

static char tmp_root[64];

static void make_tree(void)
{
    snprintf(tmp_root, sizeof(tmp_root), "/tmp/hiar-sysfs-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_root));
}

/* Creates tmp_root/rel as a directory, with a class file unless cls is NULL. */
static void add_dir(const char *rel, const char *cls)
{
    char path[256], cmd[512];

    snprintf(path, sizeof(path), "%s/%s", tmp_root, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
    cr_assert_eq(system(cmd), 0);
    if (cls) {
        FILE *f;
        strcat(path, "/class");
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f, "%s\n", cls);
        fclose(f);
    }
}

static void add_link(const char *bdf, const char *target)
{
    char path[256];

    add_dir("bus/pci/devices", NULL);
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", tmp_root, bdf);
    cr_assert_eq(symlink(target, path), 0);
}

static void remove_tree(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
    cr_assert_eq(system(cmd), 0);
}

static void expect_refused(const char *bdf, const char *message)
{
    hiar_pci_loc_t loc;

    cr_expect_eq(hiar_pci_locate(tmp_root, bdf, &loc), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), message), "%s", hiar_last_error());
}

Test(pcitopo, reader_refuses_odd_trees, .init = make_tree, .fini = remove_tree)
{
    hiar_pci_loc_t loc;

    /* A GPU under a device that is not a bridge. */
    add_dir("devices/pci0000:00/0000:00:02.0", "0x010802");
    add_dir("devices/pci0000:00/0000:00:02.0/0000:01:00.0", "0x030200");
    add_link("0000:01:00.0", "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0");
    expect_refused("0000:01:00.0", "expected a PCI bridge (class 0x0604xx)");
    /* A link that leaves the device tree. */
    add_dir("elsewhere/0000:02:00.0", "0x030200");
    add_link("0000:02:00.0", "../../../elsewhere/0000:02:00.0");
    expect_refused("0000:02:00.0", "expected a link into");
    /* A GPU without a class file. */
    add_dir("devices/pci0000:00/0000:00:03.0", "0x060400");
    add_dir("devices/pci0000:00/0000:00:03.0/0000:03:00.0", NULL);
    add_link("0000:03:00.0", "../../../devices/pci0000:00/0000:00:03.0/0000:03:00.0");
    expect_refused("0000:03:00.0", "cannot read");
    /* A link whose target is another device. */
    add_link("0000:04:00.0", "../../../devices/pci0000:00/0000:00:03.0");
    expect_refused("0000:04:00.0", "ending in 0000:04:00.0");
    /* Without numa_node the node is unknown, not an error. */
    add_dir("devices/pci0000:00/0000:00:05.0", "0x030000");
    add_link("0000:00:05.0", "../../../devices/pci0000:00/0000:00:05.0");
    cr_assert_eq(hiar_pci_locate(tmp_root, "0000:00:05.0", &loc), HIAR_SUCCESS, "%s",
                 hiar_last_error());
    cr_expect_eq(loc.numa_node, -1);
    cr_expect_eq(loc.depth, 2);
}
