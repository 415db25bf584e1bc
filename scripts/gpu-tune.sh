#!/usr/bin/env bash
# Issue 19 on the GPU machine (16 cores), from an unpacked and built release
# tarball: tuning at creation, host buffers (the device candidates are not
# built yet).  For 2, 3 and 4 ranks in one group, and 4 as two groups (0,1|2,3):
#   1. hiar-bench -m host --tune: the table and the chosen limit ('*'), the
#      time it took; the cache goes to $OUT/cache-NAME.txt
#   2. tuned against built-in side by side: hiar-bench -m host over the ladder
#      with HIAR_TUNE=0 and HIAR_TUNE=auto (the cache of 1), alternated 3
#      times; per size the best of each and tuned/built-in (the issue wants
#      none above 1.03)
#   3. tests/mpi/tune-np2.test and tune-np4.test
# Logs go to $1 (default ./gpu-logs); summary.txt has the lines that matter.
set -u
out=${1:-gpu-logs}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HIAR_TIMEOUT_MS=${HIAR_TIMEOUT_MS:-20000}
bench() { # NP GROUPS then hiar-bench's options
    local np=$1 groups=$2
    shift 2
    HIAR_GROUPS=$groups timeout 150 mpirun --oversubscribe --bind-to none -np "$np" -x HIAR_GROUPS -x HIAR_TUNE \
        -x HIAR_TUNE_CACHE -x HIAR_TIMEOUT_MS ./bench/hiar-bench "$@"
}
for c in "2 " "3 " "4 " "4 0,1|2,3"; do
    np=${c%% *} groups=${c#* }
    name=np$np${groups:+-groups}
    export HIAR_TUNE_CACHE=$out/cache-$name.txt
    echo "== $name: hiar-bench -m host --tune" | tee -a "$out/summary.txt"
    HIAR_TUNE=1 bench "$np" "$groups" -m host --tune >"$out/tune-$name.log" 2>&1
    grep -E "tuning|^ +[0-9]+ |bytes|WARN" "$out/tune-$name.log" | tee -a "$out/summary.txt"
    for i in 1 2 3; do
        for t in 0 auto; do
            HIAR_TUNE=$t bench "$np" "$groups" -m host --impl hiar -b 256 -e 1M -f 4 -n 200 -w 20 --csv \
                2>>"$out/side-$name.log" | sed "s/^/$t,/" >>"$out/side-$name.csv"
        done
    done
    # tune,size_bytes,count,dtype,op,impl,time_us,...: the best time per size of each, and their ratio.
    printf "  %10s %12s %12s %8s\n" bytes "built-in us" "tuned us" ratio | tee -a "$out/summary.txt"
    awk -F, '$2 ~ /^[0-9]+$/ { k = $1 SUBSEP $2; if (!(k in best) || $7 + 0 < best[k]) best[k] = $7 + 0; sizes[$2] = 1 }
        END { for (s in sizes) { b = best["0" SUBSEP s]; t = best["auto" SUBSEP s]
                  printf "  %10s %12.2f %12.2f %8.3f%s\n", s, b, t, t / b, (t / b > 1.03 ? "  SLOWER" : "") } }' \
        "$out/side-$name.csv" | sort -n | tee -a "$out/summary.txt"
done
unset HIAR_TUNE_CACHE
for t in tune-np2 tune-np4; do
    echo "== tests/mpi/$t.test" | tee -a "$out/summary.txt"
    env srcdir=. top_builddir=. MPIRUN=mpirun sh tests/mpi/$t.test >"$out/$t.log" 2>&1
    echo "-> exit $?; $(grep -c '^PASS' "$out/$t.log") PASS, $(grep -c '^FAIL' "$out/$t.log") FAIL" | tee -a "$out/summary.txt"
done
