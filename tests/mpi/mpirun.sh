#!/bin/sh
# Runs an MPI test program: mpirun.sh NP PROGRAM [ARGS...]
#
# Every HIAR_* variable of the caller reaches every rank (Open MPI forwards
# only what -x names; MPICH's launcher, Hydra, as Intel MPI's, forwards the
# whole environment: MPIRUN, configure's, may be either).  Exit 77
# (automake's SKIP) when there is no mpirun.  A hang fails after HIAR_TEST_TIMEOUT seconds (default 300) instead of
# blocking the whole `make check`.  HIAR_TEST_MPIRUN_ARGS adds options, e.g.
# "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any";
# HIAR_TEST_BTL replaces the BTLs (default self,vader,tcp), e.g. self,tcp
# to send every message over TCP loopback.
if [ $# -lt 2 ]; then
    echo "usage: $0 NP PROGRAM [ARGS...]" >&2
    exit 99
fi
np=$1
shift

if [ -z "$MPIRUN" ] || ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "SKIP: no mpirun (MPIRUN='$MPIRUN')"
    exit 77
fi

# Containers often run as root; Open MPI refuses that unless told.
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

forward=
for name in $(env | sed -n 's/^\(HIAR_[A-Za-z0-9_]*\)=.*/\1/p'); do
    forward="$forward -x $name"
done

# Open MPI's session directory goes under TMPDIR: a fresh one per run, or two
# tests that start at once (make -j2 check) race to create /tmp/ompi.HOST.UID.
session=$(mktemp -d "${TMPDIR:-/tmp}/hiar-mpirun.XXXXXX") || exit 99
trap 'rm -rf "$session"' EXIT
TMPDIR=$session
export TMPDIR

timeout=${HIAR_TEST_TIMEOUT:-300}

# MPICH's launcher (Hydra: MPICH, Intel MPI) passes the whole environment on
# and takes no Open MPI options: HIAR_TEST_MPIRUN_ARGS's "-x NAME=VALUE"
# become "-genv NAME VALUE" (a bare "-x NAME" is forwarded anyway); a test
# that needs Open MPI's --mca or BTLs (HIAR_TEST_BTL) is skipped.
hydra= rest=
if "$MPIRUN" --version 2>&1 | grep -q -i -E 'hydra|Intel\(R\) MPI'; then
    hydra=1 prev=
    set -- -n "$np" "$@"
    if [ -n "${HIAR_TEST_BTL:-}" ]; then
        echo "SKIP: Open MPI's BTLs (HIAR_TEST_BTL=$HIAR_TEST_BTL) under another MPI ($MPIRUN)"
        exit 77
    fi
    for a in $HIAR_TEST_MPIRUN_ARGS; do
        case $prev,$a in
        *,--mca | *,-mca)
            echo "SKIP: Open MPI's $a ($HIAR_TEST_MPIRUN_ARGS) under another MPI ($MPIRUN)"
            exit 77
            ;;
        *,-x) ;;
        -x,*=*) set -- -genv "${a%%=*}" "${a#*=}" "$@" ;;
        -x,*) ;;
        *) rest="$rest $a" ;;
        esac
        prev=$a
    done
fi
# --oversubscribe: 8 ranks on 2 cores; --bind-to none: binding oversubscribed
# ranks to cores makes waiting ranks starve the working ones;
# single_copy_mechanism none: containers often forbid the CMA copies vader uses.
start=$(date +%s)
set -x
if [ -n "$hydra" ]; then
    # Ranks unbound, as --bind-to none (Intel MPI pins each rank to a CPU of its own by default).
    I_MPI_PIN=${I_MPI_PIN:-0} timeout -k 10 "$timeout" "$MPIRUN" $rest "$@"
else
    timeout -k 10 "$timeout" "$MPIRUN" --oversubscribe --bind-to none \
        --mca btl "${HIAR_TEST_BTL:-self,vader,tcp}" --mca btl_vader_single_copy_mechanism none \
        $HIAR_TEST_MPIRUN_ARGS $forward -np "$np" "$@"
fi
rc=$?
{ set +x; } 2>/dev/null
# 124, or 137 after -k; but mpirun itself exits 137 when a rank died of SIGKILL.
if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ $(($(date +%s) - start)) -ge "$timeout" ]; then
    echo "FAIL: timed out after $timeout s (np=$np $*)"
    exit 1
fi
exit $rc
