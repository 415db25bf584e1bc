/*
 * Bad input and faults through the public API: each returns its documented
 * code with a hiar_last_error() message that names the problem, and leaves
 * the communicator usable where the header says the call had no effect.
 * Run under mpirun with 2 or more ranks (tests/mpi/np2-errors.test).  Rank 0
 * ends with "np=4: 49 passed, 0 failed"; exit 0 only when all passed.
 * The stalled-peer tests use HIAR_TIMEOUT_MS=300 and allow 1.3 s.
 *
 * A test passes only if it passed on every rank: each one ends with
 * harness_verdict(), which every rank calls in the same order (harness.h).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "hiar.h"

/* The stalled-peer test: a short HIAR_TIMEOUT_MS, and how late the error may come. */
#define TIMEOUT_MS 300
#define TIMEOUT_LATEST_S 1.3

/* A correct sum over all ranks on comm; 1 when every rank got n(n+1)/2. */
static int sum_works(hiar_comm_t *comm)
{
    float buf[33];
    float want = (float)(world_size * (world_size + 1) / 2);
    hiar_result_t rc;

    for (int i = 0; i < 33; i++)
        buf[i] = (float)(world_rank + 1);
    rc = hiar_allreduce(buf, buf, 33, HIAR_FLOAT32, HIAR_SUM, comm, NULL);
    if (rc != HIAR_SUCCESS) {
        printf("[rank %d] a valid allreduce returned %s: %s\n", world_rank, hiar_strerror(rc),
               hiar_last_error());
        return 0;
    }
    for (int i = 0; i < 33; i++)
        if (buf[i] != want) {
            printf("[rank %d] a valid allreduce gave %g at %d, expected %g\n", world_rank, buf[i], i,
                   want);
            return 0;
        }
    return 1;
}

/* Creation fails with `want` on every rank, leaves *out alone, and names `needle` where mine says so. */
static int create_fails(const char *what, const hiar_config_t *cfg, hiar_result_t want,
                        const char *needle)
{
    hiar_comm_t *sentinel = (hiar_comm_t *)&world_rank, *comm = sentinel;
    hiar_result_t rc = hiar_comm_create(MPI_COMM_WORLD, cfg, &comm);
    int ok = harness_expect(what, rc, want, needle);

    if (comm != sentinel) {
        printf("[rank %d] %s: the failed hiar_comm_create wrote *out\n", world_rank, what);
        ok = 0;
        if (rc == HIAR_SUCCESS)
            hiar_comm_abort(comm);
    }
    return ok;
}

static void test_api_basics(void)
{
    int ok = strcmp(hiar_version(), HIAR_VERSION_STRING) == 0;

    for (int rc = 0; rc <= HIAR_RESULT_COUNT; rc++)
        ok = ok && hiar_strerror((hiar_result_t)rc) && hiar_strerror((hiar_result_t)rc)[0];
    ok = ok && hiar_strerror((hiar_result_t)-1) != NULL;
    ok = ok && hiar_dtype_size((hiar_dtype_t)99) == 0 && hiar_dtype_name((hiar_dtype_t)99) == NULL;
    ok = ok && hiar_op_name((hiar_op_t)99) == NULL && hiar_dtype_size(HIAR_BF16) == 2;
    ok = ok && hiar_comm_destroy(NULL) == HIAR_SUCCESS && hiar_comm_abort(NULL) == HIAR_SUCCESS;
    harness_verdict("version, strerror, dtype names; destroy(NULL) and abort(NULL) succeed", ok);
}

