"""Tests of the hiar Python package, run on every rank of an MPI job.

    mpirun -np 2 python3 -m pytest tests/python/hiar_tests     (with pytest)
    mpirun -np 2 python3 -m hiar_tests [MODULE...]             (without; PYTHONPATH=tests/python)

Every rank runs every test in the same order (the calls are collective).
References are computed from the inputs every rank can generate for every
other rank (a seed per rank), never from hiar's output.
"""
import os
import unittest

# Before libhiar is loaded: its INFO lines go to logging (test_api checks them), not to stderr.
os.environ.setdefault("HIAR_DEBUG", "INFO")

_world = None


def _select_gpu():
    """With CUDA torch: this rank's GPU (local rank modulo the GPUs), current before any hiar.Comm."""
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        from mpi4py import MPI

        local = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
        torch.cuda.set_device(local.rank % torch.cuda.device_count())
        local.Free()


def world():
    """One hiar.Comm over MPI.COMM_WORLD for the tests of this process (closed at exit by hiar)."""
    global _world
    import hiar

    if _world is None or _world.closed:
        _select_gpu()
        _world = hiar.Comm()
    return _world


def skip(reason):
    """Skips the test (pytest and the plain runner both take unittest.SkipTest)."""
    raise unittest.SkipTest(reason)


# Input values per op: small integers, so every dtype holds the exact sums and products.
def value_range(op, signed):
    if op == "prod":
        return (-1, 3) if signed else (1, 3)
    if op in ("min", "max"):
        return (-100, 101) if signed else (0, 201)
    return (-3, 4) if signed else (0, 4)


class DLPackOnly:
    """An array that speaks DLPack only (as JAX's), over a NumPy or CuPy array."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def failures_message(failed):
    return "%d cases failed: %s" % (len(failed), "; ".join(failed[:10]))
