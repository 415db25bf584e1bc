#!/usr/bin/env python3
"""Per-call cost of an allreduce from Python: mpi4py's Allreduce through
libhiar_mpi.so (LD_PRELOAD) against hiar_allreduce called directly (ctypes,
libhiar.so) followed by a stream sync, on the same ranks, float32 sums of
1 KB to 1 MB, out of place.  A third column ("raw") makes the same
Allreduce on the arrays' addresses (MPI.memory.fromaddress, built once),
so it leaves out how mpi4py gets at the tensor's memory (DLPack or the
CUDA array interface, per call): preload minus raw is that, raw minus hiar
is mpi4py's own call and the preload's.

    mpirun -np 2 -x LD_PRELOAD=$PWD/.libs/libhiar_mpi.so \\
        python3 tests/pmpi/pmpi_cost.py $PWD/.libs/libhiar.so device   # torch CUDA tensors
    ... python3 tests/pmpi/pmpi_cost.py $PWD/.libs/libhiar.so host     # numpy arrays

Rank 0 prints one row per size: the median over 5 rounds of the mean of N
calls, for each of the three, and the ratios of preload and raw to hiar.
Each one's result is checked against the exact sum (small integers), in an
output cleared before its call.  Exit 1 on a wrong result.
"""
import ctypes
import sys
import time

import numpy as np
from mpi4py import MPI

HIAR_FLOAT32, HIAR_SUM = 4, 0


def main():
    lib = ctypes.CDLL(sys.argv[1])
    device = len(sys.argv) > 2 and sys.argv[2] == "device"
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    if device:
        import torch

        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        torch.cuda.set_device(local.Get_rank() % torch.cuda.device_count())
        local.Free()
    hcomm = ctypes.c_void_p()
    lib.hiar_comm_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hiar_allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    if lib.hiar_comm_create(MPI._handleof(comm), None, ctypes.byref(hcomm)) != 0:
        sys.exit("hiar_comm_create failed")
    wrong = 0
    if rank == 0:
        print("%10s %14s %14s %14s %8s %8s" % ("bytes", "preload (us)", "raw (us)", "hiar (us)", "ratio", "raw/hiar"))
    size = 1024
    while size <= 1 << 20:
        count = size // 4
        base = np.arange(count, dtype=np.float32) % 7 + rank
        want = (np.arange(count, dtype=np.float32) % 7) * n + n * (n - 1) / 2
        iters = 2000 if size <= 65536 else 300
        if device:
            send, buf = torch.from_numpy(base).cuda(), torch.zeros(count, device="cuda")
            stream = torch.cuda.current_stream()
            sptr, ptr, sync, handle = send.data_ptr(), buf.data_ptr(), stream.synchronize, stream.cuda_stream
            read = lambda: buf.cpu().numpy()  # noqa: E731
            clear = buf.zero_
        else:
            send, buf = base, np.zeros(count, dtype=np.float32)
            sptr, ptr, sync, handle = send.ctypes.data, buf.ctypes.data, (lambda: None), None
            read = lambda: buf  # noqa: E731
            clear = lambda: buf.fill(0)  # noqa: E731

        raw = ([MPI.memory.fromaddress(sptr, size), MPI.FLOAT], [MPI.memory.fromaddress(ptr, size), MPI.FLOAT])

        def call(name):
            if name == "preload":
                comm.Allreduce(send, buf)
            elif name == "raw":
                comm.Allreduce(*raw)
            else:
                lib.hiar_allreduce(sptr, ptr, count, HIAR_FLOAT32, HIAR_SUM, hcomm, handle)
                sync()

        times = {"preload": [], "raw": [], "hiar": []}
        for _ in range(5):
            for name in times:
                clear()
                call(name)
                wrong += not np.array_equal(read(), want)
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    call(name)
                times[name].append((time.perf_counter() - t0) / iters * 1e6)
        med = {k: sorted(v)[2] for k, v in times.items()}
        if rank == 0:
            print("%10d %14.2f %14.2f %14.2f %8.2f %8.2f" % (size, med["preload"], med["raw"], med["hiar"],
                                                          med["preload"] / med["hiar"], med["raw"] / med["hiar"]))
        size *= 4
    lib.hiar_comm_destroy(hcomm)
    wrong = comm.allreduce(wrong)
    if rank == 0:
        print("wrong results: %d" % wrong)
    sys.exit(1 if wrong else 0)


main()
