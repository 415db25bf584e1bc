/*
 * Tuning's pure parts (src/core/tune_cache.c): the signature, the cache
 * file's round trip and mode, two processes writing it at once, files that are corrupt, of another signature
 * or another hiar version (ignored, with why), and the crossover chosen
 * from a timing table (a tie, a dropped candidate, a partial ladder); the
 * device ladder's buckets, its choice per size, and its cache line.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/tune_cache.h"

static const int sizes22[] = {2, 2};

static void facts(hiar_tune_facts_t *f)
{
    hiar_tune_facts_t d = {4, 2, sizes22, 1, "shm", "none", "Open MPI v4.1.6, package: Debian", "none", "none",
                           4194304, 0, 2048};
    *f = d;
}

Test(tune, signature_names_what_the_choice_depends_on)
{
    hiar_tune_facts_t f;
    char sig[512], other[512], want[160];

    facts(&f);
    cr_assert_eq(hiar_tune_signature(&f, sig, sizeof(sig)), HIAR_SUCCESS);
    snprintf(want, sizeof(want), "hiar=%s ranks=4 groups=2,2 hosts=1 host=shm device=none layout=(none) slots=4194304,0 shm1=2048 gpu=none",
             hiar_version());
    cr_expect(strstr(sig, want) == sig, "signature %s should start %s", sig, want);
    cr_expect(strstr(sig, "mpi=Open MPI v4.1.6"), "%s", sig);
    cr_expect(strstr(sig, " ladder=11"), "a cache of another device ladder must not match: %s", sig);
    f.nhosts = 2;
    cr_assert_eq(hiar_tune_signature(&f, other, sizeof(other)), HIAR_SUCCESS);
    cr_expect_str_neq(sig, other);
    cr_expect_neq(hiar_tune_hash(sig), hiar_tune_hash(other));
    f.nhosts = 1;
    f.host_slot = 65536; /* /dev/shm shrank the default slot: the timings were of other chunks */
    cr_assert_eq(hiar_tune_signature(&f, other, sizeof(other)), HIAR_SUCCESS);
    cr_expect_str_neq(sig, other);
    cr_expect_neq(hiar_tune_signature(&f, sig, 20), HIAR_SUCCESS, "a short buffer must fail, not cut");
}

Test(tune, signature_is_one_line)
{
    hiar_tune_facts_t f;
    char sig[512];

    facts(&f);
    f.mpi = "MPICH 4.2\r\nsecond";
    cr_assert_eq(hiar_tune_signature(&f, sig, sizeof(sig)), HIAR_SUCCESS);
    cr_expect(!strchr(sig, '\n') && !strchr(sig, '\r'), "%s", sig);
}

Test(tune, default_path_from_xdg_then_home)
{
    char path[512];

    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    cr_assert_eq(hiar_tune_default_path("sig", path, sizeof(path)), HIAR_SUCCESS);
    cr_expect(strncmp(path, "/x/cache/hiar/tune-", 19) == 0 && strstr(path, ".txt"), "%s", path);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/h", 1);
    cr_assert_eq(hiar_tune_default_path("sig", path, sizeof(path)), HIAR_SUCCESS);
    cr_expect(strncmp(path, "/h/.cache/hiar/tune-", 20) == 0, "%s", path);
    unsetenv("HOME");
    cr_expect_neq(hiar_tune_default_path("sig", path, sizeof(path)), HIAR_SUCCESS);
}

