/* The communicator object, its registry of live handles, and its state. */
#ifndef HIAR_COMM_H
#define HIAR_COMM_H

#include <stdatomic.h>

#include "core/gpu.h"
#include "base/param.h"
#include "transport/shm.h"
#include "topo/topo.h"

/* Chunk of the MPI path, reduced in the comm's own buffer. */
#define HIAR_MPI_SCRATCH_BYTES (4 << 20)

struct hiar_comm {
    MPI_Comm mpi; /* our duplicate of the user's communicator */
    int rank, size;
    hiar_params_t params;

    hiar_grouping_t groups; /* host-buffer grouping */
    int group, local, local_size;
    int nshards;          /* message shards between groups: the largest group size */
    MPI_Comm group_comm;  /* my group */
    MPI_Comm *shard_comm; /* [nshards] owners of shard s in every group, or MPI_COMM_NULL */
    hiar_shm_t *shm;
    hiar_devcomm_t *dev; /* GPU side; NULL without a GPU */
    void *scratch;       /* HIAR_MPI_SCRATCH_BYTES where MPI reduces (the MPI path) */

    atomic_int busy;  /* a call is running on this comm */
    atomic_int abort; /* hiar_comm_abort asks running waits to stop */
    hiar_result_t failed; /* first fatal error, HIAR_SUCCESS while usable */
};

/*
 * Starts a call on comm: fails if comm is not a live handle (never created,
 * destroyed or aborted), has failed, or is in use by another thread.
 */
hiar_result_t hiar_comm_enter(hiar_comm_t *comm, const char *call);
void hiar_comm_leave(hiar_comm_t *comm);

/* HIAR_INVALID_USAGE unless comm is a live handle (for calls that only read it). */
hiar_result_t hiar_comm_check_live(const hiar_comm_t *comm, const char *call);

/* 1 if comm is live and has HIAR_CHECK=global. */
int hiar_comm_checks_globally(const hiar_comm_t *comm);

/*
 * Communicators for the inter-group step over grouping g: for shard s of
 * *nshards (the largest group's size), the ranks that own it, local index
 * s % group size, one per group, ordered by group; MPI_COMM_NULL where this
 * rank owns nothing, and everywhere for a single group.  One split per
 * shard, in shard order on every rank, so the step cannot deadlock.
 */
hiar_result_t hiar_shard_comms_create(MPI_Comm mpi, const hiar_grouping_t *g, int rank, int *nshards,
                                      MPI_Comm **out);
void hiar_shard_comms_free(int nshards, MPI_Comm *comms);

/* Largest host message over groups that goes hier-oneshot (src/allreduce.c). */
size_t hiar_comm_hier_oneshot_max(const hiar_comm_t *comm);

/*
 * Collective: every rank learns whether any rank failed, so all return an
 * error together (the worst code; "call failed on another rank" where this
 * rank succeeded).  PMPI_Allreduce: see comm.c.
 */
hiar_result_t hiar_comm_agree(hiar_comm_t *comm, hiar_result_t rc, const char *call);

/* Collective over mpi: 1 if cond holds on every rank (0 also if MPI fails). */
int hiar_mpi_all(MPI_Comm mpi, int cond);

/* Records a fatal error: later calls fail fast with HIAR_COMM_FAILED. */
void hiar_comm_fail(hiar_comm_t *comm, hiar_result_t rc);

static inline long long hiar_comm_param(const hiar_comm_t *comm, hiar_param_id_t id)
{
    return comm->params.v[id].num;
}

#endif
