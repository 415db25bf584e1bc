/* What the libFuzzer targets share: an invariant check that stops the run. */
#ifndef HIAR_FUZZ_H
#define HIAR_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

/* A broken invariant is a finding: say which, then abort so libFuzzer saves the input. */
#define FUZZ_CHECK(cond, ...)                                                              \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "invariant broken at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

#endif
