/*
 * The hierarchical algorithms, host and device drivers side by side: a
 * reduce-scatter in every group, the step between groups on the shards a
 * rank owns (over MPI, net/inter.c), an all-gather in every group.
 */
#ifndef HIAR_CORE_HIER_H
#define HIAR_CORE_HIER_H

#include "core/comm.h"

/* Host buffers, one chunk (at most a shm slot): RS, MPI on the owned shards, AG. */
hiar_result_t hiar_hier_host(hiar_comm_t *comm, const hiar_call_t *chunk);

/*
 * Small host messages over groups: one-shot in the group into the scratch,
 * then every rank allreduces the whole group sum with its counterparts
 * (one barrier instead of two).
 */
hiar_result_t hiar_hier_oneshot(hiar_comm_t *comm, const hiar_call_t *chunk);

/*
 * Device buffers over groups: IPC reduce-scatter in the group, an allreduce
 * of each owned shard with the other groups, IPC all-gather.  Between
 * groups: on the GPU when the plan has a kernel for it (core/between.h;
 * then nothing waits on the host), else MPI staged through pinned host
 * memory, pipelined, which blocks the calling thread.
 */
hiar_result_t hiar_hier_device(hiar_comm_t *comm, const hiar_call_t *call);

/*
 * Device buffers over groups on the progress engine, small messages (the
 * plan's ipc-hosts-ll): the group's one-shot kernel, then every rank's job
 * with its counterparts over the whole message (core/hosts.h
 * hiar_hosts_run_whole); no all-gather.
 */
hiar_result_t hiar_hier_device_hosts_ll(hiar_comm_t *comm, const hiar_call_t *call);

/* Device buffers over groups exchanging on the GPU, in one kernel (core/between.h hiar_between_fused). */
hiar_result_t hiar_hier_device_fused(hiar_comm_t *comm, const hiar_call_t *call);

#endif
