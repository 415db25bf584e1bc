#!/usr/bin/env python3
"""Data-parallel training under mpirun: DDP's gradients through hiar against gloo and NCCL.

    mpirun -np 2 python3 bench/train_ddp.py [--runs gloo,hiar,nccl] [--steps 50] [--device cuda]

Each run trains the same model (an MLP of pre-norm residual blocks, from
torch.nn) from the same seed on the same synthetic data (a fixed random
teacher; each rank its own batches), so the runs differ only in how DDP
averages the gradients:

| run       | DDP's process group | gradients averaged by                         |
| --------- | ------------------- | --------------------------------------------- |
| gloo      | gloo                | gloo (DDP's default hook)                      |
| hiar      | gloo                | hiar.torch.allreduce_hook (HIAR_AVG)           |
| hiar-fp16 | gloo                | hiar.torch.fp16_compress_hook                  |
| hiar-bf16 | gloo                | hiar.torch.bf16_compress_hook                  |
| nccl      | nccl                | NCCL (one rank per GPU only: else skipped)     |

Rank 0 prints, per run, the step time (median and mean after --warmup
steps, each step ending with a device synchronize) and the loss (the mean
over the ranks) of the first and last step, and the largest relative
difference of its loss curve from the first run's; --tol makes a larger one
than that fail the job (exit 1; the compressed runs are not held to it).
torch.distributed starts from MPI (hiar.torch.init_process_group).
"""
import argparse
import statistics
import sys
import time

from mpi4py import MPI

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import hiar
import hiar.torch

HOOKS = {"hiar": hiar.torch.allreduce_hook, "hiar-fp16": hiar.torch.fp16_compress_hook,
         "hiar-bf16": hiar.torch.bf16_compress_hook}


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


def make_model(width, depth):
    return nn.Sequential(*[Block(width) for _ in range(depth)], nn.LayerNorm(width), nn.Linear(width, width))


def batches(rank, steps, batch, width, seed, device):
    """This rank's inputs and the teacher's targets, the same for every run."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(width, width, generator=g) / width**0.5
    g.manual_seed(seed * 1000 + rank + 1)
    xs = [torch.randn(batch, width, generator=g) for _ in range(steps)]
    return [(x.to(device), torch.tanh(x @ teacher).to(device)) for x in xs]


def train(hook, device, steps, width=64, depth=2, batch=32, seed=0, process_group=None, lr=0.05):
    """Trains from `seed`; returns the loss per step (mean over the ranks) and the step times in seconds.

    hook: None (DDP's own averaging) or (state, hook) for register_comm_hook.
    """
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(seed)
    model = make_model(width, depth).to(device)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None, process_group=process_group)
    if hook is not None:
        ddp.register_comm_hook(*hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    data = batches(dist.get_rank(), steps, batch, width, seed, device)
    losses, times = [], []
    for x, y in data:
        start = time.perf_counter()
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
        losses.append(loss.detach())
    curve = torch.stack(losses).double().cpu()
    dist.all_reduce(curve)  # over the default (gloo) group, after the timed steps
    return curve / dist.get_world_size(), times


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", default="gloo,hiar,nccl", help="comma-separated: gloo, hiar, hiar-fp16, hiar-bf16, nccl")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the step time")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--tol", type=float, default=None, help="fail when a run's loss curve differs more (relative)")
    p.add_argument("--print-losses", action="store_true", help="every step's loss, a line per run")
    return p.parse_args(argv)


def nccl_missing(device):
    """Why NCCL cannot run here, or None."""
    if device.type != "cuda" or not dist.is_nccl_available():
        return "no CUDA device or no NCCL in this torch"
    local = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    ranks, local_size = local.size, torch.cuda.device_count()
    local.Free()
    if ranks > local_size:
        return "%d ranks share %d GPU(s) on this host; NCCL takes one rank per GPU" % (ranks, local_size)
    return None


def main(argv):
    args = parse(argv)
    world = MPI.COMM_WORLD
    device = torch.device(args.device)
    if device.type == "cuda":
        local = world.Split_type(MPI.COMM_TYPE_SHARED)
        device = torch.device("cuda", local.rank % torch.cuda.device_count())
        local.Free()
        torch.cuda.set_device(device)  # before hiar.Comm: its device buffers are on this GPU
    hiar.torch.init_process_group("gloo")
    comm = hiar.Comm()
    shape = dict(width=args.width, depth=args.depth, batch=args.batch, seed=args.seed)
    results, status = [], 0
    for run in args.runs.split(","):
        if run == "nccl":
            why = nccl_missing(device)
            if why:
                if world.rank == 0:
                    print("nccl: skipped: %s" % why, flush=True)
                continue
            curve, times = train(None, device, args.steps, process_group=dist.new_group(backend="nccl"), **shape)
        elif run == "gloo":
            curve, times = train(None, device, args.steps, **shape)
        elif run in HOOKS:
            curve, times = train((comm, HOOKS[run]), device, args.steps, **shape)
        else:
            sys.exit("train_ddp.py: unknown run %r; expected gloo, nccl or %s" % (run, ", ".join(HOOKS)))
        results.append((run, curve, times[args.warmup:] or times))
    comm.close()
    if world.rank == 0:
        status = report(args, device, results)
    dist.destroy_process_group()
    return world.bcast(status)


def report(args, device, results):
    print("# %d ranks, %s, width %d, depth %d, batch %d per rank, %d steps (step time over steps %d..%d)"
          % (dist.get_world_size(), device, args.width, args.depth, args.batch, args.steps, args.warmup + 1,
             args.steps))
    print("%-10s %12s %12s %12s %12s %14s" % ("run", "median ms", "mean ms", "first loss", "last loss",
                                              "max rel diff"))
    status = 0
    first = results[0][1] if results else None
    for run, curve, times in results:
        diff = ((curve - first).abs() / first.abs()).max().item()
        print("%-10s %12.3f %12.3f %12.6f %12.6f %14.3e" % (run, 1e3 * statistics.median(times),
                                                            1e3 * statistics.mean(times), curve[0], curve[-1], diff))
        if args.print_losses:
            print("losses %s: %s" % (run, " ".join("%.8f" % v for v in curve.tolist())))
        if args.tol is not None and run not in ("hiar-fp16", "hiar-bf16") and diff > args.tol:
            print("FAIL: the loss curve of %s differs from %s's by %.3e > --tol %g" % (run, results[0][0], diff,
                                                                                      args.tol))
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
