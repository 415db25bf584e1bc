/* Grouping of ranks from gathered facts (host identity, HIAR_GROUPS). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "topo.h"

void hiar_grouping_free(hiar_grouping_t *g)
{
    free(g->group_of);
    free(g->local_index);
    free(g->start);
    free(g->members);
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
