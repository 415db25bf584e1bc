#!/bin/sh
# libtool hands nvcc host-compiler options (-fPIC, -DPIC, -pthread); nvcc needs
# them behind -Xcompiler.  Everything else passes through unchanged.
nvcc=$1
shift
for arg; do
    shift
    case $arg in
    -fPIC | -fpic | -pthread) set -- "$@" -Xcompiler "$arg" ;;
    *) set -- "$@" "$arg" ;;
    esac
done
exec "$nvcc" "$@"
