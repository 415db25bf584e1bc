/* hiar's own collectives: agreement, setup gathers, bounded request waits; always PMPI_. */
#include <string.h>

#include "base/error.h"
#include "net/coll.h"

hiar_result_t hiar_net_agree(MPI_Comm comm, hiar_result_t rc, const char *call)
{
    int mine = rc, worst = rc;

    if (PMPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return rc != HIAR_SUCCESS ? rc : hiar_error_set(HIAR_MPI_ERROR, "%s: agreeing on the outcome failed", call);
    if (rc == HIAR_SUCCESS && worst != HIAR_SUCCESS)
        return hiar_error_set((hiar_result_t)worst, "%s failed on another rank (%s; its log says why)", call,
                              hiar_strerror((hiar_result_t)worst));
    return rc;
}

/* One MAX over {v, -v}: the largest and, negated, the smallest of every value. */
hiar_result_t hiar_net_bounds(MPI_Comm comm, const long long *v, long long *lo, long long *hi, int n)
{
    enum { MAX = HIAR_NET_BOUNDS_MAX };
    long long both[2 * MAX];

    if (n > MAX)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "hiar_net_bounds: %d values, at most %d", n, MAX);
    for (int i = 0; i < n; i++) {
        both[i] = v[i];
        both[n + i] = -v[i];
    }
    HIAR_MPI_CHECK(PMPI_Allreduce(MPI_IN_PLACE, both, 2 * n, MPI_LONG_LONG, MPI_MAX, comm));
    for (int i = 0; i < n; i++) {
        hi[i] = both[i];
        lo[i] = -both[n + i];
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_net_min(MPI_Comm comm, int *v, int n)
{
    HIAR_MPI_CHECK(PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_MIN, comm));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_net_max(MPI_Comm comm, int *v, int n)
{
    HIAR_MPI_CHECK(PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_MAX, comm));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_net_max_double(MPI_Comm comm, double *v, int n)
{
    HIAR_MPI_CHECK(PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_net_allgather(MPI_Comm comm, const void *mine, size_t bytes, void *all, const char *what)
{
    int rc = PMPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, comm);
    return rc == MPI_SUCCESS ? HIAR_SUCCESS : hiar_error_mpi(rc, what);
}

hiar_result_t hiar_net_allgather_wait(MPI_Comm comm, const void *mine, size_t bytes, void *all,
                                      hiar_wait_t *wait, const char *what)
{
    MPI_Request req;
    int rc = PMPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, comm, &req);
    return rc == MPI_SUCCESS ? hiar_net_wait(1, &req, wait) : hiar_error_mpi(rc, what);
}

hiar_result_t hiar_net_barrier(MPI_Comm comm)
{
    HIAR_MPI_CHECK(PMPI_Barrier(comm));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_net_bcast(MPI_Comm comm, void *buf, size_t bytes, int root)
{
    HIAR_MPI_CHECK(PMPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_net_wait(int n, MPI_Request *reqs, hiar_wait_t *wait)
{
    for (;;) {
        int done = 0, rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return hiar_error_mpi(rc, "MPI_Testall");
        if (done)
            return HIAR_SUCCESS;
        HIAR_CHECK(hiar_wait_poll(wait));
    }
}
