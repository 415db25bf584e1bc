# The LL kernel as at ea2c03b (every lane polls): the yardstick for the lone poll of 2026-12-06.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
git -C "$top" show ea2c03b:cuda/oneshot.cu >cuda/oneshot.cu
git -C "$top" show ea2c03b:cuda/ll.cuh >cuda/ll.cuh
