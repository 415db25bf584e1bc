/*
 * Inter-group step: an in-place allreduce of a shard among the ranks that
 * own the same shard in every group, over MPI point-to-point messages with
 * hiar's own host reductions (half types in f32, NaN-propagating min/max),
 * so every path gives the same answer.
 */
#ifndef HIAR_INTER_H
#define HIAR_INTER_H

#include <mpi.h>

#include "hiar.h"
#include "base/wait.h"

/*
 * In-place allreduce of count elements over mpi_comm (HIAR_AVG reduces as a
 * sum; the caller divides).  Non-blocking MPI polled through `wait`, so a
 * stalled peer makes it return HIAR_TIMEOUT instead of hanging.  Every rank
 * gets the same bits.
 */
hiar_result_t hiar_inter_allreduce(void *buf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                   MPI_Comm mpi_comm, hiar_wait_t *wait);

/*
 * The MPI step of a hierarchical one-shot: `sum` holds this group's sum (n
 * elements) with room after it for one copy per shard this rank owns (shards
 * first, first + step, ... < nshards).  Each copy is allreduced over its
 * shard's communicator, which has one rank of every group, so every group sum
 * meets every other once and each copy ends as the result; AVG divides it by
 * divisor.  *result is the first copy.
 */
hiar_result_t hiar_inter_oneshot(char *sum, size_t n, hiar_dtype_t dtype, hiar_op_t op, const MPI_Comm *shard_comm,
                                 int first, int step, int nshards, int divisor, hiar_wait_t *wait, char **result);

#endif
