/* What each group is made of: its farthest path, its transport, and why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topo/topo.h"

const char *hiar_transport_name(hiar_transport_kind_t transport)
{
    static const char *const names[] = {"none", "ipc", "shm"};
    return names[transport];
}

/* Without a verified matrix, P2P is assumed where CUDA usually allows it: up to PHB. */
static int p2p_ok(const unsigned char *p2p, int nranks, int a, int b, hiar_path_t path)
{
    if (path >= HIAR_PATH_HOST)
        return 0;
    return p2p ? p2p[(size_t)a * (size_t)nranks + (size_t)b] &&
                     p2p[(size_t)b * (size_t)nranks + (size_t)a]
               : path <= HIAR_PATH_PHB;
}

/* The pairs of a group that decide its level and its transport. */
typedef struct {
    hiar_path_t far;    /* farthest path, between ranks far_a and far_b */
    int far_a, far_b;
    int bad_a, bad_b;   /* first pair without P2P, bad_a < 0 when none */
    hiar_path_t bad;    /* its path */
    char far_why[128];
} pairs_t;

static void scan_pairs(const hiar_topo_fact_t *facts, const unsigned char *p2p,
                       const hiar_grouping_t *g, int group, pairs_t *s)
{
    const int *m = g->members + g->start[group];
    int n = hiar_group_size(g, group);

    *s = (pairs_t){.far = HIAR_PATH_NONE, .bad_a = -1};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            char why[128];
            hiar_path_t path = hiar_topo_path(&facts[m[i]], &facts[m[j]], why, sizeof(why));
            if (path > s->far) {
                s->far = path, s->far_a = m[i], s->far_b = m[j];
                memcpy(s->far_why, why, sizeof(why));
            }
            if (s->bad_a < 0 && !p2p_ok(p2p, g->nranks, m[i], m[j], path)) {
                s->bad_a = m[i], s->bad_b = m[j];
                s->bad = path;
            }
        }
}

/* Why a rank is alone: its nearest other rank on the host, if any. */
static void explain_alone(const hiar_topo_fact_t *facts, int nranks, int me, char *why, size_t len)
{
    hiar_path_t best = HIAR_PATH_NET;
    int nearest = -1;

    for (int r = 0; r < nranks; r++) {
        hiar_path_t path = r == me ? HIAR_PATH_NET : hiar_topo_path(&facts[me], &facts[r], NULL, 0);
        if (path < best)
            best = path, nearest = r;
    }
    if (nearest < 0) {
        snprintf(why, len, "alone: no other rank on its host");
    } else {
        char path_why[128];
        hiar_topo_path(&facts[me], &facts[nearest], path_why, sizeof(path_why));
        snprintf(why, len, "alone: nearest is rank %d, %s: %s", nearest, hiar_path_name(best),
                 path_why);
    }
}

static void annotate_group(const hiar_topo_fact_t *facts, const unsigned char *p2p,
                           const hiar_grouping_t *g, int group, hiar_group_info_t *info)
{
    char reason[96];
    pairs_t s;

    if (hiar_group_size(g, group) == 1) {
        *info = (hiar_group_info_t){HIAR_PATH_NONE, HIAR_TRANSPORT_NONE, ""};
        explain_alone(facts, g->nranks, g->members[g->start[group]], info->why, sizeof(info->why));
        return;
    }
    scan_pairs(facts, p2p, g, group, &s);
    info->level = s.far;
    info->transport = s.bad_a < 0 ? HIAR_TRANSPORT_IPC : HIAR_TRANSPORT_SHM;
    if (s.bad_a < 0)
        snprintf(reason, sizeof(reason), "%s", p2p ? "P2P ok for every pair" : "P2P assumed up to PHB");
    else if (s.bad >= HIAR_PATH_HOST)
        snprintf(reason, sizeof(reason), "no P2P: rank %d or %d has no GPU", s.bad_a, s.bad_b);
    else if (p2p)
        snprintf(reason, sizeof(reason), "P2P fails between ranks %d and %d", s.bad_a, s.bad_b);
    else
        snprintf(reason, sizeof(reason), "no P2P assumed across %s (ranks %d and %d)",
                 hiar_path_name(s.bad), s.bad_a, s.bad_b);
    snprintf(info->why, sizeof(info->why), "farthest ranks %d and %d: %s; %s", s.far_a, s.far_b,
             s.far_why, reason);
}

/* The transport between two owners of a shard in different groups, and a few words on their path. */
static const char *between_pair(const hiar_topo_fact_t *facts, const unsigned char *p2p, int nranks, int a, int b,
                                char *why, size_t len)
{
    hiar_path_t path = hiar_topo_path(&facts[a], &facts[b], why, len);

    if (path >= HIAR_PATH_HOST)
        return "mpi";
    return p2p_ok(p2p, nranks, a, b, path) ? "ipc" : "pinned";
}

void hiar_topo_between(const hiar_topo_fact_t *facts, const unsigned char *p2p, const hiar_grouping_t *g,
                       void (*line)(void *arg, const char *text), void *arg)
{
    int nshards = hiar_grouping_max_size(g);

    for (int x = 0; x < g->ngroups; x++)
        for (int y = x + 1; y < g->ngroups; y++) {
            char text[1024];
            size_t used = (size_t)snprintf(text, sizeof(text), "between groups %d and %d:", x, y);
            for (int s = 0; s < nshards && used < sizeof(text); s++) {
                int a = g->members[g->start[x] + s % hiar_group_size(g, x)];
                int b = g->members[g->start[y] + s % hiar_group_size(g, y)];
                char why[128];
                const char *tp = between_pair(facts, p2p, g->nranks, a, b, why, sizeof(why));
                used += (size_t)snprintf(text + used, sizeof(text) - used, "%s shard %d: ranks %d and %d, %s (%s)",
                                         s ? ";" : "", s, a, b, tp, why);
            }
            line(arg, text);
        }
}

hiar_result_t hiar_topo_annotate(const hiar_topo_fact_t *facts, const unsigned char *p2p,
                                 hiar_grouping_t *g)
{
    hiar_group_info_t *info;

    HIAR_ARG_CHECK(facts && g && g->ngroups > 0, "hiar_topo_annotate: expected facts and a grouping");
    info = calloc((size_t)g->ngroups, sizeof(*info));
    if (!info)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the description of %d groups",
                              g->ngroups);
    for (int i = 0; i < g->ngroups; i++)
        annotate_group(facts, p2p, g, i, &info[i]);
    free(g->info);
    g->info = info;
    return HIAR_SUCCESS;
}
