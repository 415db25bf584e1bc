/*
 * A group's POSIX shared-memory segment: the host transport's slots
 * (shm.c) and the pinned-host transport's buffers (pinned.c).  Local rank 0
 * creates it (0600, O_EXCL, its pages reserved so that a full /dev/shm
 * fails here and not as SIGBUS later), the others open it, and it is
 * unlinked as soon as every member mapped it (or failed), so nothing
 * outlives the job.
 */
#ifndef HIAR_TRANSPORT_SEGMENT_H
#define HIAR_TRANSPORT_SEGMENT_H

#include <mpi.h>
#include <stddef.h>

#include "hiar.h"

/* Collective over group, the same result on every member; `what` names the user in messages, logged at WARN
 * (quiet: INFO, where another transport serves anyway). */
hiar_result_t hiar_segment_map(MPI_Comm group, int me, size_t bytes, const char *what, int quiet, void **base);

#endif
