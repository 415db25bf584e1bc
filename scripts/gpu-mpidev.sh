#!/usr/bin/env bash
# Issue 17 item 3 on the GPU machine, from an unpacked and built release
# tarball: what HIAR_MPI_DEVICE=auto says, and why, 2 ranks each,
#   a. under the installed Open MPI as it is (expected: no, pml ob1);
#   b. with --mca pml ucx and LD_LIBRARY_PATH to the CUDA UCX (libucx-cu13)
#      unpacked from the tarball $1 (shared/tools/cuda-mpi/pack.sh makes it:
#      pkgs/ucx-cu13-1.22.0-trim.tar.xz) (expected: yes, pml ucx and UCX's
#      cuda transport loaded);
#   c. b with UCX_TLS=sm,self,tcp (expected: no, UCX_TLS leaves out cuda_copy);
#   d. b with HIAR_MPI_DEVICE=0 (expected: no, forced).
# hiar-info --build prints the line; tests/mpi/test_allreduce (where built:
# make check builds it) prints hiar_comm_describe's.  CUDA MPS variables
# are passed on where set.
#     bash scripts/gpu-mpidev.sh /path/to/ucx-cu13-1.22.0-trim.tar.xz [outdir]
# Logs go to outdir (default $OUT, else ./gpu-logs); summary.txt has the lines that matter.
set -u
tarball=${1:?usage: gpu-mpidev.sh UCX-TARBALL [OUTDIR]}
out=${2:-${OUT:-gpu-logs}}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
say() { echo "$*" | tee -a "$out/summary.txt"; }

work=${HIAR_MPIDEV_WORK:-/tmp/hiar-mpidev}
mkdir -p "$work"
tar xJf "$tarball" -C "$work" || { say "cannot unpack $tarball"; exit 1; }
ucx=$work/ucx-cu13/libucx/lib
say "== UCX from $tarball ($ucx):"
LD_LIBRARY_PATH=$ucx "$work/ucx-cu13/libucx/bin/ucx_info" -v 2>&1 | head -2 | tee -a "$out/summary.txt"
LD_LIBRARY_PATH=$ucx "$work/ucx-cu13/libucx/bin/ucx_info" -d 2>&1 | tee "$out/ucx_info.log" |
    grep -E 'Transport: cuda|memory types:.*cuda' | sort | uniq -c | tee -a "$out/summary.txt"
say "== $(ompi_info --version 2>/dev/null | head -1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"

mps=
for v in CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; do
    [ -n "${!v:-}" ] && mps="$mps -x $v"
done
ucx_args=(-x "LD_LIBRARY_PATH=$ucx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)

case_run() { # name, then extra mpirun arguments
    local name=$1
    shift
    say "-- $name: mpirun $*"
    # shellcheck disable=SC2086
    timeout 120 mpirun --oversubscribe --bind-to none -np 2 $mps "$@" ./bench/hiar-info --build \
        >"$out/$name.log" 2>&1
    say "   exit $?"
    grep -E 'device pointers|Segmentation|signal' "$out/$name.log" | sed 's/^/   /' | tee -a "$out/summary.txt"
    if [ -x tests/mpi/test_allreduce ]; then
        # shellcheck disable=SC2086
        timeout 300 mpirun --oversubscribe --bind-to none -np 2 $mps "$@" ./tests/mpi/test_allreduce --no-big \
            --orders=world >"$out/$name-describe.log" 2>&1
        say "   test_allreduce exit $?: $(grep -E '^np=' "$out/$name-describe.log" | tail -1)"
        grep -E 'device pointers' "$out/$name-describe.log" | sed 's/^/   /' | tee -a "$out/summary.txt"
    fi
}
case_run a-as-installed
case_run b-pml-ucx "${ucx_args[@]}"
case_run c-pml-ucx-no-cuda-tls "${ucx_args[@]}" -x UCX_TLS=sm,self,tcp
case_run d-pml-ucx-forced-0 "${ucx_args[@]}" -x HIAR_MPI_DEVICE=0
say "== done"
