"""PyTorch: DDP communication hooks through hiar, and torch.distributed set up from MPI.

    comm = hiar.Comm()
    model = DistributedDataParallel(model, device_ids=[dev])
    model.register_comm_hook(comm, hiar.torch.allreduce_hook)

The hooks reduce the bucket on the current CUDA stream (the one DDP calls
them on) and return a torch.futures.Future that holds the bucket: its
set_result records an event on that stream, so whoever waits on the future
waits for the GPU work, as with torch's own NCCL hooks.  CPU buckets are
reduced before the hook returns.
"""
import os
import socket

import torch
import torch.distributed as dist

from .comm import Comm

_default = None


def _comm(state):
    """The hook's state: a hiar.Comm, or None for one over MPI.COMM_WORLD made on first use."""
    global _default
    if isinstance(state, Comm):
        return state
    if state is not None:
        raise TypeError("hiar.torch: the hook's state is a %s; expected a hiar.Comm or None" % type(state).__name__)
    if _default is None:
        _default = Comm()
    return _default


def _done(tensor):
    """A Future of tensor, complete once the work enqueued so far on the current stream is."""
    fut = torch.futures.Future(devices=[tensor.device] if tensor.is_cuda else None)
    fut.set_result(tensor)
    return fut


def allreduce_hook(state, bucket):
    """The average of the bucket's gradients over the ranks (HIAR_AVG), in place."""
    buf = bucket.buffer()
    _comm(state).allreduce(buf, op="avg")
    return _done(buf)


def _compress_hook(state, bucket, dtype):
    buf = bucket.buffer()
    small = buf.to(dtype)
    _comm(state).allreduce(small, op="avg")
    buf.copy_(small)
    return _done(buf)


def fp16_compress_hook(state, bucket):
    """allreduce_hook over a float16 copy of the bucket (half the bytes), as torch's fp16_compress_hook."""
    return _compress_hook(state, bucket, torch.float16)


def bf16_compress_hook(state, bucket):
    """allreduce_hook over a bfloat16 copy of the bucket, as torch's bf16_compress_hook."""
    return _compress_hook(state, bucket, torch.bfloat16)


def init_process_group(backend="gloo", comm=None, **kwargs):
    """dist.init_process_group over the ranks of an MPI job (mpirun), with no environment to set.

    Rank and world size are the MPI communicator's (default MPI.COMM_WORLD);
    MASTER_ADDR and MASTER_PORT, unless set, are rank 0's host name (on one
    host: 127.0.0.1, and gloo on the loopback interface) and a port free on
    it, sent to every rank over MPI.
    """
    if comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    hosts = comm.allgather(socket.gethostname())
    if len(set(hosts)) == 1:
        # One host: loopback, whatever the host name resolves to.
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if comm.rank == 0 and not (addr and port):
        addr = addr or ("127.0.0.1" if len(set(hosts)) == 1 else hosts[0])
        with socket.socket() as s:
            s.bind(("", 0))
            port = port or str(s.getsockname()[1])
    addr, port = comm.bcast((addr, port), root=0)
    dist.init_process_group(backend, init_method="tcp://%s:%s" % (addr, port), rank=comm.rank,
                            world_size=comm.size, **kwargs)
