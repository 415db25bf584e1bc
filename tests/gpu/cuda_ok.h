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

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

#endif
