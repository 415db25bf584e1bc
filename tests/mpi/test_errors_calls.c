/*
 * test_errors, part 1: invalid arguments to calls on a valid comm
 * (hiar_allreduce, the comm queries, hiar_comm_get_async_error), and
 * HIAR_CHECK=global naming the rank whose arguments differ.  Each returns
 * its documented code with a message naming the problem, and has no effect:
 * the comm still reduces correctly afterwards.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "hiar.h"
#include "test_errors.h"

void test_api_basics(void)
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

void test_bad_buffers(hiar_comm_t *comm)
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

void test_bad_types(hiar_comm_t *comm)
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

void test_null_comm(void)
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

void test_async_error(hiar_comm_t *comm)
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

void test_count_zero(hiar_comm_t *comm)
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

/*
 * hiar_mem_* where no rank has a GPU (this is the CPU test suite): every
 * rank gets HIAR_UNSUPPORTED, or HIAR_INVALID_ARGUMENT for bad arguments,
 * together, and nothing hangs; the GPU tests cover the rest.
 */
void test_mem_without_gpu(hiar_comm_t *comm)
{
    float buf[4];
    void *p = buf;
    int ok;

    ok = harness_expect("hiar_mem_alloc", hiar_mem_alloc(comm, 1024, &p), HIAR_UNSUPPORTED, "GPU") && !p;
    ok &= harness_expect("hiar_mem_alloc(comm, 1024, NULL)", hiar_mem_alloc(comm, 1024, NULL),
                         HIAR_INVALID_ARGUMENT, "ptr");
    ok &= harness_expect("hiar_mem_register of host memory", hiar_mem_register(comm, buf, sizeof(buf)),
                         HIAR_UNSUPPORTED, "GPU");
    /* Rank 0's bad pointer and the others' missing GPU: each rank says its own reason, all fail. */
    ok &= harness_expect("hiar_mem_register(NULL) on rank 0 only",
                         hiar_mem_register(comm, world_rank ? (void *)buf : NULL, sizeof(buf)),
                         world_rank ? HIAR_UNSUPPORTED : HIAR_INVALID_ARGUMENT, world_rank ? "GPU" : "ptr");
    ok &= harness_expect("hiar_mem_free of memory hiar did not give", hiar_mem_free(comm, buf),
                         HIAR_INVALID_ARGUMENT, "hiar_mem_alloc");
    ok &= harness_expect("hiar_mem_deregister of memory not registered", hiar_mem_deregister(comm, buf),
                         HIAR_INVALID_ARGUMENT, "registered");
    ok &= harness_expect("hiar_mem_alloc(NULL comm)", hiar_mem_alloc(NULL, 1024, &p), HIAR_INVALID_ARGUMENT, "comm");
    harness_verdict("hiar_mem_* without a GPU: clear errors, agreed on every rank", ok);
}

/* HIAR_CHECK=global: a rank that disagrees is named on every rank, and the comm stays usable. */
void test_check_global(void)
{
    hiar_comm_t *comm = harness_create("HIAR_CHECK=global");
    float buf[32] = {0};
    char last[32];
    int ok;

    snprintf(last, sizeof(last), "rank %d", world_size - 1);
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
                        HIAR_INVALID_ARGUMENT, last);
    harness_verdict("HIAR_CHECK=global names the rank whose op differs", ok);
    ok = sum_works(comm);
    ok &= harness_expect("destroy", hiar_comm_destroy(comm), HIAR_SUCCESS, NULL);
    harness_verdict("HIAR_CHECK=global: the comm works after a mismatch", ok);
}

/* Invalid arguments have no effect: the comm still reduces correctly. */
void test_still_usable(hiar_comm_t *comm)
{
    harness_verdict("after the invalid calls the comm still reduces correctly", sum_works(comm));
}
