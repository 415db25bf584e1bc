# shellcheck shell=bash
# Sourced by the scripts/gpu-*.sh (with $out set): their one way to run a step.
#
#   gpu_run NAME SECONDS FILTER COMMAND...
#
# runs COMMAND, at most SECONDS, into $out/NAME.log under a "== COMMAND"
# line (also in $out/summary.txt), then appends to the summary what
# `FILTER FILE` prints of this command's output alone (each script's own
# choice of lines: several commands share a log) and the exit status.
# Returns COMMAND's status.  The log is written as the command runs, so a
# command cut off by an outer bound leaves what it printed.
gpu_run() {
    local log=$out/$1.log secs=$2 filter=$3 rc start
    shift 3
    echo "== $*" | tee -a "$out/summary.txt" >>"$log"
    start=$(stat -c %s "$log")
    timeout "$secs" "$@" >>"$log" 2>&1
    rc=$?
    "$filter" <(tail -c +$((start + 1)) "$log") | tee -a "$out/summary.txt"
    echo "-> exit $rc" | tee -a "$out/summary.txt"
    return $rc
}

#   gpu_marked_tree
#
# A tree built with the kernels' phase marks (doc/testing.md:
# CPPFLAGS=-DHIAR_KERNEL_MARKS) from the release tarball
# this one came from (MARKS_TAR, default .dev/go.sh's copy), once per machine
# start: its top directory, /tmp/hiar-marks/src.  Returns 1 if it cannot build.
gpu_marked_tree() {
    local marked=/tmp/hiar-marks tarball=${MARKS_TAR:-/tmp/hiar-built.tar.gz}
    if [ ! -x "$marked/src/bench/hiar-bench" ]; then
        rm -rf "$marked" && mkdir -p "$marked/src" && tar xzf "$tarball" -C "$marked/src" --strip-components=1 &&
            (cd "$marked/src" && ./configure --with-cuda-arch=90 --without-criterion \
                CPPFLAGS=-DHIAR_KERNEL_MARKS && make -j16) >"$out/marks-build.log" 2>&1 ||
            { echo "marks build failed (marks-build.log)" | tee -a "$out/summary.txt"; return 1; }
    fi
    echo "$marked/src"
}

#   gpu_mps_restart
#
# Stops the CUDA MPS daemon, waits (5 s at most) for it to leave, and starts
# it again: a run killed by its bound, or one that failed, can leave MPS
# unable to create contexts for the next (seen: cuCtxCreate failing in the
# next MPI_Init, 2026-12-06).
gpu_mps_restart() {
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
    for _ in 1 2 3 4 5; do pgrep -x nvidia-cuda-mps >/dev/null || break; sleep 1; done
    nvidia-cuda-mps-control -d
}
