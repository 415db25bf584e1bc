/* Host memory known without CUDA (hostmem.h): the brk heap and the calling thread's stack. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/hostmem.h"

static uintptr_t heap_start; /* where the brk heap begins; 0: unknown */
static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

/*
 * The start of the [heap] mapping in /proc/self/maps, read once.  Not
 * /proc/self/stat's start_brk: under valgrind the program's break is
 * emulated elsewhere (below start_brk there) and no mapping is named
 * [heap], so none is known.
 */
static void read_heap_start(void)
{
    char line[512];
    unsigned long long lo;
    FILE *f = fopen("/proc/self/maps", "r");

    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "[heap]") && sscanf(line, "%llx-", &lo) == 1) {
            heap_start = (uintptr_t)lo;
            break;
        }
    if (f)
        fclose(f);
}

static int in_heap(uintptr_t lo, uintptr_t hi)
{
    pthread_once(&heap_once, read_heap_start);
    return heap_start && lo >= heap_start && hi <= (uintptr_t)sbrk(0);
}

/* The calling thread's stack, [*base, top) (top 0: unknown), asked once per thread. */
static uintptr_t thread_stack(uintptr_t *base)
{
    static _Thread_local uintptr_t lo, top;
    static _Thread_local int asked;
    pthread_attr_t attr;
    void *addr;
    size_t size;

    if (!asked) {
        asked = 1;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
                lo = (uintptr_t)addr;
                top = lo + size;
            }
            pthread_attr_destroy(&attr);
        }
    }
    *base = lo;
    return top;
}

int hiar_host_memory_known(const void *p, size_t bytes)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes, frame = (uintptr_t)__builtin_frame_address(0), base, top;

    if (!p || hi < lo)
        return 0;
    if (in_heap(lo, hi))
        return 1;
    /* Between this frame and the top, the stack is the live frames of this thread's callers; only where this
     * frame is on the thread's own stack: on a fiber's or a signal stack, [frame, top) spans other mappings. */
    top = thread_stack(&base);
    return top && frame >= base && frame < top && lo >= frame && hi <= top;
}

void hiar_host_memory_prime(void)
{
    uintptr_t base;

    pthread_once(&heap_once, read_heap_start);
    (void)thread_stack(&base);
}
