/*
 * Grouping of ranks (src/topo_grouping*.c, src/topo_group_level.c):
 * HIAR_GROUPS parsing, grouping by host identity and by labels.  Groups are
 * numbered by their smallest rank, members sorted by rank, local index =
 * position in the group.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "topo/topo.h"

/* The grouping as HIAR_GROUPS would write it, e.g. "0,1|2,3", from the raw arrays. */
static void format_groups(const hiar_grouping_t *g, char *out, size_t len)
{
    size_t n = 0;

    out[0] = '\0';
    for (int grp = 0; grp < g->ngroups; grp++)
        for (int m = g->start[grp]; m < g->start[grp + 1]; m++)
            n += (size_t)snprintf(out + n, len - n, "%s%d", m == g->start[grp] ? (grp ? "|" : "") : ",",
                                  g->members[m]);
}

/* Every array agrees with every other: group_of, local_index, start, members. */
static void expect_consistent(const hiar_grouping_t *g)
{
    cr_assert_eq(g->start[0], 0);
    cr_assert_eq(g->start[g->ngroups], g->nranks);
    for (int grp = 0; grp < g->ngroups; grp++) {
        cr_expect_gt(hiar_group_size(g, grp), 0, "group %d is empty", grp);
        for (int m = g->start[grp]; m < g->start[grp + 1]; m++) {
            int r = g->members[m];
            cr_expect_eq(g->group_of[r], grp, "rank %d", r);
            cr_expect_eq(g->local_index[r], m - g->start[grp], "rank %d", r);
            if (m > g->start[grp])
                cr_expect_lt(g->members[m - 1], r, "members of group %d are not sorted", grp);
        }
        /* Numbered by smallest rank. */
        if (grp > 0)
            cr_expect_lt(g->members[g->start[grp - 1]], g->members[g->start[grp]]);
    }
}

static void expect_parse(const char *text, int nranks, const char *want, int max_size)
{
    hiar_grouping_t g = {0};
    char got[256];

    cr_assert_eq(hiar_grouping_parse(text, nranks, &g), HIAR_SUCCESS, "\"%s\" with %d ranks: %s", text,
                 nranks, hiar_last_error());
    cr_expect_eq(g.nranks, nranks);
    expect_consistent(&g);
    format_groups(&g, got, sizeof(got));
    cr_expect_str_eq(got, want, "\"%s\" gives groups %s, expected %s", text, got, want);
    cr_expect_eq(hiar_grouping_max_size(&g), max_size, "\"%s\"", text);
    hiar_grouping_free(&g);
}

Test(topo, parse)
{
    expect_parse("0,1|2,3", 4, "0,1|2,3", 2);
    expect_parse("0-3|4-7", 8, "0,1,2,3|4,5,6,7", 4);
    expect_parse("0,2|1,3", 4, "0,2|1,3", 2);
    expect_parse("0|1,2,3", 4, "0|1,2,3", 3);
    expect_parse("0,1|2", 3, "0,1|2", 2);
    expect_parse("0,1,2|3,4|5,6,7", 8, "0,1,2|3,4|5,6,7", 3);
    expect_parse("0-3", 4, "0,1,2,3", 4);
    expect_parse("0", 1, "0", 1);
    expect_parse("0|1|2|3", 4, "0|1|2|3", 1);
    expect_parse("0-1,4|2-3,5", 6, "0,1,4|2,3,5", 3);
    expect_parse("10,11|0-9", 12, "0,1,2,3,4,5,6,7,8,9|10,11", 10);
}

