/* The harness shared by the MPI test programs; see harness.h. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

int world_rank, world_size;
int harness_passed, harness_failed;

int harness_init(int *argc, char ***argv, const char *prog, int min_ranks)
{
    int mpi_thread_level;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (world_size < min_ranks) {
        if (world_rank == 0)
            printf("SKIP: %s needs at least %d ranks\n", prog, min_ranks);
        MPI_Finalize();
        return 0;
    }
    return 1;
}

void harness_verdict(const char *name, int ok)
{
    int all_ok;

    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all_ok) {
        harness_passed++;
    } else {
        harness_failed++;
        if (world_rank == 0)
            printf("FAIL %s\n", name);
    }
    fflush(stdout);
}

int harness_expect(const char *what, hiar_result_t rc, hiar_result_t want, const char *needle)
{
    const char *msg = hiar_last_error();
    int ok = rc == want;

    if (ok && want != HIAR_SUCCESS)
        ok = msg && msg[0] && (!needle || strcasestr(msg, needle));
    if (!ok)
        printf("[rank %d] %s: got %s, message \"%s\"; expected %s with a message naming \"%s\"\n",
               world_rank, what, hiar_strerror(rc), msg ? msg : "(NULL)", hiar_strerror(want),
               needle ? needle : "");
    fflush(stdout); /* before a stalled or killed peer can end the job */
    return ok;
}

hiar_comm_t *harness_create(const char *settings)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm = NULL;
    hiar_result_t rc;

    cfg.settings = settings;
    rc = hiar_comm_create(MPI_COMM_WORLD, &cfg, &comm);
    if (rc != HIAR_SUCCESS) {
        printf("[rank %d] hiar_comm_create(\"%s\") returned %s: %s\n", world_rank,
               settings ? settings : "", hiar_strerror(rc), hiar_last_error());
        return NULL;
    }
    return comm;
}

int harness_summary(void)
{
    if (world_rank == 0)
        printf("np=%d: %d passed, %d failed\n", world_size, harness_passed, harness_failed);
    return harness_failed || !harness_passed ? 1 : 0;
}
