"""hiar.Comm: a hiar communicator over an mpi4py communicator."""
import atexit
import ctypes

from . import _buffer, _log
from ._lib import RMSNORM_GEMMA, Config, Dtype, Op, Result, check, lib

_OPS = {op.name.lower(): op for op in Op}
# Comms still open, in creation order (the same on every rank): closed at exit.
_open = []
_atexit_registered = False


def _op(op):
    if isinstance(op, Op):
        return op
    if isinstance(op, str) and op.lower() in _OPS:
        return _OPS[op.lower()]
    raise ValueError("hiar: op %r is unknown; expected one of %s" % (op, ", ".join(_OPS)))


def _settings(settings):
    """hiar_config_t.settings from "NAME=value;..." or a dict {NAME: value}."""
    if settings is None:
        return None
    if isinstance(settings, dict):
        settings = ";".join("%s=%s" % kv for kv in settings.items())
    return settings.encode()


def _fortran_handle(comm):
    if comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    if isinstance(comm, int):
        return comm
    if hasattr(comm, "py2f"):
        return comm.py2f()
    raise TypeError("hiar: comm is a %s; expected an mpi4py communicator, its py2f() handle, or None "
                    "(MPI.COMM_WORLD)" % type(comm).__name__)


def _close_all_at_exit():
    # Collective, like MPI_Finalize after it (mpi4py's runs later): all ranks get here together.
    while _open:
        _open[-1].close()
    _log.uninstall()


def _memory(buf):
    return "device" if buf.cuda else "host"


def _closed_error():
    return ValueError("hiar: the communicator is closed")


