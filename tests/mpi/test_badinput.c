/*
 * Bad input at the edges, beside tests/mpi/test_errors.c (which covers NULL,
 * misaligned and overlapping buffers, unknown dtype and op, count overflow,
 * destroyed and aborted comms, two threads, and HIAR_CHECK=global catching a
 * count, dtype or op mismatch).  Here: the exact edges of those checks, and
 * HIAR_CHECK=global sharing one rank's local failure.  Each case asserts the
 * documented code and that hiar_last_error() names the problem; invalid
 * calls have no effect, so the comm still reduces correctly afterwards.
 *
 * Not here: a host pointer where the path needs a device pointer and the
 * reverse.  In a build without CUDA every pointer is a host pointer (there
 * is no device memory to pass); the GPU tests (tests/gpu/) cover it.
 *
 * Rank 0 ends with "np=2: 13 passed, 0 failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hiar.h"

/* A correct int8 or float32 sum of rank + 1 over n elements at buf (any alignment the dtype allows). */
static int sum_at(hiar_comm_t *comm, void *send, void *recv, size_t n, hiar_dtype_t dtype)
{
    int want = world_size * (world_size + 1) / 2;

    for (size_t i = 0; i < n; i++) {
        if (dtype == HIAR_INT8)
            ((int8_t *)send)[i] = (int8_t)(world_rank + 1);
        else
            memcpy((char *)send + 4 * i, &(float){(float)(world_rank + 1)}, 4);
    }
    if (!harness_expect("a valid allreduce", hiar_allreduce(send, recv, n, dtype, HIAR_SUM, comm, NULL),
                        HIAR_SUCCESS, NULL))
        return 0;
    for (size_t i = 0; i < n; i++) {
        float f;
        int got = dtype == HIAR_INT8 ? ((int8_t *)recv)[i] : (memcpy(&f, (char *)recv + 4 * i, 4), (int)f);
        if (got != want) {
            printf("[rank %d] element %zu is %d, expected %d\n", world_rank, i, got, want);
            return 0;
        }
    }
    return 1;
}

