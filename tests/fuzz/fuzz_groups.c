/*
 * libFuzzer target: the HIAR_GROUPS parser (hiar_grouping_parse, src/topo_grouping_parse.c).
 *
 * Input byte 0 gives the communicator size (1 + byte % 64); the rest, as
 * text, is the HIAR_GROUPS value.  Besides memory errors, it checks that an
 * accepted grouping is one (every rank in exactly one non-empty group;
 * groups numbered by their smallest rank; members sorted; local indexes
 * consistent), that it formats back to text that parses to the same groups,
 * and that a rejection's message names HIAR_GROUPS.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every invariant of an accepted grouping of n ranks. */
static void check_grouping(const hiar_grouping_t *g, int n, const char *text)
{
    FUZZ_CHECK(g->nranks == n && g->ngroups >= 1 && g->ngroups <= n, "\"%s\": %d ranks in %d groups", text,
               g->nranks, g->ngroups);
    FUZZ_CHECK(g->start[0] == 0 && g->start[g->ngroups] == n, "\"%s\": bad group offsets", text);
    for (int i = 0; i < g->ngroups; i++) {
        FUZZ_CHECK(g->start[i + 1] > g->start[i], "\"%s\": group %d is empty", text, i);
        if (i > 0)
            FUZZ_CHECK(g->members[g->start[i]] > g->members[g->start[i - 1]],
                       "\"%s\": groups are not numbered by their smallest rank", text);
        for (int k = g->start[i] + 1; k < g->start[i + 1]; k++)
            FUZZ_CHECK(g->members[k] > g->members[k - 1], "\"%s\": group %d is not sorted", text, i);
    }
    for (int r = 0; r < n; r++) {
        int grp = g->group_of[r];
        FUZZ_CHECK(grp >= 0 && grp < g->ngroups && g->local_index[r] >= 0 &&
                       g->local_index[r] < hiar_group_size(g, grp) &&
                       g->members[g->start[grp] + g->local_index[r]] == r,
                   "\"%s\": rank %d is not where its group says", text, r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int nranks = size ? 1 + data[0] % 64 : 1;
    char *text = malloc(size + 1), formatted[64 * 4];
    hiar_grouping_t g, again;

    if (!text)
        return 0;
    memcpy(text, data + (size ? 1 : 0), size ? size - 1 : 0);
    text[size ? size - 1 : 0] = '\0';
    if (hiar_grouping_parse(text, nranks, &g) == HIAR_SUCCESS) {
        check_grouping(&g, nranks, text);
        FUZZ_CHECK(hiar_grouping_format(&g, formatted, sizeof(formatted)) == HIAR_SUCCESS, "\"%s\": %s", text,
                   hiar_last_error());
        FUZZ_CHECK(hiar_grouping_parse(formatted, nranks, &again) == HIAR_SUCCESS,
                   "\"%s\" formats as \"%s\", which does not parse: %s", text, formatted, hiar_last_error());
        FUZZ_CHECK(memcmp(g.group_of, again.group_of, sizeof(int) * (size_t)nranks) == 0,
                   "\"%s\" and its formatted \"%s\" group differently", text, formatted);
        hiar_grouping_free(&again);
        hiar_grouping_free(&g);
    } else {
        FUZZ_CHECK(strstr(hiar_last_error(), "HIAR_GROUPS") != NULL, "\"%s\": the message \"%s\" does not "
                   "name HIAR_GROUPS", text, hiar_last_error());
    }
    free(text);
    return 0;
}