static void test_bad_buffers(hiar_comm_t *comm)
{
    _Alignas(64) unsigned char raw[256];
    float *buf = (float *)raw;
    int ok;

    ok = harness_expect("NULL sendbuf", hiar_allreduce(NULL, buf, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "sendbuf");
    harness_verdict("NULL sendbuf with count > 0", ok);
    ok = harness_expect("NULL recvbuf", hiar_allreduce(buf, NULL, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "recvbuf");
    harness_verdict("NULL recvbuf with count > 0", ok);

    ok = harness_expect("float32 sendbuf at an odd address",
                        hiar_allreduce(raw + 1, raw + 128, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "align");
    ok &= harness_expect("int64 recvbuf 4 bytes off",
                         hiar_allreduce(raw, raw + 132, 8, HIAR_INT64, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "recvbuf");
    harness_verdict("misaligned sendbuf / recvbuf", ok);

    ok = harness_expect("recvbuf = sendbuf + 1 element",
                        hiar_allreduce(buf, buf + 1, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "overlap");
    ok &= harness_expect("sendbuf = recvbuf + 8 elements",
                         hiar_allreduce(buf + 8, buf, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "overlap");
    harness_verdict("partially overlapping buffers", ok);
}

static void test_bad_types(hiar_comm_t *comm)
{
    float buf[16] = {0};
    int ok;

    ok = harness_expect("dtype 99", hiar_allreduce(buf, buf, 4, (hiar_dtype_t)99, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "dtype 99");
    ok &= harness_expect("dtype -1", hiar_allreduce(buf, buf, 4, (hiar_dtype_t)-1, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "dtype");
    ok &= harness_expect("dtype 99, count 0",
                         hiar_allreduce(buf, buf, 0, (hiar_dtype_t)99, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "dtype 99");
    harness_verdict("unknown dtype (also with count 0)", ok);
    ok = harness_expect("op 99", hiar_allreduce(buf, buf, 4, HIAR_FLOAT32, (hiar_op_t)99, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "op 99");
    ok &= harness_expect("op HIAR_OP_COUNT",
                         hiar_allreduce(buf, buf, 4, HIAR_FLOAT32, HIAR_OP_COUNT, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "op");
    harness_verdict("unknown op", ok);

    ok = harness_expect("count SIZE_MAX/2 of float32",
                        hiar_allreduce(buf, buf, SIZE_MAX / 2, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "count");
    ok &= harness_expect("count SIZE_MAX/2 of int64",
                         hiar_allreduce(buf, buf, SIZE_MAX / 2, HIAR_INT64, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "overflow");
    ok &= harness_expect("count SIZE_MAX of uint8",
                         hiar_allreduce(buf, buf, SIZE_MAX, HIAR_UINT8, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "overflow");
    harness_verdict("count overflows the address space", ok);
}

static void test_null_comm(void)
{
    float buf[4] = {0};
    int r = -7, s = -7, ok;

    ok = harness_expect("allreduce on a NULL comm",
                        hiar_allreduce(buf, buf, 4, HIAR_FLOAT32, HIAR_SUM, NULL, NULL),
                        HIAR_INVALID_ARGUMENT, "comm");
    ok &= harness_expect("hiar_comm_rank(NULL)", hiar_comm_rank(NULL, &r), HIAR_INVALID_ARGUMENT, "comm");
    ok &= harness_expect("hiar_comm_size(NULL)", hiar_comm_size(NULL, &s), HIAR_INVALID_ARGUMENT, "comm");
    if (r != -7 || s != -7) {
        printf("[rank %d] a failed hiar_comm_rank/size wrote its output\n", world_rank);
        ok = 0;
    }
    ok &= harness_expect("hiar_comm_describe(NULL)", hiar_comm_describe(NULL, stdout), HIAR_INVALID_ARGUMENT,
                         "comm");
    harness_verdict("NULL comm", ok);
}

static void test_async_error(hiar_comm_t *comm)
{
    hiar_result_t async = HIAR_INTERNAL_ERROR;
    int ok;

    ok = harness_expect("hiar_comm_get_async_error", hiar_comm_get_async_error(comm, &async), HIAR_SUCCESS,
                        NULL);
    if (async != HIAR_SUCCESS) {
        printf("[rank %d] hiar_comm_get_async_error gives %s on a healthy comm\n", world_rank,
               hiar_strerror(async));
        ok = 0;
    }
    ok &= harness_expect("hiar_comm_get_async_error(comm, NULL)", hiar_comm_get_async_error(comm, NULL),
                         HIAR_INVALID_ARGUMENT, "error");
    async = HIAR_INTERNAL_ERROR;
    ok &= harness_expect("hiar_comm_get_async_error(NULL, &e)", hiar_comm_get_async_error(NULL, &async),
                         HIAR_INVALID_ARGUMENT, "comm");
    if (async != HIAR_INTERNAL_ERROR) {
        printf("[rank %d] a failed hiar_comm_get_async_error wrote its output\n", world_rank);
        ok = 0;
    }
    harness_verdict("hiar_comm_get_async_error: HIAR_SUCCESS on a healthy comm, NULL arguments rejected", ok);
}

static void test_count_zero(hiar_comm_t *comm)
{
    float buf[4] = {1, 2, 3, 4};
    int ok;

    ok = harness_expect("count 0, NULL buffers",
                        hiar_allreduce(NULL, NULL, 0, HIAR_FLOAT32, HIAR_SUM, comm, NULL), HIAR_SUCCESS, NULL);
    ok &= harness_expect("count 0", hiar_allreduce(buf, buf + 2, 0, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                         HIAR_SUCCESS, NULL);
    ok &= buf[0] == 1 && buf[1] == 2 && buf[2] == 3 && buf[3] == 4;
    harness_verdict("count 0 is a no-op that succeeds", ok);
}

static void test_create_args(void)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm;
    int ok;

    cfg.size = sizeof(cfg) - 1;
    harness_verdict("hiar_comm_create with a wrong cfg->size",
                    create_fails("cfg->size - 1", &cfg, HIAR_INVALID_ARGUMENT, "cfg->size"));
    cfg.size = 0;
    harness_verdict("hiar_comm_create with cfg->size 0",
                    create_fails("cfg->size 0", &cfg, HIAR_INVALID_ARGUMENT, "HIAR_CONFIG_INIT"));
    ok = harness_expect("out NULL", hiar_comm_create(MPI_COMM_WORLD, NULL, NULL), HIAR_INVALID_ARGUMENT,
                        "out");
    comm = (hiar_comm_t *)&world_rank;
    ok &= harness_expect("MPI_COMM_NULL", hiar_comm_create(MPI_COMM_NULL, NULL, &comm), HIAR_INVALID_ARGUMENT,
                         "MPI_COMM_NULL");
    ok &= comm == (hiar_comm_t *)&world_rank;
    harness_verdict("hiar_comm_create with out NULL / MPI_COMM_NULL", ok);
}

static void test_create_settings(void)
{
    static const struct {
        const char *settings, *needle;
    } bad[] = {
        {"HIAR_ALGO=bogus", "HIAR_ALGO"},
        {"NOT_A_PARAM=1", "NOT_A_PARAM"},
        {"HIAR_ALGO", "HIAR_ALGO"},
        {"HIAR_TIMEOUT_MS=-5", "HIAR_TIMEOUT_MS"},
        {"HIAR_BUFFER_SIZE=4X", "HIAR_BUFFER_SIZE"},
        {"HIAR_ALGO=mpi;HIAR_CHECK=sometimes", "HIAR_CHECK"},
    };
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    char name[128];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg.settings = bad[i].settings;
        snprintf(name, sizeof(name), "settings \"%s\" fail with a message naming %s", bad[i].settings,
                 bad[i].needle);
        harness_verdict(name, create_fails(bad[i].settings, &cfg, HIAR_INVALID_ARGUMENT, bad[i].needle));
    }
}

static void test_create_groups(void)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    char settings[64];

    cfg.settings = "HIAR_GROUPS=0,0";
    harness_verdict("HIAR_GROUPS naming rank 0 twice fails on every rank",
                    create_fails(cfg.settings, &cfg, HIAR_INVALID_ARGUMENT, "HIAR_GROUPS"));
    cfg.settings = "HIAR_GROUPS=0";
    harness_verdict("HIAR_GROUPS leaving out ranks fails on every rank",
                    create_fails(cfg.settings, &cfg, HIAR_INVALID_ARGUMENT, "rank 1"));
    snprintf(settings, sizeof(settings), "HIAR_GROUPS=0-%d", world_size);
    cfg.settings = settings;
    snprintf(settings + 32, 32, "rank %d", world_size);
    harness_verdict("HIAR_GROUPS naming a rank past the end fails on every rank",
                    create_fails("HIAR_GROUPS=0-<size>", &cfg, HIAR_INVALID_ARGUMENT, settings + 32));
}

/* A bad setting on one rank only: every rank must fail, not hang in the collective setup. */
static void test_create_one_rank_differs(void)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;

    cfg.settings = world_rank == 1 ? "HIAR_ALGO=bogus" : NULL;
    harness_verdict("an invalid setting on rank 1 only fails on every rank",
                    create_fails("HIAR_ALGO=bogus on rank 1", &cfg, HIAR_INVALID_ARGUMENT,
                                 world_rank == 1 ? "HIAR_ALGO" : NULL));
    cfg.settings = world_rank == 1 ? "HIAR_ALGO=mpi" : NULL;
    harness_verdict("HIAR_ALGO differing across ranks fails on every rank",
                    create_fails("HIAR_ALGO=mpi on rank 1", &cfg, HIAR_INVALID_ARGUMENT, "HIAR_ALGO"));
}

/* The MPI communicator is duplicated: the caller may free its own right away. */
static void test_caller_frees_mpi_comm(void)
{
    hiar_comm_t *comm = NULL;
    MPI_Comm mine;
    int ok;

    MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &mine);
    ok = harness_expect("hiar_comm_create on a split comm", hiar_comm_create(mine, NULL, &comm), HIAR_SUCCESS,
                        NULL);
    MPI_Comm_free(&mine);
    if (comm) {
        int rank = -1;
        ok &= hiar_comm_rank(comm, &rank) == HIAR_SUCCESS && rank == world_size - 1 - world_rank;
        ok &= sum_works(comm);
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    }
    harness_verdict("the caller may free its MPI communicator after hiar_comm_create", ok);
}

static void test_destroyed_comm(void)
{
    hiar_comm_t *comm = harness_create(NULL);
    float buf[4] = {0};
    int ok = comm != NULL;

    if (comm) {
        ok &= harness_expect("destroy", hiar_comm_destroy(comm), HIAR_SUCCESS, NULL);
        ok &= harness_expect("allreduce on a destroyed comm",
                             hiar_allreduce(buf, buf, 4, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                             HIAR_INVALID_USAGE, "destroyed");
        ok &= harness_expect("destroy twice", hiar_comm_destroy(comm), HIAR_INVALID_USAGE, "destroyed");
        ok &= harness_expect("abort after destroy", hiar_comm_abort(comm), HIAR_INVALID_USAGE, "destroyed");
        {
            hiar_result_t async;
            ok &= harness_expect("hiar_comm_get_async_error on a destroyed comm",
                                 hiar_comm_get_async_error(comm, &async), HIAR_INVALID_USAGE, "destroyed");
        }
    }
    harness_verdict("a destroyed comm gives HIAR_INVALID_USAGE", ok);
}

static void test_aborted_comm(void)
{
    hiar_comm_t *comm = harness_create(NULL);
    float buf[4] = {0};
    int ok = comm != NULL;

    if (comm) {
        ok &= harness_expect("abort", hiar_comm_abort(comm), HIAR_SUCCESS, NULL);
        ok &= harness_expect("allreduce on an aborted comm",
                             hiar_allreduce(buf, buf, 4, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                             HIAR_INVALID_USAGE, "aborted");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    harness_verdict("an aborted comm gives HIAR_INVALID_USAGE", ok);
}

/* HIAR_CHECK=global: a rank that disagrees is named on every rank, and the comm stays usable. */
static void test_check_global(void)
{
    hiar_comm_t *comm = harness_create("HIAR_CHECK=global");
    float buf[32] = {0};
    int ok;

    if (!comm) {
        harness_verdict("HIAR_CHECK=global names the rank whose count differs", 0);
        harness_verdict("HIAR_CHECK=global names the rank whose dtype differs", 0);
        harness_verdict("HIAR_CHECK=global names the rank whose op differs", 0);
        harness_verdict("HIAR_CHECK=global: the comm works after a mismatch", 0);
        return;
    }
    ok = harness_expect(
        "count 17 on rank 1, 16 elsewhere",
        hiar_allreduce(buf, buf, world_rank == 1 ? 17 : 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
        HIAR_INVALID_ARGUMENT, "rank 1");
    harness_verdict("HIAR_CHECK=global names the rank whose count differs", ok);
    ok = harness_expect(
        "int32 on rank 1, float32 elsewhere",
        hiar_allreduce(buf, buf, 16, world_rank == 1 ? HIAR_INT32 : HIAR_FLOAT32, HIAR_SUM, comm, NULL),
        HIAR_INVALID_ARGUMENT, "rank 1");
    harness_verdict("HIAR_CHECK=global names the rank whose dtype differs", ok);
    ok = harness_expect("max on the last rank, sum elsewhere",
                        hiar_allreduce(buf, buf, 16, HIAR_FLOAT32,
                                       world_rank == world_size - 1 ? HIAR_MAX : HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, world_size == 2 ? "rank 1" : "rank 3");
    harness_verdict("HIAR_CHECK=global names the rank whose op differs", ok);
    ok = sum_works(comm);
    ok &= harness_expect("destroy", hiar_comm_destroy(comm), HIAR_SUCCESS, NULL);
    harness_verdict("HIAR_CHECK=global: the comm works after a mismatch", ok);
}

/* Invalid arguments have no effect: the comm still reduces correctly. */
static void test_still_usable(hiar_comm_t *comm)
{
    harness_verdict("after the invalid calls the comm still reduces correctly", sum_works(comm));
}

/* Text hiar_comm_describe writes for comm. */
static char *describe(hiar_comm_t *comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    if (hiar_comm_describe(comm, f) != HIAR_SUCCESS)
        fprintf(f, "(hiar_comm_describe failed: %s)", hiar_last_error());
    fclose(f);
    return text;
}

/* Whether describe() of a comm created with `settings` (and HIAR_ALGO=env_algo) names `want`. */
static int algo_described(const char *env_algo, const char *settings, const char *want,
                          const char *unwanted)
{
    hiar_comm_t *comm;
    char *text;
    int ok;

    if (env_algo)
        setenv("HIAR_ALGO", env_algo, 1);
    comm = harness_create(settings);
    unsetenv("HIAR_ALGO");
    if (!comm)
        return 0;
    text = describe(comm);
    ok = text && strstr(text, want) && !(unwanted && strstr(text, unwanted));
    if (!ok)
        printf("[rank %d] HIAR_ALGO env %s, settings \"%s\": describe should say \"%s\"%s%s:\n%s\n",
               world_rank, env_algo ? env_algo : "unset", settings ? settings : "", want,
               unwanted ? " and not " : "", unwanted ? unwanted : "", text ? text : "(none)");
    free(text);
    ok &= sum_works(comm);
    ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    return ok;
}

static void test_config_precedence(void)
{
    harness_verdict("settings HIAR_ALGO=mpi shows in hiar_comm_describe",
                    algo_described(NULL, "HIAR_ALGO=mpi", "HIAR_ALGO=mpi", NULL));
    harness_verdict("environment HIAR_ALGO=twoshot shows in hiar_comm_describe",
                    algo_described("twoshot", NULL, "HIAR_ALGO=twoshot", NULL));
    harness_verdict("settings win over the environment",
                    algo_described("twoshot", "HIAR_ALGO=mpi", "HIAR_ALGO=mpi", "HIAR_ALGO=twoshot"));
    harness_verdict("HIAR_ALGO unset: no forced path in hiar_comm_describe",
                    algo_described(NULL, NULL, "ranks", "HIAR_ALGO="));
}

/*
 * A stalled peer: rank 1 skips a call.  The others must get HIAR_TIMEOUT
 * after about HIAR_TIMEOUT_MS, then HIAR_COMM_FAILED, and abort; rank 1
 * aborts too (not destroy: that would wait for the peers).  A new comm works.
 * `path` adds settings that choose the path the others are waiting in.
 */
static void test_timeout(const char *path, const char *name)
{
    char settings[128], title[160];
    hiar_comm_t *comm;
    float buf[1024];
    hiar_result_t async;
    int ok = 1;

    snprintf(settings, sizeof(settings), "HIAR_TIMEOUT_MS=%d;%s", TIMEOUT_MS, path);
    snprintf(title, sizeof(title), "a stalled rank (%s): the others get HIAR_TIMEOUT in time, then "
             "HIAR_COMM_FAILED", name);
    comm = harness_create(settings);
    if (!comm) {
        harness_verdict(title, 0);
        harness_verdict("a new comm works after the timeout", 0);
        return;
    }
    /* Start together, so the time measured is the wait for rank 1. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank != 1) {
        double t0 = MPI_Wtime(), elapsed;
        hiar_result_t rc;

        for (int i = 0; i < 1024; i++)
            buf[i] = 1;
        rc = hiar_allreduce(buf, buf, 1024, HIAR_FLOAT32, HIAR_SUM, comm, NULL);
        elapsed = MPI_Wtime() - t0;
        ok &= harness_expect("allreduce without rank 1", rc, HIAR_TIMEOUT, "HIAR_TIMEOUT_MS");
        if (elapsed < TIMEOUT_MS / 1000.0 * 0.9 || elapsed > TIMEOUT_LATEST_S) {
            printf("[rank %d] %s: HIAR_TIMEOUT came after %.3f s; expected %.1f to %.1f s\n", world_rank,
                   name, elapsed, TIMEOUT_MS / 1000.0, TIMEOUT_LATEST_S);
            ok = 0;
        }
        t0 = MPI_Wtime();
        ok &= harness_expect("the call after a timeout",
                             hiar_allreduce(buf, buf, 1024, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                             HIAR_COMM_FAILED, NULL);
        if (MPI_Wtime() - t0 > 0.1) {
            printf("[rank %d] HIAR_COMM_FAILED took %.3f s; it should fail fast\n", world_rank,
                   MPI_Wtime() - t0);
            ok = 0;
        }
        async = HIAR_SUCCESS;
        ok &= harness_expect("hiar_comm_get_async_error after the timeout",
                             hiar_comm_get_async_error(comm, &async), HIAR_SUCCESS, NULL);
        if (async != HIAR_COMM_FAILED) {
            printf("[rank %d] hiar_comm_get_async_error gives %s after a timeout, expected "
                   "HIAR_COMM_FAILED\n",
                   world_rank, hiar_strerror(async));
            ok = 0;
        }
    }
    ok &= harness_expect("abort", hiar_comm_abort(comm), HIAR_SUCCESS, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    harness_verdict(title, ok);

    comm = harness_create(NULL);
    ok = comm && sum_works(comm);
    if (comm)
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    snprintf(title, sizeof(title), "a new comm works after the timeout (%s)", name);
    harness_verdict(title, ok);
}

/* ---- two threads on one comm ---- */

typedef struct {
    hiar_comm_t *comm;
    float buf[1024];
    volatile int started;
    hiar_result_t rc;
} call_t;

static void *call_in_thread(void *p)
{
    call_t *call = p;
    call->started = 1;
    call->rc = hiar_allreduce(call->buf, call->buf, 1024, HIAR_FLOAT32, HIAR_SUM, call->comm, NULL);
    return NULL;
}

/*
 * While a call runs in one thread (held up: rank 1 comes 1 s late), a second
 * thread's call on the same comm fails at once with HIAR_INVALID_USAGE, and
 * the first call still completes correctly.
 */
static void test_two_threads(void)
{
    hiar_comm_t *comm = harness_create("HIAR_TIMEOUT_MS=20000");
    static call_t call;
    float other[4] = {0};
    int ok = comm != NULL;

    MPI_Barrier(MPI_COMM_WORLD);
    if (comm && world_rank != 1) {
        pthread_t thread;
        struct timespec tick = {0, 1000 * 1000}, pause = {0, 100 * 1000 * 1000};
        call.comm = comm;
        call.started = 0;
        for (int i = 0; i < 1024; i++)
            call.buf[i] = (float)(world_rank + 1);
        ok = pthread_create(&thread, NULL, call_in_thread, &call) == 0;
        while (ok && !call.started)
            nanosleep(&tick, NULL);
        nanosleep(&pause, NULL); /* now inside hiar_allreduce, waiting for rank 1 */
        ok &= harness_expect("a second thread's call while the first one runs",
                             hiar_allreduce(other, other, 4, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                             HIAR_INVALID_USAGE, "thread");
        if (ok)
            pthread_join(thread, NULL);
        ok &= harness_expect("the first thread's call", call.rc, HIAR_SUCCESS, NULL);
        for (int i = 0; ok && i < 1024; i++)
            if (call.buf[i] != (float)(world_size * (world_size + 1) / 2)) {
                printf("[rank %d] the first thread's call gave %g at %d\n", world_rank, call.buf[i], i);
                ok = 0;
            }
    } else if (comm) {
        struct timespec late = {1, 0};
        nanosleep(&late, NULL);
        for (int i = 0; i < 1024; i++)
            call.buf[i] = (float)(world_rank + 1);
        ok &= harness_expect("rank 1's late call",
                             hiar_allreduce(call.buf, call.buf, 1024, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                             HIAR_SUCCESS, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (comm)
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    harness_verdict("a second thread on a busy comm gets HIAR_INVALID_USAGE; the first call completes", ok);
}

/* ---- a stalled peer under HIAR_CHECK=global ---- */

static volatile int watchdog_done;

/* If the call under test is still blocked after `arg` seconds: report, and end the job. */
static void *watchdog(void *arg)
{
    double limit = *(const double *)arg, t0 = MPI_Wtime();
    struct timespec tick = {0, 10 * 1000 * 1000};

    while (!watchdog_done && MPI_Wtime() - t0 < limit)
        nanosleep(&tick, NULL);
    if (watchdog_done)
        return NULL;
    printf("[rank %d] hiar_allreduce with HIAR_CHECK=global is still blocked %.1f s after a peer "
           "stalled, HIAR_TIMEOUT_MS=%d\n",
           world_rank, limit, TIMEOUT_MS);
    if (world_rank == 0) {
        printf("FAIL a stalled rank under HIAR_CHECK=global: the others get HIAR_TIMEOUT in time\n");
        harness_failed++;
        harness_summary();
    }
    fflush(stdout);
    _exit(1); /* mpirun ends the other ranks */
    return NULL;
}

/*
 * The stalled-peer test again, with HIAR_CHECK=global: its argument check
 * waits for the peers too, and must give up after HIAR_TIMEOUT_MS like every
 * other wait.  Run last: if the call blocks, the watchdog ends the job.
 */
static void test_timeout_check_global(void)
{
    char settings[64];
    hiar_comm_t *comm;
    float buf[64];
    int ok = 1;

    snprintf(settings, sizeof(settings), "HIAR_CHECK=global;HIAR_TIMEOUT_MS=%d", TIMEOUT_MS);
    comm = harness_create(settings);
    if (!comm) {
        harness_verdict("a stalled rank under HIAR_CHECK=global: the others get HIAR_TIMEOUT in time", 0);
        return;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank != 1) {
        /* Rank 0 reports first: when it exits, mpirun ends the others. */
        static double limit;
        limit = world_rank == 0 ? 5.0 : 7.0;
        pthread_t dog;
        double t0 = MPI_Wtime(), elapsed;
        hiar_result_t rc;

        for (int i = 0; i < 64; i++)
            buf[i] = 1;
        watchdog_done = 0;
        pthread_create(&dog, NULL, watchdog, &limit);
        rc = hiar_allreduce(buf, buf, 64, HIAR_FLOAT32, HIAR_SUM, comm, NULL);
        elapsed = MPI_Wtime() - t0;
        watchdog_done = 1;
        pthread_join(dog, NULL);
        ok &= harness_expect("allreduce without rank 1 (HIAR_CHECK=global)", rc, HIAR_TIMEOUT,
                             "HIAR_TIMEOUT_MS");
        if (elapsed > TIMEOUT_LATEST_S) {
            printf("[rank %d] HIAR_TIMEOUT came after %.3f s; expected at most %.1f s\n", world_rank,
                   elapsed, TIMEOUT_LATEST_S);
            ok = 0;
        }
    }
    ok &= harness_expect("abort", hiar_comm_abort(comm), HIAR_SUCCESS, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    harness_verdict("a stalled rank under HIAR_CHECK=global: the others get HIAR_TIMEOUT in time", ok);
}

/* Shared segments are unlinked once mapped: none of ours is left in /dev/shm. */
static void test_nothing_left(void)
{
    char prefix[64];
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    int ok = 1;

    snprintf(prefix, sizeof(prefix), "hiar-%u-%ld-", (unsigned)getuid(), (long)getpid());
    while (dir && (e = readdir(dir)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            printf("[rank %d] /dev/shm/%s was left behind\n", world_rank, e->d_name);
            ok = 0;
        }
    if (dir)
        closedir(dir);
    harness_verdict("nothing of this job is left in /dev/shm", ok);
}

int main(int argc, char **argv)
{
    hiar_comm_t *comm;

    if (!harness_init(&argc, &argv, "test_errors", 2))
        return HARNESS_SKIP;

    test_api_basics();
    comm = harness_create(NULL);
    harness_verdict("hiar_comm_create(MPI_COMM_WORLD, NULL)", comm != NULL);
    if (comm) {
        test_bad_buffers(comm);
        test_bad_types(comm);
        test_count_zero(comm);
        test_async_error(comm);
        test_still_usable(comm);
        harness_verdict("hiar_comm_destroy", hiar_comm_destroy(comm) == HIAR_SUCCESS);
    }
    test_null_comm();
    test_create_args();
    test_create_settings();
    test_create_groups();
    test_create_one_rank_differs();
    test_caller_frees_mpi_comm();
    test_destroyed_comm();
    test_aborted_comm();
    test_check_global();
    test_config_precedence();
    {
        char halves[96];
        /* Two groups: rank 1's group waits in shared memory, the other in MPI between groups. */
        snprintf(halves, sizeof(halves), "HIAR_GROUPS=0-%d|%d-%d", world_size / 2 - 1, world_size / 2,
                 world_size - 1);
        test_timeout("", "one group, shared memory");
        test_timeout("HIAR_ALGO=mpi", "HIAR_ALGO=mpi");
        test_timeout(halves, "two groups, hierarchical");
    }
    test_two_threads();
    test_nothing_left();
    test_timeout_check_global(); /* last: a hang here ends the job */

    MPI_Finalize();

    /* After MPI_Finalize, on each rank alone. */
    {
        hiar_comm_t *comm = (hiar_comm_t *)&world_rank;
        int ok = harness_expect("hiar_comm_create after MPI_Finalize",
                                hiar_comm_create(MPI_COMM_WORLD, NULL, &comm), HIAR_INVALID_USAGE, "MPI") &&
                 comm == (hiar_comm_t *)&world_rank;
        ok ? harness_passed++ : harness_failed++;
        if (!ok)
            printf("FAIL [rank %d] hiar_comm_create after MPI_Finalize\n", world_rank);
    }
    return harness_summary();
}
