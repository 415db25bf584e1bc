"""The API around allreduce: the enums against hiar.h, creation, errors, logging, describe, close."""
import logging
import os
import re

import hiar
from mpi4py import MPI

from . import skip, world

_HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "hiar.h")


def _header():
    path = os.environ.get("HIAR_TEST_HEADER", _HEADER)
    if not os.path.exists(path):
        skip("no src/hiar.h beside the tests (set HIAR_TEST_HEADER)")
    with open(path) as f:
        return f.read()


def _enum_names(text, first, last):
    """The names of a C enum from `first` to `last`, in order (their values)."""
    body = text[text.index(first):text.index(last)]
    return re.findall(r"HIAR_([A-Z0-9]+)\s*(?:=\s*0\s*)?,", body + ",")


def test_enums_match_the_header():
    text = _header()
    results = re.findall(r"X\(([A-Z_]+),", text[text.index("#define HIAR_RESULT_MAP"):])
    assert results == [r.name for r in hiar.Result], results
    assert _enum_names(text, "HIAR_INT32 = 0", "HIAR_DTYPE_COUNT") == [d.name for d in hiar.Dtype]
    assert _enum_names(text, "HIAR_SUM = 0", "HIAR_OP_COUNT") == [o.name for o in hiar.Op]
    version = re.search(r'#define HIAR_VERSION_STRING "([^"]+)"', text).group(1)
    assert hiar.library_version() == version == hiar.__version__


def test_rank_size_and_groups():
    comm = world()
    assert (comm.rank, comm.size) == (MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size)
    ngroups, group, local_rank, local_size = comm.group()
    # One host: one shared-memory group of every rank.
    assert (ngroups, group, local_rank, local_size) == (1, 0, comm.rank, comm.size)


def test_describe_returns_the_text():
    text = world().describe()
    assert text.startswith("hiar %s: %d ranks in 1 groups" % (hiar.__version__, MPI.COMM_WORLD.size)), text
    assert "group 0: ranks 0,1" in text and text.endswith("\n"), text


def test_sub_communicator():
    """A Comm over MPI odd/even halves sums over its half only (py2f handle of a split comm)."""
    world_rank = MPI.COMM_WORLD.rank
    half = MPI.COMM_WORLD.Split(world_rank % 2, world_rank)
    import numpy as np

    with hiar.Comm(half) as comm:
        x = np.full(10, world_rank + 1, dtype=np.int64)
        comm.allreduce(x)
        want = sum(r + 1 for r in range(MPI.COMM_WORLD.size) if r % 2 == world_rank % 2)
        assert (x == want).all(), (x, want)
        assert (comm.rank, comm.size) == (half.rank, half.size)
    assert comm.closed
    half.Free()


def test_fortran_handle():
    with hiar.Comm(MPI.COMM_WORLD.py2f()) as comm:
        assert comm.size == MPI.COMM_WORLD.size


def test_bad_comm():
    try:
        hiar.Comm("world")
        raise AssertionError("a string was taken as a communicator")
    except TypeError as e:
        assert "mpi4py communicator" in str(e)
    try:
        hiar.Comm(-1)
        raise AssertionError("Fortran handle -1 was taken")
    except hiar.Error as e:
        assert e.code == hiar.Result.INVALID_ARGUMENT and "Fortran handle" in str(e), e


def test_bad_settings_raise_with_the_detail():
    for settings in ("HIAR_ALGO=bogus", {"HIAR_ALGO": "bogus"}):
        try:
            hiar.Comm(settings=settings)
            raise AssertionError("HIAR_ALGO=bogus was taken")
        except hiar.Error as e:
            assert e.code == hiar.Result.INVALID_ARGUMENT, e
            assert "HIAR_ALGO" in e.detail and "HIAR_ALGO" in str(e) and "invalid argument" in str(e), e


def test_settings_reach_the_comm():
    with hiar.Comm(settings={"HIAR_ALGO": "mpi"}) as comm:
        assert "paths: mpi (HIAR_ALGO=mpi)" in comm.describe()


def test_log_lines_go_to_logging():
    if os.environ.get("HIAR_DEBUG", "").upper() not in ("INFO", "TRACE"):
        skip("HIAR_DEBUG is %r, not INFO" % os.environ.get("HIAR_DEBUG"))
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger, handler = logging.getLogger("hiar"), Keep()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # the root logger's WARNING would drop INFO before any handler
    try:
        hiar.Comm().close()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    shm = [r for r in records if r.name == "hiar.SHM" and r.levelno == logging.INFO]
    assert shm and " hiar INFO SHM " in shm[0].getMessage(), [r.getMessage() for r in records]
    if MPI.COMM_WORLD.rank == 0:
        init = [r.getMessage() for r in records if r.name == "hiar.INIT"]
        assert any("hiar %s: " % hiar.__version__ in m for m in init), init


def test_closed_comm_refuses_calls():
    import numpy as np

    comm = hiar.Comm()
    comm.close()
    comm.close()  # a no-op
    for call in (lambda: comm.allreduce(np.zeros(4)), comm.describe, comm.group, comm.async_error):
        try:
            call()
            raise AssertionError("a closed comm took a call")
        except ValueError as e:
            assert "closed" in str(e)


def test_async_error_is_success():
    assert world().async_error() == hiar.Result.SUCCESS
