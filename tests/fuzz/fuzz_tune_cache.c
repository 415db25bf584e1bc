/*
 * libFuzzer target: the tuning cache reader (hiar_tune_cache_read,
 * src/core/tune_cache.c).
 *
 * The cache is a file in the user's cache folder: anything may be in it (a
 * truncated write of an older hiar, another tool's file, an edit by hand).
 * The input is written as the file and read twice, for any signature (as
 * hiar-info does) and for the signature the file names (as a comm whose
 * signature it is).  Besides memory errors (ASan, UBSan), it checks:
 *   - a file that is not loaded is ignored with a reason (never ABSENT: it
 *     exists);
 *   - what is loaded is in range: limits up to HIAR_TUNE_LIMIT_MAX, at most
 *     a ladder's device paths, each a known path name;
 *   - what is loaded survives the writer: hiar_tune_cache_write of the
 *     loaded values, read back for the same signature, loads the same values.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "core/tune_cache.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The library's, without the rest of the comm (core/comm.c). */
const char *hiar_version(void)
{
    return HIAR_VERSION_STRING;
}

static char dir[256], path[300], again[300];

static void remove_dir(void)
{
    unlink(path);
    unlink(again);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_make_dir("fuzz-tune", dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/cache.txt", dir);
    snprintf(again, sizeof(again), "%s/again.txt", dir);
    atexit(remove_dir);
    return 0;
}

static void check_loaded(const hiar_tune_limits_t *l)
{
    FUZZ_CHECK(l->shm_oneshot_max <= HIAR_TUNE_LIMIT_MAX && l->hier_oneshot_max <= HIAR_TUNE_LIMIT_MAX,
               "limits %zu and %zu past %zu", l->shm_oneshot_max, l->hier_oneshot_max, (size_t)HIAR_TUNE_LIMIT_MAX);
    FUZZ_CHECK(l->device_n >= 0 && l->device_n <= HIAR_TUNE_DEV_NSIZES, "%d device paths", l->device_n);
    for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
        for (int i = 0; i < l->device_n; i++)
            FUZZ_CHECK(hiar_tune_dev_name(l->device[m][i]) != NULL, "mode %d size %d: path %d has no name", m, i,
                       l->device[m][i]);
}

/* Written back and read for the same signature: the same values. */
static void check_round_trip(const char *signature, const hiar_tune_limits_t *l)
{
    hiar_tune_limits_t back;
    char why[2048], sig[1600];
    hiar_tune_cache_t got;

    FUZZ_CHECK(hiar_tune_cache_write(again, signature, l, NULL, NULL, 0.0) == HIAR_SUCCESS, "cannot write: %s",
               hiar_last_error());
    memset(&back, 0xa5, sizeof(back));
    got = hiar_tune_cache_read(again, signature, &back, why, sizeof(why), sig, sizeof(sig));
    FUZZ_CHECK(got == HIAR_TUNE_CACHE_LOADED, "what was loaded, written back, is not loaded (%d): %s", (int)got, why);
    FUZZ_CHECK(back.shm_oneshot_max == l->shm_oneshot_max && back.hier_oneshot_max == l->hier_oneshot_max &&
                   back.device_n == l->device_n,
               "written back, read as %zu %zu %d instead of %zu %zu %d", back.shm_oneshot_max, back.hier_oneshot_max,
               back.device_n, l->shm_oneshot_max, l->hier_oneshot_max, l->device_n);
    for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
        FUZZ_CHECK(memcmp(back.device[m], l->device[m], (size_t)l->device_n) == 0, "mode %d's paths changed", m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    hiar_tune_limits_t l;
    char why[2048], sig[1600];
    hiar_tune_cache_t got;

    FUZZ_CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
    why[0] = '\0';
    got = hiar_tune_cache_read(path, NULL, &l, why, sizeof(why), sig, sizeof(sig));
    FUZZ_CHECK(got == HIAR_TUNE_CACHE_LOADED || (got == HIAR_TUNE_CACHE_IGNORED && why[0]),
               "read gave %d with reason \"%s\"", (int)got, why);
    if (got == HIAR_TUNE_CACHE_LOADED)
        check_loaded(&l);
    if (!sig[0])
        return 0;
    why[0] = '\0';
    got = hiar_tune_cache_read(path, sig, &l, why, sizeof(why), NULL, 0);
    FUZZ_CHECK(got == HIAR_TUNE_CACHE_LOADED || (got == HIAR_TUNE_CACHE_IGNORED && why[0]),
               "read for its own signature gave %d with reason \"%s\"", (int)got, why);
    if (got == HIAR_TUNE_CACHE_LOADED) {
        check_loaded(&l);
        check_round_trip(sig, &l);
    }
    return 0;
}
