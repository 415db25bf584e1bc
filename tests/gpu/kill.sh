#!/bin/sh
# A rank SIGKILLed while device-buffer calls run (tests/gpu/test_gpu --kill),
# its peers' kernels spinning on its memory, in the group and between groups:
# the job must end within $limit seconds (HIAR_TIMEOUT_MS is 10 minutes by
# default) with a non-zero status, and no rank may outlive it.
# Usage: kill.sh MPIRUN-COMMAND...  (e.g. mpirun -np 4 -x HIAR_GROUPS)
limit=${HIAR_KILL_LIMIT:-60}
start=$(date +%s)
out=$(timeout $((limit + 30)) "$@" ./tests/gpu/test_gpu --kill 2>&1)
rc=$?
elapsed=$(($(date +%s) - start))
echo "$out" | tail -n 20
echo "-- exit status $rc after $elapsed s"
status=0
if [ "$elapsed" -ge "$limit" ]; then
    echo "FAIL: the job did not end within $limit s"
    status=1
elif [ $rc -eq 0 ]; then
    echo "FAIL: the job exited 0 although a rank was killed"
    status=1
fi
for pid in $(echo "$out" | sed -n 's/^rank [0-9]*: pid //p'); do
    if [ -d "/proc/$pid" ] && grep -q test_gpu "/proc/$pid/cmdline" 2>/dev/null; then
        echo "FAIL: rank pid $pid outlived the job"
        status=1
    fi
done
[ $status -eq 0 ] && echo "PASS: killed rank: the job ended in $elapsed s, no rank survived"
exit $status
