/*
 * The step between hosts of hierarchical device calls, on the progress
 * engine (net/progress.h) and the GPU (cuda/hosts.cu), in CUDA builds: after
 * the reduce-scatter in the group, one kernel per shard this rank owns (a
 * job: the shard's pieces in every chunk, through a ring) hands them to the
 * engine's thread, which exchanges them over MPI with the shard's owners on
 * the other hosts, and reduces what arrives; the all-gather follows.  The call only enqueues kernels and
 * jobs, so it returns at once, and a CUDA graph can capture it.
 *
 * It needs MPI_THREAD_MULTIPLE: the thread calls MPI while the application
 * (and hiar on its thread) may.  Without it, or with HIAR_PROGRESS=0, the
 * step stays on the calling thread, blocking (core/hier.c).
 */
#ifndef HIAR_CORE_HOSTS_H
#define HIAR_CORE_HOSTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/call.h"
#include "net/tier.h"

typedef struct hiar_hosts hiar_hosts_t;

typedef struct {
    int setting;             /* HIAR_PROGRESS: 0 off, 1 auto */
    int device_pointers;     /* the MPI takes device memory (HIAR_MPI_DEVICE, resolved) */
    int timeout_ms;
    unsigned sharers;        /* ranks of the comm on this GPU (or HIAR_GPU_SHARERS) */
    int device;              /* the GPU, made current on the thread */
    const atomic_int *abort; /* the comm's */
    const struct hiar_cuda_control *control; /* the comm's kernels' (cuda/api.h) */
} hiar_hosts_config_t;

/*
 * Collective over mpi (every rank of the comm; the device tier t).  *out is
 * NULL where the step stays blocking, agreed by every rank; why says which
 * and why either way.  Only a failed agreement is returned.
 */
hiar_result_t hiar_hosts_setup(MPI_Comm mpi, const hiar_tier_t *t, const hiar_hosts_config_t *cfg,
                               hiar_hosts_t **out, char *why, size_t why_size);

/*
 * The step of c for every shard this rank owns, every chunk of c->plan.chunk
 * (after the reduce-scatter), from the rank's own bytes in c->sendbuf (the
 * group's result: c->recvbuf, or for a rank alone in its group the call's
 * input, which saves the group's copy) into c->recvbuf; so for every
 * function here.  It only enqueues, but for a captured call that hands MPI
 * device pointers: that waits (bounded) for its peers to capture theirs,
 * the job's own memory's first exchange.
 */
hiar_result_t hiar_hosts_run(hiar_hosts_t *h, const hiar_call_t *c, const hiar_tier_t *t);

/*
 * Whether every rank can take the whole message to its counterparts
 * (hiar_hosts_run_whole): every group of t has t->nshards ranks, so each
 * rank owns one shard and has its link (ranks alone in rounds: the link
 * over all).  The same on every rank.
 */
int hiar_hosts_whole_ok(const hiar_hosts_t *h, const hiar_tier_t *t);
/*
 * Every rank alone in rounds (hosts.c) with the link over all of them: how
 * many more times the message a rank sends in one job over every rank than
 * in the rounds (n - 1 - sum(p - 1) over the factors p; 4 ranks: 1, 8: 4);
 * 0 for other comms and where one round is all.  The same on every rank.
 */
int hiar_hosts_alone_extra(const hiar_hosts_t *h);
/*
 * The latency path's step (core/hier.c): the whole of c, which the group
 * left alike on its ranks, over this rank's link to its counterparts (ranks
 * alone: to every rank), one job (where hiar_hosts_whole_ok).
 */
hiar_result_t hiar_hosts_run_whole(hiar_hosts_t *h, const hiar_call_t *c, const hiar_tier_t *t);
/*
 * Groups on several hosts, as many on each (core/between.h, per_host): the
 * step of c for this rank's part (parts->local of parts->nshards, the tier
 * set up with the links) of shard s (of c->nshards) of every chunk, in one
 * job, where the owners of the shard on this host reduce-scattered each
 * chunk's shard in one go (it fits a chunk of theirs).
 */
hiar_result_t hiar_hosts_run_part(hiar_hosts_t *h, const hiar_call_t *c, int s, const hiar_tier_t *parts);

/*
 * Whether a comm of nranks, every rank alone in its group, takes the
 * engine: 2 ranks, or more whose prime factors are all small enough for its
 * rounds (hosts.c); else its step stays on staged MPI.
 */
int hiar_hosts_alone_ok(int nranks);

/* HIAR_TIMEOUT or the thread's error once there is one. */
hiar_result_t hiar_hosts_status(hiar_hosts_t *h);
void hiar_hosts_abort(hiar_hosts_t *h);

/* The thread's waits spin this long before they yield (HIAR_YIELD: core/yield.c; net/progress.h). */
void hiar_hosts_set_spin(hiar_hosts_t *h, uint64_t spin_ns);

/* Stops the thread (after the GPU is idle, or after abort); what a failed exchange may still write into stays. */
void hiar_hosts_free(hiar_hosts_t *h);

#endif
