/*
 * The progress engine: a thread that runs the MPI step between hosts of
 * device-buffer calls, so that the call only enqueues kernels and returns.
 *
 * A call's step is a job of pieces.  For each piece a kernel and the thread
 * hand the piece to each other through two words in host memory the GPU
 * maps (hiar_piece_flags_t):
 *
 *   kernel:  puts the piece's bytes where `send` points, then ready = 1
 *   thread:  sees ready == 1, sets it back to 0, receives the piece of every
 *            other rank of the piece's link into `recv` while sending
 *            `send` to each, and when all of that is done, arrived = 1
 *   kernel:  waits for arrived == 1, sets it back to 0, reduces
 *
 * Both words return to 0 within one round, so a job kept for a CUDA graph
 * (persistent) serves every replay without the host: the thread follows
 * the flags, not host calls.  The next round of a piece's flags comes from
 * a later kernel on the stream, after this round's kernel has read `recv`,
 * so receives never land in data still being reduced.
 *
 * Jobs live in slots: a slot's flags and buffers belong to its owner
 * (core/hosts.c, which allocates them where the GPU sees them).  A
 * message's tag is its job's tag and its piece: the caller numbers the jobs
 * of a link alike on every rank of it (calls come in the same order
 * everywhere), so jobs in flight at once never take each other's messages,
 * and jobs that share a tag match in the order the kernels raise their
 * flags, the same on every rank (MPI does not overtake).  An eager job
 * leaves its slot when every piece has arrived once;
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

#include "base/wait.h"
#include "hiar.h"

/* Pieces of one job: the kernel's argument carries them all (cuda/api.h). */
#define HIAR_PROGRESS_MAX_PIECES 64
/* Ranks of one link (the hosts a shard crosses). */
#define HIAR_PROGRESS_MAX_LINK 64

/* The two words of a piece, each on its own 128-byte line (PCIe reads them one by one). */
typedef struct {
    uint32_t ready;
    uint32_t pad0[31];
    uint32_t arrived;
    uint32_t pad1[31];
} hiar_piece_flags_t;

typedef struct {
    const void *send;          /* `bytes` sent to every other rank of the link */
    void *recv;                /* the others' pieces in their rank order, stride apart */
    size_t bytes;              /* at most INT_MAX */
    size_t stride;             /* >= bytes */
    int link;                  /* the port's link: which ranks exchange this piece */
    hiar_piece_flags_t *flags; /* host address */
} hiar_progress_piece_t;

typedef struct {
    int slot;       /* < hiar_progress_start's nslots: this rank's own choice */
    int tag;        /* the job's messages: tag * HIAR_PROGRESS_MAX_PIECES + piece, the same on every rank of the link */
    int persistent; /* 1: served every time its flags say so, until stop (a captured call) */
    int npieces;
    hiar_progress_piece_t piece[HIAR_PROGRESS_MAX_PIECES];
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
} hiar_progress_config_t;

hiar_result_t hiar_progress_start(const hiar_progress_config_t *cfg, hiar_progress_t **out);

/* Job tags 0 .. this fit the port's tag bound. */
int hiar_progress_max_job_tag(const hiar_port_t *port);

/*
 * Hands a job to the thread.  An eager job waits (through wait, bounded)
 * until its slot's previous job is done; a persistent one takes its slot
 * for good.  Fails with the engine's error once it has one.
 */
hiar_result_t hiar_progress_submit(hiar_progress_t *p, const hiar_progress_job_t *job, hiar_wait_t *wait);

/* Whether slot has no job left to serve (an eager job's slot becomes free). */
int hiar_progress_slot_free(hiar_progress_t *p, int slot);

/* HIAR_SUCCESS, or the first error the thread met (its message in hiar_last_error). */
hiar_result_t hiar_progress_status(hiar_progress_t *p);

/*
 * Stops and joins the thread (it never blocks in the port, so this returns
 * at once) and frees the engine.  Requests still posted (a failed or aborted
 * exchange) stay posted: the caller keeps the buffers they point into.
 * Returns how many were left.
 */
int hiar_progress_stop(hiar_progress_t *p);

#endif
