/*
 * The progress engine: a thread that runs the MPI step between hosts of
 * device-buffer calls, so that the call only enqueues kernels and returns.
 *
 * A call's step is a job: the pieces of one shard (base/pieces.h), handed
 * over through a ring of `ring` positions, piece i through position
 * i % ring.  Each position has its send bytes, its receive area and two
 * words in host memory the GPU maps (hiar_piece_flags_t):
 *
 *   kernel:  puts piece i's bytes in its position's send bytes, ready = 1
 *   thread:  sees ready == 1, sets it back to 0, receives piece i of every
 *            other rank of the link into the position's receive area while
 *            sending to each, and when all of that is done, arrived = 1
 *   kernel:  waits for arrived == 1, sets it back to 0, reduces; then the
 *            position may take piece i + ring
 *
 * So a job of any size keeps `ring` pieces in flight in a fixed amount of
 * memory, and one kernel serves a whole call.  Both words return to 0
 * within one round, so a job kept for a CUDA graph (persistent) serves
 * every replay without the host: the thread follows the flags, not host
 * calls, and after the last piece a position starts again at its first.
 * A position's next round comes only after the kernel has read its
 * receive area, so receives never land in data still being reduced.
 *
 * Jobs live in slots: a slot's flags and buffers belong to its owner
 * (core/hosts.c, which allocates them where the GPU sees them).  A
 * message's tag is its job's tag and its position: the caller numbers the
 * jobs of a link alike on every rank of it (calls come in the same order
 * everywhere), so jobs in flight at once never take each other's messages,
 * and the pieces of one position match in order (a position's next receive
 * and send are posted after its last completed, and MPI does not
 * overtake).  An eager job leaves its slot when every piece has arrived,
 * a persistent one when retired (its graph destroyed);
 * hiar_progress_submit waits for a slot still in use.
 *
 * The network is a port (below), MPI in production (net/port.c), a fake in
 * the tests, which need neither MPI nor a GPU.
 */
#ifndef HIAR_NET_PROGRESS_H
#define HIAR_NET_PROGRESS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/pieces.h"
#include "base/wait.h"
#include "hiar.h"

/* Positions of a job's ring (cuda/api.h's HIAR_HOSTS_RING_MAX is the same). */
#define HIAR_PROGRESS_MAX_RING 16
/* Ranks of one link (the hosts a shard crosses). */
#define HIAR_PROGRESS_MAX_LINK 64

/* The two words of a position, each on its own 128-byte line (PCIe reads them one by one). */
typedef struct {
    uint32_t ready;
    uint32_t pad0[31];
    uint32_t arrived;
    uint32_t pad1[31];
} hiar_piece_flags_t;

typedef struct {
    int slot;       /* < hiar_progress_start's nslots: this rank's own choice */
    int tag;        /* the job's messages: tag * HIAR_PROGRESS_MAX_RING + position, the same on every rank of the link */
    int persistent; /* 1: served every time its flags say so, until stop (a captured call) */
    int link;       /* the port's link: which ranks exchange the pieces */
    int ring;       /* positions, 1 to HIAR_PROGRESS_MAX_RING */
    hiar_pieces_t pieces; /* at least one piece, each at most INT_MAX bytes and at most stride */
    size_t stride;
    /*
     * Position q sends send + q * stride and receives the others' pieces,
     * in their rank order, stride apart, at recv + q * (link size - 1) *
     * stride: memory the job's owner keeps for the comm's life, so an MPI
     * that caches registrations of device memory never meets a freed one.
     */
    const char *send;
    char *recv;
    hiar_piece_flags_t *flags; /* [ring], host addresses */
} hiar_progress_job_t;

/* A request of the port: room for an MPI_Request. */
typedef struct {
    uint64_t bits;
} hiar_port_req_t;

/* Non-blocking byte messages between the ranks of a link (thread-safe: only the engine's thread calls it). */
typedef struct {
    void *ctx;
    int (*rank)(void *ctx, int link); /* this rank in the link */
    int (*size)(void *ctx, int link);
    hiar_result_t (*isend)(void *ctx, int link, int to, int tag, const void *buf, size_t bytes, hiar_port_req_t *r);
    hiar_result_t (*irecv)(void *ctx, int link, int from, int tag, void *buf, size_t bytes, hiar_port_req_t *r);
    /* *done = 1 when r completed (r is then spent) */
    hiar_result_t (*test)(void *ctx, hiar_port_req_t *r, int *done);
    /* Tags 0 .. max_tag are free for the engine. */
    int max_tag;
} hiar_port_t;

typedef struct hiar_progress hiar_progress_t;

