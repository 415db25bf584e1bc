/* --train's backward kernel (bench-backward.cu): work of a set time on a few SMs that writes a gradient bucket. */
#ifndef BENCH_BACKWARD_H
#define BENCH_BACKWARD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * On stream: `blocks` blocks copy `bytes` of src into grad (the gradient the
 * kernel "computes") and then spin until `ns` nanoseconds have passed since
 * they started.  grad and src are device memory, 16-byte aligned (cudaMalloc
 * offsets by multiples of 16).  Returns the launch's cudaError_t.
 */
int bench_backward(void *grad, const void *src, size_t bytes, int blocks, unsigned long long ns, void *stream);

#ifdef __cplusplus
}
#endif

#endif
