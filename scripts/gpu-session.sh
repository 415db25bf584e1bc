#!/usr/bin/env bash
# Runs on the GPU machine, inside an unpacked and built release tarball:
# GPU tests (one and two ranks per GPU, the latter under CUDA MPS), the
# benchmark eager and in CUDA graphs against NCCL and MPI, and
# compute-sanitizer on a small run.  Logs go to $1 (default ./gpu-logs).
set -u
out=${1:-gpu-logs}
mkdir -p "$out"
# A bug that deadlocks a kernel should cost seconds, not the default 10 minutes.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HIAR_TIMEOUT_MS=${HIAR_TIMEOUT_MS:-20000}
ngpu=$(nvidia-smi -L | wc -l)
run() { # name, then the command
    local name=$1
    shift
    echo "== $name: $*" | tee -a "$out/summary.txt"
    timeout 150 "$@" >>"$out/$name.log" 2>&1
    local rc=$?
    tail -n 3 "$out/$name.log" | tee -a "$out/summary.txt"
    echo "-> exit $rc" | tee -a "$out/summary.txt"
}
mpi="mpirun --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x HIAR_TIMEOUT_MS"
{ nvidia-smi topo -m; ./bench/hiar-info; } >"$out/machine.txt" 2>&1
run test-np$ngpu $mpi -np "$ngpu" ./tests/gpu/test_gpu
run bench-eager $mpi -np "$ngpu" ./bench/hiar-bench -m device -d bfloat16 -o sum -b 1K -e 1G -f 4 -n 20 -w 5
run bench-graph $mpi -np "$ngpu" ./bench/hiar-bench -m device -d bfloat16 -o sum -b 1K -e 4M -f 4 -n 50 -w 10 --graph
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
run test-np$((2 * ngpu))-mps $mpi -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np $((2 * ngpu)) ./tests/gpu/test_gpu --quick
echo quit | nvidia-cuda-mps-control
run sanitizer $mpi -np "$ngpu" compute-sanitizer --tool memcheck ./bench/hiar-bench --impl hiar -m device -b 1K -e 1M -f 16 -n 2 -w 1
run sanitizer $mpi -np "$ngpu" compute-sanitizer --tool racecheck ./bench/hiar-bench --impl hiar -m device -b 1K -e 256K -f 16 -n 2 -w 1