/* A fresh folder for cache files; its path in dir. */
static void fresh_dir(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/hiar-test-tune-%ld", (long)getpid());
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static void remove_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

Test(tune, cache_round_trip_mode_0600_folders_0700)
{
    hiar_tune_limits_t l = {16384, 4096, {{0}}, 0}, got = {0, 0, {{0}}, 0};
    char dir[256], path[512], why[256], sig[256];
    struct stat st;

    fresh_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/a/b/tune.txt", dir);
    cr_assert_eq(hiar_tune_cache_write(path, "hiar=x ranks=2", &l, NULL, NULL, 0.5), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
    snprintf(path, sizeof(path), "%s/a", dir);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0700, "folder mode %o", st.st_mode & 0777);
    snprintf(path, sizeof(path), "%s/a/b/tune.txt", dir);
    cr_expect_eq(hiar_tune_cache_read(path, "hiar=x ranks=2", &got, why, sizeof(why), sig, sizeof(sig)),
                 HIAR_TUNE_CACHE_LOADED, "%s", why);
    cr_expect_eq(got.shm_oneshot_max, 16384);
    cr_expect_eq(got.hier_oneshot_max, 4096);
    cr_expect_str_eq(sig, "hiar=x ranks=2");
    /* Written again over it (a second job): still one whole file, no temporary left. */
    l.shm_oneshot_max = 0;
    cr_assert_eq(hiar_tune_cache_write(path, "hiar=x ranks=2", &l, NULL, NULL, 0.5), HIAR_SUCCESS);
    cr_expect_eq(hiar_tune_cache_read(path, NULL, &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_LOADED);
    cr_expect_eq(got.shm_oneshot_max, 0);
    snprintf(path, sizeof(path), "%s/a/b/tune.txt.tmp.%ld", dir, (long)getpid());
    cr_expect_neq(access(path, F_OK), 0, "the temporary file %s is left", path);
    remove_dir(dir);
}

Test(tune, cache_concurrent_writers_leave_one_whole_file)
{
    char dir[256], path[512], why[512];
    hiar_tune_limits_t got;
    pid_t kids[2];

    fresh_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/tune.txt", dir);
    for (int k = 0; k < 2; k++)
        if ((kids[k] = fork()) == 0) {
            hiar_tune_limits_t l = {(size_t)(k + 1) * 1024, (size_t)(k + 1) * 1024, {{0}}, 0};
            int bad = 0;
            for (int i = 0; i < 200; i++)
                bad += hiar_tune_cache_write(path, "s", &l, NULL, NULL, 0.1) != HIAR_SUCCESS;
            _exit(bad != 0);
        }
    for (int k = 0; k < 2; k++) {
        int st = 0;
        cr_assert_eq(waitpid(kids[k], &st, 0), kids[k]);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", k);
    }
    cr_assert_eq(hiar_tune_cache_read(path, "s", &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_LOADED, "%s", why);
    cr_expect(got.shm_oneshot_max == got.hier_oneshot_max && (got.shm_oneshot_max == 1024 || got.shm_oneshot_max == 2048),
              "a mixed file: %zu, %zu", got.shm_oneshot_max, got.hier_oneshot_max);
    remove_dir(dir);
}

Test(tune, cache_absent)
{
    hiar_tune_limits_t got;
    char why[256];

    cr_expect_eq(hiar_tune_cache_read("/nonexistent/hiar/tune.txt", "s", &got, why, sizeof(why), NULL, 0),
                 HIAR_TUNE_CACHE_ABSENT);
}

/* Writes text as the cache file and reads it for signature "s"; why gets the reason. */
/* The cache that text makes, read into *got for signature "s". */
static hiar_tune_cache_t read_text_limits(const char *text, hiar_tune_limits_t *got, char *why, size_t len)
{
    char path[256];
    hiar_tune_cache_t rc;
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/hiar-test-tune-%ld.txt", (long)getpid());
    f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    rc = hiar_tune_cache_read(path, "s", got, why, len, NULL, 0);
    unlink(path);
    return rc;
}

static hiar_tune_cache_t read_text(const char *text, char *why, size_t len)
{
    hiar_tune_limits_t got = {1, 1, {{0}}, 0};
    hiar_tune_cache_t rc = read_text_limits(text, &got, why, len);

    if (rc != HIAR_TUNE_CACHE_LOADED)
        cr_expect(got.shm_oneshot_max == 1 && got.hier_oneshot_max == 1, "an ignored file must not set the limits");
    return rc;
}

/* A valid file of this hiar for signature "s", with extra appended. */
static void valid_text(char *buf, size_t len, const char *version, const char *sig, const char *shm)
{
    snprintf(buf, len, "# comment\nversion %s\nsignature %s\nshm_oneshot_max %s\nhier_oneshot_max 2048\n"
                       "measured_s 0.8\n# 256 1.0 2.0\n",
             version, sig, shm);
}

Test(tune, cache_ignored_with_why)
{
    static const struct {
        const char *version, *sig, *shm, *why;
    } cases[] = {
        {NULL, "s", "65536", NULL},           /* valid: the control */
        {"0.0.1", "s", "65536", "written by hiar 0.0.1"},
        {NULL, "other", "65536", "of another signature"},
        {NULL, "s", "99999999999", "corrupt at line 4"}, /* out of range */
        {NULL, "s", "12x", "corrupt at line 4"},
        {NULL, "s", "-1", "corrupt at line 4"},
    };
    char text[1024], why[512];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        valid_text(text, sizeof(text), cases[i].version ? cases[i].version : hiar_version(), cases[i].sig,
                   cases[i].shm);
        why[0] = '\0';
        hiar_tune_cache_t rc = read_text(text, why, sizeof(why));
        if (!cases[i].why) {
            cr_expect_eq(rc, HIAR_TUNE_CACHE_LOADED, "case %zu: %s", i, why);
            continue;
        }
        cr_expect_eq(rc, HIAR_TUNE_CACHE_IGNORED, "case %zu", i);
        cr_expect(strstr(why, cases[i].why), "case %zu: why is \"%s\", expected \"%s\"", i, why, cases[i].why);
    }
}

Test(tune, cache_corrupt_files_ignored)
{
    static const char *const texts[] = {
        "", "garbage\n", "version 0.1.0\n", "\x01\x02\x03 binary", "version 0.1.0\nsignature s\nshm_oneshot_max 1\n",
        "version 0.1.0\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\nunknown_key 3\n",
    };
    char why[512];

    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        cr_expect_eq(read_text(texts[i], why, sizeof(why)), HIAR_TUNE_CACHE_IGNORED, "text %zu", i);
        cr_expect(strstr(why, "corrupt") || strstr(why, "written by"), "text %zu: %s", i, why);
    }
}

/* A table of n sizes: small path us a[i], large b[i]. */
static hiar_tune_table_t table(int n, const double *a, const double *b)
{
    hiar_tune_table_t t = {{"oneshot", "twoshot"}, {{0}}, {0, 0}, n};

    for (int i = 0; i < n; i++) {
        t.us[0][i] = a[i];
        t.us[1][i] = b[i];
    }
    return t;
}

Test(tune, choose_the_crossover)
{
    /* 256 .. 1M: one-shot wins up to 16K, then two-shot. */
    const double a[] = {5, 6, 8, 12, 40, 150, 600}, b[] = {9, 10, 12, 14, 30, 90, 300};
    hiar_tune_table_t t = table(7, a, b);

    cr_expect_eq(hiar_tune_choose(&t, 65536), 16384);
    /* The default wins where it is right. */
    cr_expect_eq(hiar_tune_choose(&t, 16384), 16384);
}

Test(tune, choose_keeps_the_default_within_the_margin)
{
    /* Two-shot 1% faster at 64K only: not worth leaving the default (64K) for 16K. */
    const double a[] = {5, 6, 8, 12, 40.4, 150, 600}, b[] = {9, 10, 12, 14, 40, 90, 300};
    hiar_tune_table_t t = table(7, a, b);

    cr_expect_eq(hiar_tune_choose(&t, 65536), 65536);
    t.us[0][4] = 60; /* 50% slower: worth it */
    cr_expect_eq(hiar_tune_choose(&t, 65536), 16384);
}

Test(tune, choose_never_and_always)
{
    const double a[] = {5, 6, 8, 12, 20, 50, 100}, b[] = {9, 10, 12, 14, 30, 90, 300};
    hiar_tune_table_t t = table(7, a, b);

    cr_expect_eq(hiar_tune_choose(&t, 2048), 1 << 20);
    t = table(7, b, a);
    cr_expect_eq(hiar_tune_choose(&t, 2048), 0, "two-shot everywhere: 0, never one-shot");
}

Test(tune, choose_tie_keeps_the_default)
{
    /* Equal at 4K and 16K: limits 1K, 4K, 16K cost alike; the default 4K stays, then 16K does. */
    const double a[] = {5, 6, 10, 20, 40, 150, 600}, b[] = {9, 10, 10, 20, 30, 90, 300};
    hiar_tune_table_t t = table(7, a, b);

    cr_expect_eq(hiar_tune_choose(&t, 4096), 4096);
    cr_expect_eq(hiar_tune_choose(&t, 16384), 16384);
    /* A default off the ladder and not tied: the smallest of the tied ladder limits. */
    cr_expect_eq(hiar_tune_choose(&t, 1 << 20), 1024);
}

Test(tune, choose_drops_a_candidate)
{
    const double a[] = {5, 6, 8, 12, 40, 150, 600}, b[] = {9, 10, 12, 14, 30, 90, 300};
    hiar_tune_table_t t = table(7, a, b);

    t.dropped[0] = 1; /* one-shot failed its canary: never taken, however fast */
    cr_expect_eq(hiar_tune_choose(&t, 65536), 0);
    t.dropped[0] = 0;
    t.dropped[1] = 1;
    cr_expect_eq(hiar_tune_choose(&t, 2048), 1 << 20);
}

Test(tune, choose_on_a_partial_ladder)
{
    /* The time bound stopped after 3 sizes: the choice is made on those only. */
    const double a[] = {5, 6, 20}, b[] = {9, 10, 12};
    hiar_tune_table_t t = table(3, a, b);

    cr_expect_eq(hiar_tune_choose(&t, 65536), 1024);
    t = table(0, a, b);
    cr_expect_eq(hiar_tune_choose(&t, 65536), 65536, "nothing timed: the default");
}

Test(tune, dev_bucket_is_the_nearest_size)
{
    cr_expect_eq(hiar_tune_dev_size(0), 1024);
    cr_expect_eq(hiar_tune_dev_size(HIAR_TUNE_DEV_NSIZES - 1), (size_t)256 << 20);
    cr_expect_eq(hiar_tune_dev_bucket(1, HIAR_TUNE_DEV_NSIZES), 0);
    cr_expect_eq(hiar_tune_dev_bucket(2048, HIAR_TUNE_DEV_NSIZES), 0);
    cr_expect_eq(hiar_tune_dev_bucket(2049, HIAR_TUNE_DEV_NSIZES), 1);
    /* 512 KB between 256 KB and 1 MB: each serves up to the geometric mean with the next. */
    cr_expect_eq(hiar_tune_dev_size(4), 256 * 1024);
    cr_expect_eq(hiar_tune_dev_size(5), 512 * 1024);
    cr_expect_eq(hiar_tune_dev_size(6), 1024 * 1024);
    cr_expect_eq(hiar_tune_dev_bucket(360 * 1024, HIAR_TUNE_DEV_NSIZES), 4);
    cr_expect_eq(hiar_tune_dev_bucket(400 * 1024, HIAR_TUNE_DEV_NSIZES), 5);
    cr_expect_eq(hiar_tune_dev_bucket(512 * 1024, HIAR_TUNE_DEV_NSIZES), 5);
    cr_expect_eq(hiar_tune_dev_bucket(720 * 1024, HIAR_TUNE_DEV_NSIZES), 5);
    cr_expect_eq(hiar_tune_dev_bucket(730 * 1024, HIAR_TUNE_DEV_NSIZES), 6);
    cr_expect_eq(hiar_tune_dev_bucket(2 * 1024 * 1024, HIAR_TUNE_DEV_NSIZES), 6);
    cr_expect_eq(hiar_tune_dev_bucket(2 * 1024 * 1024 + 1, HIAR_TUNE_DEV_NSIZES), 7);
    cr_expect_eq(hiar_tune_dev_bucket((size_t)512 << 20, HIAR_TUNE_DEV_NSIZES), HIAR_TUNE_DEV_NSIZES - 1);
    cr_expect_eq(hiar_tune_dev_bucket(((size_t)512 << 20) + 1, HIAR_TUNE_DEV_NSIZES), -1, "above the ladder");
    cr_expect_eq(hiar_tune_dev_bucket(64 * 1024, 3), -1, "past the sizes tuned");
    cr_expect_eq(hiar_tune_dev_bucket(64, 0), -1, "nothing tuned");
    cr_expect_str_eq(hiar_tune_dev_name(HIAR_TUNE_DEV_PULL), "ipc-pull");
    cr_expect_null(hiar_tune_dev_name(HIAR_TUNE_DEV_COUNT));
}

/* Path k's time at size i of eager calls, the same on every dtype. */
static void set_both(hiar_tune_dev_table_t *t, int k, int i, double us)
{
    for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++)
        t->us[HIAR_TUNE_DEV_EAGER][d][k][i] = us;
}

