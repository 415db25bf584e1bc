/* HIAR_GROUPS: the grouping a user writes out by rank number. */
#include <ctype.h>
#include <stdlib.h>

#include "base/error.h"
#include "topo/topo.h"

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
