/* hiar_host_memory_known: the brk heap and the caller's stack are known host memory; the rest is not known. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hostmem.h"

Test(hostmem, stack_of_the_caller)
{
    volatile double scalar = 1;
    char buf[256];

    cr_expect(hiar_host_memory_known((const void *)&scalar, sizeof(scalar)));
    cr_expect(hiar_host_memory_known(buf, sizeof(buf)));
}

/* Memory taken with sbrk (malloc's may come from elsewhere: ASan's allocator maps its own). */
Test(hostmem, brk_heap_below_the_break)
{
    char *p = sbrk(4096);

    cr_assert(p != (void *)-1);
    cr_expect(hiar_host_memory_known(p, 4096));
    cr_expect(hiar_host_memory_known(p + 4000, 96));
    cr_expect(!hiar_host_memory_known(p + 4000, 4096), "a range past the break is not known");
    cr_expect(!hiar_host_memory_known((char *)sbrk(0) + 4096, 8), "above the break");
}

Test(hostmem, mmap_null_and_wrapping_are_not_known)
{
    void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    cr_assert(m != MAP_FAILED);
    cr_expect(!hiar_host_memory_known(m, 64), "mmap'd memory (where CUDA maps device memory too)");
    munmap(m, 1 << 20);
    cr_expect(!hiar_host_memory_known(NULL, 8));
    cr_expect(!hiar_host_memory_known((void *)(UINTPTR_MAX - 4), 64));
}

static void *in_thread(void *arg)
{
    int local = 0;

    (void)arg;
    return (void *)(intptr_t)hiar_host_memory_known(&local, sizeof(local));
}

Test(hostmem, stack_of_another_thread)
{
    pthread_t t;
    void *known;

    cr_assert(pthread_create(&t, NULL, in_thread, NULL) == 0);
    pthread_join(t, &known);
    cr_expect(known == (void *)1, "a thread's own stack");
}