/* Sizes 0..4: LL built-in at 5 us; push 4.9 (within the margin), 4.0, 9, and LL not timed at 3. */
Test(tune, dev_choose_per_size)
{
    hiar_tune_dev_table_t t;
    unsigned char c[HIAR_TUNE_DEV_NSIZES];

    memset(&t, 0, sizeof(t));
    for (int k = 0; k < HIAR_TUNE_DEV_COUNT; k++)
        for (int i = 0; i < HIAR_TUNE_DEV_NSIZES; i++)
            set_both(&t, k, i, -1);
    t.nsizes = 6;
    for (int i = 0; i < 6; i++) {
        t.builtin[i] = HIAR_TUNE_DEV_LL;
        set_both(&t, HIAR_TUNE_DEV_LL, i, 5.0);
    }
    set_both(&t, HIAR_TUNE_DEV_PUSH, 0, 4.9);
    set_both(&t, HIAR_TUNE_DEV_PUSH, 1, 4.0);
    set_both(&t, HIAR_TUNE_DEV_PUSH, 2, 9.0);
    set_both(&t, HIAR_TUNE_DEV_TWOSHOT, 2, 4.5);
    set_both(&t, HIAR_TUNE_DEV_LL, 3, -1); /* not a candidate there: the best timed one */
    set_both(&t, HIAR_TUNE_DEV_PUSH, 3, 7.0);
    /* faster on bfloat16 only: not taken */
    t.us[HIAR_TUNE_DEV_EAGER][0][HIAR_TUNE_DEV_PULL][5] = 3.0;
    t.us[HIAR_TUNE_DEV_EAGER][1][HIAR_TUNE_DEV_PULL][5] = 6.0;
    hiar_tune_dev_choose(&t, HIAR_TUNE_DEV_EAGER, c);
    cr_expect_eq(c[0], HIAR_TUNE_DEV_BUILTIN, "within the margin the built-in path stays");
    cr_expect_eq(c[1], HIAR_TUNE_DEV_PUSH);
    cr_expect_eq(c[2], HIAR_TUNE_DEV_TWOSHOT);
    cr_expect_eq(c[3], HIAR_TUNE_DEV_PUSH);
    cr_expect_eq(c[4], HIAR_TUNE_DEV_BUILTIN, "nothing but the built-in path timed");
    cr_expect_eq(c[5], HIAR_TUNE_DEV_BUILTIN, "faster on one dtype, slower on the other");
    cr_expect_eq(c[6], HIAR_TUNE_DEV_BUILTIN, "past the sizes timed");
    t.us[HIAR_TUNE_DEV_EAGER][1][HIAR_TUNE_DEV_PULL][5] = 4.8;
    t.dropped[HIAR_TUNE_DEV_LL] = 1;
    set_both(&t, HIAR_TUNE_DEV_TWOSHOT, 4, 50.0);
    hiar_tune_dev_choose(&t, HIAR_TUNE_DEV_EAGER, c);
    cr_expect_eq(c[0], HIAR_TUNE_DEV_PUSH, "a dropped built-in path gives way to any other");
    cr_expect_eq(c[4], HIAR_TUNE_DEV_TWOSHOT);
    cr_expect_eq(c[5], HIAR_TUNE_DEV_PULL);
}

