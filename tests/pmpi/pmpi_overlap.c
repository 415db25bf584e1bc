/*
 * A plain MPI program: does MPI_Iallreduce on device buffers overlap the
 * program's own GPU work?  (Issue 20: "a device-buffer MPI_Iallreduce of
 * 16 MB started, a 5 ms kernel run, then MPI_Wait: total close to max of
 * the two, not their sum".)  Exits 77 without a GPU or with one rank.
 *
 * Times, each the median of 7 after 2 warm-ups, rank 0's:
 *   iallreduce  MPI_Iallreduce (in place, float) + MPI_Wait
 *   kernel      a kernel of one block spinning on a stream of the program's + its sync
 *   both        MPI_Iallreduce, the kernel, MPI_Wait, the kernel's sync
 * and checks every result (sums of small integers: exact).  Prints
 *   "overlap: B bytes: iallreduce A ms, kernel K ms, both T ms (max M, sum S): hidden H%"
 * (H: the part of the shorter one that the overlap hid, (S - T) / min) and
 * "np=N: P passed, F failed"; passes when the results are right (the times
 * are for the reader: MPS and other jobs on the GPU move them).
 *
 * Options: --mb M (the allreduce's megabytes, 16), --kernel-ms K (5), and
 * --match: after M, doubles the size until the allreduce alone takes as
 * long as the kernel (at most 1 GB), where hiding one in the other shows
 * most (on one GPU, 16 MB over CUDA IPC takes 0.14 ms: max and sum then
 * differ by 3%).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../gpu/cuda_ok.h"

int pmpi_test_spin(void *stream, unsigned long long ns);

enum { REPS = 7, WARMUP = 2 };
#define MAX_COUNT ((size_t)1 << 28) /* 1 GB of float */

static int rank, nranks;
static size_t count;
static unsigned long long kernel_ns = 5000000ull;
static float *host, *dev;
static cudaStream_t work;

static float input(int r, size_t i)
{
    return (float)((r * 7 + i * 3) % 9);
}

static void fill(void)
{
    CUDA_OK(cudaMemcpy(dev, host, sizeof(float) * count, cudaMemcpyHostToDevice));
}

static int check(void)
{
    float *h = malloc(sizeof(float) * count);
    int ok = h != NULL;

    if (ok)
        CUDA_OK(cudaMemcpy(h, dev, sizeof(float) * count, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count && ok; i++) {
        float sum = 0;
        for (int r = 0; r < nranks; r++)
            sum += input(r, i);
        ok = h[i] == sum;
    }
    free(h);
    return ok;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median time in ms of `what`: 0 iallreduce, 1 kernel, 2 both; *ok &= every result right. */
static double measure(int what, int *ok)
{
    double t[REPS];
    MPI_Request req;

    for (int rep = 0; rep < WARMUP + REPS; rep++) {
        double t0;
        fill();
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (what != 1)
            MPI_Iallreduce(MPI_IN_PLACE, dev, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        if (what != 0 && pmpi_test_spin(work, kernel_ns) != 0) {
            fprintf(stderr, "rank %d: the spin kernel did not launch\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (what != 1)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        CUDA_OK(cudaStreamSynchronize(work));
        if (rep >= WARMUP)
            t[rep - WARMUP] = (MPI_Wtime() - t0) * 1e3;
        if (what != 1)
            *ok &= check();
    }
    qsort(t, REPS, sizeof(double), cmp);
    return t[REPS / 2];
}

/* Buffers for the current count, on every rank. */
static void buffers(void)
{
    free(host);
    cudaFree(dev);
    host = malloc(sizeof(float) * count);
    if (!host) {
        fprintf(stderr, "rank %d: cannot allocate %zu floats\n", rank, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < count; i++)
        host[i] = input(rank, i);
    CUDA_OK(cudaMalloc((void **)&dev, sizeof(float) * count));
}

/* The three times at this count, printed by rank 0; returns the allreduce's alone (rank 0's, broadcast). */
static double run(double k, int *ok)
{
    double a, b, s, shorter;

    a = measure(0, ok);
    b = measure(2, ok);
    s = a + k;
    shorter = a < k ? a : k;
    if (rank == 0)
        printf("overlap: %zu bytes: iallreduce %.3f ms, kernel %.3f ms, both %.3f ms (max %.3f, sum %.3f): hidden "
               "%.0f%%\n", count * sizeof(float), a, k, b, a > k ? a : k, s, 100.0 * (s - b) / shorter);
    MPI_Bcast(&a, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return a;
}

static void usage(const char *arg)
{
    if (rank == 0)
        fprintf(stderr, "pmpi_overlap: unknown option %s; expected --mb M, --kernel-ms K, --match\n", arg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    int ok = 1, all = 0, match = 0;
    double k;

    cuda_ok_mpi_init(&argc, &argv, &rank, &nranks);
    count = (size_t)4 << 20;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mb") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            count = (size_t)atoi(argv[++i]) << 18;
        else if (strcmp(argv[i], "--kernel-ms") == 0 && i + 1 < argc && atof(argv[i + 1]) > 0)
            kernel_ns = (unsigned long long)(atof(argv[++i]) * 1e6);
        else if (strcmp(argv[i], "--match") == 0)
            match = 1;
        else
            usage(argv[i]);
    }
    count = count < MAX_COUNT ? count : MAX_COUNT;
    CUDA_OK(cudaStreamCreateWithFlags(&work, cudaStreamNonBlocking));
    buffers();
    k = measure(1, &ok);
    while (run(k, &ok) < k && match && count < MAX_COUNT) {
        count *= 2;
        buffers();
    }
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d: %d passed, %d failed\n", nranks, all, !all);
    MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cudaFree(dev);
    cudaStreamDestroy(work);
    free(host);
    MPI_Finalize();
    return all ? 0 : 1;
}
