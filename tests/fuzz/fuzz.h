/* What the libFuzzer targets share: an invariant check that stops the run, a folder of their own. */
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

/* A fresh folder of this target's under TMPDIR (else /tmp), "prefix-XXXXXX", into dir; exits where it cannot. */
static inline void fuzz_make_dir(const char *prefix, char *dir, size_t len)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, len, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

#endif
