/*
 * hiar's own collectives over MPI: agreement across ranks, gathers and
 * barriers of the setup, and bounded waits for MPI requests.  This is the one
 * place that calls MPI collectives, and it always calls PMPI_: under
 * libhiar_mpi.so's preload MPI_Allreduce would come back into hiar and give
 * each of hiar's internal communicators a hiar communicator of its own
 * (tests/check-layers.sh keeps MPI collectives out of the other layers).
 */
#ifndef HIAR_NET_COLL_H
#define HIAR_NET_COLL_H

#include <mpi.h>

#include "base/wait.h"
#include "hiar.h"

/*
 * Every rank learns whether any rank failed, so all return an error
 * together: the worst code; "<call> failed on another rank" where this rank
 * succeeded (its own message stays where it failed).
 */
hiar_result_t hiar_net_agree(MPI_Comm comm, hiar_result_t rc, const char *call);

/* Most values of one hiar_net_bounds. */
#define HIAR_NET_BOUNDS_MAX 16

/* lo[i] and hi[i]: the smallest and largest of v[i] over the ranks (n <= HIAR_NET_BOUNDS_MAX); v may be lo or hi. */
hiar_result_t hiar_net_bounds(MPI_Comm comm, const long long *v, long long *lo, long long *hi, int n);

/* In place over the ranks: v[i] = min (hiar_net_min) or max (hiar_net_max) of v[i]. */
hiar_result_t hiar_net_min(MPI_Comm comm, int *v, int n);
hiar_result_t hiar_net_max(MPI_Comm comm, int *v, int n);
hiar_result_t hiar_net_max_double(MPI_Comm comm, double *v, int n);

/* all = every rank's `bytes` of mine, in rank order; what names it in a failure. */
hiar_result_t hiar_net_allgather(MPI_Comm comm, const void *mine, size_t bytes, void *all, const char *what);

/* The same, non-blocking and polled through wait (bounded: HIAR_CHECK=global per call). */
hiar_result_t hiar_net_allgather_wait(MPI_Comm comm, const void *mine, size_t bytes, void *all,
                                      hiar_wait_t *wait, const char *what);

hiar_result_t hiar_net_barrier(MPI_Comm comm);
hiar_result_t hiar_net_bcast(MPI_Comm comm, void *buf, size_t bytes, int root);

/* Completes n non-blocking requests (MPI_REQUEST_NULL allowed), polled through wait (bounded). */
hiar_result_t hiar_net_wait(int n, MPI_Request *reqs, hiar_wait_t *wait);

#endif
