/* The staged transport's pinned buffers, shared with the hierarchical device path. */
#ifndef HIAR_TRANSPORT_STAGED_H
#define HIAR_TRANSPORT_STAGED_H

#include <stddef.h>

#include "hiar.h"

/* Each of the two pinned buffers that stage device data through the host:
 * while MPI reduces one, the other is being copied.  Measured on 2 H200, 4
 * ranks as 2 groups under MPS, bf16, 1-256 MB: 1, 4 and 16 MB pieces within
 * 10% of each other (MPI dominates), 256 KB 10-20% slower. */
#define HIAR_STAGE_BYTES ((size_t)4 << 20)

/* The staged transport's 2 x HIAR_STAGE_BYTES of pinned memory, allocated at first use. */
hiar_result_t hiar_staged_buffer(void *state, char **buf);

#endif
