# The plain LL kernel through ll.cuh's ll_push and ll_gather (its own copies of them go): the same work, but
# its own packet is loaded before the wait for the peers instead of in rank order, so the PTX differs
# (2026-12-06).  Land it where it times the same as base (device memory, 1-512 KB, 2 and 4 ranks, graphs).
patch -s -p1 <<'DIFF'
diff --git a/cuda/oneshot.cu b/cuda/oneshot.cu
index 5c59e95..cbe7957 100644
--- a/cuda/oneshot.cu
+++ b/cuda/oneshot.cu
@@ -68,36 +68,20 @@ __global__ void __launch_bounds__(HIAR_THREADS)
     typename F::data mine = {};
     bool ok = true;
 
-    /* Push everything first, to the peers in rotated order to spread traffic.
-     * A thread's first packet (in most calls its only one) stays in registers
-     * for the reduction, which then loads nothing of its own after the wait
-     * (no difference measured on 2 H200, in CUDA graphs). */
+    /* Push everything first, to the peers in rotated order to spread traffic.
+     * A thread's first packet (in most calls its only one) stays in registers
+     * for the reduction, which then loads nothing of its own after the wait
+     * (no difference measured on 2 H200, in CUDA graphs). */
     for (size_t i = first; i < packets; i += stride) {
         typename F::data d = F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize));
         mine = i == first ? d : mine;
-        for (int k = 1; k < a.n; k++)
-            ll_store(ll_area(a, a.base[(a.me + k) % a.n], parity, a.me) + i, F::pack(d));
+        ll_push(a, parity, i, F::pack(d));
     }
     mark(a, HIAR_MARK_PUSHED);
     for (size_t i = first; i < packets && ok; i += stride) {
         unit_acc<T, F::DATA> acc;
-        for (int p = 0; p < a.n && ok; p++) {
-            typename F::data d;
-            if (p == a.me) {
-                d = i == first ? mine : F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize));
-            } else {
-                uint4 *src = ll_area(a, a.base[a.me], parity, p) + i;
-                uint4 v = ll_load(src);
-                while (!F::ready(v) && (ok = waiter_poll(w)))
-                    v = ll_load(src);
-                ll_store(src, make_uint4(LL_SENTINEL, LL_SENTINEL, LL_SENTINEL, LL_SENTINEL));
-                d = F::unpack(v);
-            }
-            if (p == 0)
-                acc.load(&d);
-            else
-                acc.fold(OP, &d);
-        }
+        ok = ll_gather<T, F>(a, parity, i,
+                             i == first ? mine : F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, esize)), OP, acc, w);
         if (ok) {
             typename F::data r;
             release_next_kernel(); /* every peer's packet i arrived: see device.cuh */
DIFF
