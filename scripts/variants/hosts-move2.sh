# Issue 17: the hosts kernel's reduction with 2 units in flight a thread instead of 4 (it spills at its
# 64-register cap: 192/128 bytes of spill stores/loads for bf16; its reduce phase took 3.2 ms of a 64 MB call).
sed -i '/^__device__ __forceinline__ void reduce_piece/,/^}/s/move_units<4>/move_units<2>/' cuda/hosts.cu
