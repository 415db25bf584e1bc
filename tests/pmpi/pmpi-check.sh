#!/bin/sh
# pmpi-check.sh NP [ARGS...]: runs tests/pmpi/pmpi_host ARGS (a plain MPI
# program; HIAR_TEST_PROGRAM names another of the same kind, e.g.
# ./tests/pmpi/pmpi_nb) on NP ranks three times and compares them:
#   plain  without libhiar_mpi.so;
#   hiar   with it preloaded and HIAR_PMPI_STATS=1: the same result bits, and
#          the line "hiar-pmpi: N calls via hiar, M forwarded" has the counts
#          of the program's own "expect: N intercepted, M forwarded" line;
#   off    preloaded with HIAR_PMPI=0: the same bits, every call forwarded.
# HIAR_TEST_HOSTS=K puts world rank r on host r % K (HIAR_HOST_ID), so hiar
# reduces hierarchically: shared memory in each host, MPI between hosts.
if [ $# -lt 1 ]; then
    echo "usage: $0 NP [ARGS...]" >&2
    exit 99
fi
np=$1
shift
args="$*"
program=${HIAR_TEST_PROGRAM:-./tests/pmpi/pmpi_host}
srcdir=${srcdir:-.}
lib=$(cd "${top_builddir:-.}" && pwd)/.libs/libhiar_mpi.so
if [ ! -r "$lib" ]; then
    echo "FAIL: $lib is not built"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hiar-pmpi.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# launch NAME PRELOAD: the preload reaches the program alone, not the sh
# that sets the host id (mpirun.sh forwards every HIAR_* variable).
launch() {
    if [ "$2" = 1 ]; then
        HIAR_TEST_PRELOAD=$lib
        export HIAR_TEST_PRELOAD
    else
        unset HIAR_TEST_PRELOAD
    fi
    echo "== $1 (np=$np${HIAR_TEST_HOSTS:+, $HIAR_TEST_HOSTS hosts}${HIAR_PMPI:+, HIAR_PMPI=$HIAR_PMPI}${args:+, $args})"
    "${CONFIG_SHELL:-/bin/sh}" "$srcdir/tests/mpi/mpirun.sh" "$np" sh -c '
        if [ -n "$HIAR_TEST_HOSTS" ]; then
            HIAR_HOST_ID=host$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:?no MPI rank in the environment}} % HIAR_TEST_HOSTS ))
            export HIAR_HOST_ID
        fi
        if [ -n "$HIAR_TEST_PRELOAD" ]; then
            LD_PRELOAD=$HIAR_TEST_PRELOAD
            export LD_PRELOAD
        fi
        exec "$0" "$@"' "$program" $args --out "$tmp/$1.out" >"$tmp/$1.log" 2>&1
    rc=$?
    grep -e '^np=' -e '^expect:' -e '^hiar-pmpi:' -e '^FAIL' "$tmp/$1.log"
    if [ $rc -ne 0 ]; then
        cat "$tmp/$1.log"
        echo "FAIL: $1 run exited with $rc"
        exit 1
    fi
}

# stats NAME: "N M" from the hiar-pmpi line, or nothing.
stats() {
    sed -n 's/^hiar-pmpi: \([0-9]*\) calls via hiar, \([0-9]*\) forwarded$/\1 \2/p' "$tmp/$1.log"
}

unset HIAR_PMPI HIAR_PMPI_STATS
launch plain 0
HIAR_PMPI_STATS=1
export HIAR_PMPI_STATS
launch hiar 1
HIAR_PMPI=0
export HIAR_PMPI
launch off 1
unset HIAR_PMPI HIAR_PMPI_STATS

status=0
for run in hiar off; do
    if ! cmp -s "$tmp/plain.out" "$tmp/$run.out"; then
        echo "FAIL: results of the $run run differ from the plain run:"
        diff "$tmp/plain.out" "$tmp/$run.out" | head -20
        status=1
    fi
done
set -- $(sed -n 's/^expect: \([0-9]*\) intercepted, \([0-9]*\) forwarded$/\1 \2/p' "$tmp/hiar.log")
want_via=$1 want_fwd=$2
if [ -z "$want_via" ] || [ "$want_via" -eq 0 ] || [ "$want_fwd" -eq 0 ]; then
    echo "FAIL: the program's expect line is missing or has a zero count"
    status=1
fi
if [ "$(stats plain)" != "" ]; then
    echo "FAIL: a hiar-pmpi line without the preload"
    status=1
fi
if [ "$(stats hiar)" != "$want_via $want_fwd" ]; then
    echo "FAIL: preloaded: counts '$(stats hiar)', expected '$want_via $want_fwd'"
    status=1
fi
if [ "$(stats off)" != "0 $((want_via + want_fwd))" ]; then
    echo "FAIL: HIAR_PMPI=0: counts '$(stats off)', expected '0 $((want_via + want_fwd))'"
    status=1
fi
[ $status -eq 0 ] && echo "PASS: $(wc -l <"$tmp/plain.out") cases equal bit for bit in all three runs; $want_via calls via hiar, $want_fwd forwarded"
exit $status
