/* hiar_host_memory_known: the brk heap and the caller's stack are known host memory; the rest is not known. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/hostmem.h"

Test(hostmem, stack_of_the_caller)
{
    volatile double scalar = 1;
    char buf[256];

    cr_expect(hiar_host_memory_known((const void *)&scalar, sizeof(scalar)));
    cr_expect(hiar_host_memory_known(buf, sizeof(buf)));
}

/* Where the kernel's [heap] mapping is (none under valgrind, which emulates the break elsewhere). */
static int heap_mapping(uintptr_t *lo, uintptr_t *hi)
{
    char line[512];
    unsigned long long a = 0, b = 0;
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");

    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, "[heap]") && sscanf(line, "%llx-%llx", &a, &b) == 2;
    if (f)
        fclose(f);
    *lo = (uintptr_t)a;
    *hi = (uintptr_t)b;
    return found;
}

/* Memory taken with sbrk (malloc's may come from elsewhere: ASan's allocator maps its own): known exactly
 * where the [heap] mapping holds it. */
Test(hostmem, brk_heap_below_the_break)
{
    char *p = sbrk(4096);
    uintptr_t lo = 0, hi = 0;
    int heap;

    cr_assert(p != (void *)-1);
    heap = heap_mapping(&lo, &hi) && (uintptr_t)p >= lo && (uintptr_t)p + 4096 <= hi;
    cr_expect_eq(hiar_host_memory_known(p, 4096), heap, "sbrk'd memory %p, [heap] %#lx-%#lx", (void *)p,
                 (unsigned long)lo, (unsigned long)hi);
    cr_expect_eq(hiar_host_memory_known(p + 4000, 96), heap);
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

/* On a stack of its own (a fiber), the thread's stack top says nothing: mmap'd memory above the fiber's
 * stack, where CUDA may map device memory, must not be taken for host memory. */
static ucontext_t main_ctx, fiber_ctx;
static void *above;
static int above_known = -1;

static void fiber(void)
{
    above_known = hiar_host_memory_known(above, 64);
}

Test(hostmem, fiber_stack_knows_nothing_above_it)
{
    size_t size = 1 << 20;
    char *stack = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    cr_assert(stack != MAP_FAILED);
    above = stack + size; /* the upper half: above the fiber's stack, below the thread's stack top */
    cr_assert(getcontext(&fiber_ctx) == 0);
    fiber_ctx.uc_stack.ss_sp = stack;
    fiber_ctx.uc_stack.ss_size = size;
    fiber_ctx.uc_link = &main_ctx;
    makecontext(&fiber_ctx, fiber, 0);
    cr_assert(swapcontext(&main_ctx, &fiber_ctx) == 0);
    cr_expect_eq(above_known, 0, "memory above a fiber's stack taken for host memory");
    munmap(stack, 2 * size);
}

/* Primed first (as a comm's creation does), a thread's queries answer as unprimed ones do. */
static void *primed_thread(void *arg)
{
    volatile int local = 1;
    int *ok = arg;

    hiar_host_memory_prime();
    hiar_host_memory_prime(); /* twice: nothing read again, nothing changed */
    ok[0] = hiar_host_memory_known((const void *)&local, sizeof(local));
    ok[1] = !hiar_host_memory_known(NULL, 8);
    return NULL;
}

Test(hostmem, primed_then_asked)
{
    volatile int local = 1;
    int ok[2] = {0, 0};
    pthread_t t;

    hiar_host_memory_prime(); /* this test's thread: the process's main one, whose stack glibc finds in maps */
    cr_expect(hiar_host_memory_known((const void *)&local, sizeof(local)), "the primed main thread's stack");
    cr_assert_eq(pthread_create(&t, NULL, primed_thread, ok), 0);
    pthread_join(t, NULL);
    cr_expect(ok[0], "a primed thread's own stack is known host memory");
    cr_expect(ok[1], "NULL is still not known");
}
