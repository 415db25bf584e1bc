/*
 * Sharing device memory in a group by CUDA IPC: every rank exports an
 * allocation (cuda/ipcmem.cu), the group exchanges the handles, and every
 * rank maps its peers'.  The CUDA IPC transport's own buffers (ipc.c) and
 * registered memory (core/reg.c) both go through here.
 */
#ifndef HIAR_TRANSPORT_PEERS_H
#define HIAR_TRANSPORT_PEERS_H

#include <mpi.h>
#include <stdint.h>

#include "cuda/api.h"

/* What a rank tells its group about memory it shares. */
typedef struct {
    unsigned char handle[HIAR_IPC_HANDLE_BYTES];
    uint64_t offset, bytes; /* the shared range within the exported allocation */
    int32_t index, pad;     /* which of the caller's tables it is (registered memory) */
} hiar_ipc_offer_t;

/*
 * Collective over the group (size ranks, this one local): export -> agree
 * -> allgather -> map -> agree.  rc says how this rank's export went (mine
 * is read only where it succeeded).  On success all[] holds every rank's
 * offer in local order and mapped[p] the base of peer p's allocation as
 * mapped here (mapped[local] NULL).  Fails on every rank of the group
 * together, and then nothing is left mapped; `what` names the caller.
 */
hiar_result_t hiar_peers_exchange(MPI_Comm group, int local, int size, int device, hiar_result_t rc,
                                  const hiar_ipc_offer_t *mine, hiar_ipc_offer_t *all, char **mapped,
                                  const char *what);

/* Unmaps what hiar_peers_exchange mapped (entries NULL are skipped, then all NULL). */
void hiar_peers_unmap(int device, char **mapped, int size);

#endif
