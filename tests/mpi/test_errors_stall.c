/*
 * test_errors, part 4: a stalled peer.  The other ranks get HIAR_TIMEOUT
 * after about HIAR_TIMEOUT_MS (300 here; 1.3 s allowed), then
 * HIAR_COMM_FAILED, on every path and under HIAR_CHECK=global; a new comm
 * works afterwards.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "harness.h"
#include "hiar.h"
#include "test_errors.h"

/* The stalled-peer test: a short HIAR_TIMEOUT_MS, and how late the error may come. */
#define TIMEOUT_MS 300
#define TIMEOUT_LATEST_S 1.3

/*
 * A stalled peer: rank 1 skips a call.  The others must get HIAR_TIMEOUT
 * after about HIAR_TIMEOUT_MS, then HIAR_COMM_FAILED, and abort; rank 1
 * aborts too (not destroy: that would wait for the peers).  A new comm works.
 * `path` adds settings that choose the path the others are waiting in.
 */
void test_timeout(const char *path, const char *name)
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
void test_timeout_check_global(void)
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
