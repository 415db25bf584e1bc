/*
 * A kernel that keeps one block busy for a given time (the "compute" that
 * pmpi_overlap runs beside MPI_Iallreduce): it reads %globaltimer, so the
 * time does not depend on the clock rate or on what else runs on the GPU.
 */
#include <cuda_runtime.h>

__global__ void spin_kernel(unsigned long long ns)
{
    unsigned long long start, now;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < ns);
}

/* Launches the kernel on stream; returns the launch's cudaError_t. */
extern "C" int pmpi_test_spin(void *stream, unsigned long long ns)
{
    spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
    return (int)cudaGetLastError();
}
