/* Host phase marks of calls (base/marks.h): phases summed in the order first seen, reported per call. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/marks.h"

Test(marks, phases_in_order_per_call)
{
    hiar_marks_t m = {0};
    char text[256];

    for (int call = 0; call < 2; call++) {
        /* the first call entered 5 ms ago, the second 1 ms ago */
        hiar_marks_begin(&m, hiar_now_ns() - (call ? 1000000 : 5000000));
        hiar_marks_stamp(&m, "described");
        hiar_marks_stamp(&m, "launched");
        hiar_marks_stamp(&m, "launched"); /* a second chunk: the same phase, summed in the call */
        hiar_marks_end(&m, "returned");
    }
    cr_assert_eq(m.calls, 2);
    cr_assert_eq(m.n, 3);
    cr_expect_str_eq(m.phase[0], "described");
    cr_expect_str_eq(m.phase[1], "launched");
    cr_expect_str_eq(m.phase[2], "returned");
    cr_expect_geq(m.ns[0], 6000000ull, "the time since entry goes to the first phase");
    cr_expect_geq(m.max[0], 5000000ull, "the first call's");
    cr_expect_lt(m.max[0], m.ns[0], "one call's, not the sum of two");
    cr_expect_leq(m.max[1], m.ns[1], "a call's chunks are summed before the max");
    cr_expect_eq(m.call[0] + m.call[1] + m.call[2], 0, "nothing left of an ended call");
    hiar_marks_report(&m, text, sizeof(text));
    cr_expect(strncmp(text, "2 calls, us per call: described ", 32) == 0, "%s", text);
    {
        double mean = 0, max = 0;
        cr_expect(sscanf(text + 32, "%lf (max %lf)", &mean, &max) == 2 && max >= 5000 && max < mean * 2,
                  "the first call's 5 ms as its phase's max, under two calls' mean: %s", text);
    }
    cr_expect(strstr(text, ", launched ") && strstr(text, ", returned ") && strstr(text, " (total "), "%s", text);
}

Test(marks, none_kept_and_too_many_phases)
{
    static const char *const names[] = {"p0",  "p1",  "p2",  "p3",  "p4",  "p5",  "p6",  "p7",  "p8",
                                        "p9",  "p10", "p11", "p12", "p13", "p14", "p15", "p16", "p17"};
    hiar_marks_t m = {0};
    char text[512];

    hiar_marks_begin(NULL, 0); /* a call without marks: nothing happens */
    hiar_marks_stamp(NULL, "x");
    hiar_marks_end(NULL, "y");
    hiar_marks_report(&m, text, sizeof(text));
    cr_expect_str_eq(text, "no calls");
    hiar_marks_begin(&m, hiar_now_ns());
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        hiar_marks_stamp(&m, names[i]);
    hiar_marks_end(&m, "p0"); /* a phase seen before: its own slot */
    cr_expect_eq(m.n, HIAR_MARKS_MAX, "phases past the most share the last slot");
    cr_expect_str_eq(m.phase[HIAR_MARKS_MAX - 1], "p15");
    hiar_marks_report(&m, text, 40); /* cut short, still a string */
    cr_expect_eq(strlen(text), 39);
}
