# Issue 18: the fused kernel's block-wide steps in one barrier instead of three: the outcome (__syncthreads_or)
# ANDed in the sum of squares' barrier, and the barrier that frees its shared words only where the block has
# another row (1-4 token steps at hidden 4096 miss 0.75 of unfused by 0.05-0.4 us, 2026-12-06).
patch -s -p1 <<'DIFF'
--- a/cuda/norm.cu
+++ b/cuda/norm.cu
@@ -247,12 +247,12 @@
             if (!nm.residual && !single)
                 store_unit<F::DATA>(out + row * nm.row_bytes, k * F::DATA, nm.row_bytes, nm.esize, s);
         }
-        ok = !__syncthreads_or(!ok);
+        sumsq = norm_block_sum_ok(sumsq, &ok, row + per_wave < rows);
         if (ok) {
             mark(a, HIAR_MARK_GATHERED);
             release_next_kernel(); /* every peer's packets of the part arrived: see device.cuh */
         }
-        if (!norm_row_sum(a, e, slices, clustered, ok, norm_block_sum(sumsq), &sumsq, w))
+        if (!norm_row_sum(a, e, slices, clustered, ok, sumsq, &sumsq, w))
             break;
         mark(a, HIAR_MARK_SUMMED);
         scale = norm_scale(nm, sumsq);
--- a/cuda/norm.cuh
+++ b/cuda/norm.cuh
@@ -82,6 +82,34 @@
     return v;
 }
 
+/* norm_block_sum that also ANDs the threads' *ok in its one barrier; the barrier that frees warps[] again
+ * only where another row follows (more). */
+__device__ __forceinline__ float norm_block_sum_ok(float v, bool *ok, bool more)
+{
+    __shared__ float warps[HIAR_THREADS / 32];
+    __shared__ int fine[HIAR_THREADS / 32];
+    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;
+    const int all = __all_sync(0xffffffffu, *ok);
+    bool good = true;
+
+    for (int o = 16; o > 0; o /= 2)
+        v += __shfl_xor_sync(0xffffffffu, v, o);
+    if (lane == 0) {
+        warps[warp] = v;
+        fine[warp] = all;
+    }
+    __syncthreads();
+    v = 0;
+    for (int w = 0; w < nwarps; w++) {
+        v += warps[w];
+        good = good && fine[w];
+    }
+    if (more)
+        __syncthreads();
+    *ok = good;
+    return v;
+}
+
 /* 1 / rms of a row: IEEE sqrt and division, as the host loop (base/norm.c). */
 __device__ __forceinline__ float norm_scale(const norm_row_args &nm, float sumsq)
 {
DIFF
