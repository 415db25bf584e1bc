/* The sysfs fixtures and the helpers of the pcitopo unit tests; see pcitopo_fixture.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "pcitopo_fixture.h"

/* The fixture tree of a machine; srcdir comes from the automake test harness. */
void fixture_root(const char *machine, char *root, size_t len)
{
    const char *srcdir = getenv("srcdir");
    snprintf(root, len, "%s/tests/fixtures/sysfs/%s", srcdir ? srcdir : ".", machine);
}

int load(const char *machine, const char *gpus, const char *host, hiar_topo_fact_t **facts)
{
    char root[4096];
    int n = 0;

    fixture_root(machine, root, sizeof(root));
    cr_assert_eq(hiar_topo_facts_for_gpus(root, gpus, host, facts, &n), HIAR_SUCCESS,
                 "%s: %s", machine, hiar_last_error());
    return n;
}

/* "PHB,PHB" and "ipc,ipc": the per-group levels and transports. */
void describe(const hiar_grouping_t *g, char *levels, char *transports, size_t len)
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

void group(const hiar_topo_fact_t *facts, int n, int level, const unsigned char *p2p,
                  outcome_t *out)
{
    hiar_grouping_t g;

    cr_assert_eq(hiar_topo_group(facts, n, level, p2p, &g), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_assert_eq(hiar_grouping_format(&g, out->groups, sizeof(out->groups)), HIAR_SUCCESS);
    describe(&g, out->levels, out->transports, sizeof(out->levels));
    hiar_grouping_free(&g);
}

/* The GPUs of each fixture, in bus-id order. */
const machine_t machines[NMACHINES] = {
    {"seed-4gpu", "0000:01:00.0,0000:02:00.0,0000:81:00.0,0000:82:00.0"},
    {"server-8gpu", "0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0,"
                    "0000:83:00.0,0000:84:00.0,0000:85:00.0,0000:86:00.0"},
    {"box-4gpu-switch", "0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0"},
    {"vm-2gpu", "0000:00:05.0,0000:00:06.0"},
    {"tree-2level", "0000:05:00.0,0000:06:00.0,0000:09:00.0,0000:0a:00.0"},
    {"node-4gpu", "0000:01:00.0,0000:41:00.0,0000:81:00.0,0000:c1:00.0"},
};