Test(topo, parse_renumbers_by_smallest_rank)
{
    hiar_grouping_t g = {0};

    /* Written in any order: the group holding rank 0 is group 0, members sorted. */
    expect_parse("3,2|1,0", 4, "0,1|2,3", 2);
    expect_parse("3|2,0|1", 4, "0,2|1|3", 2);
    cr_assert_eq(hiar_grouping_parse("5,1|4,0|3,2", 6, &g), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(g.group_of[0], 0);
    cr_expect_eq(g.group_of[4], 0);
    cr_expect_eq(g.group_of[1], 1);
    cr_expect_eq(g.group_of[5], 1);
    cr_expect_eq(g.group_of[2], 2);
    cr_expect_eq(g.local_index[4], 1);
    cr_expect_eq(g.local_index[3], 1);
    hiar_grouping_free(&g);
}

Test(topo, parse_errors)
{
    static const struct {
        const char *text;
        int nranks;
        const char *needle; /* the message must contain it */
    } bad[] = {
        {"0,0|1", 2, "twice"},         {"0-2|2-3", 4, "twice"},      {"0,1|2", 4, "rank 3"},
        {"0,1|2,4", 4, "rank 4"},      {"0-9", 4, "9"},              {"a", 2, "HIAR_GROUPS"},
        {"0,,1", 2, "HIAR_GROUPS"},    {"0|", 2, "HIAR_GROUPS"},     {"", 2, "HIAR_GROUPS"},
        {"0;1", 2, "HIAR_GROUPS"},     {"0-", 2, "HIAR_GROUPS"},     {"-1", 2, "HIAR_GROUPS"},
        {" 0,1", 2, "HIAR_GROUPS"},    {"0,1 ", 2, "HIAR_GROUPS"},   {"0,1|", 2, "HIAR_GROUPS"},
        {"2-1|0", 3, "HIAR_GROUPS"},   {"99999999999999999999", 2, "HIAR_GROUPS"},
        {"0|1x", 2, "HIAR_GROUPS"},    {"0||1", 2, "HIAR_GROUPS"},   {"1-0|0,1", 2, "backwards"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hiar_grouping_t g = {0};
        hiar_result_t rc;
        hiar_error_clear();
        rc = hiar_grouping_parse(bad[i].text, bad[i].nranks, &g);
        cr_expect_eq(rc, HIAR_INVALID_ARGUMENT, "\"%s\" with %d ranks should be rejected", bad[i].text,
                     bad[i].nranks);
        cr_expect(strstr(hiar_last_error(), bad[i].needle), "\"%s\": the message should name %s: %s",
                  bad[i].text, bad[i].needle, hiar_last_error());
        cr_expect(g.group_of == NULL && g.members == NULL, "\"%s\": a failed parse wrote the grouping",
                  bad[i].text);
        if (rc == HIAR_SUCCESS)
            hiar_grouping_free(&g);
    }
}

/* host_ids as hiar_grouping_by_host takes them: HIAR_HOST_ID_MAX bytes per rank, zero-padded. */
static char *host_table(const char *const *ids, int n)
{
    char *t = calloc((size_t)n, HIAR_HOST_ID_MAX);
    cr_assert(t);
    for (int r = 0; r < n; r++)
        snprintf(t + (size_t)r * HIAR_HOST_ID_MAX, HIAR_HOST_ID_MAX, "%s", ids[r]);
    return t;
}

Test(topo, by_host_shuffled)
{
    static const char *const ids[] = {"nodeB", "nodeA", "nodeB", "node1", "nodeA", "node10", "node1"};
    char *table = host_table(ids, 7);
    hiar_grouping_t g = {0};
    char got[128];

    cr_assert_eq(hiar_grouping_by_host(table, 7, &g), HIAR_SUCCESS, "%s", hiar_last_error());
    expect_consistent(&g);
    format_groups(&g, got, sizeof(got));
    /* Groups in order of their smallest rank: nodeB {0,2}, nodeA {1,4}, node1 {3,6}, node10 {5}. */
    cr_expect_str_eq(got, "0,2|1,4|3,6|5");
    cr_expect_eq(g.ngroups, 4);
    cr_expect_eq(g.group_of[5], 3);
    cr_expect_eq(g.local_index[6], 1);
    cr_expect_eq(hiar_grouping_max_size(&g), 2);
    hiar_grouping_free(&g);
    free(table);
}

Test(topo, by_host_single_and_all_distinct)
{
    static const char *const same[] = {"h", "h", "h"};
    static const char *const distinct[] = {"a", "b", "c"};
    hiar_grouping_t g = {0};
    char *table = host_table(same, 3);
    char got[64];

    cr_assert_eq(hiar_grouping_by_host(table, 3, &g), HIAR_SUCCESS);
    format_groups(&g, got, sizeof(got));
    cr_expect_str_eq(got, "0,1,2");
    hiar_grouping_free(&g);
    free(table);
    table = host_table(distinct, 3);
    cr_assert_eq(hiar_grouping_by_host(table, 3, &g), HIAR_SUCCESS);
    format_groups(&g, got, sizeof(got));
    cr_expect_str_eq(got, "0|1|2");
    hiar_grouping_free(&g);
    free(table);
}

Test(topo, from_labels)
{
    const int labels[] = {5, 3, 5, 3, 7, -1, 5};
    hiar_grouping_t g = {0};
    char got[64];

    cr_assert_eq(hiar_grouping_from_labels(labels, 7, &g), HIAR_SUCCESS, "%s", hiar_last_error());
    expect_consistent(&g);
    format_groups(&g, got, sizeof(got));
    cr_expect_str_eq(got, "0,2,6|1,3|4|5");
    cr_expect_eq(g.local_index[6], 2);
    cr_expect_eq(g.local_index[3], 1);
    cr_expect_eq(g.group_of[5], 3);
    hiar_grouping_free(&g);

    cr_assert_eq(hiar_grouping_from_labels((const int[]){42}, 1, &g), HIAR_SUCCESS);
    cr_expect_eq(g.ngroups, 1);
    cr_expect_eq(g.local_index[0], 0);
    hiar_grouping_free(&g);
}

Test(topo, free_twice_is_safe)
{
    hiar_grouping_t g = {0};

    cr_assert_eq(hiar_grouping_parse("0|1", 2, &g), HIAR_SUCCESS);
    hiar_grouping_free(&g);
    hiar_grouping_free(&g);
    cr_expect_null(g.members);
}

Test(topo, host_id)
{
    char id[HIAR_HOST_ID_MAX], longer[300];

    memset(id, 'x', sizeof(id));
    hiar_topo_host_id("nodeA", id);
    cr_expect_str_eq(id, "nodeA");
    for (int i = 6; i < HIAR_HOST_ID_MAX; i++)
        cr_expect_eq(id[i], 0, "byte %d after the id is not zero (host ids are compared whole)", i);

    hiar_topo_host_id(NULL, id);
    cr_expect_gt(strlen(id), 0);
    cr_expect_lt(strlen(id), HIAR_HOST_ID_MAX);
    hiar_topo_host_id("", longer); /* empty override: the real host */
    cr_expect_str_eq(longer, id);

    memset(longer, 'h', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    hiar_topo_host_id(longer, id);
    cr_expect_eq(strlen(id), HIAR_HOST_ID_MAX - 1, "a long HIAR_HOST_ID is cut, NUL-terminated");
}

/* Groups per host (hiar_topo_groups_per_host) of `spec` over ranks on hosts[r] (a letter each). */
static int per_host(const char *hosts, const char *spec)
{
    int n = (int)strlen(hosts), k;
    hiar_topo_fact_t facts[16];
    hiar_grouping_t g = {0};
    char id[2] = {0};

    for (int r = 0; r < n; r++) {
        id[0] = hosts[r];
        hiar_topo_fact_init(&facts[r], id);
    }
    cr_assert_eq(hiar_grouping_parse(spec, n, &g), HIAR_SUCCESS, "%s: %s", spec, hiar_last_error());
    k = hiar_topo_groups_per_host(facts, &g);
    hiar_grouping_free(&g);
    return k;
}

/*
 * The step between groups splits within each host and between hosts only
 * where every host has as many groups, all of one size, each on one host.
 */
Test(topo, groups_per_host)
{
    cr_expect_eq(per_host("aaaabbbb", "0,1|2,3|4,5|6,7"), 2);
    cr_expect_eq(per_host("aabb", "0|1|2|3"), 2);
    cr_expect_eq(per_host("aabbcc", "0|1|2|3|4|5"), 2, "three hosts");
    cr_expect_eq(per_host("abab", "0|2|1|3"), 2, "hosts interleaved by rank");
    cr_expect_eq(per_host("aabb", "0,1|2,3"), 1, "one group on each host");
    cr_expect_eq(per_host("aaaa", "0,1|2,3"), 2, "one host");
    cr_expect_eq(per_host("aaabbb", "0|1,2|3|4,5"), 0, "groups of different sizes");
    cr_expect_eq(per_host("aaab", "0|1|2|3"), 0, "3 groups on one host, 1 on the other");
    cr_expect_eq(per_host("aabb", "0,2|1,3"), 0, "a group spans two hosts");
    cr_expect_eq(per_host("abcd", "0|1|2|3"), 1, "a rank per host");
}

/* A record of machine `machine` whose mask allows CPUs lo..hi. */
static hiar_topo_rank_host_t cpus_rec(const char *machine, int lo, int hi)
{
    hiar_topo_rank_host_t c;

    memset(&c, 0, sizeof(c));
    snprintf(c.machine, sizeof(c.machine), "%s", machine);
    snprintf(c.host, sizeof(c.host), "as-grouped-%s", machine);
    for (int i = lo; i <= hi; i++)
        c.cpus[i / 64] |= (uint64_t)1 << (i % 64);
    return c;
}

/*
 * HIAR_YIELD=auto: a machine's ranks against the union of their masks, and
 * whether each is pinned to a CPU of its own; other machines' ranks do not
 * count, the real machine does (not HIAR_HOST_ID's).
 */
Test(topo, machine_cpus)
{
    hiar_topo_rank_host_t all[6];
    hiar_topo_machine_cpus_t m;

    all[0] = cpus_rec("a", 0, 0);
    all[1] = cpus_rec("a", 1, 1);
    m = hiar_topo_machine_cpus(all, 2, 0);
    cr_expect(m.ranks == 2 && m.cpus == 2 && m.pinned, "a core each: %d %d %d", m.ranks, m.cpus, m.pinned);
    all[1] = cpus_rec("a", 0, 0);
    m = hiar_topo_machine_cpus(all, 2, 1);
    cr_expect(m.ranks == 2 && m.cpus == 1 && !m.pinned, "both on CPU 0: %d %d %d", m.ranks, m.cpus, m.pinned);
    for (int r = 0; r < 6; r++)
        all[r] = cpus_rec(r < 4 ? "a" : "b", 0, 1);
    m = hiar_topo_machine_cpus(all, 6, 2);
    cr_expect(m.ranks == 4 && m.cpus == 2 && !m.pinned, "4 ranks on 2 CPUs: %d %d %d", m.ranks, m.cpus, m.pinned);
    m = hiar_topo_machine_cpus(all, 6, 5);
    cr_expect(m.ranks == 2 && m.cpus == 2 && !m.pinned, "machine b: %d %d %d", m.ranks, m.cpus, m.pinned);
    all[4] = cpus_rec("b", 60, 70); /* across a word of the mask */
    all[5] = cpus_rec("b", 1000, 1023);
    m = hiar_topo_machine_cpus(all, 6, 4);
    cr_expect(m.ranks == 2 && m.cpus == 35 && !m.pinned, "machine b, masks apart: %d %d %d", m.ranks, m.cpus,
              m.pinned);
    all[4] = cpus_rec("b", 64, 64);
    all[5] = cpus_rec("b", 1023, 1023);
    m = hiar_topo_machine_cpus(all, 6, 5);
    cr_expect(m.ranks == 2 && m.cpus == 2 && m.pinned, "machine b, pinned: %d %d %d", m.ranks, m.cpus, m.pinned);
}

/* Whether ranks outnumber CPUs, with the launcher's count of the machine's ranks (0: unknown) and threads a rank. */
Test(topo, cpus_outnumbered)
{
    static const struct {
        hiar_topo_machine_cpus_t m; /* ranks here, CPUs, pinned */
        int launched, threads, want;
        const char *why;
    } cases[] = {
        {{2, 2, 1}, 0, 1, 0, "2 ranks pinned a core each"},
        {{2, 2, 1}, 8, 1, 0, "pinned: those outside are taken to be pinned too"},
        {{2, 2, 1}, 0, 2, 1, "pinned a core each, with a progress thread each"},
        {{2, 2, 0}, 2, 1, 0, "2 ranks sharing 2 CPUs"},
        {{2, 2, 0}, 2, 2, 1, "2 ranks and their progress threads on 2 CPUs"},
        {{2, 2, 0}, 3, 1, 1, "a third rank outside the comm on the same 2 CPUs"},
        {{8, 2, 0}, 0, 1, 1, "8 ranks on 2 CPUs"},
        {{1, 2, 0}, 8, 1, 1, "one rank of 8 here, sharing 2 CPUs"},
        {{1, 2, 0}, 0, 1, 0, "one rank alone on 2 CPUs"},
        {{1, 1, 1}, 8, 1, 0, "one rank of 8 here, pinned"},
        {{1, 16, 0}, 8, 1, 0, "8 ranks on 16 CPUs"},
        {{4, 16, 0}, 0, 2, 0, "4 ranks and their progress threads on 16 CPUs"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(hiar_topo_cpus_outnumbered(&cases[i].m, cases[i].launched, cases[i].threads) != 0,
                     cases[i].want, "%s", cases[i].why);
}

/* This process's record: HIAR_HOST_ID's identity as the host, the real one as the machine, at least one CPU. */
Test(topo, rank_host_mine)
{
    hiar_topo_rank_host_t c, again;
    hiar_topo_machine_cpus_t m;
    char real[HIAR_HOST_ID_MAX];

    hiar_topo_rank_host("pretend", &c);
    hiar_topo_host_id(NULL, real);
    cr_expect_str_eq(c.host, "pretend");
    cr_expect_str_eq(c.machine, real);
    hiar_topo_rank_host(NULL, &again);
    cr_expect_str_eq(again.host, real);
    cr_expect(memcmp(c.cpus, again.cpus, sizeof(c.cpus)) == 0);
    m = hiar_topo_machine_cpus(&c, 1, 0);
    cr_expect(m.ranks == 1 && m.cpus >= 1 && m.cpus <= sysconf(_SC_NPROCESSORS_CONF), "%d CPUs", m.cpus);
}
