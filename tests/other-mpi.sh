#!/usr/bin/env bash
# The test suite under another MPI than the one the main build uses: MPICH
# (its ABI is Intel MPI's, MVAPICH's and Cray MPICH's, its launcher Hydra)
# from PyPI's mpich wheel, a copy of the tree (tests/copy-tree.sh: a
# configured tree refuses VPATH builds) built --without-cuda in DIR/src
# (default build-mpich) and its whole `make check` (host buffers).  What it
# guards: hiar's code for MPI handles and launchers that are not Open MPI's
# (hiar_comm_create_f, tests/mpi/mpirun.sh's Hydra branch, the tests' rank
# variables; doc/testing.md, "Under another MPI").  Without the wheel (no
# PyPI, MPICH_WHEEL unset) it leaves a log of one skip.  Run by .ci/run.
#     bash tests/other-mpi.sh [DIR]       (MPICH_WHEEL=path/to/mpich-*.whl to skip the download)
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD dir=${1:-build-mpich} version=5.0.2 wheel=${MPICH_WHEEL:+$(realpath "$MPICH_WHEEL")}
rm -rf "$dir" && mkdir -p "$dir/whl" && cd "$dir" || exit 1
skip() {
    echo "SKIP: $*"
    printf '# TOTAL: 1\n# PASS:  0\n# SKIP:  1\n# FAIL:  0\n' >test-suite.log
    exit 0
}
if [ -z "$wheel" ]; then
    timeout 300 python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
        -d whl "mpich==$version" >pip.log 2>&1 || skip "cannot download the mpich $version wheel (pip.log)"
    wheel=$(ls whl/mpich-*.whl)
fi
# Unpacked, not installed: Debian's Python refuses pip installs outside a virtual environment.
python3 -m zipfile -e "$wheel" wheel && prefix=$(ls -d "$PWD"/wheel/mpich-*.data/data) ||
    skip "cannot unpack $wheel"
chmod +x "$prefix"/bin/*
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$prefix/bin/mpiexec" --version | head -2
sh "$top/tests/copy-tree.sh" "$top" src
case $? in 0) ;; 77) skip "$top is not a git checkout (the copy takes git's list of files)" ;; *) exit 1 ;; esac
(cd src && autoreconf -fi >/dev/null 2>&1 &&
    ./configure --without-cuda --without-criterion --enable-werror CC="$prefix/bin/mpicc" \
        MPICC="$prefix/bin/mpicc" MPIRUN="$prefix/bin/mpiexec") >configure.log 2>&1 ||
    { tail -20 configure.log; exit 1; }
make -C src -j"$(nproc)" >make.log 2>&1 || { tail -20 make.log; exit 1; }
make -C src -j"$(nproc)" check >check.log 2>&1
rc=$?
grep -E '^(FAIL|ERROR|XPASS)' check.log
# The stage's counts where .ci/run sums them.
cp src/test-suite.log . 2>/dev/null
grep -E '^# (TOTAL|PASS|SKIP|FAIL|XFAIL|XPASS|ERROR):' test-suite.log
exit $rc