static void test_overlap_edges(hiar_comm_t *comm)
{
    _Alignas(64) float buf[64] = {0};
    int ok;

    /* 16 elements each: touching ranges are fine, one shared element is not. */
    ok = sum_at(comm, buf, buf + 16, 16, HIAR_FLOAT32);
    ok &= sum_at(comm, buf + 16, buf, 16, HIAR_FLOAT32);
    harness_verdict("adjacent buffers (recvbuf right after sendbuf, and before it) are accepted", ok);
    ok = harness_expect("recvbuf = sendbuf + 15 of 16 elements",
                        hiar_allreduce(buf, buf + 15, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "overlap");
    ok &= harness_expect("sendbuf = recvbuf + 15 of 16 elements",
                         hiar_allreduce(buf + 15, buf, 16, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "overlap");
    ok &= harness_expect("int8: recvbuf's first byte is sendbuf's last",
                         hiar_allreduce(buf, (char *)buf + 15, 16, HIAR_INT8, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "overlap");
    harness_verdict("buffers sharing one element (at either end) are rejected as overlapping", ok);
}

static void test_alignment_edges(hiar_comm_t *comm)
{
    _Alignas(64) unsigned char raw[256] = {0};
    int ok;

    ok = harness_expect("float16 sendbuf at an odd address",
                        hiar_allreduce(raw + 1, raw + 128, 8, HIAR_FLOAT16, HIAR_SUM, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "align");
    ok &= harness_expect("bfloat16 recvbuf at an odd address",
                         hiar_allreduce(raw, raw + 129, 8, HIAR_BFLOAT16, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "recvbuf");
    ok &= harness_expect("float64 in place 4 bytes off",
                         hiar_allreduce(raw + 4, raw + 4, 8, HIAR_FLOAT64, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "align");
    harness_verdict("misaligned 2- and 8-byte elements (also in place) are rejected", ok);
    ok = sum_at(comm, raw + 1, raw + 131, 33, HIAR_INT8);
    ok &= sum_at(comm, raw + 3, raw + 3, 17, HIAR_INT8);
    harness_verdict("int8 at odd addresses is aligned and reduces correctly", ok);
}

static void test_count_edges(hiar_comm_t *comm)
{
    float buf[4] = {0};
    int ok;

    ok = harness_expect(
        "count PTRDIFF_MAX / 4 + 1 of float32",
        hiar_allreduce(buf, buf, (size_t)PTRDIFF_MAX / 4 + 1, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
        HIAR_INVALID_ARGUMENT, "overflow");
    ok &= harness_expect(
        "count PTRDIFF_MAX / 2 + 1 of float16",
        hiar_allreduce(buf, buf, (size_t)PTRDIFF_MAX / 2 + 1, HIAR_FLOAT16, HIAR_SUM, comm, NULL),
        HIAR_INVALID_ARGUMENT, "count");
    harness_verdict("the first count whose bytes overflow the address space is rejected", ok);
    ok = harness_expect("op 99 with count 0",
                        hiar_allreduce(NULL, NULL, 0, HIAR_FLOAT32, (hiar_op_t)99, comm, NULL),
                        HIAR_INVALID_ARGUMENT, "op 99");
    ok &= harness_expect("op -1", hiar_allreduce(buf, buf, 4, HIAR_FLOAT32, (hiar_op_t)-1, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "op");
    ok &= harness_expect("dtype HIAR_DTYPE_COUNT",
                         hiar_allreduce(buf, buf, 4, HIAR_DTYPE_COUNT, HIAR_SUM, comm, NULL),
                         HIAR_INVALID_ARGUMENT, "dtype");
    harness_verdict("unknown op (also with count 0) and the first unknown dtype are rejected", ok);
}

/* Read-only calls on a destroyed comm fail too (test_errors covers allreduce, destroy, abort). */
static void test_destroyed_readers(void)
{
    hiar_comm_t *comm = harness_create(NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rank = -7, size = -7, ok = comm != NULL;

    if (comm) {
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
        ok &= harness_expect("hiar_comm_rank on a destroyed comm", hiar_comm_rank(comm, &rank),
                             HIAR_INVALID_USAGE, "destroyed");
        ok &= harness_expect("hiar_comm_size on a destroyed comm", hiar_comm_size(comm, &size),
                             HIAR_INVALID_USAGE, "destroyed");
        ok &= harness_expect("hiar_comm_describe on a destroyed comm", hiar_comm_describe(comm, f),
                             HIAR_INVALID_USAGE, "destroyed");
        ok &= rank == -7 && size == -7;
    }
    fclose(f);
    free(text);
    harness_verdict("hiar_comm_rank/size/describe on a destroyed comm: HIAR_INVALID_USAGE, outputs untouched",
                    ok);
}

/*
 * HIAR_CHECK=global: a local failure on rank 1 alone (NULL recvbuf, unknown
 * dtype) fails every rank; rank 1 keeps its own message, the others name
 * rank 1.  When all ranks pass the same bad value, each names the problem.
 */
static void test_check_global_local_failure(void)
{
    hiar_comm_t *comm = harness_create("HIAR_CHECK=global;HIAR_TIMEOUT_MS=20000");
    float buf[32] = {0};
    int ok = comm != NULL;

    if (comm) {
        ok &= harness_expect(
            "NULL recvbuf on rank 1 only",
            hiar_allreduce(buf, world_rank == 1 ? NULL : buf, 32, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
            HIAR_INVALID_ARGUMENT, world_rank == 1 ? "recvbuf" : "rank 1");
    }
    harness_verdict("HIAR_CHECK=global: a NULL buffer on one rank fails every rank, naming it", ok);
    if (comm) {
        ok = harness_expect("dtype 99 on rank 1 only",
                            hiar_allreduce(buf, buf, 32, world_rank == 1 ? (hiar_dtype_t)99 : HIAR_FLOAT32,
                                           HIAR_SUM, comm, NULL),
                            HIAR_INVALID_ARGUMENT, world_rank == 1 ? "dtype 99" : "rank 1");
        ok &= harness_expect("op 99 on every rank",
                             hiar_allreduce(buf, buf, 32, HIAR_FLOAT32, (hiar_op_t)99, comm, NULL),
                             HIAR_INVALID_ARGUMENT, "op 99");
    }
    harness_verdict(
        "HIAR_CHECK=global: an unknown dtype on one rank or op on all fails every rank, naming it", ok);
    if (comm) {
        ok = sum_at(comm, buf, buf, 32, HIAR_FLOAT32);
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    }
    harness_verdict("HIAR_CHECK=global: the comm still works after those failures", ok);
}

int main(int argc, char **argv)
{
    hiar_comm_t *comm;

    if (!harness_init(&argc, &argv, "test_badinput", 2))
        return HARNESS_SKIP;
    comm = harness_create(NULL);
    harness_verdict("hiar_comm_create", comm != NULL);
    if (comm) {
        _Alignas(64) float buf[64] = {0};
        test_overlap_edges(comm);
        test_alignment_edges(comm);
        test_count_edges(comm);
        harness_verdict("after the invalid calls the comm still reduces correctly",
                        sum_at(comm, buf, buf, 64, HIAR_FLOAT32));
        harness_verdict("hiar_comm_destroy", hiar_comm_destroy(comm) == HIAR_SUCCESS);
    }
    test_destroyed_readers();
    test_check_global_local_failure();
    MPI_Finalize();
    return harness_summary();
}
