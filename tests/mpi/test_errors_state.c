/*
 * test_errors, part 3: a comm in the wrong state for the call.  A destroyed
 * or aborted comm gives HIAR_INVALID_USAGE, and so does a second thread's
 * call on a comm that is busy in another thread.
 */
#include <pthread.h>
#include <stdio.h>

#include "harness.h"
#include "hiar.h"
#include "test_errors.h"

void test_destroyed_comm(void)
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

void test_aborted_comm(void)
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
void test_two_threads(void)
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
