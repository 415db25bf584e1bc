#!/bin/sh
# hiar-info --topo --json on the sysfs fixtures (tests/fixtures/sysfs): the
# groups, levels and transports hiar chooses for each modelled machine.
# hiar-info initialises MPI as a singleton: run it directly, not under mpirun.
srcdir=${srcdir:-.}
top_builddir=${top_builddir:-.}
info=$top_builddir/bench/hiar-info
fixtures=$srcdir/tests/fixtures/sysfs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset HIAR_GROUP_LEVEL HIAR_SYSFS_ROOT
pass=0
fail=0
err=${TMPDIR:-/tmp}/topo-fixtures.$$.err
trap 'rm -f "$err"' EXIT

failed() {
    fail=$((fail + 1))
    echo "FAIL: $1"
    echo "  expected: $2"
    echo "  got:      $3"
    sed 's/^/  stderr:   /' "$err"
}

# check MACHINE "OPTIONS" EXPECTED_JSON
check() {
    got=$("$info" --topo --sysfs-root "$fixtures/$1" $2 --json 2>"$err")
    if [ "$got" = "$3" ]; then pass=$((pass + 1)); else failed "$1 $2" "$3" "$got"; fi
}

# refused MACHINE "OPTIONS" MESSAGE: exit status 1 and MESSAGE on stderr.
refused() {
    "$info" --topo --sysfs-root "$fixtures/$1" $2 --json >/dev/null 2>"$err"
    status=$?
    if [ $status -eq 1 ] && grep -qF "$3" "$err"; then
        pass=$((pass + 1))
    else
        failed "$1 $2" "exit 1 and \"$3\"" "exit $status"
    fi
}

seed=0000:01:00.0,0000:02:00.0,0000:81:00.0,0000:82:00.0
check seed-4gpu "--gpus $seed" \
    '{"groups":[[0,1],[2,3]],"level":["PHB","PHB"],"transport":["ipc","ipc"]}'
check seed-4gpu "--gpus 0000:82:00.0,0000:01:00.0,0000:81:00.0,0000:02:00.0" \
    '{"groups":[[0,2],[1,3]],"level":["PHB","PHB"],"transport":["ipc","ipc"]}'
check seed-4gpu "--gpus $seed --level PIX" \
    '{"groups":[[0],[1],[2],[3]],"level":["none","none","none","none"],"transport":["none","none","none","none"]}'
check seed-4gpu "--gpus $seed --level SYS" \
    '{"groups":[[0,1,2,3]],"level":["SYS"],"transport":["shm"]}'
check seed-4gpu "--gpus $seed --no-p2p" \
    '{"groups":[[0,1],[2,3]],"level":["PHB","PHB"],"transport":["shm","shm"]}'

server=0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0,0000:83:00.0,0000:84:00.0,0000:85:00.0,0000:86:00.0
check server-8gpu "--gpus $server" \
    '{"groups":[[0,1,2,3],[4,5,6,7]],"level":["PIX","PIX"],"transport":["ipc","ipc"]}'
check server-8gpu "--gpus 0000:83:00.0,0000:03:00.0,0000:84:00.0,0000:04:00.0,0000:85:00.0,0000:05:00.0,0000:86:00.0,0000:06:00.0" \
    '{"groups":[[0,2,4,6],[1,3,5,7]],"level":["PIX","PIX"],"transport":["ipc","ipc"]}'
check server-8gpu "--gpus $server --level RANK" \
    '{"groups":[[0],[1],[2],[3],[4],[5],[6],[7]],"level":["none","none","none","none","none","none","none","none"],"transport":["none","none","none","none","none","none","none","none"]}'

check box-4gpu-switch "--gpus 0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0" \
    '{"groups":[[0,1,2,3]],"level":["PIX"],"transport":["ipc"]}'
check box-4gpu-switch "--gpus 0000:03:00.0,0000:04:00.0,0000:05:00.0,0000:06:00.0 --no-p2p" \
    '{"groups":[[0,1,2,3]],"level":["PIX"],"transport":["shm"]}'

check vm-2gpu "--gpus 0000:00:05.0,0000:00:06.0" \
    '{"groups":[[0,1]],"level":["PHB"],"transport":["ipc"]}'
# Two ranks per GPU.
check vm-2gpu "--gpus 0000:00:05.0,0000:00:06.0,0000:00:05.0,0000:00:06.0 --level PXB" \
    '{"groups":[[0,2],[1,3]],"level":["LOC","LOC"],"transport":["ipc","ipc"]}'

tree=0000:05:00.0,0000:06:00.0,0000:09:00.0,0000:0a:00.0
check tree-2level "--gpus $tree" \
    '{"groups":[[0,1,2,3]],"level":["PXB"],"transport":["ipc"]}'
check tree-2level "--gpus $tree --level PIX" \
    '{"groups":[[0,1],[2,3]],"level":["PIX","PIX"],"transport":["ipc","ipc"]}'
check tree-2level "--gpus 0000:0a:00.0,0000:05:00.0,0000:09:00.0,0000:06:00.0 --level=PIX" \
    '{"groups":[[0,2],[1,3]],"level":["PIX","PIX"],"transport":["ipc","ipc"]}'

check node-4gpu "--gpus 0000:01:00.0,0000:41:00.0,0000:81:00.0,0000:c1:00.0" \
    '{"groups":[[0,1],[2,3]],"level":["NODE","NODE"],"transport":["shm","shm"]}'
check node-4gpu "--gpus 0000:01:00.0,0000:41:00.0,0000:81:00.0,0000:c1:00.0 --level PHB" \
    '{"groups":[[0],[1],[2],[3]],"level":["none","none","none","none"],"transport":["none","none","none","none"]}'

refused seed-4gpu "--gpus 0000:01:00.0,0000:09:00.0" "no PCI device 0000:09:00.0"
refused seed-4gpu "--gpus 0000:01:00.1" "expected a GPU"
refused seed-4gpu "--gpus $seed --level FOO" 'HIAR_GROUP_LEVEL="FOO" is invalid'

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
