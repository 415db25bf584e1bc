/* Grouping of ranks from gathered facts: host identity, PCI path, NVLink, HIAR_GROUPS. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "param.h"
#include "topo.h"

void hiar_grouping_free(hiar_grouping_t *g)
{
    free(g->group_of);
    free(g->local_index);
    free(g->start);
    free(g->members);
    free(g->info);
    memset(g, 0, sizeof(*g));
}

int hiar_grouping_max_size(const hiar_grouping_t *g)
{
    int max = 0;
    for (int i = 0; i < g->ngroups; i++)
        if (hiar_group_size(g, i) > max)
            max = hiar_group_size(g, i);
    return max;
}

hiar_result_t hiar_grouping_from_labels(const int *label, int nranks, hiar_grouping_t *out)
{
    hiar_grouping_t g = {.nranks = nranks};
    int *fill;

    g.group_of = malloc(sizeof(int) * (size_t)nranks);
    g.local_index = malloc(sizeof(int) * (size_t)nranks);
    g.start = calloc((size_t)nranks + 1, sizeof(int));
    g.members = malloc(sizeof(int) * (size_t)nranks);
    fill = calloc((size_t)nranks + 1, sizeof(int));
    if (!g.group_of || !g.local_index || !g.start || !g.members || !fill) {
        free(fill);
        hiar_grouping_free(&g);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the grouping of %d ranks", nranks);
    }
    /* Number groups in order of their first (= smallest) rank. */
    for (int r = 0; r < nranks; r++) {
        int same = -1;
        for (int q = 0; q < r && same < 0; q++)
            if (label[q] == label[r])
                same = q;
        g.group_of[r] = same < 0 ? g.ngroups++ : g.group_of[same];
        g.start[g.group_of[r] + 1]++;
    }
    for (int i = 0; i < g.ngroups; i++)
        g.start[i + 1] += g.start[i];
    for (int r = 0; r < nranks; r++) {
        int grp = g.group_of[r];
        g.local_index[r] = fill[grp]++;
        g.members[g.start[grp] + g.local_index[r]] = r;
    }
    free(fill);
    *out = g;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_grouping_by_host(const char *host_ids, int nranks, hiar_grouping_t *out)
{
    int *label = malloc(sizeof(int) * (size_t)nranks);
    hiar_result_t rc;

    if (!label)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d labels", nranks);
    for (int r = 0; r < nranks; r++) {
        label[r] = r;
        for (int q = 0; q < r; q++)
            if (strncmp(host_ids + (size_t)q * HIAR_HOST_ID_MAX,
                        host_ids + (size_t)r * HIAR_HOST_ID_MAX, HIAR_HOST_ID_MAX) == 0) {
                label[r] = label[q];
                break;
            }
    }
    rc = hiar_grouping_from_labels(label, nranks, out);
    free(label);
    return rc;
}

