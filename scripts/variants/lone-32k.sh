# Issue 16: the lone poll over pinned host memory from 32 KB instead of 64 KB (sizes between them unmeasured).
sed -i 's/^#define LL_LONE_POLL_MIN_HOST (64 \* 1024)$/#define LL_LONE_POLL_MIN_HOST (32 * 1024)/' cuda/oneshot.cu
