"""The torch cases shared by the CPU and the GPU tests: every dtype hiar has, every op, in place and
into out, against torch's own reduction of every rank's input (generated on every rank from a seed)."""
import importlib.util
import os

import torch

from . import failures_message, value_range, world

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]
OPS = ["sum", "prod", "min", "max", "avg"]


def rank_input(rank, dtype, op, n, device="cpu"):
    lo, hi = value_range(op, dtype != torch.uint8)
    g = torch.Generator().manual_seed(hash((11, rank, n, OPS.index(op), DTYPES.index(dtype))) & 0xFFFFFFFF)
    return torch.randint(lo, hi, (n,), generator=g).to(dtype).to(device)


def reference(dtype, op, n, size, device="cpu"):
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    xs = torch.stack([rank_input(r, dtype, op, n).to(wide) for r in range(size)])
    if op == "avg":
        s = xs.sum(0)
        r = s / size if dtype.is_floating_point else torch.trunc(s.double() / size)
    elif op in ("min", "max"):
        r = getattr(xs, op)(0).values
    else:
        r = getattr(xs, op)(0)
    return r.to(dtype).to(device)


def run_matrix(device, counts, dtypes=DTYPES, ops=OPS):
    """Every case into out and in place; returns nothing, asserts on the list of failed cases."""
    comm, failed = world(), []
    for dtype in dtypes:
        for op in ops:
            for n in counts:
                want = reference(dtype, op, n, comm.size, device)
                x = rank_input(comm.rank, dtype, op, n, device)
                out = torch.full_like(x, 99)
                comm.allreduce(x, op=op, out=out)
                if not torch.equal(out.cpu(), want.cpu()):
                    failed.append("%s %s n=%d into out" % (dtype, op, n))
                comm.allreduce(x, op=op)
                if not torch.equal(x.cpu(), want.cpu()):
                    failed.append("%s %s n=%d in place" % (dtype, op, n))
    assert not failed, failures_message(failed)


def expect_refused(device):
    comm = world()
    grid = torch.zeros(8, 8, device=device)
    for bad in (grid.t(), grid[:, 1], grid[::2]):
        try:
            comm.allreduce(bad)
            raise AssertionError("a non-contiguous tensor was taken")
        except ValueError as e:
            assert "not contiguous" in str(e) and ".contiguous()" in str(e), e
    try:
        comm.allreduce(torch.zeros(4, dtype=torch.complex64, device=device))
        raise AssertionError("complex64 was taken")
    except TypeError as e:
        assert "torch.complex64" in str(e), e


class Bucket:
    """What a DDP hook uses of torch.distributed.GradBucket."""

    def __init__(self, tensor):
        self.tensor = tensor

    def buffer(self):
        return self.tensor


def check_hooks(device):
    """Each hook averages the bucket over the ranks, in place, and its future holds the bucket."""
    import hiar.torch

    comm = world()
    cases = [(hiar.torch.allreduce_hook, torch.float32, 1e-6), (hiar.torch.fp16_compress_hook, torch.float32, 1e-3),
             (hiar.torch.bf16_compress_hook, torch.float32, 1e-2), (hiar.torch.allreduce_hook, torch.float64, 0)]
    for hook, dtype, rtol in cases:
        grads = [torch.linspace(-1, 1, 1000, dtype=torch.float64) * (r + 1) for r in range(comm.size)]
        want = torch.stack(grads).mean(0).to(dtype)
        bucket = Bucket(grads[comm.rank].to(dtype).to(device))
        fut = hook(comm, bucket)
        got = fut.wait()
        assert got is bucket.buffer(), hook
        assert torch.allclose(got.cpu(), want, rtol=rtol, atol=rtol), (hook, (got.cpu() - want).abs().max())


def train_ddp():
    """bench/train_ddp.py as a module: its train() is what the DDP tests run."""
    path = os.environ.get("HIAR_TEST_TRAIN_DDP", os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench",
                                                         "train_ddp.py"))
    spec = importlib.util.spec_from_file_location("train_ddp", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_ddp(device, steps=10):
    """DDP with the hiar hook learns the same loss curve as DDP without it (gloo averages)."""
    import torch.distributed as dist

    import hiar.torch

    train = train_ddp().train
    if not dist.is_initialized():
        hiar.torch.init_process_group("gloo")
    plain, _ = train(None, device, steps=steps)
    hooked, _ = train((world(), hiar.torch.allreduce_hook), device, steps=steps)
    assert torch.allclose(hooked, plain, rtol=1e-5, atol=1e-6), (hooked, plain)
    assert plain[-1] < plain[0], plain  # it learns


def check_rmsnorm(device):
    """allreduce_rmsnorm on tensors of each norm dtype against a float64 reference; the residual exactly."""
    comm, failed = world(), []
    for dtype, rtol in ((torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)):
        # On one GPU group: (4, 1024) one kernel; (3, 1001), rows not a multiple of 16 bytes, and (64, 4096)
        # of float32, over the one-shot limit, take the allreduce and a norm kernel.
        for tokens, hidden in ((4, 1024), (3, 1001), (64, 4096)):
            xs = [rank_input(r, dtype, "sum", tokens * hidden).view(tokens, hidden) for r in range(comm.size)]
            res = rank_input(99, dtype, "sum", tokens * hidden).view(tokens, hidden)
            w = torch.linspace(-1, 1, hidden).to(dtype)
            r = (res.double() + torch.stack(xs).double().sum(0).to(dtype).double()).to(dtype).double()
            want = r / torch.sqrt((r * r).mean(-1, keepdim=True) + 1e-6) * w.double()
            x, res_d = xs[comm.rank].to(device), res.to(device)
            got = comm.allreduce_rmsnorm(x, w.to(device), eps=1e-6, residual=res_d)
            if not torch.allclose(got.cpu().double(), want, rtol=rtol, atol=rtol):
                failed.append("%s %dx%d: out off by %g" % (dtype, tokens, hidden,
                                                          (got.cpu().double() - want).abs().max()))
            if not torch.equal(res_d.cpu(), r.to(dtype)):
                failed.append("%s %dx%d: residual" % (dtype, tokens, hidden))
    assert not failed, failures_message(failed)
