/*
 * What the preload (mpi/) takes from core beside hiar.h: hiar_allreduce for
 * a caller that has asked CUDA where both buffers live (mpi/path.c, which
 * must know that to stage them; not in hiar.h: an application asks
 * hiar_allreduce, which asks CUDA once per buffer, and through the preload
 * it would be twice), and how long a comm's waits spin.  Only hiar.h is
 * included, so the preload sees nothing else of core.
 */
#ifndef HIAR_CORE_ALLREDUCE_H
#define HIAR_CORE_ALLREDUCE_H

#include "hiar.h"

/*
 * device: 1 if the buffers are device memory, 0 if host memory; the call
 * asks CUDA nothing more.  A wrong kind is the caller's bug (a kernel on
 * host memory faults).
 */
hiar_result_t hiar_allreduce_of_kind(const void *sendbuf, void *recvbuf, size_t count, hiar_dtype_t dtype,
                                     hiar_op_t op, int device, hiar_comm_t *comm, hiar_stream_t stream);

/* How long comm's waits spin before they yield the core (HIAR_YIELD, core/yield.c), for the preload's own. */
unsigned long long hiar_comm_spin_ns(const hiar_comm_t *comm);

#endif
