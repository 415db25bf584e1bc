# Issue 16: the write-back of a packet over pinned host memory in 8 bytes instead of 16 (enough to mark it
# pending in either format), in the lone-poll kernel only (graphs, 2 ranks, from 40 KB): half the write-back's
# bytes across PCIe.
patch -s -p1 <<'DIFF'
--- a/cuda/ll.cuh
+++ b/cuda/ll.cuh
@@ -31,6 +31,12 @@
 
 #define LL_SENTINEL 0xffffffffu
 
+/* The first 8 bytes of a packet: enough to mark it pending again (ll_pending8). */
+__device__ __forceinline__ void ll_store8(uint4 *dst, uint2 v)
+{
+    asm volatile("st.volatile.global.v2.u32 [%0], {%1,%2};" ::"l"(dst), "r"(v.x), "r"(v.y) : "memory");
+}
+
 /* Integer types, and messages below LL_DATA_ONLY_MIN: 8 data bytes and two flag words per packet. */
 struct ll_flagged {
     enum { DATA = 8 };
--- a/cuda/oneshot.cu
+++ b/cuda/oneshot.cu
@@ -101,7 +101,10 @@
                     ok = ll_wait_warp<F>(src, v, w);
                 while ((!LONE || ok) && !F::ready(v) && (ok = waiter_poll(w)))
                     v = ll_load(src);
-                ll_store(src, make_uint4(LL_SENTINEL, LL_SENTINEL, LL_SENTINEL, LL_SENTINEL));
+                if (LONE)
+                    ll_store8(src, make_uint2(LL_SENTINEL, LL_SENTINEL));
+                else
+                    ll_store(src, make_uint4(LL_SENTINEL, LL_SENTINEL, LL_SENTINEL, LL_SENTINEL));
                 d = F::unpack(v);
             }
             if (p == 0)
DIFF