class Comm:
    """A hiar communicator over the ranks of an MPI communicator (collective to create).

    comm: an mpi4py communicator (None: MPI.COMM_WORLD), or a Fortran handle
    (comm.py2f()); hiar duplicates it.  settings: hiar parameters as
    "NAME=value;..." or a dict, as hiar_config_t.settings.  Device buffers
    use the GPU that is current when the Comm is made (torch.cuda.set_device
    first).
    """

    def __init__(self, comm=None, settings=None):
        global _atexit_registered
        fcomm = _fortran_handle(comm)
        _log.install()
        if not _atexit_registered:
            # After mpi4py's import, so this runs before MPI is finalized.
            atexit.register(_close_all_at_exit)
            _atexit_registered = True
        cfg = Config.make(_settings(settings))
        handle = ctypes.c_void_p()
        check("hiar_comm_create_f", lib().hiar_comm_create_f(fcomm, ctypes.byref(cfg), ctypes.byref(handle)))
        self._handle = handle
        _open.append(self)
        self.rank = self._query_int(lib().hiar_comm_rank)
        self.size = self._query_int(lib().hiar_comm_size)

    def _live(self):
        if self._handle is None:
            raise _closed_error()
        return self._handle

    def _query_int(self, fn):
        v = ctypes.c_int()
        check(fn.__name__, fn(self._live(), ctypes.byref(v)))
        return v.value

    def allreduce(self, x, op="sum", out=None, stream=None):
        """Reduces x over all ranks with op into out (None: into x, in place); returns the array written.

        op: "sum", "prod", "min", "max", "avg" or a hiar.Op.  x and out:
        torch tensors (CPU or CUDA), or arrays with __cuda_array_interface__,
        __array_interface__ or DLPack, contiguous, of one of hiar's dtypes;
        out like x (dtype, length, memory).  Host memory: returns with the
        result in out.  Device memory: enqueued on `stream` (a
        cudaStream_t as int; default: the tensor device's current torch
        stream, the array's __cuda_array_interface__ stream, else the legacy
        default stream), as hiar_allreduce says.
        """
        hop = _op(op)
        src = _buffer.describe("x", x, stream)
        dst = self._output("out", out, x, src)
        check("hiar_allreduce", lib().hiar_allreduce(src.ptr, dst.ptr, src.count, src.dtype, hop, self._live(),
                                                     src.stream))
        return x if out is None else out

    def allreduce_rmsnorm(self, x, weight, eps=1e-6, residual=None, out=None, gemma=False, stream=None):
        """Allreduce + residual add + RMSNorm in one call (hiar_allreduce_rmsnorm); returns the array written.

        x: [..., hidden] (the last dimension is normalised, the others are
        tokens), float32, float16 or bfloat16; weight: hidden elements of one
        of those; residual (None or like x, the same values on every rank,
        as tensor parallelism keeps it) becomes residual + sum(x);
        out = r / sqrt(mean(r^2) + eps) * weight (1 + weight with gemma), r
        the (residual +) sum, into out (None: into x).  Streams and memory as
        allreduce.
        """
        src = _buffer.describe("x", x, stream)
        hidden = src.shape[-1] if src.shape else 1
        w = _buffer.describe("weight", weight, src.stream)
        if w.count != hidden or w.cuda != src.cuda:
            raise ValueError("hiar: weight must be %d elements (x's last dimension) in %s memory; it is %d in %s memory"
                             % (hidden, _memory(src), w.count, _memory(w)))
        res = self._output("residual", residual, None, src) if residual is not None else None
        dst = self._output("out", out, x, src)
        tokens = src.count // hidden if hidden else 0
        check("hiar_allreduce_rmsnorm",
              lib().hiar_allreduce_rmsnorm(src.ptr, res.ptr if res else None, w.ptr, dst.ptr, tokens, hidden,
                                           src.dtype, w.dtype, eps, RMSNORM_GEMMA if gemma else 0, self._live(),
                                           src.stream))
        return x if out is None else out

    @staticmethod
    def _output(name, arr, x, src):
        """The Buffer of an array hiar writes, like x (src); None or x itself: x's own."""
        if arr is None or arr is x:
            dst = src
        else:
            dst = _buffer.describe(name, arr, src.stream)
        if dst.readonly:
            raise ValueError("hiar: %s is read-only; hiar writes the result into it" % ("x" if dst is src else name))
        if (dst.dtype, dst.count, dst.cuda) != (src.dtype, src.count, src.cuda):
            raise ValueError("hiar: %s must be like x: x is %d %s in %s memory, %s %d %s in %s memory"
                             % (name, src.count, Dtype(src.dtype).name.lower(), _memory(src), name, dst.count,
                                Dtype(dst.dtype).name.lower(), _memory(dst)))
        return dst

    def describe(self):
        """hiar_comm_describe's text: the ranks, the groups, why they were chosen, and the paths."""
        return _describe(self._live())

    def group(self, device=False):
        """(ngroups, group, local_rank, local_size) of this rank's group for host or device buffers."""
        v = [ctypes.c_int() for _ in range(4)]
        check("hiar_comm_group", lib().hiar_comm_group(self._live(), int(bool(device)), *map(ctypes.byref, v)))
        return tuple(i.value for i in v)

    def async_error(self):
        """hiar_comm_get_async_error: a Result, SUCCESS unless an earlier device call failed."""
        err = ctypes.c_int()
        check("hiar_comm_get_async_error", lib().hiar_comm_get_async_error(self._live(), ctypes.byref(err)))
        return Result(err.value)

    def close(self):
        """Collective: releases the communicator (hiar_comm_destroy).  Closing twice is a no-op."""
        if self._handle is not None:
            self._release(lib().hiar_comm_destroy, "hiar_comm_destroy")

    def abort(self):
        """Not collective: releases the communicator without talking to peers (after a TIMEOUT)."""
        if self._handle is not None:
            self._release(lib().hiar_comm_abort, "hiar_comm_abort")

    def _release(self, fn, name):
        handle, self._handle = self._handle, None
        _open.remove(self)
        check(name, fn(handle))

    @property
    def closed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<hiar.Comm rank %s of %s%s>" % (self.rank, self.size, ", closed" if self.closed else "")


def _describe(handle):
    """hiar_comm_describe into an open_memstream FILE*, read back as text."""
    libc = ctypes.CDLL(None)
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    f = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not f:
        raise OSError(ctypes.get_errno(), "hiar: open_memstream failed")
    rc = lib().hiar_comm_describe(handle, f)
    libc.fclose(f)  # sets buf and size
    text = ctypes.string_at(buf, size.value).decode() if buf else ""
    libc.free(buf)
    check("hiar_comm_describe", rc)
    return text
