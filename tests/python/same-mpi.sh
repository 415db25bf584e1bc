#!/bin/sh
# same-mpi.sh PYTHON LIBRARY: whether PYTHON's mpi4py and LIBRARY (libhiar
# or the preload) load the same MPI library (libmpi's or libmpich's soname,
# by ldd; one that ldd cannot find, as a pip mpi4py's chosen at import, is
# no answer).  Two MPIs in one process crash (Debian's mpi4py is Open MPI's;
# hiar built against Intel MPI loads libmpi.so.12): says SKIP and why, and
# exits 1, where they differ; exits 0 where they match or either cannot be
# told.
mpi_of() {
    ldd "$1" 2>/dev/null | grep -v '=> not found' | sed -n 's/^[[:space:]]*\(libmpi\(ch\)\{0,1\}\.so[^ ]*\) =>.*/\1/p' |
        head -1
}
ext=$("$1" -c 'import importlib.util as u; print(u.find_spec("mpi4py.MPI").origin)' 2>/dev/null)
theirs=$(mpi_of "$ext") mine=$(mpi_of "$2")
if [ -n "$theirs" ] && [ -n "$mine" ] && [ "$theirs" != "$mine" ]; then
    echo "SKIP: $1's mpi4py loads $theirs, $2 $mine: two MPIs cannot share a process"
    exit 1
fi
exit 0
