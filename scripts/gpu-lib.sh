# Sourced by the scripts/gpu-*.sh (with $out set): their one way to run a step.
#
#   gpu_run NAME SECONDS FILTER COMMAND...
#
# runs COMMAND, at most SECONDS, into $out/NAME.log under a "== COMMAND"
# line (also in $out/summary.txt), then appends to the summary what
# `FILTER FILE` prints of this command's output alone (each script's own
# choice of lines: several commands share a log) and the exit status.
# Returns COMMAND's status.
gpu_run() {
    local name=$1 secs=$2 filter=$3 rc step=$out/.step.log
    shift 3
    echo "== $*" | tee -a "$out/summary.txt" >>"$out/$name.log"
    timeout "$secs" "$@" >"$step" 2>&1
    rc=$?
    cat "$step" >>"$out/$name.log"
    "$filter" "$step" | tee -a "$out/summary.txt"
    rm -f "$step"
    echo "-> exit $rc" | tee -a "$out/summary.txt"
    return $rc
}
