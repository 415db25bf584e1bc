/*
 * The GPU side of a communicator (CUDA builds): the CUDA IPC transport of
 * this rank's group, and the pinned buffer that stages device buffers through
 * the host path where IPC cannot serve a call.
 */
#ifndef HIAR_DEVCOMM_H
#define HIAR_DEVCOMM_H

#include <stdio.h>

#include "hiar.h"
#include "topo/topo.h"

struct hiar_comm;
typedef struct hiar_devcomm hiar_devcomm_t;

/*
 * Collective over the comm.  Gathers every rank's topology facts (GPU, PCI
 * path, NVLink), groups the ranks for device buffers (HIAR_GROUPS, else
 * HIAR_GROUP_LEVEL), and sets up IPC in every group whose ranks all have a
 * GPU (2 to 8 ranks) and pass the P2P probe; *out is NULL when this rank has
 * no GPU.  Failures of IPC are agreed in the group and fall back to staging,
 * with one warning.
 */
hiar_result_t hiar_devcomm_create(struct hiar_comm *comm, hiar_devcomm_t **out);

/* collective = 0 after a failure or on abort: no communication. */
void hiar_devcomm_destroy(struct hiar_comm *comm, hiar_devcomm_t *dev, int collective);

/* Whether this rank's group of GPUs has the CUDA IPC transport. */
int hiar_devcomm_has_ipc(const hiar_devcomm_t *dev);

/* Number of groups of the device-buffer grouping (0 without a GPU). */
int hiar_devcomm_ngroups(const hiar_devcomm_t *dev);

/* The device-buffer grouping (dev not NULL). */
const hiar_grouping_t *hiar_devcomm_groups(const hiar_devcomm_t *dev);

/* The topology table and the device groups (hiar_comm_describe). */
hiar_result_t hiar_devcomm_print_topology(const hiar_devcomm_t *dev, FILE *out);

/* IPC allreduce on stream (asynchronous) with kernel, a hiar_ipc_kernel_t. */
hiar_result_t hiar_devcomm_ipc_allreduce(hiar_devcomm_t *dev, int kernel, const void *sendbuf,
                                         void *recvbuf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                         int divisor, hiar_stream_t stream);

/* Whether device calls can take the hierarchical path: several groups, each with IPC or alone (agreed by all ranks). */
int hiar_devcomm_hier_ready(const hiar_devcomm_t *dev);

/*
 * Device buffers over several groups: IPC reduce-scatter in the group, MPI
 * allreduce of each owned shard with the other groups (staged through pinned
 * host memory, pipelined), IPC all-gather.  Stream-ordered; blocks the
 * calling thread through the MPI step.
 */
hiar_result_t hiar_devcomm_hier_allreduce(struct hiar_comm *comm, hiar_devcomm_t *dev, const void *sendbuf,
                                          void *recvbuf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                          hiar_stream_t stream);

/*
 * Registered memory (src/mem.c; hiar_windows_* in src/window.h): device
 * memory on this rank's GPU; registering is collective over the group, as is
 * deregistering window (an index from hiar_devcomm_registered, -1 if ptr is
 * not registered), which also frees owned memory.
 */
hiar_result_t hiar_devcomm_mem_alloc(const hiar_devcomm_t *dev, size_t bytes, void **ptr);
hiar_result_t hiar_devcomm_register(hiar_devcomm_t *dev, void *ptr, size_t bytes, int owned);
int hiar_devcomm_registered(const hiar_devcomm_t *dev, const void *ptr, int *owned);
void hiar_devcomm_deregister(hiar_devcomm_t *dev, int window);

/* Pinned host buffer for staging device buffers through the host path. */
void *hiar_devcomm_stage_buffer(hiar_devcomm_t *dev, size_t *bytes);

/* HIAR_TIMEOUT once a kernel gave up waiting; HIAR_SUCCESS otherwise. */
hiar_result_t hiar_devcomm_status(const hiar_devcomm_t *dev);
void hiar_devcomm_abort(hiar_devcomm_t *dev);

/* One line for hiar_comm_describe: GPU, transport and why. */
void hiar_devcomm_summary(const hiar_devcomm_t *dev, char *buf, size_t size);

#endif
