#!/usr/bin/env bash
# Issue 17 item 4 on the GPU machine, from an unpacked and built release
# tarball: hiar-bench --split's link column on device buffers, 4 ranks on
# the GPU(s) under CUDA MPS as 2 simulated hosts (HIAR_HOST_ID), bf16 sum.
#   1. Open MPI as installed: hiar stages its shards through pinned host
#      memory, so the link column sends from pinned host memory.
#   2. With CUDA UCX (HIAR_CUDA_UCX=<dir of UCX's libs built with CUDA>, e.g.
#      /tmp/cudampi-gpu/ucx-cu13/libucx/lib after ../shared/tools/cuda-mpi/run.sh):
#      pml ucx, --mpi-device and HIAR_MPI_DEVICE=1, so the link column sends
#      from device memory.  -o avg there: Open MPI 4.1's collectives segfault
#      on device pointers, and AVG keeps the inter column's MPI_Allreduce
#      staged (it divides on the host) while the link's point-to-point takes
#      the device buffers.
#   3. --json-file of the same run and scripts/hiar-plot's SVG of it.
# Logs go to $1 (default ./gpu-logs); summary.txt has the tables.
set -u
out=${1:-gpu-logs}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HIAR_TIMEOUT_MS=${HIAR_TIMEOUT_MS:-20000}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
mpi="mpirun --oversubscribe --bind-to none -np 4 -x HIAR_TIMEOUT_MS -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
# Ranks 0,1 on host A, 2,3 on host B: hiar's step between them goes over MPI.
hosts='HIAR_HOST_ID=host$((OMPI_COMM_WORLD_RANK / 2)) exec "$@"'
bench="./bench/hiar-bench -m device -d bfloat16 --split -b 64K -e 256M -f 4 -n 20 -w 5"
. "$(dirname "$0")/gpu-lib.sh"
table() { grep -E '^# split: link|^#.*hiar/max|^ +[0-9]|Out of bounds|plot' "$1"; }
run() { # log name, then the command
    gpu_run "$1" 280 table "${@:2}"
}
run staged $mpi sh -c "$hosts" sh $bench --impl hiar,mpi -o sum --json-file "$out/staged.json"
python3 scripts/hiar-plot "$out/staged.json" "$out/staged.svg" && echo "plot: $out/staged.svg" | tee -a "$out/summary.txt"
if [ -n "${HIAR_CUDA_UCX:-}" ]; then
    ucx="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x LD_LIBRARY_PATH=$HIAR_CUDA_UCX:${LD_LIBRARY_PATH:-}"
    run device $mpi $ucx -x HIAR_MPI_DEVICE=1 sh -c "$hosts" sh $bench --impl hiar -o avg --mpi-device \
        --json-file "$out/device.json"
fi
echo quit | nvidia-cuda-mps-control
exit 0
