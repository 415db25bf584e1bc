#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int passed, failed;
static FILE *out;

void record_open(int argc, char **argv)
{
    int rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--out") == 0 && rank == 0 && !(out = fopen(argv[i + 1], "w"))) {
            perror(argv[i + 1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
}

uint64_t record_hash(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

void record_case(const char *name, int ok, uint64_t hash)
{
    int all_ok = 0, rank, size;
    uint64_t *hashes;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hashes = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)size) : NULL;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    MPI_Gather(&hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        all_ok ? passed++ : failed++;
        if (!all_ok)
            printf("FAIL %s\n", name);
        if (out) {
            fprintf(out, "%s", name);
            for (int r = 0; r < size; r++)
                fprintf(out, " %016llx", (unsigned long long)hashes[r]);
            fprintf(out, "\n");
        }
    }
    free(hashes);
}

int record_finish(long long intercepted, long long forwarded)
{
    long long mine[2] = {intercepted, forwarded}, all[2] = {0, 0};
    int rank, size, bad;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("expect: %lld intercepted, %lld forwarded\n", all[0], all[1]);
        printf("np=%d: %d passed, %d failed\n", size, passed, failed);
        if (out)
            fclose(out);
    }
    bad = rank == 0 && (failed || !passed);
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad;
}
