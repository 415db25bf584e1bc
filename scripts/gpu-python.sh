#!/bin/sh
# The Python package on a GPU machine, from a built tree (e.g. the release
# tarball's root after ./configure && make):
#   scripts/gpu-python.sh OUT [train_ddp.py options, e.g. --width 256 --steps 10]
#
# 2 ranks (on one GPU they need CUDA MPS: set CUDA_MPS_PIPE_DIRECTORY and
# CUDA_MPS_LOG_DIRECTORY, which every rank gets): tests/python's GPU tests
# (tests/python/gpu-np2.test), then bench/train_ddp.py, 50 steps of gloo, the
# hiar hook, the bf16 hook and NCCL (where each rank has its own GPU), the
# hiar run's loss curve held to 1e-4 of gloo's.  Logs in OUT; about 2
# minutes on one H200.  PYTHON: the interpreter (default python3).
set -u
out=${1:?usage: scripts/gpu-python.sh OUT [train_ddp.py options]}
shift
mkdir -p "$out" || exit 1
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
mps=
for v in CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; do
    eval "[ -n \"\${$v:-}\" ]" && mps="$mps -x $v"
done
HIAR_TEST_MPIRUN_ARGS=$mps
export HIAR_TEST_MPIRUN_ARGS
status=0
echo "== GPU tests (tests/python/hiar_tests/test_gpu.py), 2 ranks"
timeout 200 sh tests/python/run.sh 2 --gpu test_gpu >"$out/python-gpu.log" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
grep -E "passed|failed|SKIP|Error" "$out/python-gpu.log"
echo "== bench/train_ddp.py, 2 ranks"
# single_copy_mechanism none: containers often forbid the CMA copies vader uses (as tests/mpi/mpirun.sh).
# shellcheck disable=SC2086
PYTHONPATH=$PWD/python HIAR_LIBRARY=$PWD timeout 200 mpirun --bind-to none --mca btl_vader_single_copy_mechanism none \
    $mps -x PYTHONPATH -x HIAR_LIBRARY \
    -np 2 "${PYTHON:-python3}" bench/train_ddp.py --runs gloo,hiar,hiar-bf16,nccl --steps 50 --tol 1e-4 \
    "$@" >"$out/train_ddp.log" 2>&1 || status=1
tail -8 "$out/train_ddp.log"
echo "status $status"
exit $status
