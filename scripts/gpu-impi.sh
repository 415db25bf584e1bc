#!/usr/bin/env bash
# Issue 17 on the GPU machine with Intel MPI's CUDA offload (a CUDA-aware MPI)
# instead of the installed Open MPI: the tree scripts/impi-build built
# against it on the CPU machine, from $DEV (.dev: impi.tar.xz and
# impi-build.tar.xz), 4 ranks as 2 simulated hosts of 2 under CUDA MPS
# (started by go.sh), I_MPI_OFFLOAD=1 throughout.
#     bash .dev/go.sh gpu-impi.sh [PART...]     (default: staged device noipc bench)
#   staged  test_gpu --quick, HIAR_MPI_DEVICE=0 (pieces through pinned host memory)
#   device  test_gpu --quick --verbose, HIAR_MPI_DEVICE=1 (device pointers to MPI)
#   noipc   device with I_MPI_OFFLOAD_IPC=0 (Intel MPI moves device buffers without CUDA IPC)
#   bench   hiar-bench --split at 16-64 MB: staged, device pointers, and device pointers without IPC
# Logs and summary.txt go to $1 (go.sh's $OUT).
set -u
out=${1:?usage: gpu-impi.sh OUTDIR [PART...]}
shift
parts=${*:-staged device noipc bench}
dev=${DEV:?gpu-impi.sh runs from .dev/go.sh, which sets DEV}
say() { echo "$*" | tee -a "$out/summary.txt"; }
. "$(dirname "$0")/gpu-lib.sh"
rm -rf /tmp/impi /tmp/impi-src && mkdir -p /tmp/impi &&
    tar xJf "$dev/impi.tar.xz" -C /tmp/impi && tar xJf "$dev/impi-build.tar.xz" -C /tmp ||
    { say "no Intel MPI build in $dev: run scripts/impi-build on the CPU machine"; exit 1; }
[ "$(cat /tmp/impi-src/.dist-sha256 2>/dev/null)" = "$(sha256sum <"$(ls "$dev"/hiar-*.tar.gz | head -1)" | cut -d' ' -f1)" ] ||
    { say "the Intel MPI build in $dev is of another tarball: run scripts/impi-build again"; exit 1; }
libcuda=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
[ -n "$libcuda" ] || say "no libcuda.so.1 in ldconfig: Intel MPI's offload may not find the driver"
export I_MPI_ROOT=/tmp/impi/impi
export PATH=$I_MPI_ROOT/bin:$PATH LD_LIBRARY_PATH=/tmp/impi-src/.libs:$I_MPI_ROOT/lib
export I_MPI_OFFLOAD=1 I_MPI_OFFLOAD_MODE=cuda I_MPI_OFFLOAD_CUDA_LIBRARY=$libcuda I_MPI_FABRICS=shm
export I_MPI_HYDRA_BOOTSTRAP=fork NCCL_NVLS_ENABLE=0
cd /tmp/impi-src || exit 1
say "== Intel MPI with CUDA offload (libcuda $libcuda); hiar-info:"
timeout 60 mpiexec -n 1 ./bench/hiar-info --build 2>&1 | grep -E '^  MPI' | tee -a "$out/summary.txt"
# What each run's summary keeps: the verdicts and table rows, and the first lines of a stall or a crash
# (read once: gpu_run hands over a pipe).
outcome() {
    local text
    text=$(cat "$1")
    grep -E '^np=|passed|^ +[0-9]+ ' <<<"$text"
    grep -v -E '^ok:' <<<"$text" | grep -E 'want|pieces arrived|Fatal|signal' | head -8 | cut -c1-240
}
run() { # log name, bound in seconds, then mpiexec's arguments; MPS afresh after each run
    gpu_run "$1" "$2" outcome mpiexec -n 4 "${@:3}"
    gpu_mps_restart
}
quick="scripts/as-hosts ./tests/gpu/.libs/test_gpu --quick"
bench="scripts/as-hosts ./bench/.libs/hiar-bench -m device -d bfloat16 -o sum --impl hiar,mpi --split -b 16M -e 64M -f 4"
for p in $parts; do
    case $p in
    staged) run staged 200 -genv HIAR_MPI_DEVICE 0 $quick ;;
    device) run device 200 -genv HIAR_MPI_DEVICE 1 -genv HIAR_TIMEOUT_MS 10000 $quick --verbose ;;
    noipc) run noipc 200 -genv I_MPI_OFFLOAD_IPC 0 -genv HIAR_MPI_DEVICE 1 -genv HIAR_TIMEOUT_MS 10000 $quick --verbose ;;
    bench)
        run bench-staged 120 -genv HIAR_MPI_DEVICE 0 $bench
        run bench-device 120 -genv HIAR_MPI_DEVICE 1 $bench --mpi-device
        run bench-noipc 120 -genv I_MPI_OFFLOAD_IPC 0 -genv HIAR_MPI_DEVICE 1 $bench --mpi-device
        ;;
    *) say "unknown part $p (staged, device, noipc, bench)" ;;
    esac
done
