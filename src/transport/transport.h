/*
 * The one interface of the transports inside a group (NCCL's struct
 * ncclTransport idea): shared memory for host buffers (shm.c), CUDA IPC for
 * device buffers (ipc.c), pinned host memory that kernels read and write
 * for GPUs without P2P (pinned.c), the one-rank group (self.c), and device buffers
 * staged through pinned host memory into the host side (staged.c).  The plan
 * chooses an algorithm and the side whose transport runs it; the core calls
 * only these operations.
 *
 *   usable    local: can it serve this rank's group?  Decided from values
 *             every rank of the group shares (gathered facts), so the
 *             group agrees without talking; why: what it lacks.
 *   setup     collective over the group: succeeds or fails on every rank of
 *             it together; why: what it set up, or why it could not.
 *   run       one call (HIAR_STEP_ALLREDUCE) or one half of a hierarchical
 *             call (REDUCE_SCATTER, ALLGATHER) of the group.
 *   max_bytes the largest call one run takes (shm: a slot); callers chunk.
 *   status    errors of earlier asynchronous runs (a kernel that timed out).
 *   abort     make running and future runs give up at once (any thread).
 *   teardown  HIAR_TEARDOWN_* flags: collective or not, keep memory or not.
 */
#ifndef HIAR_TRANSPORT_H
#define HIAR_TRANSPORT_H

#include <stddef.h>

#include "base/call.h"
#include "net/tier.h"

/* The host path a staged transport hands its pinned copies to (the core's). */
typedef hiar_result_t (*hiar_host_run_t)(void *arg, const hiar_call_t *call);

typedef struct {
    size_t slot_bytes; /* HIAR_BUFFER_SIZE resolved by the plan */
    size_t pinned_slot_bytes; /* the same for the pinned-host transport */
    int timeout_ms;    /* a kernel's bound on waiting for a peer */
    int max_blocks;    /* HIAR_MAX_BLOCKS (0: the default) */
    int pdl;           /* HIAR_PDL */
    int clusters;      /* HIAR_CLUSTERS */
    int device;        /* this rank's GPU, -1 without */
    int all_gpu;       /* every rank of the group has a GPU */
    int on_gpu;        /* ranks of the comm on this rank's GPU, or HIAR_GPU_SHARERS where it says more */
    int mixed;         /* other kernels (other groups', the step between groups', HIAR_GPU_SHARERS') may run beside */
    /* A failed setup is expected (the group over the host's P2P check across switches; the pinned-host
     * transport tried beside CUDA IPC): INFO, no WARN. */
    int setup_may_fail;
    /* Kernel transports, once set up: the comm's abort and status words (cuda/api.h); NULL: their own. */
    const struct hiar_cuda_control *control;
    hiar_host_run_t host_run; /* staged: where the copies go */
    void *host_arg;
} hiar_transport_config_t;

/* teardown: the group tears down together (not on abort, nor after a failure)... */
#define HIAR_TEARDOWN_COLLECTIVE 1
/* ...and the comm failed: leave memory that a pending MPI request may still write into. */
#define HIAR_TEARDOWN_KEEP 2

typedef struct hiar_transport {
    const char *name;
    int (*usable)(const hiar_tier_t *tier, const hiar_transport_config_t *cfg, char *why, size_t len);
    hiar_result_t (*setup)(const hiar_tier_t *tier, const hiar_transport_config_t *cfg, void **state, char *why,
                           size_t len);
    hiar_result_t (*run)(void *state, const hiar_tier_t *tier, const hiar_call_t *call, hiar_step_t step);
    size_t (*max_bytes)(const void *state); /* most bytes one run takes: callers cut chunks of it */
    hiar_result_t (*status)(const void *state);
    void (*abort)(void *state);
    void (*teardown)(void *state, const hiar_tier_t *tier, int flags);
} hiar_transport_t;

/*
 * Shared operations: status of a transport with nothing asynchronous, abort
 * of one whose waits watch the comm's abort flag or the kernels' own, and
 * max_bytes of one that chunks calls itself.
 */
hiar_result_t hiar_transport_no_status(const void *state);
void hiar_transport_no_abort(void *state);
size_t hiar_transport_unbounded(const void *state);

/* The transports; all but shm exist in CUDA builds only. */
extern const hiar_transport_t hiar_transport_shm;
extern const hiar_transport_t hiar_transport_ipc;
extern const hiar_transport_t hiar_transport_pinned;
extern const hiar_transport_t hiar_transport_self;
extern const hiar_transport_t hiar_transport_staged;

#endif
