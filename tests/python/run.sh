#!/bin/sh
# Runs Python test modules (hiar_tests/) under mpirun: run.sh NP [--torch|--gpu] MODULE...
#
# The Python is the first of $PYTHON, python3 and /usr/bin/python3 that
# imports numpy and mpi4py (and torch with --torch); scripts/quickstart
# installs Debian's python3-numpy, python3-mpi4py and python3-pytest.
# Without numpy and mpi4py: SKIP, but FAIL under CI (CI=true), which must
# run them; without torch, --torch and --gpu say SKIP for that reason, and
# --gpu also where torch sees no CUDA device.  pytest runs
# the modules where it is importable, else the plain runner (python -m
# hiar_tests).  The package is the tree's python/ over this build's libhiar.
np=$1
shift
need="numpy, mpi4py"
gpu=
case $1 in
--torch) need="$need, torch" && shift ;;
--gpu) need="$need, torch" gpu=1 && shift ;;
esac
srcdir=${srcdir:-.}
python=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c "import $need" 2>/dev/null; then
        python=$p
        break
    fi
done
if [ -z "$python" ]; then
    case $need in
    *torch*)
        echo "SKIP: torch is not importable by ${PYTHON:-} python3 /usr/bin/python3 (not in Debian; set PYTHON to one with torch)"
        exit 77
        ;;
    esac
    echo "no python3 imports $need (apt-get install python3-numpy python3-mpi4py python3-pytest)"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
if [ -n "$gpu" ] && ! "$python" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "SKIP: $python's torch sees no CUDA device"
    exit 77
fi
# Outside make check (which sets it): the mpirun on PATH.
MPIRUN=${MPIRUN:-mpirun}
export MPIRUN
src=$(cd "$srcdir" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
PYTHONPATH="$src/python:$src/tests/python${PYTHONPATH:+:$PYTHONPATH}"
HIAR_LIBRARY=${HIAR_LIBRARY:-$build/.libs/libhiar.so}
"${CONFIG_SHELL:-/bin/sh}" "$src/tests/python/same-mpi.sh" "$python" "$HIAR_LIBRARY" || exit 77
# A libhiar built with ASan (tests/sanitize.sh): its runtime preloaded into the
# ranks' Python, so that it sees every allocation from the start, not only
# those after ctypes loads libhiar (which verify_asan_link_order=0 allows).
asan=$(ldd "$HIAR_LIBRARY" 2>/dev/null | sed -n 's/^[[:space:]]*libasan[^ ]* => \([^ ]*\).*/\1/p')
[ -n "$asan" ] && HIAR_TEST_MPIRUN_ARGS="${HIAR_TEST_MPIRUN_ARGS:-} -x LD_PRELOAD=$asan"
export HIAR_TEST_MPIRUN_ARGS
# The source tree may be read-only (make distcheck): no __pycache__, no .pytest_cache.
PYTHONDONTWRITEBYTECODE=1
HIAR_TEST_TIMEOUT=${HIAR_TEST_TIMEOUT:-180}
export PYTHONPATH HIAR_LIBRARY PYTHONDONTWRITEBYTECODE HIAR_TEST_TIMEOUT
echo "python: $python ($("$python" -c 'import sys; print(sys.version.split()[0])'))"
if "$python" -c "import pytest" 2>/dev/null; then
    files=
    for m in "$@"; do files="$files $src/tests/python/hiar_tests/$m.py"; done
    # shellcheck disable=SC2086
    exec "${CONFIG_SHELL:-/bin/sh}" "$src/tests/mpi/mpirun.sh" "$np" "$python" -m pytest -q -p no:cacheprovider \
        --color=no -rs $files
fi
exec "${CONFIG_SHELL:-/bin/sh}" "$src/tests/mpi/mpirun.sh" "$np" "$python" -m hiar_tests "$@"
