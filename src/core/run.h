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

/* Runs call on comm along its plan. */
hiar_result_t hiar_run(hiar_comm_t *comm, const hiar_call_t *call);

#endif
