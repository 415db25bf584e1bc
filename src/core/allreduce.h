/*
 * hiar_allreduce for a caller that has asked CUDA where both buffers live:
 * the preload (mpi/path.c), which must know that to stage them.  Here, not
 * in hiar.h: an application asks hiar_allreduce, which asks CUDA once per
 * buffer; through the preload it would be twice.  Only hiar.h is included,
 * so the preload sees nothing else of core.
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

#endif
