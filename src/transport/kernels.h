/*
 * The two transports whose runs are GPU kernels (cuda/): CUDA IPC between
 * GPUs with P2P (ipc.c), and pinned host memory for GPUs without (pinned.c).
 * Both keep a hiar_ipc_t as their state, so that they share the P2P check,
 * the launch caps and every run; they differ in where the buffers live.
 */
#ifndef HIAR_TRANSPORT_KERNELS_H
#define HIAR_TRANSPORT_KERNELS_H

#include "cuda/api.h"
#include "transport/transport.h"

/* Usable for a group of 2 to 8 ranks that all have a GPU. */
int hiar_kernels_usable(const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why, size_t len);

/* Collective over the group: every rank writes a token into every peer's buffers and reads back its peers'. */
hiar_result_t hiar_kernels_probe(hiar_ipc_t *ipc, MPI_Comm group);

/* Collective over the group: the launch caps (see ipc.c), appended to why. */
void hiar_kernels_set_launch(hiar_ipc_t *ipc, const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why,
                             size_t len);

/* The transport operations on a hiar_ipc_t state. */
hiar_result_t hiar_kernels_run(void *state, const hiar_tier_t *t, const hiar_call_t *c, hiar_step_t step);
hiar_result_t hiar_kernels_status(const void *state);
void hiar_kernels_abort(void *state);

/* Stops the kernels (not collective: abort them first), waits for them, unmaps the peers (collective: between barriers). */
void hiar_kernels_quiesce(hiar_ipc_t *ipc, const hiar_tier_t *t, int flags);

/* Whether tp is one of them: its state is a hiar_ipc_t. */
int hiar_transport_runs_kernels(const hiar_transport_t *tp);

#endif
