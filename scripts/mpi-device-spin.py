#!/usr/bin/env python3
"""Does the MPI move device memory while a kernel of the process spins?

hiar's step between hosts hands the MPI device pointers (HIAR_MPI_DEVICE=1)
while its kernel waits on the GPU for the pieces: an MPI whose progress waits
for the GPU (a CUDA call that synchronises) then never completes them. This
checks the MPI alone, without hiar: 2 ranks exchange n bytes of device memory
(Isend/Irecv, CuPy arrays through mpi4py) with no kernel running, then while
a one-thread kernel spins on a word in mapped host memory, on a non-blocking
stream and on the legacy default stream; the kernel is released after the
exchange completed, or after 4 s.

    mpirun -np 2 --mca pml ucx [-x LD_LIBRARY_PATH=<CUDA UCX>/lib] \\
        python3 scripts/mpi-device-spin.py [--spin-first] 4096 4112 65536

--spin-first skips the exchange with no kernel, so that each size's first
message meets a spinning kernel (with Open MPI 4.1.6, pml ucx and UCX 1.22
on one H200 under CUDA MPS, that hung the job at the first message).
Prints a line per size and mode; exits 1 if an exchange needed the kernel
released, or delivered wrong bytes.
"""
import ctypes
import sys
import time

import cupy as cp
from mpi4py import MPI

WAIT_S = 4.0


def exchange(comm, n, spin, word, stream):
    """One exchange of n bytes with the peer; returns (completed while spinning, seconds, bytes right)."""
    peer = comm.rank ^ 1
    a = cp.arange(n, dtype=cp.uint8)
    b = cp.zeros(n, dtype=cp.uint8)
    cp.cuda.Device().synchronize()
    comm.Barrier()
    word.value = 0
    if stream is not None:
        with stream:
            spin((1,), (1,), (cp.uint64(ctypes.addressof(word)),))
    reqs = [comm.Irecv([b, MPI.BYTE], peer, 7), comm.Isend([a, MPI.BYTE], peer, 7)]
    start = time.time()
    done = False
    while not done and time.time() - start < WAIT_S:
        done = MPI.Request.Testall(reqs)
    took = time.time() - start
    word.value = 1
    if not done:
        MPI.Request.Waitall(reqs)
    cp.cuda.Device().synchronize()
    return done, took, bool((b == a).all())


def main():
    comm = MPI.COMM_WORLD
    args = sys.argv[1:]
    spin_first = "--spin-first" in args
    sizes = [int(x) for x in args if x != "--spin-first"] or [4096, 4112, 65536]
    if comm.size != 2:
        sys.exit("mpi-device-spin.py: run it on 2 ranks")
    spin = cp.RawKernel(r'''extern "C" __global__ void spin(unsigned long long word)
{ while (*(volatile int *)word == 0) ; }''', "spin")
    mapped = cp.cuda.runtime.hostAlloc(64, 2)  # cudaHostAllocMapped: the same address on the GPU (UVA)
    word = ctypes.c_int.from_address(mapped)
    modes = [("non-blocking stream", cp.cuda.Stream(non_blocking=True)), ("legacy stream", cp.cuda.Stream.null)]
    if not spin_first:
        modes.insert(0, ("no kernel", None))
    bad = 0
    for n in sizes:
        for name, stream in modes:
            done, took, right = exchange(comm, n, spin, word, stream)
            bad += not done or not right
            print(f"rank {comm.rank}: {n} bytes, {name}: {'completed' if done else 'NOT completed'} "
                  f"in {took * 1e3:.1f} ms, bytes {'right' if right else 'WRONG'}", flush=True)
    sys.exit(1 if comm.allreduce(bad) else 0)


if __name__ == "__main__":
    main()
