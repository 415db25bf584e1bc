# Issue 18: the fused kernel in data-only packets at every size on any number of ranks (now: on 2 ranks, or
# from 128 KB).  Data only at 4 ranks was slower before the fused kernel took thread-block clusters (6.68-6.70
# against 6.42 us at 1 x 4096, one H200, 2026-12-03); with clusters it halves the slices of a row.
sed -i 's/return hiar_call_bytes(c) >= LL_DATA_ONLY_MIN || a->n == 2/return true/' cuda/norm.cu
