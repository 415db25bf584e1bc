/*
 * Memory that cannot be a GPU's, known without asking CUDA: a call's
 * pointer query (cudaPointerGetAttributes) costs about 0.25 us a buffer
 * (one H200: 8-byte host calls took 1.03-1.17 us with a GPU visible, 0.50-0.62
 * with none), as much as the whole call.  CUDA maps device and managed
 * memory with mmap, never into the brk heap nor a thread's stack, where small
 * host buffers live (malloc's small blocks, scalars on the stack).
 */
#ifndef HIAR_HOSTMEM_H
#define HIAR_HOSTMEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if [p, p + bytes) lies in the brk heap (from the [heap] mapping's start, seen at the first call, to the
 * current break) or on the calling thread's stack above the caller's frame: host memory for sure.  0: not
 * known (ask CUDA). */
int hiar_host_memory_known(const void *p, size_t bytes);

/*
 * Reads now, once, what hiar_host_memory_known reads at its first call in a
 * thread: glibc finds the main thread's stack by reading all of
 * /proc/self/maps, 0.36 us a line (729 us at 2022 lines, 2286 at 6022 on the
 * CPU machine), and a GPU process's first call spent 466-815 us in its
 * "memory kind" phase (one H100, HIAR_CALL_MARKS, 2026-12-05), most likely
 * there.  A comm's creation on the GPU calls it, so its first allreduce
 * does not (on the creating thread; another thread pays once).
 */
void hiar_host_memory_prime(void);

#ifdef __cplusplus
}
#endif

#endif
