"""torch CPU tensors through hiar's host path: every dtype incl. bf16 and fp16, the DDP hooks, and a
DDP model trained with the hiar hook against the same model without it (gloo)."""
from . import skip

try:
    import torch
except ImportError:
    skip("torch is not importable (not in Debian; its wheel is GBs of CUDA): the torch tests need it")

from . import _torch_cases as cases


def test_every_dtype_and_op():
    cases.run_matrix("cpu", [0, 1, 7, 1000, 40000])


def test_non_contiguous_refused():
    cases.expect_refused("cpu")


def test_allreduce_rmsnorm():
    cases.check_rmsnorm("cpu")


def test_hooks_average_the_bucket():
    cases.check_hooks("cpu")


def test_ddp_with_the_hook_matches_ddp_without():
    cases.check_ddp("cpu")
