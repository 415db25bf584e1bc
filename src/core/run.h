/*
 * Running a planned call (call->plan): host buffers through the host side's
 * transport and MPI, device buffers through the device side's transport,
 * or staged through pinned host memory into the host path.
 */
#ifndef HIAR_CORE_RUN_H
#define HIAR_CORE_RUN_H

#include "core/comm.h"

/* The host path of a call on host buffers (comm is a hiar_comm_t *: the staged transport holds it). */
hiar_result_t hiar_run_host(void *comm, const hiar_call_t *call);

/*
 * The whole of a call on comm (core/allreduce.c): rc is the outcome of its
 * argument checks (shared with the peers under HIAR_CHECK=global); then the
 * comm is entered, the call planned, described and run.  name: the API
 * function, in messages.
 */
hiar_result_t hiar_call_run(hiar_comm_t *comm, hiar_call_t *call, hiar_result_t rc, const char *name);

/* The checks of hiar_allreduce's arguments as they are in call. */
hiar_result_t hiar_call_check(const hiar_call_t *call, const char *name);

/*
 * Whether a device-buffer call along plan waits on the host: staged, or
 * over MPI between groups without the progress engine.  Such a call cannot
 * be captured in a CUDA graph.
 */
int hiar_run_waits_on_host(const hiar_comm_t *comm, hiar_plan_t plan);

/* Runs call on comm along its plan (call->norm: with the norm after it, fused where the plan allows). */
hiar_result_t hiar_run(hiar_comm_t *comm, const hiar_call_t *call);

#endif