typedef struct {
    hiar_port_t port;
    int nslots;
    int timeout_ms;         /* a piece's exchange longer than this: HIAR_TIMEOUT */
    const atomic_int *abort; /* the comm's: the engine stops serving */
    /* Called once on the thread before anything else (e.g. to make the comm's GPU current). */
    void (*thread_init)(void *arg);
    void *thread_arg;
    /* Where the engine tells the kernels to give up (the thread failed); may be NULL. */
    int *kernel_abort; /* written with __atomic_store_n */
    /* Slots 0 .. nready - 1 get their state at start (the ones eager calls take in turn); the others at their
     * first job, whose submit then faults in its pages: 8-20 us of a call on a VM (one H100, 2026-12-05). */
    int nready;
} hiar_progress_config_t;

hiar_result_t hiar_progress_start(const hiar_progress_config_t *cfg, hiar_progress_t **out);

/*
 * How long the thread spins, while an eager job is out and nothing moves,
 * before each poll also yields its core: 0 (from the start) yields after
 * HIAR_WAIT_SPINS polls.  The comm sets its HIAR_YIELD choice (core/yield.c)
 * once it has one, after the thread started; any time is safe.
 */
void hiar_progress_set_spin(hiar_progress_t *p, uint64_t spin_ns);

/*
 * Exchanges the first `positions` positions of job's ring with every peer
 * of its link, in sizes from 8 bytes up to stride (about 3 a doubling), on
 * the calling thread, and waits (through wait: bounded, abortable) until
 * all of it is done; the bytes carry nothing.  An MPI that takes device memory registers
 * it, maps its peers' and sizes its staging on first use, and some of that
 * waits for the whole GPU (seen under CUDA MPS): done here, before any
 * kernel waits for the engine, it never waits behind one.  Every rank of
 * the link calls it alike.  Its messages take a job tag of their own
 * (above hiar_progress_max_job_tag), never a job's.  On failure *left says
 * how many requests stay posted: their buffers must stay too.
 */
hiar_result_t hiar_progress_warm(const hiar_port_t *port, const hiar_progress_job_t *job, int positions,
                                 hiar_wait_t *wait, int *left);

/* Job tags 0 .. this fit the port's tag bound (the one above is the first exchanges'). */
int hiar_progress_max_job_tag(const hiar_port_t *port);

/*
 * Hands a job to the thread.  An eager job waits (through wait, bounded)
 * until its slot's previous job is done; a persistent one keeps its slot
 * until hiar_progress_retire.  Fails with the engine's error once it has one.
 */
hiar_result_t hiar_progress_submit(hiar_progress_t *p, const hiar_progress_job_t *job, hiar_wait_t *wait);

/*
 * Ends slot's persistent job (its CUDA graph is gone): the thread stops
 * serving it once none of its exchanges is in flight (between replays none
 * is), and the slot becomes free.  Any thread may call it.
 */
void hiar_progress_retire(hiar_progress_t *p, int slot);

/* Whether slot's job is retired but the thread has not dropped it yet (the slot comes free soon). */
int hiar_progress_slot_leaving(hiar_progress_t *p, int slot);

/* Whether slot has no job left to serve (an eager job's slot becomes free, a retired one too). */
int hiar_progress_slot_free(hiar_progress_t *p, int slot);

/* HIAR_SUCCESS, or the first error the thread met (its message in hiar_last_error). */
hiar_result_t hiar_progress_status(hiar_progress_t *p);

/*
 * The wire as the thread saw it, summed over the eager jobs done so far:
 * from a job's first piece posted to its last piece arrived (span), and of
 * that the time with some piece of the job in flight (flight; span - flight:
 * no piece of the job out, every position waiting for its kernel's next
 * piece, or done, or not yet noticed by the thread).  Clocked once per sweep
 * of the slots, so either end may be a sweep late.  Against the link column
 * of hiar-bench --split it says whether a call's step between hosts is the
 * wire's time or gaps in it (logged at INFO, subsystem MPI, when the engine
 * stops).  Captured calls' jobs are not counted (their replays share one
 * job).
 */
typedef struct {
    unsigned long long jobs, pieces;
    uint64_t span_ns, flight_ns;
} hiar_progress_wire_t;

void hiar_progress_wire(hiar_progress_t *p, hiar_progress_wire_t *out);

/*
 * Stops and joins the thread (it never blocks in the port, so this returns
 * at once) and frees the engine.  Requests still posted (a failed or aborted
 * exchange) stay posted: the caller keeps the buffers they point into.
 * Returns how many were left.
 */
int hiar_progress_stop(hiar_progress_t *p);

#endif
