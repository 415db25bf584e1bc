# Issue 18: the fused kernel keeps a thread's first pushed packet in registers for its gather, as the plain LL
# kernel does, instead of loading its input again before the wait (rank 0 folds its own packet first).
patch -s -p1 <<'DIFF'
--- a/cuda/norm.cu
+++ b/cuda/norm.cu
@@ -229,10 +229,13 @@
     hiar_waiter w = waiter_begin(a);
     bool ok = !dead;
 
+    typename F::data first = {};
     for (unsigned row = blockIdx.x / slices; ok && row < rows; row += per_wave)
         for (unsigned k = lo + threadIdx.x; k < hi; k += blockDim.x) {
             unsigned i = row * ppr + k;
-            ll_push(a, parity, i, F::pack(F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize))));
+            typename F::data d = F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize));
+            first = row == blockIdx.x / slices && k == lo + threadIdx.x ? d : first;
+            ll_push(a, parity, i, F::pack(d));
         }
     mark(a, HIAR_MARK_PUSHED);
     for (unsigned row = blockIdx.x / slices; row < rows; row += per_wave) {
@@ -247,7 +250,10 @@
             unit_acc<T, F::DATA> acc;
             if (single)
                 wk.load(nm, k);
-            ok = ll_gather<T, F>(a, parity, i, F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize)),
+            ok = ll_gather<T, F>(a, parity, i,
+                                 row == blockIdx.x / slices && k == lo + threadIdx.x
+                                     ? first
+                                     : F::own(load_unit<F::DATA>(in, i * F::DATA, bytes, nm.esize)),
                                  HIAR_SUM, acc, w);
             acc.store(&s, 1);
             sumsq += norm_residual<T, F::DATA>(nm, row, k, s, old);
DIFF
