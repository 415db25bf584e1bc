#!/usr/bin/env bash
# Sanitizer stages of CI (.ci/run runs them after the plain test suite):
#
#   asan      a copy of the source tree, configured --without-cuda with
#             -fsanitize=address,undefined, built, and its whole `make check`
#             run: the host path, every MPI test, the unit tests.  (CUDA
#             under ASan is another matter; the GPU side has compute-sanitizer.)
#   valgrind  memcheck over the Criterion unit tests of the plain build
#             (./tests/unit/test_unit, built by `make check`): every test but
#             the table-driven ones of reduce and pcitopo, whose 200 instances
#             (a process each) would take about five minutes under valgrind on
#             2 cores; the ASan stage runs them all.  HIAR_VALGRIND_ALL=1 runs
#             everything.
#   tsan      the progress engine's test (tests/unit/test_progress: its
#             thread, slots and flags over a fake port, no MPI, no GPU)
#             built with -fsanitize=thread and run 3 times: races between
#             the engine's thread and the callers show up here.
#
#   bash tests/sanitize.sh [DIR]      (default build-san; run from a built tree)
#
# Each stage writes DIR/summary-<stage>.log ("# PASS: N" ...) for .ci/run.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-san}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

summary() { # stage pass fail skip
    printf '# PASS: %d\n# FAIL: %d\n# SKIP: %d\n' "$2" "$3" "$4" >"$dir/summary-$1.log"
}

# Open MPI leaks at exit by design: no leak checks under mpirun.  Tests that
# LD_PRELOAD libhiar_mpi.so put it before the ASan runtime, which ASan refuses
# unless told.  A UB report stops the program.
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

stage_asan() {
    local tree=$dir/src flags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
    echo "== asan: copy the source tree to $tree"
    sh "$src/tests/copy-tree.sh" "$src" "$tree"
    case $? in
    0) ;;
    77)
        echo "SKIP: not a git checkout (the copy takes git's list of files)"
        summary asan 0 0 1
        return 0
        ;;
    *) return 1 ;;
    esac
    echo "== asan: configure --without-cuda CFLAGS=\"$flags\""
    (cd "$tree" && autoreconf -fi >/dev/null 2>&1 &&
        ./configure -q --without-cuda --enable-werror CFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined") ||
        return 1
    echo "== asan: build"
    make -C "$tree" -s -j"$(nproc)" >"$dir/asan-build.log" 2>&1 || { tail -30 "$dir/asan-build.log"; return 1; }
    echo "== asan: make check"
    make -C "$tree" -j"$(nproc)" check >"$dir/asan-check.log" 2>&1
    local rc=$?
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' "$dir/asan-check.log"
    if [ -f "$tree/test-suite.log" ]; then
        awk '/^# PASS:/{p=$3} /^# FAIL:/{f+=$3} /^# XPASS:/{f+=$3} /^# ERROR:/{f+=$3} /^# SKIP:/{s=$3}
             END{printf "# PASS: %d\n# FAIL: %d\n# SKIP: %d\n", p, f, s}' "$tree/test-suite.log" >"$dir/summary-asan.log"
        [ $rc -eq 0 ] || grep -E "^(FAIL|ERROR|XPASS):" "$tree/test-suite.log" | head
        [ $rc -eq 0 ] || grep -h -B2 -A25 'ERROR: AddressSanitizer\|runtime error:' "$tree"/tests/*/*.log | head -80
    fi
    return $rc
}

stage_valgrind() {
    local unit=$src/tests/unit/test_unit logs=$dir/valgrind rc=0 errors
    # Criterion's patterns have no top-level '|': one run per pattern.
    local filters=('!(reduce|pcitopo)/*' 'reduce/!(matches_reference|dst_aliases_a_source)'
        'pcitopo/!(level|rank_order|busid|bad_input)')
    [ "${HIAR_VALGRIND_ALL:-0}" = 1 ] && filters=('*')
    if ! command -v valgrind >/dev/null || [ ! -x "$unit" ]; then
        echo "SKIP: valgrind or $unit missing (apt-get install valgrind; build with Criterion)"
        summary valgrind 0 0 1
        return 0
    fi
    rm -rf "$logs" && mkdir -p "$logs"
    : >"$dir/valgrind.log"
    for filter in "${filters[@]}"; do
        echo "== valgrind: memcheck over the unit tests $filter"
        # Criterion runs each test in a fresh process (re-executed): follow them,
        # one log per process.  Its verdict ignores valgrind's: read the logs.
        (cd "$src" && valgrind --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite \
            --track-origins=yes --log-file="$logs/vg.%p.log" "$unit" --filter "$filter" -j"$(nproc)" \
            >>"$dir/valgrind.log" 2>&1) || rc=$?
        tail -1 "$dir/valgrind.log"
    done
    errors=$(grep -l 'ERROR SUMMARY: [1-9]' "$logs"/vg.*.log 2>/dev/null)
    if [ $rc -ne 0 ] || [ -n "$errors" ]; then
        [ -n "$errors" ] && head -60 $errors
        echo "FAIL: valgrind (status $rc; $(echo "$errors" | grep -c .) processes with errors, logs in $logs)"
        summary valgrind 0 1 0
        return 1
    fi
    echo "PASS: valgrind, $(ls "$logs" | wc -l) processes without errors"
    summary valgrind 1 0 0
}

stage_tsan() {
    local exe=$dir/test_progress_tsan cc=${MPICC:-mpicc} fails=0
    command -v "$cc" >/dev/null || cc=cc
    echo "== tsan: the progress engine's test under ThreadSanitizer"
    # base/error.c includes mpi.h, hence mpicc; nothing here calls MPI.
    if ! "$cc" -std=c11 -D_GNU_SOURCE -DHIAR_TEST_NO_MPI -g -O1 -fsanitize=thread -I"$src/src" -I"$src" -I. \
        "$src/src/net/progress.c" "$src/src/base/error.c" "$src/src/base/log.c" "$src/src/base/param.c" \
        "$src/tests/unit/test_progress.c" -o "$exe" -pthread \
        >"$dir/tsan-build.log" 2>&1; then
        cat "$dir/tsan-build.log"
        echo "FAIL: tsan build"
        summary tsan 0 1 0
        return 1
    fi
    for run in 1 2 3; do
        TSAN_OPTIONS=halt_on_error=1:exitcode=66 timeout 120 "$exe" >"$dir/tsan-$run.log" 2>&1 || {
            grep -A30 'WARNING: ThreadSanitizer' "$dir/tsan-$run.log" | head -60
            tail -5 "$dir/tsan-$run.log"
            fails=$((fails + 1))
        }
    done
    if [ $fails -ne 0 ]; then
        echo "FAIL: tsan ($fails of 3 runs)"
        summary tsan 0 1 0
        return 1
    fi
    echo "PASS: tsan, 3 runs without a race"
    summary tsan 1 0 0
}

status=0
rm -f "$dir"/summary-*.log
stage_asan || status=1
[ -f "$dir/summary-asan.log" ] || summary asan 0 1 0
stage_valgrind || status=1
stage_tsan || status=1
exit $status
