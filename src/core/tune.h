/*
 * Tuning at hiar_comm_create (HIAR_TUNE, HIAR_TUNE_CACHE): the host-buffer
 * crossover of this comm timed over the ladder of core/tune_cache.h, each
 * candidate first checked on a small sum, the timings agreed with one
 * MPI_Allreduce(MAX) and the limit chosen from the agreed table, so every
 * rank picks alike; or read from the cache by rank 0 and broadcast.
 */
#ifndef HIAR_CORE_TUNE_H
#define HIAR_CORE_TUNE_H

#include "core/comm.h"

/* Collective over comm, after its setup: fills comm->tune by HIAR_TUNE. */
hiar_result_t hiar_tune_comm(hiar_comm_t *comm);

#endif
