#!/usr/bin/env bash
# Issue 22 on a machine with a GPU per rank (NCCL refuses ranks that share a
# GPU), from an unpacked and built release tarball: hiar side by side with
# NCCL in one run each, bf16 sum.
#   sym      one group: hiar, plain NCCL and NCCL on symmetric memory
#            (--impl nccl-sym), eager 1K-1G and in CUDA graphs 1K-256M
#   pinned   hiar's pinned-host transport forced (HIAR_PINNED=1) against
#            NCCL through host memory (NCCL_P2P_DISABLE=1: its SHM transport)
#   decode   fused allreduce + RMSNorm against NCCL + the same norm kernel
#   train    DDP's 8 buckets of 25 MB beside backward kernels (hiar, NCCL,
#            MPI), and bench/train_ddp.py (gloo, hiar, NCCL)
#   mps      2 ranks a GPU under CUDA MPS (rank r on GPU r % ngpu), as a
#            group per GPU (its two ranks: 0,2|1,3 on 2 GPUs) and as two
#            groups, the first and second halves of the ranks, against MPI;
#            and the NCCL columns' n/a (ranks share GPUs)
# $2 picks the parts (default all of them, more than one 10-minute call of
# the device tool: pass one or two per call).  Logs go to $1 (default
# ./gpu-logs); summary.txt has the commands and the tables' rows; the exit
# status is the first failed command's (0: none).  CUDA MPS is stopped
# first (go.sh starts it): NCCL runs as it would in a job, not as an MPS
# client; the mps part starts and stops its own.
set -u
out=${1:-gpu-logs}
parts=${2:-sym pinned decode train mps}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HIAR_TIMEOUT_MS=${HIAR_TIMEOUT_MS:-20000}
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
. "$(dirname "$0")/gpu-lib.sh"
ngpu=$(nvidia-smi -L | wc -l)
if [ "$ngpu" -lt 2 ]; then
    echo "gpu-nccl.sh: $ngpu GPU(s): NCCL needs a GPU per rank, at least 2 (the nvidia-h200-x2 machine)" |
        tee -a "$out/summary.txt"
    exit 1
fi
rows() { grep -E "^ +[0-9]+ |n/a:|wrong|hiar-bench:|# train:|^ *(hiar|mpi|nccl)|^\| " "$1" | tail -n 40; }
status=0
run() { # log name, then the command
    local rc=0
    gpu_run "$1" 300 rows "${@:2}" || rc=$?
    [ $status -ne 0 ] || status=$rc
}
# The rank lists of the mps part: n ranks (rank r on GPU r % ngpu) as a group per GPU, and as two halves.
per_gpu_groups() {
    local n=$1 g r groups=""
    for ((g = 0; g < ngpu; g++)); do
        local members=""
        for ((r = g; r < n; r += ngpu)); do members+="${members:+,}$r"; done
        groups+="${groups:+|}$members"
    done
    echo "$groups"
}
halves() {
    local n=$1 r a="" b=""
    for ((r = 0; r < n; r++)); do
        if [ $r -lt $((n / 2)) ]; then a+="${a:+,}$r"; else b+="${b:+,}$r"; fi
    done
    echo "$a|$b"
}
echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 && sleep 1
mpi="mpirun --bind-to none -x NCCL_NVLS_ENABLE -x HIAR_TIMEOUT_MS"
bench="./bench/hiar-bench -m device -d bfloat16 -o sum"
{ nvidia-smi topo -m; ./bench/hiar-info --topo; } >"$out/machine.txt" 2>&1

for part in $parts; do
    case $part in
    sym)
        run sym $mpi -np "$ngpu" $bench --impl hiar,nccl,nccl-sym -b 1K -e 4M -f 4 -n 300 -w 30
        run sym $mpi -np "$ngpu" $bench --impl hiar,nccl,nccl-sym -b 16M -e 1G -f 4 -n 20 -w 5
        run sym $mpi -np "$ngpu" $bench --impl hiar,nccl,nccl-sym -b 1K -e 256M -f 4 -n 100 -w 10 --graph
        ;;
    pinned)
        run pinned $mpi -np "$ngpu" -x HIAR_PINNED=1 -x NCCL_P2P_DISABLE=1 $bench --impl hiar,nccl -b 1K -e 256M -f 4 -n 50 -w 5
        run pinned $mpi -np "$ngpu" -x HIAR_PINNED=1 -x NCCL_P2P_DISABLE=1 $bench --impl hiar,nccl -b 1K -e 256K -f 4 -n 100 -w 10 --graph
        ;;
    decode)
        run decode $mpi -np "$ngpu" $bench --impl hiar,nccl --decode -n 200 -w 20
        ;;
    train)
        run train $mpi -np "$ngpu" $bench --impl hiar,nccl,mpi --train --buckets 8 --bucket-bytes 25M
        run train $mpi -np "$ngpu" "${PYTHON:-python3}" bench/train_ddp.py --runs gloo,hiar,nccl --steps 50
        ;;
    mps)
        mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
        nvidia-cuda-mps-control -d
        mps_mpi="$mpi --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np $((2 * ngpu))"
        for g in "$(per_gpu_groups $((2 * ngpu)))" "$(halves $((2 * ngpu)))"; do
            run mps $mps_mpi -x HIAR_GROUPS="$g" $bench --impl hiar,mpi --split -b 1K -e 256M -f 4 -n 20 -w 5
        done
        # NCCL's columns where ranks share GPUs: n/a with the reason, the other columns kept
        run mps $mps_mpi $bench --impl hiar,nccl,nccl-sym -b 1K -e 1M -f 16 -n 20 -w 5
        echo quit | nvidia-cuda-mps-control
        sleep 1
        ;;
    *) echo "gpu-nccl.sh: unknown part '$part' (expected sym, pinned, decode, train or mps)" >&2; exit 2 ;;
    esac
done
exit $status
