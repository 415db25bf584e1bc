"""A plain runner for machines without pytest: python3 -m hiar_tests [MODULE...].

Runs the test_* functions of each module (default: all) in file order and
ends with "rankR: N passed, N failed, N skipped"; exit 1 on a failure.
"""
import importlib
import sys
import traceback
import unittest

MODULES = ["test_api", "test_numpy", "test_torch_cpu", "test_gpu"]


def _run_module(name, counts, rank):
    try:
        mod = importlib.import_module("hiar_tests." + name)
    except unittest.SkipTest as e:
        print("rank%s: SKIP %s: %s" % (rank, name, e), flush=True)
        counts["skipped"] += 1
        return
    tests = [(n, f) for n, f in vars(mod).items() if n.startswith("test_") and callable(f)]
    tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
    for n, f in tests:
        try:
            f()
            counts["passed"] += 1
        except unittest.SkipTest as e:
            print("rank%s: SKIP %s.%s: %s" % (rank, name, n, e), flush=True)
            counts["skipped"] += 1
        except Exception:
            print("rank%s: FAIL %s.%s\n%s" % (rank, name, n, traceback.format_exc()), flush=True)
            counts["failed"] += 1


def main(argv):
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.rank
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for name in argv or MODULES:
        _run_module(name[:-3] if name.endswith(".py") else name, counts, rank)
    print("rank%s: %d passed, %d failed, %d skipped" % (rank, counts["passed"], counts["failed"], counts["skipped"]),
          flush=True)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
