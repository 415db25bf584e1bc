"""hiar from Python: allreduce on torch tensors, CuPy and NumPy arrays over MPI ranks.

    import hiar
    with hiar.Comm() as comm:            # over mpi4py's MPI.COMM_WORLD
        comm.allreduce(tensor)           # in place, sum; op="avg", out=...
        comm.allreduce_rmsnorm(h, w, residual=res)   # + residual add + RMSNorm

hiar.torch has the DDP communication hooks.  doc/python.md has the rest.
"""
from ._lib import Dtype, Error, Op, Result, lib
from .comm import Comm

__version__ = "0.1.0"
__all__ = ["Comm", "Dtype", "Error", "Op", "Result", "library_version"]


def library_version():
    """The loaded libhiar's version, e.g. "0.1.0"."""
    return lib().hiar_version().decode()
