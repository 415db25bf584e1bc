#!/usr/bin/env bash
# The step between hosts (issue 17) on a GPU machine: ranks under CUDA MPS
# as 2 simulated hosts (scripts/as-hosts: HIAR_HOST_ID by rank), so the
# groups span "hosts" and their step goes over MPI, on the progress thread
# (HIAR_PROGRESS=auto) or on the calling thread (HIAR_PROGRESS=0).
#   [UCX_TAR=ucx-cu13-1.22.0-trim.tar.xz] bash scripts/gpu-hosts.sh OUT [replays|tests|bench|ucx|marks|hostmarks|latency[-tests|-bench]|perhost[-tests|-bench]|alone[-onehost|-three|-hosts|-bench|-many|-many-more|-many-bench]|all]
# Writes OUT/summary.txt and a log per part; run from a built tree.
set -u
out=${1:?usage: gpu-hosts.sh OUT [PART], the parts above}
part=${2:-all}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
. "$(dirname "$0")/gpu-lib.sh"
outcome() { grep -E "passed|FAIL|PASS|Avg bus|^ *hiar " "$1" | tail -n 3; }
run() { # log name, then the command
    gpu_run "$1" "${HIAR_RUN_TIMEOUT:-240}" outcome "${@:2}"
}
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
mpi="mpirun --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
m4="$mpi -np 4"
as=scripts/as-hosts
bench="./bench/hiar-bench -m device -d bfloat16 -o sum"
tests_part() {
    run tests $m4 $as ./tests/gpu/test_gpu --replays 1000
    run tests $m4 $as ./tests/gpu/test_gpu --quick
    # 3 hosts of 2 ranks: pieces from 2 peers each, laid out at the kernel's stride.
    run tests $mpi -np 6 -x HIAR_RANKS_PER_HOST=2 $as ./tests/gpu/test_gpu --quick
    run tests $m4 -x HIAR_DEBUG=INFO -x HIAR_DEBUG_SUBSYS=MPI $as ./tests/mpi/test_rmsnorm --device
    run tests $m4 -x HIAR_GROUPS="0|1,2,3" -x HIAR_BETWEEN=mpi ./tests/gpu/test_gpu --quick
    run tests bash tests/gpu/kill.sh $m4 $as
    ls /dev/shm | tee -a "$out/summary.txt"
}
# --split's 16-256 MB ratios in -n auto's rounds (the columns in turn, each its median round): with -n 5 one
# after the other, the link column at 16 MB moved 1824-2683 us between runs of one machine start (2026-12-06) and
# hiar / max(intra, link) 1.06-1.51.
bench_part() {
    run bench $m4 $as $bench --impl hiar,mpi -b 64K -e 64M -f 4 -n 10 -w 2 --overlap
    run bench $m4 $as $bench --impl hiar,mpi --split -b 16M -e 256M -f 4
    run bench $m4 -x HIAR_TIMEOUT_MS=30000 $as $bench --impl hiar,mpi --split -b 1K -e 4M -f 4 -n 20 -w 5
    run bench $m4 -x HIAR_PROGRESS=0 $as $bench --impl hiar --split -b 16M -e 256M -f 4
    run bench $m4 $as $bench --impl hiar -b 1K -e 64M -f 4 -n 50 -w 5 --graph
}
# Groups on several hosts, as many on each (issue 16, item 4): each host's owners of a shard reduce-scatter it on
# the GPU, only the parts cross between hosts. 2 hosts of 2 groups of 2 ranks, 3 hosts of 2 such groups.
# (Groups of one rank each: alone_onehost and alone_hosts below.)
perhost_tests() {
    run perhost $mpi -np 8 -x HIAR_RANKS_PER_HOST=4 -x HIAR_GROUPS="0,1|2,3|4,5|6,7" $as \
        ./tests/gpu/test_gpu --quick --per-host
    HIAR_RUN_TIMEOUT=400 run perhost $mpi -np 12 -x HIAR_RANKS_PER_HOST=4 -x HIAR_GROUPS="0,1|2,3|4,5|6,7|8,9|10,11" \
        $as ./tests/gpu/test_gpu --quick --per-host
    run perhost bash tests/gpu/kill.sh $mpi -np 8 -x HIAR_RANKS_PER_HOST=4 -x HIAR_GROUPS="0,1|2,3|4,5|6,7" $as
}
# Side by side: the same comm with every group over MPI (HIAR_BETWEEN=mpi, as before), eager and graphs.
# A stall reports within 20 s (where each job's pieces stood), and CUDA MPS restarts after a failed run: a job
# whose kernels timed out can leave it refusing the next one ("device busy").
perhost_bench() {
    local b="$bench --impl hiar -b 1K -e 64M -f 4 -n 20 -w 3"
    for groups in "8 0,1|2,3|4,5|6,7 4"; do
        set -- $groups
        for between in auto mpi; do
            for g in "" --graph; do
                run perhost $mpi -np $1 -x HIAR_RANKS_PER_HOST=$3 -x HIAR_GROUPS="$2" -x HIAR_BETWEEN=$between \
                    -x HIAR_TIMEOUT_MS=20000 $as $b $g || gpu_mps_restart
            done
        done
    done
}
# Every rank alone in its group (core/plan.c hiar_plan_alone_over_mpi): over one host the step between groups
# on the GPU (2 and 3 ranks), between 2 hosts of one rank the progress thread; HIAR_ALGO forced (twoshot, pull)
# included, whose graphs were refused before the fix of 2026-12-05. Then the bench and the training step with
# 2 ms kernels (before: 165.8 ms staged and blocking, 60.4 on the progress thread, one H100).
alone_onehost() {
    run alone $mpi -np 2 -x HIAR_GROUPS="0|1" ./tests/gpu/test_gpu --quick
    # Without the group over the host: the kernel over groups with groups of one (hier_ll, group.n = 1).
    run alone $mpi -np 2 -x HIAR_GROUPS="0|1" -x HIAR_FLAT=0 ./tests/gpu/test_gpu --quick
    alone_three
}
# Three ranks alone on one host: the kernels between groups (capturable; with HIAR_BETWEEN=mpi the progress
# thread over a link of 3).
alone_three() {
    run alone $mpi -np 3 -x HIAR_GROUPS="0|1|2" ./tests/gpu/test_gpu --quick
}
# A rank per host on more than 2 hosts (landed 2026-12-05, first run 2026-12-06): the progress thread in rounds
# over the prime factors of the ranks (core/hosts.c; 3: one round of 3, 4: two of 2, 6: 2 then 3; small messages
# on 4 and more in one job over every rank since 2026-12-06), capturable;
# 5 ranks stay on staged MPI (captures refused). alone-many: 3 and 4 hosts (ALONE_RANKS: others, e.g. 6);
# alone-many-more: 5 hosts, graphs replayed and a killed rank on 4; alone-many-bench: on 4, the bench against
# MPI, --overlap and the training step with 2 ms kernels.
alone_many() {
    local n
    for n in ${ALONE_RANKS:-3 4}; do
        run alone $mpi -np $n -x HIAR_RANKS_PER_HOST=1 $as ./tests/gpu/test_gpu --quick
    done
}
alone_many_more() {
    run alone $mpi -np 5 -x HIAR_RANKS_PER_HOST=1 $as ./tests/gpu/test_gpu --quick
    alone_graphs_kill 4 200
}
alone_many_bench() {
    run alone $mpi -np 4 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar,mpi -b 1K -e 64M -f 8 -n 10 -w 2
    run alone $mpi -np 4 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar -b 64K -e 64M -f 4 -n 10 -w 2 --overlap
    run alone $mpi -np 4 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar,mpi --train --buckets 8 --bucket-bytes 25M \
        --compute-us 2000
}
# N hosts of one rank: graphs replayed R times, a killed rank, what is left in /dev/shm.
alone_graphs_kill() {
    run alone $mpi -np $1 -x HIAR_RANKS_PER_HOST=1 $as ./tests/gpu/test_gpu --replays $2
    run alone bash tests/gpu/kill.sh $mpi -np $1 -x HIAR_RANKS_PER_HOST=1 $as
    ls /dev/shm | tee -a "$out/summary.txt"
}
alone_hosts() {
    run alone $mpi -np 2 -x HIAR_RANKS_PER_HOST=1 $as ./tests/gpu/test_gpu --quick
    alone_graphs_kill 2 1000
}
alone_bench() {
    run alone $mpi -np 2 -x HIAR_GROUPS="0|1" $bench --impl hiar,mpi -b 1K -e 64M -f 8 -n 20 -w 3
    run alone $mpi -np 2 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar,mpi -b 1K -e 64M -f 8 -n 10 -w 2
    run alone $mpi -np 2 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar -b 1K -e 64M -f 8 -n 20 -w 3 --graph
    run alone $mpi -np 2 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar -b 64K -e 64M -f 4 -n 10 -w 2 --overlap
    run alone $mpi -np 2 -x HIAR_RANKS_PER_HOST=1 $as $bench --impl hiar --train --buckets 8 --bucket-bytes 25M \
        --compute-us 2000
}
# Where a call between hosts spends its time on the calling thread (issue 17: --overlap 63-87 us on one H100,
# goal 50; 1 KB 49 us against staged MPI's 33): the call marks (HIAR_CALL_MARKS=1, doc/testing.md) of
# --overlap at each size, of 1 KB and of 64 KB, rank 0's per comm; then --overlap without them beside.
marks_part() {
    local m="$m4 -x HIAR_CALL_MARKS=1 -x HIAR_DEBUG=INFO -x HIAR_DEBUG_SUBSYS=CALL" s
    for s in 64K 16M 64M; do
        run marks $m $as $bench --impl hiar -b $s -e $s -n 10 -w 2 --overlap
    done
    for s in 1K 64K; do
        run marks $m $as $bench --impl hiar -b $s -e $s -n 50 -w 5
    done
    # 50 calls a size: the median and the most beside the mean (a few slow launches moved a mean of 10).
    run marks $m4 $as $bench --impl hiar -b 64K -e 64M -f 4 -n 50 -w 2 --overlap
    # The reduce-scatter's launch took 5.9 us a call at 64 KB and 13 at 16-64 MB under --overlap (the
    # stream waiting 5 ms on a host word ahead of the call; at 16-64 MB 17-26 on the next machine start),
    # 3.9 in plain 1 KB calls (fifteenth session): whether programmatic dependent launch (its attribute lets
    # the kernel be scheduled before what is ahead on the stream ends) is part of that cost, with and
    # without it, under --overlap and plain.
    run marks $m -x HIAR_PDL=0 $as $bench --impl hiar -b 16M -e 16M -n 10 -w 2 --overlap
    run marks $m -x HIAR_PDL=0 $as $bench --impl hiar -b 1K -e 1K -n 50 -w 5
    run marks $m4 -x HIAR_PDL=0 $as $bench --impl hiar -b 64K -e 64M -f 4 -n 50 -w 2 --overlap
    # Each block under its command line: sizes and HIAR_PDL tell them apart.
    grep -h -e '^== ' -e "call marks, rank 0" "$out/marks.log" | tee -a "$out/summary.txt"
}
# Where a 16-64 MB call between hosts spends what --split shows beyond the link column's time (issue 17: 1.45
# and 1.29 of it at 16 and 64 MB, fifteenth session; the engine alone keeps up with MPI, a CPU experiment of
# 2026-12-06): the hosts kernel's phase marks (block 0: turn, copy out, wire, reduce, the whole kernel) in a
# marked tree, one size a comm, beside the same sizes' --split in the tree as it is.
hostmarks_part() {
    local tree s
    tree=$(gpu_marked_tree) || return 1
    for s in 16M 64M; do
        run hostmarks $m4 $as $bench --impl hiar --split -b $s -e $s -n 10 -w 2
        run hostmarks $m4 -x HIAR_DEBUG=INFO -x HIAR_DEBUG_SUBSYS=MPI $as "$tree/bench/hiar-bench" -m device \
            -d bfloat16 -o sum --impl hiar --split -b $s -e $s -n 10 -w 2
    done
    grep -h -e '^== ' -e "kernel marks, hosts:" "$out/hostmarks.log" | tee -a "$out/summary.txt"
    grep -q "kernel marks, hosts:" "$out/hostmarks.log" ||
        echo "FAIL: no hosts kernel marks (the step between hosts not on the engine, or a tree without marks)" |
        tee -a "$out/summary.txt"
}
# Small messages between hosts on their latency path (ipc-hosts-ll, core/plan.c; landed 2026-12-05, first run
# 2026-12-06): test_gpu --quick on 2 hosts of 2 (the default comm takes it, a HIAR_ALGO=hier comm the three steps)
# and 3 hosts of 2; then the bench with it and with the three steps (HIAR_ALGO=hier), eager against MPI, in
# graphs and --overlap, up to 256 KB (its limit: 64 KB for groups of 2).
latency_tests() {
    run latency $m4 $as ./tests/gpu/test_gpu --quick
    run latency $mpi -np 6 -x HIAR_RANKS_PER_HOST=2 $as ./tests/gpu/test_gpu --quick
}
latency_bench() {
    local a
    for a in auto hier; do
        run latency $m4 -x HIAR_ALGO=$a $as $bench --impl hiar,mpi -b 1K -e 256K -f 2 -n 100 -w 10
        run latency $m4 -x HIAR_ALGO=$a $as $bench --impl hiar -b 1K -e 256K -f 4 -n 100 -w 10 --graph
        run latency $m4 -x HIAR_ALGO=$a $as $bench --impl hiar -b 1K -e 256K -f 4 -n 50 -w 2 --overlap
    done
}
# The MPI on device memory: Open MPI with --mca pml ucx over the CUDA UCX unpacked from $UCX_TAR.
ucx_part() {
    [ -n "${UCX_TAR:-}" ] || { echo "ucx: skipped, no UCX_TAR (the CUDA UCX tarball)" | tee -a "$out/summary.txt"; return 0; }
    mkdir -p /tmp/hiar-ucx && tar xJf "$UCX_TAR" -C /tmp/hiar-ucx
    local lib=/tmp/hiar-ucx/ucx-cu13/libucx/lib
    local u="$m4 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-}"
    # HIAR_MPI_DEVICE=1: the step between hosts hands MPI device pointers only when forced (core/gpu.c: graphs
    # pass, back-to-back calls stalled here). The bench first: a job whose ranks time out can leave CUDA MPS
    # refusing the next one ("device busy"). -o avg: the inter column's MPI_Allreduce stays staged (Open MPI's
    # collectives crash on device memory).
    run ucx $u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 $as ./bench/hiar-bench -m device -d bfloat16 -o avg \
        --impl hiar --mpi-device --split -b 16M -e 256M -f 4 -n 5 -w 1
    HIAR_RUN_TIMEOUT=90 run ucxdiag $u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 -x UCX_LOG_LEVEL=warn $as \
        ./tests/gpu/test_gpu --replays 1
    # The MPI alone: device messages while a kernel spins (PYTHON: an interpreter with CuPy and mpi4py).
    HIAR_RUN_TIMEOUT=60 run ucxspin ${u/-np 4/-np 2} "${PYTHON:-python3}" scripts/mpi-device-spin.py 4096 4112 8208 65536
    # The quick suite, whose back-to-back stress stalled a piece: as it is, without cuda_ipc, without rendezvous
    # (every message eager), and with UCX's debug log kept only for its late CUDA calls (what it sets up lazily).
    # --verbose: the case after the last "ok:" line is the one that stalled.
    HIAR_RUN_TIMEOUT=120 run ucx $u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 $as ./tests/gpu/test_gpu --quick --verbose
    # The same on a non-blocking stream: UCX 1.22's libuct_cuda imports cuMemcpyHtoD_v2, a synchronous copy
    # that waits for the legacy default stream, where test_gpu's calls (and hiar's kernels that wait for
    # the pieces that copy delivers) run by default; hiar-bench, on a non-blocking stream, passes.
    HIAR_RUN_TIMEOUT=120 run ucx $u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 $as ./tests/gpu/test_gpu --quick --stream
    HIAR_RUN_TIMEOUT=120 run ucxdiag $u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 -x UCX_TLS=self,sm,cuda_copy \
        $as ./tests/gpu/test_gpu --quick
    HIAR_RUN_TIMEOUT=120 run ucxdiag $u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 -x UCX_RNDV_THRESH=inf \
        $as ./tests/gpu/test_gpu --quick
    HIAR_RUN_TIMEOUT=120 run ucxdebug sh -c "$u -x HIAR_MPI_DEVICE=1 -x HIAR_TIMEOUT_MS=15000 -x UCX_LOG_LEVEL=debug \
        $as ./tests/gpu/test_gpu --quick 2>&1 | grep -E 'FAIL|passed|cuMem|cuIpc|regist|mpool' | tail -n 400"
}
case $part in
replays) run tests $m4 $as ./tests/gpu/test_gpu --replays 1000 ;;
tests) tests_part ;;
bench) bench_part ;;
ucx) ucx_part ;;
perhost) perhost_tests; perhost_bench ;;
perhost-tests) perhost_tests ;;
perhost-bench) perhost_bench ;;
marks) marks_part ;;
hostmarks) hostmarks_part ;;
latency) latency_tests; latency_bench ;;
latency-tests) latency_tests ;;
latency-bench) latency_bench ;;
alone) alone_onehost; alone_hosts; alone_bench ;;
alone-onehost) alone_onehost ;;
alone-three) alone_three ;;
alone-many) alone_many ;;
alone-many-more) alone_many_more ;;
alone-many-bench) alone_many_bench ;;
alone-hosts) alone_hosts ;;
alone-bench) alone_bench ;;
*) tests_part; perhost_tests; alone_onehost; alone_hosts; bench_part; ucx_part ;;
esac
echo quit | nvidia-cuda-mps-control