/* Graph calls are chosen from their own timings: faster in a graph is not faster eagerly, and the reverse. */
Test(tune, dev_choose_per_mode)
{
    hiar_tune_dev_table_t t;
    unsigned char eager[HIAR_TUNE_DEV_NSIZES], graph[HIAR_TUNE_DEV_NSIZES];

    memset(&t, 0, sizeof(t));
    for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
        for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++)
            for (int k = 0; k < HIAR_TUNE_DEV_COUNT; k++)
                for (int i = 0; i < HIAR_TUNE_DEV_NSIZES; i++)
                    t.us[m][d][k][i] = -1;
    t.nsizes = 3;
    for (int i = 0; i < 3; i++) {
        t.builtin[i] = HIAR_TUNE_DEV_PUSH;
        for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
            for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++) {
                t.us[m][d][HIAR_TUNE_DEV_PUSH][i] = 10.0;
                t.us[m][d][HIAR_TUNE_DEV_PULL][i] = 10.0;
            }
    }
    for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++) {
        t.us[HIAR_TUNE_DEV_GRAPH][d][HIAR_TUNE_DEV_PULL][0] = 8.0; /* graphs only */
        t.us[HIAR_TUNE_DEV_EAGER][d][HIAR_TUNE_DEV_PULL][1] = 8.0; /* eager only */
        t.us[HIAR_TUNE_DEV_GRAPH][d][HIAR_TUNE_DEV_PUSH][2] = -1;  /* not timed in a graph */
        t.us[HIAR_TUNE_DEV_GRAPH][d][HIAR_TUNE_DEV_PULL][2] = 12.0;
    }
    hiar_tune_dev_choose(&t, HIAR_TUNE_DEV_EAGER, eager);
    hiar_tune_dev_choose(&t, HIAR_TUNE_DEV_GRAPH, graph);
    cr_expect_eq(eager[0], HIAR_TUNE_DEV_BUILTIN);
    cr_expect_eq(graph[0], HIAR_TUNE_DEV_PULL);
    cr_expect_eq(eager[1], HIAR_TUNE_DEV_PULL);
    cr_expect_eq(graph[1], HIAR_TUNE_DEV_BUILTIN);
    cr_expect_eq(graph[2], HIAR_TUNE_DEV_PULL, "the built-in path not timed in a graph: the best timed one");
    cr_expect_str_eq(hiar_tune_dev_mode_name(HIAR_TUNE_DEV_GRAPH), "graph");
}

