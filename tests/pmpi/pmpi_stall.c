/*
 * A plain MPI program: rank 1 enters the second MPI_Allreduce on
 * MPI_COMM_WORLD --stall-ms later than the others.  MPI_ERRORS_RETURN is set,
 * and every rank prints "rank R: second call rc=N after S s"; then a third
 * call.  Plain MPI waits for the late rank and succeeds; under an interposer
 * with a timeout shorter than the stall, the calls fail and return.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, rc, stall_ms = 2000;
    double x = 1, y = 0, t0;

    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--stall-ms") == 0)
            stall_ms = atoi(argv[i + 1]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: first call rc=%d\n", rank, rc);
    if (rank == 1) {
        struct timespec ts = {stall_ms / 1000, (long)(stall_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    t0 = MPI_Wtime();
    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: second call rc=%d after %.2f s\n", rank, rc, MPI_Wtime() - t0);
    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: third call rc=%d\n", rank, rc);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
