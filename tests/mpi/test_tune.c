/*
 * Tuning at creation (HIAR_TUNE, HIAR_TUNE_CACHE, tests/mpi/tune-np*.test):
 * creates a comm as the environment says, checks where its crossovers came
 * from (--expect=measured|cache|defaults, from hiar_comm_describe's
 * "tuning:" line), that every rank describes the same paths (the crossover
 * included: a rank that chose otherwise would take another path and wait),
 * and that sums over the tuning ladder (256 B to 1 MB, and one byte past
 * each size) are right.  Rank 0 prints its tuning lines and
 * "np=N: N passed, N failed"; exit 0 only when every check passed on every rank.
 *
 *   test_tune [--expect=measured|cache|defaults]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "hiar.h"

static int passed, failed;

static void check(int ok, int rank, const char *what)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL (rank %d): %s\n", rank, what);
}

/* The line of text starting (after spaces) with prefix, copied into out ("" if none). */
static void find_line(const char *text, const char *prefix, char *out, size_t len)
{
    out[0] = '\0';
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *s = l + strspn(l, " ");
        if (strncmp(s, prefix, strlen(prefix)) == 0) {
            snprintf(out, len, "%.*s", (int)strcspn(s, "\n"), s);
            return;
        }
    }
}

/* FNV-1a of a line, to compare across ranks. */
static long long hash_of(const char *s)
{
    unsigned long long h = 14695981039346656037ull;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (long long)(h >> 1);
}

/* The "tuning" lines of describe's text, the table's rows under them (indented further), and the pinned-host
 * transport beside CUDA IPC (set up from a cache that chose it). */
static void print_tuning(const char *text)
{
    int in = 0;

    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        in = strncmp(l, "  tuning", 8) == 0 || strncmp(l, "  device pinned-host", 20) == 0 ||
             (in && strncmp(l, "   ", 3) == 0);
        if (in)
            printf("%.*s\n", (int)strcspn(l, "\n"), l);
    }
}

static void check_sums(hiar_comm_t *comm, int rank, int size)
{
    int32_t *send = malloc(((size_t)1 << 20) + 64), *recv = malloc(((size_t)1 << 20) + 64);
    char what[128];

    for (size_t bytes = 256; bytes <= ((size_t)1 << 20); bytes *= 4)
        for (size_t n = bytes / 4; n <= bytes / 4 + 1; n++) {
            int ok = 1;
            for (size_t i = 0; i < n; i++)
                send[i] = (int32_t)((rank + 1) * (int32_t)(i % 89 + 1));
            ok = hiar_allreduce(send, recv, n, HIAR_INT32, HIAR_SUM, comm, NULL) == HIAR_SUCCESS;
            for (size_t i = 0; ok && i < n; i++)
                ok = recv[i] == (int32_t)(i % 89 + 1) * size * (size + 1) / 2;
            snprintf(what, sizeof(what), "the sum of %zu int32 after tuning", n);
            check(ok, rank, what);
        }
    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    const char *expect = NULL;
    hiar_comm_t *comm = NULL;
    int rank, size, all_failed;
    char *text = NULL, tuning[1024], paths[1024], what[2200];
    size_t len = 0;
    FILE *f;
    long long mine[2], lo[2], hi[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--expect=", 9) == 0)
            expect = argv[i] + 9;
    if (hiar_comm_create(MPI_COMM_WORLD, NULL, &comm) != HIAR_SUCCESS) {
        fprintf(stderr, "FAIL (rank %d): hiar_comm_create: %s\n", rank, hiar_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    f = open_memstream(&text, &len);
    hiar_comm_describe(comm, f);
    fclose(f);
    find_line(text, "tuning:", tuning, sizeof(tuning));
    find_line(text, "host paths:", paths, sizeof(paths));
    if (!paths[0])
        find_line(text, "paths:", paths, sizeof(paths));
    if (rank == 0)
        print_tuning(text);
    snprintf(what, sizeof(what), "tuning line \"%s\" should say %s", tuning, expect ? expect : "");
    if (expect)
        check(strstr(tuning, strcmp(expect, "measured") == 0 ? "tuning: measured"
                             : strcmp(expect, "cache") == 0  ? "tuning: cache"
                                                             : "tuning: built-in") != NULL,
              rank, what);
    /* Every rank must describe the same paths and the same source of its limits. */
    mine[0] = hash_of(paths);
    mine[1] = hash_of(tuning);
    MPI_Allreduce(mine, hi, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(mine, lo, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    snprintf(what, sizeof(what), "the ranks describe different paths (this rank: \"%s\", \"%s\")", paths, tuning);
    check(lo[0] == hi[0] && lo[1] == hi[1], rank, what);
    if (rank == 0)
        printf("%s\n", paths);
    check_sums(comm, rank, size);
    free(text);
    hiar_comm_destroy(comm);
    MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d: %d passed, %d failed\n", size, passed, all_failed);
    MPI_Finalize();
    return all_failed != 0;
}
