# The kernels' phase marks (doc/testing.md, HIAR_KERNEL_MARKS) in a variant: every file that reads the macro
# defines it first, so the build of libhiar.so alone carries them (the programs of the tree stay as built).
for f in src/transport/ipc.c src/core/hosts.c cuda/ipc.cu cuda/hosts.cu cuda/device.cuh cuda/runtime.cu cuda/api.h; do
    sed -i '1i #define HIAR_KERNEL_MARKS 1' "$f"
done
