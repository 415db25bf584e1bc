#!/usr/bin/env bash
# On the GPU machine: hiar-bench of two release tarballs side by side in one
# machine start (a change that must not move the numbers, and the build
# before it), and the GPU tests of the second.  One H200 is enough: 2 and 4
# ranks share it under CUDA MPS.  Every benchmark runs in the order before,
# after, after, before, so that a drift of the machine falls on both alike;
# a table shows each build's two runs.
#   bash scripts/gpu-compare.sh BEFORE.tar.gz AFTER.tar.gz OUT_DIR
set -u
before=$1 after=$2 out=$3
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 HIAR_TIMEOUT_MS=20000
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
work=${GPU_COMPARE_WORK:-$(mktemp -d)} # kept: the builds stay for more runs (not HIAR_*: hiar warns of unknown HIAR_ names)
build() { # name tarball
    mkdir -p "$work/$1" && tar xzf "$2" -C "$work/$1" && cd "$work/$1"/hiar-*/ &&
        ./configure --with-cuda-arch=90 --without-criterion && make -j8 &&
        make -j8 tests/gpu/test_gpu tests/pmpi/pmpi_device
}
build before "$before" >"$out/build-before.log" 2>&1 &
build after "$after" >"$out/build-after.log" 2>&1 &
wait
for v in before after; do
    built=$(ls "$work/$v"/hiar-*/tests/gpu/test_gpu 2>/dev/null | head -n 1) # one tarball a folder
    [ -n "$built" ] && [ -x "$built" ] || { echo "$v did not build"; tail -20 "$out/build-$v.log"; exit 1; }
done
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
mpi="mpirun --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x HIAR_TIMEOUT_MS -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
at() { # build, then the command, from that build's folder
    local v=$1
    shift
    (cd "$work/$v"/hiar-*/ && timeout 200 "$@")
}
log() { # file, title, then the command
    local f=$1 t=$2
    shift 2
    echo "== $t: $*" >>"$out/$f"
    "$@" >>"$out/$f" 2>&1
    echo "-> exit $?" >>"$out/$f"
}
cd /
# The tests of the change: 2 ranks (one group, two), 4 ranks in the groupings that break grouping code.
log tests.log after at after $mpi -np 2 ./tests/gpu/test_gpu
log tests.log after at after $mpi -np 2 -x HIAR_GROUPS="0|1" ./tests/gpu/test_gpu --quick
for g in "" "0,1|2,3" "0,2|1,3" "0|1,2,3"; do
    log tests.log after at after $mpi -np 4 -x HIAR_GROUPS="$g" ./tests/gpu/test_gpu --quick
done
log tests.log after at after env srcdir=. top_builddir=. MPIRUN=mpirun \
    HIAR_TEST_MPIRUN_ARGS="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY" sh tests/pmpi/pmpi-device.test
bench="./bench/hiar-bench -m device -d bfloat16 -o sum --impl hiar"
for np in 2 4; do
    for mode in "" --graph; do
        for v in before after after before; do
            log bench.log "$v np $np ${mode:-eager}" at $v $mpi -np $np $bench -b 1K -e 256K -f 4 -n 300 -w 30 $mode
            log bench.log "$v np $np ${mode:-eager}" at $v $mpi -np $np $bench -b 1M -e 256M -f 4 -n 20 -w 5 $mode
        done
    done
done
for v in before after after before; do
    log bench.log "$v np 4 groups 0,1|2,3 eager" at $v $mpi -np 4 -x HIAR_GROUPS="0,1|2,3" $bench -b 1K -e 256M -f 4 -n 20 -w 5
done
echo quit | nvidia-cuda-mps-control
grep -E "^== |passed|-> exit" "$out/tests.log" >"$out/summary.txt"
grep -cE "^-> exit [^0]" "$out/bench.log" | sed 's/^/benchmark runs that failed: /' >>"$out/summary.txt"