/* Reads a rank number at *p; advances *p past it. */
static int parse_rank(const char **p, const char *text, int nranks, int *rank)
{
    char *end;
    long v;

    if (!isdigit((unsigned char)**p))
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "HIAR_GROUPS=\"%s\": expected a rank number at offset %d, found '%c'",
                              text, (int)(*p - text), **p ? **p : ' ');
    v = strtol(*p, &end, 10);
    if (v >= nranks)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "HIAR_GROUPS=\"%s\" names rank %ld, but the communicator has %d ranks",
                              text, v, nranks);
    *p = end;
    *rank = (int)v;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_grouping_parse(const char *text, int nranks, hiar_grouping_t *out)
{
    int *label = malloc(sizeof(int) * (size_t)nranks);
    const char *p = text;
    hiar_result_t rc = HIAR_SUCCESS;
    int group = 0;

    if (!label)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d labels", nranks);
    for (int r = 0; r < nranks; r++)
        label[r] = -1;
    while (rc == HIAR_SUCCESS) {
        int first, last;
        HIAR_CHECK_GOTO(parse_rank(&p, text, nranks, &first), rc, out_free);
        last = first;
        if (*p == '-') {
            p++;
            HIAR_CHECK_GOTO(parse_rank(&p, text, nranks, &last), rc, out_free);
            if (last < first) {
                rc = hiar_error_set(HIAR_INVALID_ARGUMENT,
                                    "HIAR_GROUPS=\"%s\": the range %d-%d is backwards (expected %d-%d)", text,
                                    first, last, last, first);
                goto out_free;
            }
        }
        for (int r = first; r <= last; r++) {
            if (label[r] >= 0) {
                rc = hiar_error_set(HIAR_INVALID_ARGUMENT,
                                    "HIAR_GROUPS=\"%s\" names rank %d twice", text, r);
                goto out_free;
            }
            label[r] = group;
        }
        if (*p == '|')
            group++;
        else if (*p != ',')
            break;
        p++;
    }
    if (*p) {
        rc = hiar_error_set(HIAR_INVALID_ARGUMENT,
                            "HIAR_GROUPS=\"%s\": unexpected '%c' at offset %d (expected ',', '-' or '|')",
                            text, *p, (int)(p - text));
        goto out_free;
    }
    for (int r = 0; r < nranks; r++)
        if (label[r] < 0) {
            rc = hiar_error_set(HIAR_INVALID_ARGUMENT,
                                "HIAR_GROUPS=\"%s\" leaves out rank %d: every one of the %d ranks "
                                "must be in exactly one group",
                                text, r, nranks);
            goto out_free;
        }
    rc = hiar_grouping_from_labels(label, nranks, out);
out_free:
    free(label);
    return rc;
}

void hiar_topo_host_id(const char *override, char out[HIAR_HOST_ID_MAX])
{
    char host[64] = "", boot[40] = "";
    FILE *f;

    memset(out, 0, HIAR_HOST_ID_MAX);
    if (override && *override) {
        snprintf(out, HIAR_HOST_ID_MAX, "%s", override);
        return;
    }
    gethostname(host, sizeof(host) - 1);
    /* Containers on one machine share the boot id but not always the host name;
     * the pair tells hosts apart where either alone might not. */
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    snprintf(out, HIAR_HOST_ID_MAX, "%s/%s", host, boot);
}

/* ---- facts of one rank */

static int same_host(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b)
{
    return strncmp(a->host_id, b->host_id, HIAR_HOST_ID_MAX) == 0;
}

void hiar_topo_fact_init(hiar_topo_fact_t *fact, const char *host_id)
{
    memset(fact, 0, sizeof(*fact));
    snprintf(fact->host_id, sizeof(fact->host_id), "%s", host_id ? host_id : "");
    fact->pci.numa_node = -1;
    fact->nvlink_group = -1;
}

hiar_result_t hiar_topo_fact_set_gpu(hiar_topo_fact_t *fact, const char *sysfs_root,
                                     const char *bus_id)
{
    return hiar_pci_locate(sysfs_root, bus_id, &fact->pci);
}

static int lists_nvlink_peer(const hiar_topo_fact_t *fact, const char *bus_id)
{
    for (int i = 0; i < fact->nvlink_npeers; i++)
        if (strcmp(fact->nvlink_peer[i], bus_id) == 0)
            return 1;
    return 0;
}

hiar_result_t hiar_topo_fact_add_nvlink_peer(hiar_topo_fact_t *fact, const char *bus_id)
{
    char norm[HIAR_BUSID_MAX];

    HIAR_CHECK(hiar_pci_busid_normalize(bus_id, norm));
    /* NVML reports one remote per link; two links to one peer are one peer. */
    if (lists_nvlink_peer(fact, norm))
        return HIAR_SUCCESS;
    HIAR_ARG_CHECK(fact->nvlink_npeers < HIAR_NVLINK_PEERS_MAX,
                   "GPU %s: NVLink peer %s is one too many: at most %d peers are kept",
                   fact->pci.bus_id, norm, HIAR_NVLINK_PEERS_MAX);
    memcpy(fact->nvlink_peer[fact->nvlink_npeers++], norm, sizeof(norm));
    return HIAR_SUCCESS;
}

