/*
 * Intra-group transport over POSIX shared memory (host buffers).
 *
 * Each rank of a group owns two slots ("double buffering") in one shared
 * segment, and two flags, each with room for a one-shot message of up to
 * 120 bytes beside it.  A call (or a chunk of one) uses slot step % 2, so
 * a rank may refill its slot for step k+2 once every peer has passed the
 * first barrier of step k+1, which it cannot do before finishing step k:
 * one-shot needs one barrier per step, reduce-scatter + all-gather two.
 *
 *   one-shot:  copy in | barrier | reduce all slots -> recvbuf
 *              (up to 120 bytes: the copy in goes beside the barrier's flag)
 *   two-shot:  copy in | barrier | reduce own shards into own slot |
 *              (inter-group step on own shards) | barrier | copy all shards out
 *
 * A group of one rank uses private memory and no barriers, so the
 * hierarchical driver treats every group alike.
 */
#ifndef HIAR_SHM_H
#define HIAR_SHM_H

#include <mpi.h>

#include "hiar.h"
#include "base/wait.h"

typedef struct hiar_shm hiar_shm_t;

/* Collective over group_comm.  slot_bytes is rounded up to a page. */
hiar_result_t hiar_shm_create(MPI_Comm group_comm, size_t slot_bytes, hiar_shm_t **out);
void hiar_shm_destroy(hiar_shm_t *shm);

size_t hiar_shm_slot_bytes(const hiar_shm_t *shm);

/* Full reduction of count elements (count * esize <= slot bytes) into recvbuf. */
hiar_result_t hiar_shm_oneshot(hiar_shm_t *shm, const void *sendbuf, void *recvbuf, size_t count,
                               hiar_dtype_t dtype, hiar_op_t op, int divisor, hiar_wait_t *wait);

/*
 * Reduce-scatter: afterwards shard s of the nshards (see shard.h) is reduced
 * over the group in the slot of local rank s % group size, and, where
 * recvbuf is not NULL, in that rank's recvbuf too.
 */
hiar_result_t hiar_shm_reduce_scatter(hiar_shm_t *shm, const void *sendbuf, void *recvbuf, size_t count,
                                      hiar_dtype_t dtype, hiar_op_t op, int nshards, int divisor,
                                      hiar_wait_t *wait);

/* This rank's copy of shard s in its own slot (valid between the two halves). */
void *hiar_shm_shard(hiar_shm_t *shm, size_t count, hiar_dtype_t dtype, int nshards, int s,
                     size_t *shard_count);

/* All-gather: every rank copies every shard (but its own where skip_own) from its owner's slot to recvbuf. */
hiar_result_t hiar_shm_allgather(hiar_shm_t *shm, void *recvbuf, size_t count, hiar_dtype_t dtype,
                                 int nshards, int skip_own, hiar_wait_t *wait);

#endif
