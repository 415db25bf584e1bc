/*
 * CUDA_OK(call), for the MPI test programs on GPU buffers: a failing CUDA
 * call prints the call and CUDA's reason, and aborts every rank (a rank that
 * just exited would leave its peers waiting in the next collective).  Needs
 * an int `rank` in scope.
 */
#ifndef HIAR_TEST_CUDA_OK_H
#define HIAR_TEST_CUDA_OK_H

#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

/*
 * MPI_Init, *rank and *nranks of MPI_COMM_WORLD, and a GPU per rank of this
 * host (local rank modulo the GPUs), chosen as a program does before its
 * first MPI call on GPU buffers.  Without a GPU or with one rank: prints
 * SKIP, finalizes and exits 77.
 */
static inline void cuda_ok_mpi_init(int *argc, char ***argv, int *rank, int *nranks)
{
    int ndev = 0, lrank = 0;
    MPI_Comm local;

    int mpi_thread_level;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0 || *nranks < 2) {
        if (*rank == 0)
            printf("SKIP: %s\n", *nranks < 2 ? "needs 2 or more ranks" : "no GPU");
        MPI_Finalize();
        exit(77);
    }
    if (cudaSetDevice(lrank % ndev) != cudaSuccess) {
        fprintf(stderr, "rank %d: cudaSetDevice(%d) failed\n", *rank, lrank % ndev);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

#endif
