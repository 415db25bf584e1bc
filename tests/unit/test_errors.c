/*
 * Result codes and the per-thread last error (src/base/error.c), the names and
 * sizes of dtypes and ops (src/base/dtype.c), and the log (src/base/log.c):
 * the location on WARN lines, hiar_log_set_handler, HIAR_ASSERT.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/wait.h"

/* The result names, written out here rather than taken from HIAR_RESULT_MAP. */
static const struct {
    hiar_result_t rc;
    const char *name;
} results[] = {
    {HIAR_SUCCESS, "HIAR_SUCCESS"},         {HIAR_INVALID_ARGUMENT, "HIAR_INVALID_ARGUMENT"},
    {HIAR_UNSUPPORTED, "HIAR_UNSUPPORTED"}, {HIAR_NO_MEMORY, "HIAR_NO_MEMORY"},
    {HIAR_CUDA_ERROR, "HIAR_CUDA_ERROR"},   {HIAR_MPI_ERROR, "HIAR_MPI_ERROR"},
    {HIAR_SYSTEM_ERROR, "HIAR_SYSTEM_ERROR"}, {HIAR_TIMEOUT, "HIAR_TIMEOUT"},
    {HIAR_COMM_FAILED, "HIAR_COMM_FAILED"}, {HIAR_INVALID_USAGE, "HIAR_INVALID_USAGE"},
    {HIAR_INTERNAL_ERROR, "HIAR_INTERNAL_ERROR"},
};
enum { NRESULTS = sizeof(results) / sizeof(results[0]) };

Test(errors, strerror_names_every_code)
{
    cr_expect_eq(NRESULTS, HIAR_RESULT_COUNT, "a result code was added: list it in this test");
    for (int i = 0; i < NRESULTS; i++) {
        const char *text = hiar_strerror(results[i].rc);
        size_t n = strlen(results[i].name);
        cr_assert(text, "hiar_strerror(%d) is NULL", (int)results[i].rc);
        /* The name, then a description: "HIAR_TIMEOUT: a peer did not arrive ..." */
        cr_expect(strncmp(text, results[i].name, n) == 0 && !(text[n] == '_' || (text[n] >= 'A' && text[n] <= 'Z')),
                  "hiar_strerror(%s) is \"%s\"", results[i].name, text);
        cr_expect(strlen(text) > n + 2, "hiar_strerror(%s) has no description: \"%s\"", results[i].name, text);
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(text, hiar_strerror(results[j].rc));
    }
}

Test(errors, strerror_out_of_range)
{
    const hiar_result_t bad[] = {HIAR_RESULT_COUNT, (hiar_result_t)-1, (hiar_result_t)1000};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *text = hiar_strerror(bad[i]);
        cr_assert(text, "hiar_strerror(%d) is NULL", (int)bad[i]);
        cr_expect(strstr(text, "unknown"), "hiar_strerror(%d) is \"%s\"", (int)bad[i], text);
    }
}

Test(errors, last_error)
{
    cr_expect_str_eq(hiar_last_error(), "", "a fresh thread has no error");
    cr_expect_eq(hiar_error_set(HIAR_TIMEOUT, "waited %d ms for rank %d", 300, 2), HIAR_TIMEOUT);
    cr_expect_str_eq(hiar_last_error(), "waited 300 ms for rank 2");
    for (int rc = 0; rc < HIAR_RESULT_COUNT; rc++)
        cr_expect_eq(hiar_error_set((hiar_result_t)rc, "x"), rc, "hiar_error_set returns its code");
    hiar_error_clear();
    cr_expect_str_eq(hiar_last_error(), "");
}

Test(errors, long_message_is_truncated)
{
    char arg[4000];

    memset(arg, 'x', sizeof(arg) - 1);
    arg[sizeof(arg) - 1] = '\0';
    hiar_error_set(HIAR_INVALID_ARGUMENT, "value %s end", arg);
    cr_expect(strlen(hiar_last_error()) > 100, "the start of the message is kept");
    cr_expect(strlen(hiar_last_error()) < sizeof(arg), "the message is bounded");
    cr_expect(strncmp(hiar_last_error(), "value xxx", 9) == 0, "%.20s", hiar_last_error());
}

typedef struct {
    const char *text;
    int rounds;
    int fresh_was_empty;
    int mismatches;
} thread_arg_t;

static void *set_and_check(void *p)
{
    thread_arg_t *arg = p;

    arg->fresh_was_empty = hiar_last_error()[0] == '\0';
    for (int i = 0; i < arg->rounds; i++) {
        hiar_error_set(HIAR_INTERNAL_ERROR, "%s %d", arg->text, i);
        for (volatile int spin = 0; spin < 100; spin++)
            ;
        char want[64];
        snprintf(want, sizeof(want), "%s %d", arg->text, i);
        arg->mismatches += strcmp(hiar_last_error(), want) != 0;
    }
    return NULL;
}

