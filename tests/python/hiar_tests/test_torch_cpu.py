"""torch CPU tensors through hiar's host path: every dtype incl. bf16 and fp16, the DDP hooks, and a
DDP model trained with the hiar hook against the same model without it (gloo)."""
from . import skip

try:
    import torch
except ImportError:
    skip("torch is not importable (not in Debian; its wheel is GBs of CUDA): the torch tests need it")

from . import _torch_cases as cases
from . import world


def test_every_dtype_and_op():
    cases.run_matrix("cpu", [0, 1, 7, 1000, 40000])


def test_non_contiguous_refused():
    cases.expect_refused("cpu")


def test_hooks_average_the_bucket():
    cases.check_hooks("cpu")


def test_ddp_with_the_hook_matches_ddp_without():
    import torch.distributed as dist

    import hiar.torch

    train = cases.train_ddp().train
    if not dist.is_initialized():
        hiar.torch.init_process_group("gloo")
    plain, _ = train(None, "cpu", steps=10)
    hooked, _ = train((world(), hiar.torch.allreduce_hook), "cpu", steps=10)
    assert torch.allclose(hooked, plain, rtol=1e-5, atol=1e-6), (hooked, plain)
    assert plain[-1] < plain[0], plain  # it learns
