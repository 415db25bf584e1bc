"""CUDA tensors (and CuPy arrays) through hiar's device path: every dtype and op, in place and into out,
allreduce_rmsnorm, non-contiguous input refused, a stream other than the default, the DDP hooks and DDP on the GPU."""
from . import skip

try:
    import torch
except ImportError:
    skip("torch is not importable: the GPU tests need CUDA torch")
if not torch.cuda.is_available():
    skip("torch sees no CUDA device")

from . import _torch_cases as cases
from . import DLPackOnly, world

# Up to twoshot: 300000 float32 are 1.2 MB, over the IPC one-shot limit (1 MB over the ranks).
COUNTS = [1, 7, 1000, 40000, 300000]


def test_every_dtype_and_op():
    cases.run_matrix("cuda", COUNTS)


def test_non_contiguous_refused():
    cases.expect_refused("cuda")


def test_host_and_device_do_not_mix():
    try:
        world().allreduce(torch.zeros(8), out=torch.zeros(8, device="cuda"))
        raise AssertionError("a CPU x with a CUDA out was taken")
    except ValueError as e:
        assert "host memory" in str(e) and "device memory" in str(e), e


def _delayed_input(stream, comm, n):
    """x = rank + 1, written on `stream` behind ~50 ms of GPU sleep: a call on any other stream reads zeros."""
    x = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)
        x.fill_(comm.rank + 1)
    return x


def test_current_stream_other_than_the_default():
    comm, s = world(), torch.cuda.Stream()
    want = comm.size * (comm.size + 1) / 2
    for n in (1000, 300000):
        x = _delayed_input(s, comm, n)
        with torch.cuda.stream(s):
            comm.allreduce(x)
            pending = not s.query()  # the call returned with the sleep still running: enqueued, not waited for
            got = x.cpu()  # on s, after the allreduce
        assert pending, "hiar waited for the stream instead of enqueuing on it"
        assert (got == want).all(), (n, got[:4], want)


def test_stream_argument():
    comm, s = world(), torch.cuda.Stream()
    x = _delayed_input(s, comm, 1000)
    out = torch.empty_like(x)
    comm.allreduce(x, out=out, stream=s.cuda_stream)
    s.synchronize()
    assert (out.cpu() == comm.size * (comm.size + 1) / 2).all(), out[:4]


def test_allreduce_rmsnorm():
    cases.check_rmsnorm("cuda")


def test_hooks_average_the_bucket():
    cases.check_hooks("cuda")


def test_ddp_with_the_hook_matches_ddp_without():
    cases.check_ddp("cuda")


def _cupy():
    try:
        import cupy
    except ImportError:
        skip("cupy is not importable")
    return cupy


def test_cupy_cuda_array_interface_and_dlpack():
    cp, comm = _cupy(), world()
    want = comm.size * (comm.size + 1) // 2
    for wrap in (lambda a: a, DLPackOnly):
        for dtype in (cp.int32, cp.float16, cp.float64):
            x = cp.full(5000, comm.rank + 1, dtype=dtype)
            out = cp.zeros_like(x)
            comm.allreduce(wrap(x), out=wrap(out))
            comm.allreduce(wrap(x))
            cp.cuda.Device().synchronize()
            assert (cp.asnumpy(out) == want).all() and (cp.asnumpy(x) == want).all(), (wrap, dtype)
