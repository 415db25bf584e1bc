/*
 * The rounds of the step between hosts when every rank is alone
 * (net/tier.h hiar_tier_rounds): which n take them, that each round's links
 * partition the ranks into groups of its factor, and, by replaying a sum as
 * a string through the rounds, that every rank ends with every rank's value
 * once, in the same order (the same bits).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/tier.h"

/* The reference: n >= 2 with no prime factor above 3. */
static int smooth(int n)
{
    if (n < 2)
        return 0;
    while (n % 2 == 0)
        n /= 2;
    while (n % 3 == 0)
        n /= 3;
    return n == 1;
}

Test(rounds, which_sizes_take_them)
{
    hiar_tier_round_t r[HIAR_TIER_ROUNDS_MAX];

    for (int n = 0; n <= 1000; n++)
        cr_expect_eq(hiar_tier_rounds(n, 0, 3, r) > 0, smooth(n), "n %d", n);
    cr_expect_eq(hiar_tier_rounds(2, 1, 3, r), 1);
    cr_expect_eq(hiar_tier_rounds(4, 3, 3, r), 2, "4: 2 rounds of 2");
    cr_expect_eq(hiar_tier_rounds(12, 5, 3, r), 3, "12: 2, 2, 3");
    cr_expect_eq(r[2].size, 3);
    cr_expect_eq(hiar_tier_rounds(10, 0, 5, r), 2, "10 with factors to 5: 2, 5");
    cr_expect_eq(hiar_tier_rounds(10, 0, 3, r), 0);
    cr_expect_eq(hiar_tier_rounds(1 << 30, 12345, 3, r), 30, "2^30: 30 rounds");
}

/* Replays a sum through the rounds of n ranks: each round, each rank's value becomes its link's, by key. */
static void replay(int n)
{
    hiar_tier_round_t(*r)[HIAR_TIER_ROUNDS_MAX] = calloc((size_t)n, sizeof(*r));
    char **v = calloc((size_t)n, sizeof(char *)), **next = calloc((size_t)n, sizeof(char *));
    int k = hiar_tier_rounds(n, 0, 3, r[0]);
    size_t cap = (size_t)n * 16 + 64;

    cr_assert(k > 0);
    for (int me = 0; me < n; me++) {
        cr_assert_eq(hiar_tier_rounds(n, me, 3, r[me]), k, "n %d: every rank the same rounds", n);
        v[me] = malloc(cap);
        next[me] = malloc(cap);
        snprintf(v[me], cap, "r%d", me);
    }
    for (int q = 0; q < k; q++) {
        for (int me = 0; me < n; me++) {
            int members = 0, seen[8] = {0};
            cr_assert_eq(r[me][q].size, r[0][q].size);
            cr_assert(r[me][q].size >= 2 && r[me][q].size <= 3, "n %d round %d: a factor of 2 or 3", n, q);
            cr_assert(r[me][q].key >= 0 && r[me][q].key < r[me][q].size);
            strcpy(next[me], "(");
            for (int key = 0; key < r[me][q].size; key++)
                for (int o = 0; o < n; o++)
                    if (r[o][q].color == r[me][q].color && r[o][q].key == key) {
                        members++;
                        seen[key]++;
                        strcat(next[me], key ? "+" : "");
                        strcat(next[me], v[o]);
                    }
            strcat(next[me], ")");
            cr_assert_eq(members, r[me][q].size, "n %d round %d rank %d: a link of its size", n, q, me);
            for (int key = 0; key < r[me][q].size; key++)
                cr_assert_eq(seen[key], 1, "n %d round %d rank %d: one rank per key", n, q, me);
        }
        for (int me = 0; me < n; me++) {
            char *t = v[me];
            v[me] = next[me];
            next[me] = t;
        }
    }
    for (int me = 0; me < n; me++)
        cr_assert_str_eq(v[me], v[0], "n %d: rank %d's sum is rank 0's, in the same order", n, me);
    for (int o = 0; o < n; o++) { /* every value once */
        int count = 0;
        char name[16];
        snprintf(name, sizeof(name), "r%d", o);
        for (const char *p = v[0]; (p = strstr(p, name)); p++)
            count += p[strlen(name)] < '0' || p[strlen(name)] > '9';
        cr_assert_eq(count, 1, "n %d: r%d in the sum %d times: %s", n, o, count, v[0]);
    }
    for (int me = 0; me < n; me++) {
        free(v[me]);
        free(next[me]);
    }
    free(v);
    free(next);
    free(r);
}

Test(rounds, every_rank_gets_every_value_once_in_one_order)
{
    for (int n = 2; n <= 96; n++)
        if (smooth(n))
            replay(n);
}
