#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time:
#   bash tests/fuzz/run.sh [WORKDIR] [SECONDS]     (default build-san/fuzz, 20 s each)
#
#   fuzz_params   the parameter parser (hiar_params_load with settings, hiar_param_parse)
#   fuzz_groups   the HIAR_GROUPS parser (hiar_grouping_parse)
#   fuzz_sysfs    the sysfs PCI reader (hiar_pci_locate over a tree the input describes)
#   fuzz_tune_cache  the tuning cache reader (hiar_tune_cache_read of a file the input is)
# FUZZ_TARGETS="fuzz_tune_cache ..." runs only those.
#
# Seeds: tests/fuzz/corpus/<target>/; what a run finds is kept in WORKDIR, not
# in the source tree.  A crash leaves its input as WORKDIR/crash-<target>-*:
# reproduce it with WORKDIR/<target> FILE.  Writes WORKDIR/summary.log
# ("# PASS: N" etc., one target each) for .ci/run.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-build-san/fuzz}
seconds=${2:-20}
mkdir -p "$work"
work=$(cd "$work" && pwd)
targets="${FUZZ_TARGETS:-fuzz_params fuzz_groups fuzz_sysfs fuzz_tune_cache}"
pass=0 fail=0 skip=0

summary() {
    printf '# PASS: %d\n# FAIL: %d\n# SKIP: %d\n' "$pass" "$fail" "$skip" >"$work/summary.log"
    echo "fuzz: $pass passed, $fail failed, $skip skipped"
}

CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; return (int)n * 0; }' |
    "$CLANG" -x c -fsanitize=fuzzer -o "$work/probe" - 2>/dev/null; then
    echo "SKIP: no clang with libFuzzer (apt-get install clang)"
    skip=$(echo "$targets" | wc -w)
    summary
    exit 0
fi
# hiar.h includes mpi.h; error.c calls MPI_Error_string.
mpi_cflags=$(mpicc --showme:compile 2>/dev/null) || mpi_cflags=
mpi_libs=$(mpicc --showme:link 2>/dev/null) || mpi_libs=-lmpi
# Sources that include config.h get an empty one: none of what they fuzz depends on the build's options.
: >"$work/config.h"
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Wall -Wextra -Werror -I$work -I$src/src -I$src/tests/fuzz $mpi_cflags"
common="$src/src/base/error.c $src/src/base/log.c $src/src/base/param.c $src/src/base/settings.c"
declare -A sources=(
    [fuzz_params]="$common"
    [fuzz_groups]="$common $(ls $src/src/topo/*.c | grep -v nvml.c | tr "\n" " ")"
    [fuzz_sysfs]="$common $src/src/topo/pci.c"
    [fuzz_tune_cache]="$common $src/src/base/dtype.c $src/src/core/tune_cache.c"
)
# The parameter names, from the one list of them.
sed -n 's/^HIAR_PARAM(\([A-Z_]*\),.*/"HIAR_\1="/p' "$src/src/base/params.def" >"$work/fuzz_params.dict"
printf '%s\n' '";"' '"="' '"K"' '"M"' '"G"' '"iB"' '"auto"' '"global"' '"TRACE"' '"^"' >>"$work/fuzz_params.dict"
cp "$src/tests/fuzz/groups.dict" "$work/fuzz_groups.dict"
cp "$src/tests/fuzz/sysfs.dict" "$work/fuzz_sysfs.dict"
# The cache's keys and path names.
printf '%s\n' '"version "' '"signature "' '"shm_oneshot_max "' '"hier_oneshot_max "' '"measured_s "' '"device "' \
    '"device-graph "' '"ipc-ll"' '"ipc-push"' '"ipc-pull"' '"ipc-twoshot"' '"ipc-twoshot-half"' '"ipc-twoshot-double"' \
    '"flat"' '"hier"' '"hier-half"' '"hier-double"' '"pinned"' '"builtin"' '" ladder=11"' '"0.1.0"' >"$work/fuzz_tune_cache.dict"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for t in $targets; do
    corpus=${t#fuzz_}
    echo "== $t: build"
    # shellcheck disable=SC2086
    if ! "$CLANG" $flags -o "$work/$t" "$src/tests/fuzz/$t.c" ${sources[$t]} $mpi_libs; then
        echo "FAIL: $t does not build"
        fail=$((fail + 1))
        continue
    fi
    echo "== $t: ${seconds} s from the seeds in tests/fuzz/corpus/$corpus"
    mkdir -p "$work/corpus-$corpus"
    # Files a target writes go in a folder of its own, removed after it even where it stopped on a finding.
    tdir=$(mktemp -d "${TMPDIR:-/tmp}/hiar-$t.XXXXXX")
    TMPDIR=$tdir "$work/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -dict="$work/$t.dict" -artifact_prefix="$work/crash-$t-" \
        "$work/corpus-$corpus" "$src/tests/fuzz/corpus/$corpus" >"$work/$t.log" 2>&1
    rc=$?
    rm -rf "$tdir"
    if [ $rc -eq 0 ]; then
        echo "PASS: $t ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$') runs)"
        pass=$((pass + 1))
    else
        tail -40 "$work/$t.log"
        echo "FAIL: $t found a problem; its input is in $work/crash-$t-*"
        fail=$((fail + 1))
    fi
done
summary
[ "$fail" -eq 0 ]
