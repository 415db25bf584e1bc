/*
 * Inter-group step: an in-place MPI allreduce of a shard among the ranks that
 * own the same shard in every group.  Half types travel as 16-bit words with
 * MPI ops that compute in f32; float min/max use ops that propagate NaN like
 * hiar's own reductions, so every path gives the same answer.
 */
#ifndef HIAR_INTER_H
#define HIAR_INTER_H

#include <mpi.h>

#include "hiar.h"
#include "wait.h"

/* Creates the MPI datatypes and ops once per process (after MPI_Init). */
hiar_result_t hiar_inter_init(void);

/*
 * In-place allreduce of count elements over mpi_comm (HIAR_AVG reduces as a
 * sum; the caller divides).  Non-blocking MPI polled through `wait`, so a
 * stalled peer makes it return HIAR_TIMEOUT instead of hanging.
 */
hiar_result_t hiar_inter_allreduce(void *buf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                   MPI_Comm mpi_comm, hiar_wait_t *wait);

/* Completes a non-blocking MPI request, polled through `wait` (bounded). */
hiar_result_t hiar_mpi_wait(MPI_Request *req, hiar_wait_t *wait);

#endif
