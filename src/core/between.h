/*
 * The step between groups on the GPU (CUDA builds): for every shard a rank
 * owns, its counterparts, meaning the owners of the same shard in the other
 * groups, form a group of their own with a transport (CUDA IPC) set up like
 * any group's.  A hierarchical device call then runs kernels only: the
 * reduce-scatter in the group, an allreduce of each owned shard among its
 * counterparts, the all-gather in the group.  Nothing waits on the host, so
 * the call returns at once and can be captured in a CUDA graph.
 *
 * Where the groups span hosts, the same number of groups of one size on
 * every host, the step splits in two (per_host): shard s's counterparts on
 * one host form that group, reduce-scatter the shard among themselves (a
 * part each), the owners of a part on every host allreduce it over MPI
 * (core/hosts.h, or blocking), and the counterparts all-gather the parts.
 * So each byte of a shard leaves its host once, not once per group there.
 *
 * Otherwise every shard's counterparts must share a host and pass the P2P
 * probe, and every group must have IPC or one rank; else (agreed by every
 * rank of the comm) the step goes over MPI through pinned host memory
 * (core/hier.c).
 */
#ifndef HIAR_CORE_BETWEEN_H
#define HIAR_CORE_BETWEEN_H

#include "core/groups.h"
#include "cuda/api.h"

typedef struct {
    int on_gpu;         /* agreed over the comm: every shard's counterparts exchange on the GPU */
    int per_host;       /* agreed: the groups of each host on the GPU, then the hosts over MPI (above) */
    int nshards;
    hiar_side_t *shard; /* [nshards]; shard s's counterparts (per_host: on this host), tp NULL where this rank owns no s */
    /*
     * per_host: the parts of this rank's shard, one per counterpart on a
     * host (nshards of them, local the one it owns); shard_comm[local]: the
     * owners of that part on every host, by host.  The step between hosts
     * runs on it as on a device tier.
     */
    hiar_tier_t hosts;
    size_t part_chunk;  /* per_host: the counterparts' reduce-scatter chunk (agreed over the comm) */
    size_t slot;        /* the smallest data slot of any set of counterparts (agreed over the comm) */
    hiar_ipc_caps_t caps; /* blocks of the kernels over groups: the fewest any of their transports allows (agreed) */
    int spread;         /* the most shards a rank of any group receives per sender, times its group's ranks */
    char why[400];      /* the transport between groups and why */
} hiar_between_t;

/*
 * Collective over mpi (every rank of the comm, with its connected device
 * side `group` and every rank's facts).  mode: HIAR_BETWEEN_*; pinned: HIAR_PINNED (pinned
 * host memory, not CUDA IPC); per_host_ok: whether the comm takes the sets
 * within each host of groups over several hosts (they serve only the
 * progress engine's parts between hosts; 0: MPI there, `why` says so; the
 * same on every rank).  CUDA IPC that fails falls back to pinned host
 * memory; failure of both to MPI on every rank (one WARN); only a failed
 * agreement is returned.
 */
hiar_result_t hiar_between_setup(hiar_between_t *b, MPI_Comm mpi, const hiar_side_t *group,
                                 const hiar_topo_fact_t *facts, const hiar_transport_config_t *cfg, int mode,
                                 int pinned, int per_host_ok);

/* HIAR_TEARDOWN_* flags; collective over the shard communicators, in shard order. */
void hiar_between_free(hiar_between_t *b, int flags);

/* Whether a set of this rank's counterparts exchanges through pinned host memory. */
int hiar_between_pinned(const hiar_between_t *b);

/* HIAR_TIMEOUT once a kernel between groups gave up waiting. */
hiar_result_t hiar_between_status(const hiar_between_t *b);
void hiar_between_abort(hiar_between_t *b);

/*
 * per_host: the halves around the step between hosts, on shard s's
 * counterparts on this host: HIAR_STEP_REDUCE_SCATTER leaves this rank's
 * part of c (undivided) in c->recvbuf, HIAR_STEP_ALLGATHER completes c from
 * every counterpart's part; c is the shard, in place in the output.
 */
hiar_result_t hiar_between_part(hiar_between_t *b, int s, const hiar_call_t *c, hiar_step_t step);

/* Allreduce of c (its plan's kernel) among the counterparts of shard s, which this rank owns. */
hiar_result_t hiar_between_run(hiar_between_t *b, int s, const hiar_call_t *c);

/*
 * c in one kernel (hiar_ipc_hier): in this rank's group (`group`, the
 * device side: IPC, or self alone) and with the counterparts of every
 * shard it owns (a rank of a smaller group stands in for it in several
 * sets); the latency path for HIAR_ALG_HIER_ONESHOT, the bandwidth path
 * for HIAR_ALG_HIER.  Kernels only.
 */
hiar_result_t hiar_between_fused(hiar_between_t *b, const hiar_side_t *group, const hiar_call_t *c);

#endif
