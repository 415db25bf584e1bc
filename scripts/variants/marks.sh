# The kernels' phase marks (doc/testing.md, HIAR_KERNEL_MARKS) in a variant: every file that reads the macro
# defines it first, so the build of libhiar.so alone carries them (the programs of the tree stay as built).
grep -rl HIAR_KERNEL_MARKS src cuda | while read -r f; do
    sed -i '1i #define HIAR_KERNEL_MARKS 1' "$f"
done
