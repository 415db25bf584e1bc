# Issue 16: over pinned host memory a warp waits on one lane's packet (the highest pending one) instead of
# every lane polling its own: a poll of a whole warp reads 512 B across PCIe and sends its read requests up
# the link the data and the write-backs go down (2 ranks on one GPU: 64 KB in a CUDA graph 8.52-8.67 us,
# goal 8).  Every lane still checks its own packet; the lone poll only decides when the warp reads again.
patch -s -p1 <<'DIFF'
--- a/cuda/ll.cuh
+++ b/cuda/ll.cuh
@@ -126,6 +126,28 @@
                                      ((size_t)parity * a.n + sender) * HIAR_IPC_LL_AREA_BYTES);
 }
 
+/* v: packet src as first read; until every active lane's packet is ready, the highest pending lane polls
+ * alone, then the others read theirs again.  false: gave up (every lane alike). */
+template <typename F> __device__ __forceinline__ bool ll_wait_warp(const uint4 *src, uint4 &v, hiar_waiter &w)
+{
+    const unsigned m = __activemask();
+    unsigned pending = __ballot_sync(m, !F::ready(v));
+
+    while (pending) {
+        const int leader = 31 - __clz(pending);
+        int ok = 1;
+        if ((int)(threadIdx.x & 31) == leader)
+            while (!F::ready(v) && (ok = waiter_poll(w)))
+                v = ll_load(src);
+        if (!__shfl_sync(m, ok, leader))
+            return false;
+        if (!F::ready(v))
+            v = ll_load(src);
+        pending = __ballot_sync(m, !F::ready(v));
+    }
+    return true;
+}
+
 /* Packet i of every peer of `a` (own: mine), reduced in rank order into acc; false: gave up. */
 template <typename T, typename F>
 __device__ __forceinline__ bool ll_gather(const hiar_ipc_args_t &a, uint32_t parity, size_t i, typename F::data mine,
--- a/cuda/oneshot.cu
+++ b/cuda/oneshot.cu
@@ -88,7 +88,9 @@
             } else {
                 uint4 *src = ll_area(a, a.base[a.me], parity, p) + i;
                 uint4 v = ll_load(src);
-                while (!F::ready(v) && (ok = waiter_poll(w)))
+                if (a.host_memory)
+                    ok = ll_wait_warp<F>(src, v, w);
+                while (ok && !F::ready(v) && (ok = waiter_poll(w)))
                     v = ll_load(src);
                 ll_store(src, make_uint4(LL_SENTINEL, LL_SENTINEL, LL_SENTINEL, LL_SENTINEL));
                 d = F::unpack(v);
DIFF