Test(tune, cache_device_line_round_trip_and_corrupt)
{
    hiar_tune_limits_t l = {16384, 4096,
                            {{HIAR_TUNE_DEV_BUILTIN, HIAR_TUNE_DEV_PULL, HIAR_TUNE_DEV_FLAT},
                             {HIAR_TUNE_DEV_LL, HIAR_TUNE_DEV_PULL, HIAR_TUNE_DEV_BUILTIN}},
                            3},
                       got;
    static const char *const bad[] = {
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice ipc-ll nosuch\n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice\n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice \n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice a b c d e f g h i j k l\n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice flat flat flat flat flat flat "
        "flat flat flat flat flat flat\n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice flat hier\ndevice-graph flat\n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice-graph flat\n",
        "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice flat\ndevice-graph nosuch\n",
    };
    char dir[256], path[512], why[512], text[512];

    fresh_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/tune.txt", dir);
    cr_assert_eq(hiar_tune_cache_write(path, "s", &l, NULL, NULL, 0.5), HIAR_SUCCESS, "%s", hiar_last_error());
    memset(&got, 0, sizeof(got));
    cr_assert_eq(hiar_tune_cache_read(path, "s", &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_LOADED, "%s", why);
    cr_expect_eq(got.device_n, 3);
    cr_expect(memcmp(got.device[HIAR_TUNE_DEV_EAGER], l.device[HIAR_TUNE_DEV_EAGER], 3) == 0);
    cr_expect(memcmp(got.device[HIAR_TUNE_DEV_GRAPH], l.device[HIAR_TUNE_DEV_GRAPH], 3) == 0);
    /* Every path's name reads back as that path (the block counts' names start as two-shot's and hier's): the
     * eager line names the first paths, the graph line the last ones backwards. */
    cr_assert_leq(HIAR_TUNE_DEV_COUNT, 2 * HIAR_TUNE_DEV_NSIZES);
    for (int i = 0; i < HIAR_TUNE_DEV_NSIZES; i++) {
        l.device[HIAR_TUNE_DEV_EAGER][i] = (unsigned char)(i < HIAR_TUNE_DEV_COUNT ? i : 0);
        l.device[HIAR_TUNE_DEV_GRAPH][i] = (unsigned char)(HIAR_TUNE_DEV_COUNT - 1 - i > 0 ? HIAR_TUNE_DEV_COUNT - 1 - i
                                                                                            : 0);
    }
    l.device_n = HIAR_TUNE_DEV_NSIZES;
    cr_assert_eq(hiar_tune_cache_write(path, "s", &l, NULL, NULL, 0.5), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_assert_eq(hiar_tune_cache_read(path, "s", &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_LOADED, "%s", why);
    cr_expect_eq(got.device_n, HIAR_TUNE_DEV_NSIZES);
    cr_expect(memcmp(got.device, l.device, sizeof(got.device)) == 0);
    /* A cache without graph choices: captured calls take the eager ones. */
    snprintf(text, sizeof(text), "version %s\nsignature s\nshm_oneshot_max 1\nhier_oneshot_max 2\ndevice ipc-ll "
             "ipc-pull\n", hiar_version());
    memset(&got, 0, sizeof(got));
    cr_expect_eq(read_text_limits(text, &got, why, sizeof(why)), HIAR_TUNE_CACHE_LOADED, "%s", why);
    cr_expect_eq(got.device_n, 2);
    cr_expect_eq(got.device[HIAR_TUNE_DEV_GRAPH][0], HIAR_TUNE_DEV_LL);
    cr_expect_eq(got.device[HIAR_TUNE_DEV_GRAPH][1], HIAR_TUNE_DEV_PULL);
    /* Read for any signature (hiar-info): device paths of another ladder (or of none) are not shown as ours. */
    cr_expect_eq(hiar_tune_cache_read(path, NULL, &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_IGNORED);
    cr_expect(strstr(why, "another device ladder"), "%s", why);
    snprintf(text, sizeof(text), "s ladder=%d", HIAR_TUNE_DEV_NSIZES);
    cr_assert_eq(hiar_tune_cache_write(path, text, &l, NULL, NULL, 0.5), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(hiar_tune_cache_read(path, NULL, &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_LOADED, "%s", why);
    /* A cache written before device paths were tuned: loaded, none tuned. */
    l.device_n = 0;
    cr_assert_eq(hiar_tune_cache_write(path, "s", &l, NULL, NULL, 0.5), HIAR_SUCCESS, "%s", hiar_last_error());
    got.device_n = 5;
    cr_expect_eq(hiar_tune_cache_read(path, "s", &got, why, sizeof(why), NULL, 0), HIAR_TUNE_CACHE_LOADED, "%s", why);
    cr_expect_eq(got.device_n, 0);
    remove_dir(dir);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), bad[i], hiar_version());
        cr_expect_eq(read_text(text, why, sizeof(why)), HIAR_TUNE_CACHE_IGNORED, "text %zu", i);
        cr_expect(strstr(why, "corrupt"), "text %zu: %s", i, why);
    }
}
