/*
 * The step between groups on the GPU (CUDA builds): for every shard a rank
 * owns, its counterparts, meaning the owners of the same shard in the other
 * groups, form a group of their own with a transport (CUDA IPC) set up like
 * any group's.  A hierarchical device call then runs kernels only: the
 * reduce-scatter in the group, an allreduce of each owned shard among its
 * counterparts, the all-gather in the group.  Nothing waits on the host, so
 * the call returns at once and can be captured in a CUDA graph.
 *
 * Every shard's counterparts must share a host and pass the P2P probe, and
 * every group must have IPC or one rank; otherwise (agreed by every rank of
 * the comm) the step goes over MPI through pinned host memory (core/hier.c).
 */
#ifndef HIAR_CORE_BETWEEN_H
#define HIAR_CORE_BETWEEN_H

#include "core/groups.h"

typedef struct {
    int on_gpu;         /* agreed over the comm: every shard's counterparts exchange on the GPU */
    int nshards;
    hiar_side_t *shard; /* [nshards]; shard s's counterparts, tp NULL where this rank owns no s */
    char why[400];      /* the transport between groups and why */
} hiar_between_t;

/*
 * Collective over mpi (every rank of the comm, with the device tier t and
 * every rank's facts).  mode: HIAR_BETWEEN_*; pinned: HIAR_PINNED (pinned
 * host memory, not CUDA IPC).  CUDA IPC that fails falls back to pinned
 * host memory; failure of both to MPI on every rank (one WARN); only a
 * failed agreement is returned.
 */
hiar_result_t hiar_between_setup(hiar_between_t *b, MPI_Comm mpi, const hiar_tier_t *t,
                                 const hiar_topo_fact_t *facts, const hiar_transport_config_t *cfg, int mode,
                                 int pinned);

/* HIAR_TEARDOWN_* flags; collective over the shard communicators, in shard order. */
void hiar_between_free(hiar_between_t *b, int flags);

/* Whether a set of this rank's counterparts exchanges through pinned host memory. */
int hiar_between_pinned(const hiar_between_t *b);

/* HIAR_TIMEOUT once a kernel between groups gave up waiting. */
hiar_result_t hiar_between_status(const hiar_between_t *b);
void hiar_between_abort(hiar_between_t *b);

/* Allreduce of c (its plan's kernel) among the counterparts of shard s, which this rank owns. */
hiar_result_t hiar_between_run(hiar_between_t *b, int s, const hiar_call_t *c);

/*
 * The latency path of c in one kernel: LL in this rank's group (`group`,
 * the device side: IPC, or self alone), then LL with the counterparts of
 * every shard it owns (a rank of a smaller group stands in for it in
 * several sets).  Kernels only.
 */
hiar_result_t hiar_between_oneshot(hiar_between_t *b, const hiar_side_t *group, const hiar_call_t *c);

#endif