/* The facts of the GPU named by entry (len characters of list, its index-th). */
static hiar_result_t fact_of_entry(const char *root, const char *list, const char *entry, size_t len,
                                   int index, const char *host_id, hiar_topo_fact_t *fact)
{
    char one[HIAR_BUSID_MAX + 8];

    HIAR_ARG_CHECK(len > 0 && len < sizeof(one),
                   "GPU list \"%s\": entry %d is %s: expected PCI bus ids separated by commas, "
                   "e.g. 0000:3b:00.0,0000:5e:00.0",
                   list, index, len ? "too long" : "empty");
    memcpy(one, entry, len);
    one[len] = '\0';
    hiar_topo_fact_init(fact, host_id);
    return hiar_topo_fact_set_gpu(fact, root, one);
}

hiar_result_t hiar_topo_facts_for_gpus(const char *sysfs_root, const char *bus_ids,
                                       const char *host_id, hiar_topo_fact_t **facts, int *nranks)
{
    hiar_topo_fact_t *all;
    const char *p = bus_ids;
    int n = 1;

    HIAR_ARG_CHECK(bus_ids && *bus_ids, "the GPU list is empty: expected PCI bus ids separated "
                                        "by commas, e.g. 0000:3b:00.0,0000:5e:00.0");
    for (const char *c = bus_ids; *c; c++)
        n += *c == ',';
    all = calloc((size_t)n, sizeof(*all));
    if (!all)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the facts of %d GPUs", n);
    for (int r = 0; r < n; r++) {
        size_t len = strcspn(p, ",");
        hiar_result_t rc = fact_of_entry(sysfs_root, bus_ids, p, len, r, host_id, &all[r]);
        if (rc != HIAR_SUCCESS) {
            free(all);
            return rc;
        }
        p += len + 1;
    }
    *facts = all;
    *nranks = n;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_topo_p2p_none(const hiar_topo_fact_t *facts, int nranks, unsigned char **p2p)
{
    unsigned char *m = malloc((size_t)nranks * (size_t)nranks);

    if (!m)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the P2P matrix of %d ranks", nranks);
    for (int a = 0; a < nranks; a++)
        for (int b = 0; b < nranks; b++)
            m[(size_t)a * (size_t)nranks + (size_t)b] =
                same_host(&facts[a], &facts[b]) && *facts[a].pci.bus_id &&
                strcmp(facts[a].pci.bus_id, facts[b].pci.bus_id) == 0;
    *p2p = m;
    return HIAR_SUCCESS;
}

static int nvlinked(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b)
{
    return (a->nvlink_group >= 0 && a->nvlink_group == b->nvlink_group) ||
           lists_nvlink_peer(a, b->pci.bus_id) || lists_nvlink_peer(b, a->pci.bus_id);
}

hiar_path_t hiar_topo_path(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b, char *why,
                           size_t len)
{
    if (!same_host(a, b)) {
        snprintf(why, len, "different hosts");
        return HIAR_PATH_NET;
    }
    if (!*a->pci.bus_id || !*b->pci.bus_id) {
        snprintf(why, len, "same host, %s without GPU", *a->pci.bus_id || *b->pci.bus_id ? "one" : "both");
        return HIAR_PATH_HOST;
    }
    if (strcmp(a->pci.bus_id, b->pci.bus_id) != 0 && nvlinked(a, b)) {
        snprintf(why, len, "NVLink between %s and %s", a->pci.bus_id, b->pci.bus_id);
        return HIAR_PATH_NVL;
    }
    return hiar_pci_path(&a->pci, &b->pci, why, len);
}

/* ---- grouping by topology */

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
        if (prev < 0 || !same_host(&facts[r], &facts[prev]) ||
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
        for (int e = d + 1; e < t->ndev && same_host(&t->facts[t->rep[d]], &t->facts[t->rep[e]]); e++)
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
        snprintf(why, len, "HIAR_GROUP_LEVEL=RANK: every rank alone, MPI only");
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

/* ---- what each group is made of */

const char *hiar_transport_name(hiar_transport_t transport)
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
