#!/usr/bin/env bash
# Issue 20 on the GPU machine, from an unpacked and built release tarball,
# with CUDA MPS running (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY in
# the environment): libhiar_mpi.so on device buffers, 2 ranks on one GPU.
#   1. tests/pmpi/pmpi-device.test: every case against host references
#   2. the issue's bench command, bf16 (user op: forwarded, staged) and float32 (hiar)
#   3. MPI_Iallreduce of 16 MB beside a 5 ms kernel (tests/pmpi/pmpi_overlap), then
#      of sizes doubled until the allreduce alone takes as long as the kernel
#   4. per-call cost: hiar-bench --sync (mpi through the preload against
#      hiar_allreduce + cudaStreamSynchronize) and tests/pmpi/pmpi_cost.py
#      (mpi4py on torch CUDA tensors against hiar_allreduce by ctypes)
#   5. OSU's allreduce tests with validation, where OSU_TAR names their source
# Logs go to $1 (default ./gpu-logs); summary.txt has the lines that matter.
# $2: "osu" runs part 5 alone (default: all).
set -u
out=${1:-gpu-logs}
parts=${2:-all}
case $parts in all | osu) ;; *) echo "usage: $0 [OUT] [all|osu]" >&2; exit 2 ;; esac
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HIAR_TIMEOUT_MS=${HIAR_TIMEOUT_MS:-20000}
lib=$PWD/.libs/libhiar_mpi.so
mpi="mpirun --oversubscribe --bind-to none -np 2 -x HIAR_TIMEOUT_MS -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
. "$(dirname "$0")/gpu-lib.sh"
run() { # log name, grep pattern, then the command
    local pattern=$2
    gpu_run "$1" 150 matching "${@:3}"
}
matching() { grep -E "$pattern" "$1" | tail -n 30; }
if [ "$parts" = all ]; then
    run device 'passed|FAIL|expect|hiar-pmpi' env srcdir=. top_builddir=. MPIRUN=mpirun \
        HIAR_TEST_MPIRUN_ARGS="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY" sh tests/pmpi/pmpi-device.test
    for d in bfloat16 float32; do
        run bench '^ +[0-9]|Out of bounds|hiar-pmpi' $mpi -x LD_PRELOAD="$lib" -x HIAR_PMPI_STATS=1 \
            ./bench/hiar-bench -m device -d $d --impl hiar,mpi --mpi-device -b 1K -e 16M -n 20 -w 5
    done
    run overlap 'overlap|passed' $mpi -x LD_PRELOAD="$lib" ./tests/pmpi/pmpi_overlap
    # On one GPU 16 MB takes 0.14 ms beside 5 ms: sizes doubled until the allreduce alone is as long as the kernel.
    run overlap 'overlap|passed' $mpi -x LD_PRELOAD="$lib" ./tests/pmpi/pmpi_overlap --mb 64 --match
    # 2 ranks' two-shot kernels at their caps (132 blocks each of 512 threads x 64 registers) hold every register of
    # the GPU, so the one-block kernel waits for them: the same with 32 blocks a rank, which leave SMs to it.
    run overlap 'overlap|passed' $mpi -x LD_PRELOAD="$lib" -x HIAR_MAX_BLOCKS=32 ./tests/pmpi/pmpi_overlap --mb 64 --match
    run cost '^ +[0-9]|hiar-pmpi' $mpi -x LD_PRELOAD="$lib" -x HIAR_PMPI_STATS=1 \
        ./bench/hiar-bench -m device -d float32 --impl hiar,mpi --mpi-device --sync -b 1K -e 1M -f 4 -n 500 -w 50
    run cost '^ +[0-9]|hiar-pmpi' $mpi -x LD_PRELOAD="$lib" -x HIAR_PMPI_STATS=1 \
        ./bench/hiar-bench -m host -d float32 --impl hiar,mpi -b 1K -e 1M -f 4 -n 500 -w 50
    run cost '^ +[0-9]|bytes|wrong' $mpi -x LD_PRELOAD="$lib" python3 tests/pmpi/pmpi_cost.py "$PWD/.libs/libhiar.so" device
fi
# A suite nobody on the project wrote: OSU's osu_allreduce and osu_iallreduce with validation (-c), from
# OSU_TAR (an OSU micro-benchmarks source tarball with its configure generated: no libtool needed; 7.0's
# layout or 7.4's, whose programs lie in blocking/ and non_blocking/ and take -T for the datatype), on host
# buffers with and without the preload (no case may fail with it that passes without), and on device
# buffers (-d cuda) with it; without it Open MPI as installed cannot take device pointers.  7.4's default
# type, MPI_CHAR, fails its own check at 16 B in plain Open MPI (the preload forwards it): int and float.
if [ -z "${OSU_TAR:-}" ]; then
    echo "OSU_TAR unset: OSU's tests not run" | tee -a "$out/summary.txt"
else
    osu=/tmp/hiar-osu coll=/tmp/hiar-osu/c/mpi/collective
    rm -rf "$osu" && mkdir -p "$osu" && tar xzf "$OSU_TAR" -C "$osu" --strip-components=1
    # OSU 7.0-7.4 call cudaMemPrefetchAsync as before CUDA 13, which takes a cudaMemLocation and flags.
    sed -i 's|cudaMemPrefetchAsync(buf, length, devid, um_stream)|cudaMemPrefetchAsync(buf, length, (struct cudaMemLocation){.type = devid == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice, .id = devid}, 0, um_stream)|' \
        "$osu/c/util/osu_util_mpi.c"
    # The two programs alone: 7.4 keeps them in blocking/ and non_blocking/, 7.0 in collective/.
    (
        cd "$osu" && export PATH=/usr/local/cuda/bin:$PATH && CC=mpicc CXX=mpicxx ./configure --enable-cuda \
            --with-cuda=/usr/local/cuda || exit 1
        if [ -d "$coll/blocking" ]; then
            make -C "$coll/blocking" osu_allreduce && make -C "$coll/non_blocking" osu_iallreduce
        else
            make -C "$coll" osu_allreduce osu_iallreduce
        fi
    ) >"$out/osu-build.log" 2>&1 || echo "OSU build failed: $out/osu-build.log" | tee -a "$out/summary.txt"
    types=("")
    grep -q mpi_float "$osu/c/util/osu_util_options.h" 2>/dev/null && types=("-T mpi_float" "-T mpi_int")
    for t in osu_allreduce osu_iallreduce; do
        bin=$(find "$coll" -name $t -type f -perm -u+x | head -n 1)
        [ -n "$bin" ] || { echo "$t was not built" | tee -a "$out/summary.txt"; continue; }
        for type in "${types[@]}"; do
            # shellcheck disable=SC2086
            {
                run osu 'Pass|Fail|hiar-pmpi' $mpi "$bin" -c $type -m 4:4194304 -i 20 -x 5
                run osu 'Pass|Fail|hiar-pmpi' $mpi -x LD_PRELOAD="$lib" -x HIAR_PMPI_STATS=1 "$bin" -c $type \
                    -m 4:4194304 -i 20 -x 5
                run osu 'Pass|Fail|hiar-pmpi' $mpi -x LD_PRELOAD="$lib" -x HIAR_PMPI_STATS=1 "$bin" -c $type \
                    -d cuda -m 4:4194304 -i 20 -x 5
            }
        done
    done
fi