Test(errors, last_error_is_per_thread)
{
    thread_arg_t a = {"thread a", 20000, 0, 0}, b = {"thread b", 20000, 0, 0};
    pthread_t ta, tb;

    hiar_error_set(HIAR_TIMEOUT, "main thread");
    cr_assert_eq(pthread_create(&ta, NULL, set_and_check, &a), 0);
    cr_assert_eq(pthread_create(&tb, NULL, set_and_check, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_expect(a.fresh_was_empty && b.fresh_was_empty, "a new thread must start without an error");
    cr_expect_eq(a.mismatches + b.mismatches, 0, "one thread's error leaked into another's");
    cr_expect_str_eq(hiar_last_error(), "main thread");
}

Test(errors, dtype_and_op_names)
{
    static const struct {
        hiar_dtype_t dtype;
        const char *name;
        size_t size;
    } dtypes[] = {
        {HIAR_INT32, "int32", 4},     {HIAR_INT64, "int64", 8},   {HIAR_FLOAT16, "float16", 2},
        {HIAR_BFLOAT16, "bfloat16", 2}, {HIAR_FLOAT32, "float32", 4}, {HIAR_FLOAT64, "float64", 8},
        {HIAR_UINT8, "uint8", 1},     {HIAR_INT8, "int8", 1},
    };
    static const char *const ops[] = {"sum", "prod", "min", "max", "avg"};

    cr_expect_eq(sizeof(dtypes) / sizeof(dtypes[0]), HIAR_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
        cr_expect_eq(hiar_dtype_size(dtypes[i].dtype), dtypes[i].size, "%s", dtypes[i].name);
        cr_expect_str_eq(hiar_dtype_name(dtypes[i].dtype), dtypes[i].name);
    }
    for (int op = 0; op < HIAR_OP_COUNT; op++)
        cr_expect_str_eq(hiar_op_name((hiar_op_t)op), ops[op]);
    cr_expect_eq(hiar_dtype_size(HIAR_DTYPE_COUNT), 0);
    cr_expect_eq(hiar_dtype_size((hiar_dtype_t)-1), 0);
    cr_expect_null(hiar_dtype_name(HIAR_DTYPE_COUNT));
    cr_expect_null(hiar_dtype_name((hiar_dtype_t)-1));
    cr_expect_null(hiar_op_name(HIAR_OP_COUNT));
    cr_expect_null(hiar_op_name((hiar_op_t)-1));
    cr_expect_eq(hiar_dtype_size(HIAR_BF16), 2);
    cr_expect_eq(hiar_dtype_size(HIAR_FP64), 8);
    cr_expect_str_eq(hiar_version(), HIAR_VERSION_STRING);
}

/* ---- the log.  Criterion runs every test in a fresh process: the log reads
 * HIAR_DEBUG* at its first line, so each test sets them first. ---- */

/* Lines a handler received. */
typedef struct {
    int n, level[8];
    char subsys[8][8], line[8][1024];
} captured_t;

static void capture(void *arg, int level, const char *subsys, const char *line)
{
    captured_t *c = arg;

    if (c->n < 8) {
        c->level[c->n] = level;
        snprintf(c->subsys[c->n], sizeof(c->subsys[0]), "%s", subsys);
        snprintf(c->line[c->n], sizeof(c->line[0]), "%s", line);
    }
    c->n++;
}

/* The log at level debug ("WARN", ...), to path when not NULL, all subsystems. */
static void log_setup(const char *debug, const char *path)
{
    setenv("HIAR_DEBUG", debug, 1);
    unsetenv("HIAR_DEBUG_SUBSYS");
    if (path) {
        unlink(path);
        setenv("HIAR_DEBUG_FILE", path, 1);
    } else {
        unsetenv("HIAR_DEBUG_FILE");
    }
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

Test(log, warn_ends_with_location)
{
    captured_t c = {0};
    char where[128];

    log_setup("WARN", NULL);
    cr_assert_eq(hiar_log_set_handler(capture, &c), HIAR_SUCCESS);
    const int line = __LINE__ + 1;
    HIAR_WARN(SHM, "cannot reserve %d bytes in /dev/shm", 4096);
    hiar_log_set_handler(NULL, NULL);
    cr_assert_eq(c.n, 1);
    snprintf(where, sizeof(where), " hiar WARN SHM cannot reserve 4096 bytes in /dev/shm (test_errors.c:%d)",
             line);
    cr_expect(ends_with(c.line[0], where), "\"%s\" should end with \"%s\"", c.line[0], where);
    cr_expect_eq(c.level[0], HIAR_LOG_LEVEL_WARN);
    cr_expect_str_eq(c.subsys[0], "SHM");
    cr_expect(!strchr(c.line[0], '\n'), "the handler gets the line without its newline");
}

Test(log, info_and_trace_lines_are_unchanged)
{
    captured_t c = {0};

    log_setup("TRACE", NULL);
    hiar_log_set_handler(capture, &c);
    HIAR_INFO(TOPO, "%d groups of %d ranks (HIAR_GROUPS)", 2, 2);
    HIAR_TRACE(CALL, "allreduce");
    hiar_log_set_handler(NULL, NULL);
    cr_assert_eq(c.n, 2);
    cr_expect(ends_with(c.line[0], " hiar INFO TOPO 2 groups of 2 ranks (HIAR_GROUPS)"), "%s", c.line[0]);
    cr_expect(ends_with(c.line[1], " hiar TRACE CALL allreduce"), "%s", c.line[1]);
    cr_expect_eq(c.level[0], HIAR_LOG_LEVEL_INFO);
    cr_expect_eq(c.level[1], HIAR_LOG_LEVEL_TRACE);
}

Test(log, long_message_keeps_location)
{
    captured_t c = {0};
    char text[3000];

    memset(text, 'x', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    log_setup("WARN", NULL);
    hiar_log_set_handler(capture, &c);
    HIAR_WARN(INIT, "%s", text);
    cr_assert_eq(c.n, 1);
    cr_expect(strlen(c.line[0]) < 1023, "the line is bounded: %zu", strlen(c.line[0]));
    cr_expect(strstr(c.line[0], "xxx (test_errors.c:"), "the location survives the cut: %s", c.line[0] + 900);
}

Test(log, handler_sees_only_what_the_filter_lets_through)
{
    captured_t c = {0};

    log_setup("WARN", NULL);
    setenv("HIAR_DEBUG_SUBSYS", "^SHM", 1);
    hiar_log_set_handler(capture, &c);
    HIAR_INFO(INIT, "below HIAR_DEBUG");
    HIAR_WARN(SHM, "an excluded subsystem");
    HIAR_WARN(IPC, "let through");
    cr_assert_eq(c.n, 1);
    cr_expect(strstr(c.line[0], "WARN IPC let through"), "%s", c.line[0]);
}

Test(log, null_handler_restores_the_file)
{
    captured_t c = {0};
    char path[128], text[4096] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/hiar-test-log-%ld.log", (long)getpid());
    log_setup("WARN", path);
    hiar_log_set_handler(capture, &c);
    HIAR_WARN(INIT, "to the handler");
    cr_assert_eq(hiar_log_set_handler(NULL, NULL), HIAR_SUCCESS);
    HIAR_WARN(INIT, "to the file");
    f = fopen(path, "r");
    cr_assert(f, "no %s", path);
    text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    cr_expect_eq(c.n, 1);
    cr_expect(!strstr(text, "to the handler"), "a line went to the file and the handler:\n%s", text);
    cr_expect(strstr(text, "hiar WARN INIT to the file (test_errors.c:") && ends_with(text, ")\n"), "%s",
              text);
}

static hiar_result_t reentry_rc;

/* Calls into hiar from the handler: must neither deadlock nor recurse. */
static void reentrant(void *arg, int level, const char *subsys, const char *line)
{
    (void)level, (void)subsys, (void)line;
    ++*(int *)arg;
    reentry_rc = hiar_log_set_handler(NULL, NULL);
    HIAR_WARN(INIT, "logged from the handler");
}

Test(log, handler_calling_hiar, .timeout = 20)
{
    int calls = 0;

    log_setup("WARN", "/dev/null");
    hiar_log_set_handler(reentrant, &calls);
    HIAR_WARN(INIT, "first");
    cr_expect_eq(calls, 1, "the handler's own line goes to the file, not to the handler");
    cr_expect_eq(reentry_rc, HIAR_INVALID_USAGE);
    HIAR_WARN(INIT, "second");
    cr_expect_eq(calls, 2, "the handler stays set");
    hiar_log_set_handler(NULL, NULL);
}

enum { LOG_THREADS = 4, LOG_LINES = 2000 };

/* Counts without atomics: hiar calls the handler one line at a time. */
static void count_line(void *arg, int level, const char *subsys, const char *line)
{
    int *count = arg, n = *count;

    (void)level, (void)subsys;
    if (strstr(line, " hiar WARN MPI line from a thread (test_errors.c:"))
        *count = n + 1;
}

static void *log_lines(void *arg)
{
    (void)arg;
    for (int i = 0; i < LOG_LINES; i++)
        HIAR_WARN(MPI, "line from a thread");
    return NULL;
}

Test(log, handler_calls_are_serialised)
{
    pthread_t t[LOG_THREADS];
    int count = 0;

    log_setup("WARN", NULL);
    hiar_log_set_handler(count_line, &count);
    for (int i = 0; i < LOG_THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, log_lines, NULL), 0);
    for (int i = 0; i < LOG_THREADS; i++)
        pthread_join(t[i], NULL);
    hiar_log_set_handler(NULL, NULL);
    cr_expect_eq(count, LOG_THREADS * LOG_LINES);
}

Test(log, assert_true_is_a_no_op)
{
    captured_t c = {0};
    int n = 0;

    log_setup("TRACE", NULL);
    hiar_log_set_handler(capture, &c);
    HIAR_ASSERT(++n == 1);
    HIAR_ASSERT(n % 2 == 1);
    hiar_log_set_handler(NULL, NULL);
    cr_expect_eq(n, 1, "the condition is evaluated once");
    cr_expect_eq(c.n, 0, "a true assertion logs nothing");
}

static const char *assert_func;

/* Exits 42 when the failed assertion's line is the expected one: abort() would follow. */
static void check_assert_line(void *arg, int level, const char *subsys, const char *line)
{
    char want[256];

    snprintf(want, sizeof(want), " hiar WARN INIT assertion failed: n %% 2 == 0 in %s (test_errors.c:%d)",
             assert_func, *(int *)arg);
    _exit(level == HIAR_LOG_LEVEL_WARN && strcmp(subsys, "INIT") == 0 && ends_with(line, want) ? 42 : 1);
}

/* Written whatever HIAR_DEBUG and HIAR_DEBUG_SUBSYS say. */
Test(log, assert_false_logs_the_condition, .exit_code = 42)
{
    int n = 1, line;

    log_setup("NONE", NULL);
    setenv("HIAR_DEBUG_SUBSYS", "^INIT", 1);
    assert_func = __func__;
    hiar_log_set_handler(check_assert_line, &line);
    line = __LINE__ + 1;
    HIAR_ASSERT(n % 2 == 0);
}

Test(log, assert_false_aborts, .signal = SIGABRT)
{
    int n = 1;

    log_setup("WARN", "/dev/null");
    HIAR_ASSERT(n == 0);
}

/* Polls w until it says stop or `seconds` pass; the result (HIAR_SUCCESS: still waiting then). */
static hiar_result_t poll_for(hiar_wait_t *w, double seconds)
{
    uint64_t end = hiar_now_ns() + (uint64_t)(seconds * 1e9);
    hiar_result_t rc = HIAR_SUCCESS;

    while (rc == HIAR_SUCCESS && hiar_now_ns() < end)
        rc = hiar_wait_poll(w);
    return rc;
}

/* A wait gives up with HIAR_TIMEOUT once HIAR_TIMEOUT_MS has passed since its first clock read, not before. */
Test(wait, times_out_after_its_deadline)
{
    atomic_int abort = 0;
    hiar_wait_t w = hiar_wait_begin(50, &abort, "test wait");

    cr_expect_eq(poll_for(&w, 0.02), HIAR_SUCCESS);
    cr_expect_eq(poll_for(&w, 0.5), HIAR_TIMEOUT);
    cr_expect(strstr(hiar_last_error(), "test wait") && strstr(hiar_last_error(), "HIAR_TIMEOUT_MS=50"), "%s",
              hiar_last_error());
}

Test(wait, stops_when_aborted)
{
    atomic_int abort = 0;
    hiar_wait_t w = hiar_wait_begin(60000, &abort, "test wait");

    cr_expect_eq(poll_for(&w, 0.01), HIAR_SUCCESS);
    atomic_store(&abort, 1);
    cr_expect_eq(poll_for(&w, 1), HIAR_COMM_FAILED);
}

/*
 * HIAR_YIELD: with a spin time the wait starts yielding only once that time
 * has passed since its first clock read; without one it never needs the
 * clock to yield (every poll past HIAR_WAIT_SPINS does).
 */
Test(wait, spins_for_its_spin_time_then_yields)
{
    atomic_int abort = 0;
    hiar_wait_t w = hiar_wait_begin(60000, &abort, "test wait");

    w.spin_ns = 200000000u; /* 0.2 s */
    cr_expect_eq(poll_for(&w, 0.05), HIAR_SUCCESS);
    cr_expect_not(w.yielding, "yielding 0.05 s into a 0.2 s spin");
    cr_expect_eq(poll_for(&w, 0.3), HIAR_SUCCESS);
    cr_expect(w.yielding, "not yielding 0.35 s into a 0.2 s spin");
    w = hiar_wait_begin(60000, &abort, "test wait");
    cr_expect_eq(poll_for(&w, 0.05), HIAR_SUCCESS);
    cr_expect_not(w.yielding);
    cr_expect_gt(w.polls, HIAR_WAIT_SPINS);
}
