/*
 * How a grouping is written out and explained: explicit groups annotated
 * with their level, the "0,3|1,2|4" format, the table and its reasons.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/param.h"
#include "pcitopo_fixture.h"

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

static void collect(void *arg, const char *text)
{
    FILE *out = arg;
    fprintf(out, "%s\n", text);
}

/* What hiar_topo_between writes for groups `spec` of facts (p2p as it takes it); the caller frees it. */
static char *between_text(const hiar_topo_fact_t *facts, int n, const char *spec, const unsigned char *p2p)
{
    hiar_grouping_t g;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    cr_assert_eq(hiar_grouping_parse(spec, n, &g), HIAR_SUCCESS);
    cr_assert_eq(hiar_topo_annotate(facts, p2p, &g), HIAR_SUCCESS);
    hiar_topo_between(facts, p2p, &g, collect, out);
    fclose(out);
    hiar_grouping_free(&g);
    return text;
}

/*
 * Between groups (hiar_topo_between): per pair of groups, every shard's two
 * owners (local index s % group size), the transport the topology allows,
 * and their path; uneven groups give a smaller group's rank several shards.
 */
Test(pcitopo, between_names_each_shards_owners_and_transport)
{
    hiar_topo_fact_t *facts;
    int n = load("seed-4gpu", machines[SEED].gpus, "host", &facts);
    unsigned char *none = NULL;
    char *even, *uneven;

    even = between_text(facts, n, "0,1|2,3", NULL);
    /* 0|1,2,3 with P2P refused everywhere: pinned host memory. */
    cr_assert_eq(hiar_topo_p2p_none(facts, n, &none), HIAR_SUCCESS);
    uneven = between_text(facts, n, "0|1,2,3", none);
    cr_expect(strstr(even, "between groups 0 and 1: shard 0: ranks 0 and 2, pinned (NUMA nodes 0 and 1"), "%s", even);
    cr_expect(strstr(even, "; shard 1: ranks 1 and 3, pinned ("), "%s", even);
    cr_expect(strstr(uneven, "shard 0: ranks 0 and 1, pinned (same host bridge"), "%s", uneven);
    cr_expect(strstr(uneven, "; shard 2: ranks 0 and 3, pinned ("), "%s", uneven);
    free(even);
    free(uneven);
    free(none);
    free(facts);
}

/* Counterparts that P2P reaches (modelled up to PHB) exchange by CUDA IPC; other hosts by MPI. */
Test(pcitopo, between_ipc_within_a_host_bridge_mpi_across_hosts)
{
    hiar_topo_fact_t *facts;
    int n = load("seed-4gpu", machines[SEED].gpus, "host", &facts);
    char *near, *far;

    near = between_text(facts, n, "0,2|1,3", NULL);
    snprintf(facts[2].host_id, sizeof(facts[2].host_id), "other");
    snprintf(facts[3].host_id, sizeof(facts[3].host_id), "other");
    far = between_text(facts, n, "0,1|2,3", NULL);
    cr_expect(strstr(near, "shard 0: ranks 0 and 1, ipc (same host bridge"), "%s", near);
    cr_expect(strstr(near, "shard 1: ranks 2 and 3, ipc ("), "%s", near);
    cr_expect(strstr(far, "shard 0: ranks 0 and 2, mpi ("), "%s", far);
    free(near);
    free(far);
    free(facts);
}
