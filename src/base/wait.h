/*
 * Bounded waiting.  Every loop that waits on a peer polls through here: it
 * spins, then yields the core, and gives up when HIAR_TIMEOUT_MS passes or
 * the communicator is aborted.  How long it spins is the comm's choice
 * (HIAR_YIELD, core/yield.c): briefly where ranks outnumber cores (the peer
 * it waits for may need this core), a millisecond where each has one (a
 * yield there hands the core to any other runnable process for a slice).
 */
#ifndef HIAR_WAIT_H
#define HIAR_WAIT_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"

/* Polls spent spinning before each poll also yields the core. */
#define HIAR_WAIT_SPINS 256
/*
 * Where each rank has a core (spin_ns set): the time a call's waits spin
 * before they yield too.  On the 2-core CPU machine, 2 ranks beside one busy
 * process (a shell loop), host calls of 32 B-128 KB took 1.5-2.4 ms yielding
 * after 256 polls (each yield lost the core to that process for a scheduler
 * slice) and 0.4-59 us spinning (MPI_Allreduce 0.5-74 us; hiar-bench -m host
 * -b 8 -e 128K -f 4 -n 2000, two rounds).  A peer later than this is not
 * running or not there yet, and yielding then keeps a long wait polite.
 */
#define HIAR_WAIT_SPIN_NS 1000000u
/* Polls between two reads of the clock. */
#define HIAR_WAIT_CLOCK_EVERY 64

/*
 * The deadline is set at the first clock read, HIAR_WAIT_CLOCK_EVERY polls
 * into the call's first wait, not when the call starts: a call whose waits
 * end sooner reads no clock (a clock read is about 2% of an 8-byte host
 * call on a 2-core VM, and a system call where the VM's clock has no vDSO).
 */
typedef struct hiar_wait {
    uint64_t deadline_ns; /* 0: not set yet */
    uint64_t spin_ns;     /* 0: yield after HIAR_WAIT_SPINS polls; else spin this long from the first clock read */
    uint64_t spin_end_ns;
    int timeout_ms;
    int yielding;
    const atomic_int *abort; /* set by hiar_comm_abort from another thread */
    unsigned polls;
    const char *what; /* what is awaited, for the message */
} hiar_wait_t;

static inline uint64_t hiar_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Whether a wait that has spun since since_ns (its start, or its last
 * progress) yields the core now: at once where spin_ns is 0 (the comm's
 * waits yield soon), else once spin_ns has passed.  For waits without a
 * deadline (the progress thread, the preload's MPI waits); hiar_wait_poll
 * keeps its own clock.
 */
static inline int hiar_wait_spun(uint64_t since_ns, uint64_t spin_ns)
{
    return !spin_ns || hiar_now_ns() - since_ns > spin_ns;
}

static inline hiar_wait_t hiar_wait_begin(int timeout_ms, const atomic_int *abort, const char *what)
{
    hiar_wait_t w = {0, 0, 0, timeout_ms, 0, abort, 0, what};
    return w;
}

/* HIAR_SUCCESS: keep waiting; otherwise the reason to stop. */
static inline hiar_result_t hiar_wait_poll(hiar_wait_t *w)
{
    unsigned n = ++w->polls;

    if (n > HIAR_WAIT_SPINS && (!w->spin_ns || w->yielding))
        sched_yield();
    if (n % HIAR_WAIT_CLOCK_EVERY)
        return HIAR_SUCCESS;
    if (atomic_load_explicit(w->abort, memory_order_relaxed))
        return hiar_error_set(HIAR_COMM_FAILED, "%s: the communicator was aborted", w->what);
    uint64_t now = hiar_now_ns();
    if (!w->deadline_ns) {
        w->deadline_ns = now + (uint64_t)w->timeout_ms * 1000000u;
        w->spin_end_ns = now + w->spin_ns;
    } else if (w->spin_ns && now > w->spin_end_ns)
        w->yielding = 1;
    if (now > w->deadline_ns)
        return hiar_error_set(HIAR_TIMEOUT, "%s: the peers did not all arrive within HIAR_TIMEOUT_MS=%d ms of the call's first wait",
                              w->what, w->timeout_ms);
    return HIAR_SUCCESS;
}

#endif
