"""allreduce on NumPy arrays (host buffers): every dtype NumPy has and every op, against NumPy's own
reduction of every rank's input; in place and into out; DLPack; what is refused."""
import numpy as np

import hiar
from mpi4py import MPI

from . import DLPackOnly, failures_message, value_range, world

DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
OPS = ["sum", "prod", "min", "max", "avg"]
# 0 (a no-op), odd sizes, above the one-shot limit (8 KB over the ranks), and (sum only) over the 1 MB chunk.
COUNTS = [0, 1, 7, 1000, 40000]
BIG = 300000


def rank_input(rank, dtype, op, n):
    lo, hi = value_range(op, np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating))
    rng = np.random.default_rng([7, rank, n, OPS.index(op), DTYPES.index(dtype)])
    return rng.integers(lo, hi, size=n).astype(dtype)


def reference(dtype, op, n, size):
    """NumPy's reduction over the inputs of all ranks, in 64 bits, then cast."""
    wide = np.float64 if np.issubdtype(dtype, np.floating) else np.int64
    xs = np.stack([rank_input(r, dtype, op, n).astype(wide) for r in range(size)])
    if op == "avg":
        s = xs.sum(axis=0)
        # Integers: truncated toward zero (hiar.h).
        return (s / size if wide is np.float64 else np.trunc(s / size)).astype(dtype)
    return {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[op](xs, axis=0).astype(dtype)


def run_matrix(counts, ops, dtypes):
    comm, failed = world(), []
    for dtype in dtypes:
        for op in ops:
            for n in counts:
                want = reference(dtype, op, n, comm.size)
                x = rank_input(comm.rank, dtype, op, n)
                out = np.full_like(x, 99)
                got_out = comm.allreduce(x, op=op, out=out)
                if got_out is not out or not np.array_equal(out, want):
                    failed.append("%s %s n=%d into out" % (np.dtype(dtype).name, op, n))
                if not np.array_equal(x, rank_input(comm.rank, dtype, op, n)):
                    failed.append("%s %s n=%d: x changed by a call into out" % (np.dtype(dtype).name, op, n))
                if comm.allreduce(x, op=op) is not x or not np.array_equal(x, want):
                    failed.append("%s %s n=%d in place" % (np.dtype(dtype).name, op, n))
    assert not failed, failures_message(failed)


def test_every_dtype_and_op():
    run_matrix(COUNTS, OPS, DTYPES)


def test_over_several_chunks():
    run_matrix([BIG], ["sum"], [np.float32, np.int64])


def test_multidimensional_and_op_enum():
    comm = world()
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * (comm.rank + 1)
    comm.allreduce(x, op=hiar.Op.MAX)
    assert np.array_equal(x, np.arange(24, dtype=np.float32).reshape(2, 3, 4) * comm.size)


def test_dlpack():
    comm = world()
    want = reference(np.int32, "sum", 1000, comm.size)
    x = rank_input(comm.rank, np.int32, "sum", 1000)
    out = np.zeros_like(x)
    comm.allreduce(DLPackOnly(x), out=DLPackOnly(out))
    assert np.array_equal(out, want)
    comm.allreduce(DLPackOnly(x))
    assert np.array_equal(x, want)


def expect(exc, words, call):
    try:
        call()
    except exc as e:
        assert all(w in str(e) for w in words), (words, str(e))
        return e
    raise AssertionError("no %s naming %s" % (exc.__name__, words))


def test_refused_before_any_call():
    comm = world()
    grid = np.zeros((8, 8), np.float32)
    expect(ValueError, ["not contiguous", "strides"], lambda: comm.allreduce(grid[:, 1]))
    expect(ValueError, ["not contiguous"], lambda: comm.allreduce(grid.T))
    expect(ValueError, ["not contiguous"], lambda: comm.allreduce(np.zeros(8, np.float32), out=grid[::2, 0]))
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    expect(ValueError, ["read-only"], lambda: comm.allreduce(ro))
    expect(ValueError, ["out must be like x", "float64"],
           lambda: comm.allreduce(np.zeros(8, np.float32), out=np.zeros(8, np.float64)))
    expect(ValueError, ["out must be like x", "9"],
           lambda: comm.allreduce(np.zeros(8, np.float32), out=np.zeros(9, np.float32)))
    expect(ValueError, ["mean", "sum, prod, min, max, avg"], lambda: comm.allreduce(np.zeros(8), op="mean"))
    expect(TypeError, ["dtype", "c8", "bfloat16"], lambda: comm.allreduce(np.zeros(8, np.complex64)))
    expect(TypeError, ["dtype"], lambda: comm.allreduce(np.zeros(8, bool)))
    expect(TypeError, ["list", "DLPack"], lambda: comm.allreduce([1.0, 2.0]))


def test_hiar_error_carries_the_detail():
    """A misaligned buffer passes the Python checks; hiar refuses it, and the comm stays usable."""
    comm = world()
    x = np.frombuffer(bytearray(4 * 9), np.int32, 8, 1)  # 1 byte off
    e = expect(hiar.Error, ["not aligned", "int32"], lambda: comm.allreduce(np.array(x), out=x))
    assert e.code == hiar.Result.INVALID_ARGUMENT and "not aligned" in e.detail, e
    y = np.ones(8, np.int32)
    comm.allreduce(y)
    assert (y == MPI.COMM_WORLD.size).all()


def rmsnorm_reference(xs, res, w, eps, gemma, dtype):
    """allreduce + residual add + RMSNorm in float64 from every rank's input: (out, new residual)."""
    r = np.sum([x.astype(np.float64) for x in xs], axis=0).astype(dtype).astype(np.float64)
    if res is not None:
        r = (res.astype(np.float64) + r).astype(dtype).astype(np.float64)
    norm = r / np.sqrt(np.mean(r * r, axis=-1, keepdims=True) + eps)
    return (norm * (w.astype(np.float64) + (1.0 if gemma else 0.0))).astype(dtype), r.astype(dtype)


def test_allreduce_rmsnorm():
    """Every case against the float64 reference; the residual (small integers) exactly."""
    comm, failed = world(), []
    tol = {np.float32: 1e-5, np.float16: 2e-3}
    for dtype, wdtype in ((np.float32, np.float32), (np.float16, np.float16), (np.float16, np.float32)):
        for shape in ((3, 64), (1, 1000), (9, 2048)):
            for with_res, gemma, into_out in ((False, False, True), (True, False, False), (True, True, True)):
                xs = [rank_input(r, dtype, "sum", shape[0] * shape[1]).reshape(shape) for r in range(comm.size)]
                w = np.linspace(-1, 1, shape[1]).astype(wdtype)
                res = rank_input(99, dtype, "sum", xs[0].size).reshape(shape) if with_res else None
                want, want_res = rmsnorm_reference(xs, res, w, 1e-5, gemma, dtype)
                x = xs[comm.rank].copy()
                out = np.zeros_like(x) if into_out else None
                got = comm.allreduce_rmsnorm(x, w, eps=1e-5, residual=res, out=out, gemma=gemma)
                case = "%s/%s %s residual=%s gemma=%s out=%s" % (np.dtype(dtype).name, np.dtype(wdtype).name, shape,
                                                                 with_res, gemma, into_out)
                if got is not (out if into_out else x):
                    failed.append(case + ": returned another array")
                if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol[dtype], atol=tol[dtype]):
                    failed.append(case + ": out off by %g" % np.abs(got.astype(np.float64) - want).max())
                if with_res and not np.array_equal(res, want_res):
                    failed.append(case + ": residual")
    assert not failed, failures_message(failed)


def test_allreduce_rmsnorm_refusals():
    comm = world()
    x = np.ones((2, 8), np.float32)
    expect(ValueError, ["weight must be 8 elements"], lambda: comm.allreduce_rmsnorm(x, np.ones(7, np.float32)))
    expect(ValueError, ["residual must be like x"],
           lambda: comm.allreduce_rmsnorm(x, np.ones(8, np.float32), residual=np.ones((2, 8), np.float16)))
    e = expect(hiar.Error, ["int32 is not supported"],
               lambda: comm.allreduce_rmsnorm(np.ones((2, 8), np.int32), np.ones(8, np.float32)))
    assert e.code == hiar.Result.INVALID_ARGUMENT
