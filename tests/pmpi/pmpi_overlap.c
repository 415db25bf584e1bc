/*
 * A plain MPI program: does MPI_Iallreduce on device buffers overlap the
 * program's own GPU work?  (Issue 20: "a device-buffer MPI_Iallreduce of
 * 16 MB started, a 5 ms kernel run, then MPI_Wait: total close to max of
 * the two, not their sum".)  Exits 77 without a GPU or with one rank.
 *
 * Times, each the median of 7 after 2 warm-ups, rank 0's:
 *   iallreduce  MPI_Iallreduce (in place, 16 MB of float) + MPI_Wait
 *   kernel      a 5 ms kernel on a stream of the program's + its sync
 *   both        MPI_Iallreduce, the kernel, MPI_Wait, the kernel's sync
 * and checks every result (sums of small integers: exact).  Prints
 *   "overlap: iallreduce A ms, kernel K ms, both B ms (max M, sum S)"
 * and "np=N: P passed, F failed"; passes when the results are right (the
 * times are for the reader: MPS and other jobs on the GPU move them).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "../gpu/cuda_ok.h"

int pmpi_test_spin(void *stream, unsigned long long ns);

enum { COUNT = 4 << 20, REPS = 7, WARMUP = 2 };

static int rank, nranks;
static float *host, *dev;
static cudaStream_t work;

static float input(int r, int i)
{
    return (float)((r * 7 + i * 3) % 9);
}

static void fill(void)
{
    CUDA_OK(cudaMemcpy(dev, host, sizeof(float) * COUNT, cudaMemcpyHostToDevice));
}

static int check(void)
{
    float *h = malloc(sizeof(float) * COUNT);
    int ok = 1;

    CUDA_OK(cudaMemcpy(h, dev, sizeof(float) * COUNT, cudaMemcpyDeviceToHost));
    for (int i = 0; i < COUNT && ok; i++) {
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
            MPI_Iallreduce(MPI_IN_PLACE, dev, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        if (what != 0 && pmpi_test_spin(work, 5000000ull) != 0) {
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

int main(int argc, char **argv)
{
    int ok = 1, all = 0;
    double a, k, b;

    cuda_ok_mpi_init(&argc, &argv, &rank, &nranks);
    CUDA_OK(cudaStreamCreateWithFlags(&work, cudaStreamNonBlocking));
    host = malloc(sizeof(float) * COUNT);
    for (int i = 0; i < COUNT; i++)
        host[i] = input(rank, i);
    CUDA_OK(cudaMalloc((void **)&dev, sizeof(float) * COUNT));

    a = measure(0, &ok);
    k = measure(1, &ok);
    b = measure(2, &ok);
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("overlap: iallreduce %.3f ms, kernel %.3f ms, both %.3f ms (max %.3f, sum %.3f)\n", a, k, b,
               a > k ? a : k, a + k);
        printf("np=%d: %d passed, %d failed\n", nranks, all, !all);
    }
    MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cudaFree(dev);
    cudaStreamDestroy(work);
    free(host);
    MPI_Finalize();
    return all ? 0 : 1;
}
