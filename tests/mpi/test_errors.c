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
 * One program, its tests in a file per idea; main() below runs them:
 *
 * | file                 | what goes wrong                                   |
 * |----------------------|---------------------------------------------------|
 * | test_errors_calls.c  | invalid arguments to calls on a valid comm        |
 * | test_errors_create.c | hiar_comm_create: arguments, settings, precedence |
 * | test_errors_state.c  | a destroyed, aborted or busy comm                 |
 * | test_errors_stall.c  | a stalled peer: HIAR_TIMEOUT, then COMM_FAILED    |
 * | test_errors.c        | main; the comm check they share; /dev/shm at end  |
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "hiar.h"
#include "test_errors.h"

/* A correct sum over all ranks on comm; 1 when every rank got n(n+1)/2. */
int sum_works(hiar_comm_t *comm)
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
        test_mem_without_gpu(comm);
        test_async_error(comm);
        test_still_usable(comm);
        harness_verdict("hiar_comm_destroy", hiar_comm_destroy(comm) == HIAR_SUCCESS);
    }
    test_null_comm();
    test_create_args();
    test_create_f();
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
