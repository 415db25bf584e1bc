/*
 * Topology-aware grouping beyond the PCIe tree: P2P that fails, ranks that
 * share a GPU, several hosts, ranks without a GPU, NVLink and NVSwitch.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/param.h"
#include "pcitopo_fixture.h"

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
