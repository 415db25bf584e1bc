/*
 * Result codes and the per-thread last error (src/error.c), and the names and
 * sizes of dtypes and ops (src/dtype.c).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "base/error.h"

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
