/*
 * Host phase marks of calls: where a call's time goes on the calling thread
 * (describing it, each launch, handing a job to the progress thread), as
 * the kernels' phase marks (cuda/api.h) tell it on the GPU.  With
 * HIAR_CALL_MARKS=1 (doc/testing.md) a call stamps its phases into the
 * comm's marks (host and device calls apart) and the comm logs the mean per call at destroy
 * (HIAR_DEBUG=INFO, subsystem CALL); otherwise a call's marks are NULL and
 * each HIAR_MARK is one test.  A parameter, not a build: every build has
 * them, tested, and a GPU session needs no second tree.  Why: a call between
 * hosts returned 63-87 us after it was made with 5 ms of work ahead on the
 * stream (one H100, 2026-12-05), against a goal of 50, and only a timing
 * inside the call says which part to cut.
 */
#ifndef HIAR_MARKS_H
#define HIAR_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "base/wait.h"

/* Device calls between hosts have 12 phases (both paths of core/hier.c); past the most, phases fold into the last. */
#define HIAR_MARKS_MAX 16

typedef struct hiar_marks {
    uint64_t last;  /* the call's previous stamp (hiar_now_ns) */
    uint64_t calls; /* calls that ended (hiar_marks_end) */
    int n;          /* phases seen, in the order first seen */
    const char *phase[HIAR_MARKS_MAX];
    uint64_t ns[HIAR_MARKS_MAX];   /* per phase: the time from the stamp before, summed over calls */
    uint64_t call[HIAR_MARKS_MAX]; /* per phase: the same in the call under way */
    uint64_t max[HIAR_MARKS_MAX];  /* per phase: the most one call took (a first call's set-up, a stall) */
} hiar_marks_t;

/* A call starts at t0 (its entry's hiar_now_ns); m NULL: nothing. */
void hiar_marks_begin(hiar_marks_t *m, uint64_t t0);
/* The time since the last stamp goes to phase (a string literal; past HIAR_MARKS_MAX phases, to the last). */
void hiar_marks_stamp(hiar_marks_t *m, const char *phase);
/* The call's last phase, and one more call counted. */
void hiar_marks_end(hiar_marks_t *m, const char *phase);
/*
 * "N calls, us per call: phase 1.23 (max 7.89), ... (total 4.56)" into out;
 * 0 calls: "no calls".  The max beside the mean: a comm's first call (lazy
 * set-up) took 500 us or so on the GPU machine, which alone made a mean over
 * 13 calls 40 us higher (2026-12-05).
 */
void hiar_marks_report(const hiar_marks_t *m, char *out, size_t len);

/* After each phase of a call whose marks are kept (call->marks; NULL: none, one test). */
#define HIAR_MARK(call, phase)                     \
    do {                                           \
        if ((call)->marks)                         \
            hiar_marks_stamp((call)->marks, phase); \
    } while (0)

#endif
