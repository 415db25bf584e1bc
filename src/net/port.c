/* Non-blocking byte messages over MPI for the progress engine. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "net/port.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(uint64_t), "an MPI_Request fits hiar_port_req_t");

typedef struct {
    int n, cap; /* links duplicated, allocated */
    MPI_Comm *comm;
    int *rank, *size;
} mpi_links_t;

static int link_rank(void *ctx, int link)
{
    return ((mpi_links_t *)ctx)->rank[link];
}

static int link_size(void *ctx, int link)
{
    return ((mpi_links_t *)ctx)->size[link];
}

static hiar_result_t put_request(MPI_Request r, hiar_port_req_t *out)
{
    out->bits = 0;
    memcpy(&out->bits, &r, sizeof(r));
    return HIAR_SUCCESS;
}

static hiar_result_t mpi_isend(void *ctx, int link, int to, int tag, const void *buf, size_t bytes,
                               hiar_port_req_t *r)
{
    MPI_Request req;
    HIAR_MPI_CHECK(MPI_Isend(buf, (int)bytes, MPI_BYTE, to, tag, ((mpi_links_t *)ctx)->comm[link], &req));
    return put_request(req, r);
}

static hiar_result_t mpi_irecv(void *ctx, int link, int from, int tag, void *buf, size_t bytes,
                               hiar_port_req_t *r)
{
    MPI_Request req;
    HIAR_MPI_CHECK(MPI_Irecv(buf, (int)bytes, MPI_BYTE, from, tag, ((mpi_links_t *)ctx)->comm[link], &req));
    return put_request(req, r);
}

static hiar_result_t mpi_test(void *ctx, hiar_port_req_t *r, int *done)
{
    MPI_Request req;

    (void)ctx;
    memcpy(&req, &r->bits, sizeof(req));
    HIAR_MPI_CHECK(MPI_Test(&req, done, MPI_STATUS_IGNORE));
    return put_request(req, r);
}

static int tag_bound(void)
{
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    return flag && ub ? *ub : 32767;
}

hiar_result_t hiar_port_mpi_alloc(int n, hiar_port_t *port)
{
    mpi_links_t *m = calloc(1, sizeof(*m));

    memset(port, 0, sizeof(*port));
    port->ctx = m;
    if (!m || !(m->comm = calloc((size_t)n + 1, sizeof(MPI_Comm))) || !(m->rank = calloc((size_t)n + 1, sizeof(int))) ||
        !(m->size = calloc((size_t)n + 1, sizeof(int)))) {
        hiar_port_mpi_free(port);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the progress engine's %d MPI links", n);
    }
    m->cap = n;
    port->rank = link_rank;
    port->size = link_size;
    port->isend = mpi_isend;
    port->irecv = mpi_irecv;
    port->test = mpi_test;
    port->max_tag = tag_bound();
    return HIAR_SUCCESS;
}

hiar_result_t hiar_port_mpi_dup(hiar_port_t *port, const MPI_Comm *links)
{
    mpi_links_t *m = port->ctx;

    for (int l = m->n; l < m->cap; l++) {
        int rc = MPI_Comm_dup(links[l], &m->comm[l]);
        if (rc != MPI_SUCCESS)
            return hiar_error_mpi(rc, "MPI_Comm_dup of a link between hosts");
        m->n = l + 1;
        MPI_Comm_rank(m->comm[l], &m->rank[l]);
        MPI_Comm_size(m->comm[l], &m->size[l]);
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_port_mpi(const MPI_Comm *links, int n, hiar_port_t *port)
{
    HIAR_CHECK(hiar_port_mpi_alloc(n, port));
    hiar_result_t rc = hiar_port_mpi_dup(port, links);
    if (rc != HIAR_SUCCESS)
        hiar_port_mpi_free(port);
    return rc;
}

void hiar_port_mpi_free(hiar_port_t *port)
{
    mpi_links_t *m = port->ctx;

    if (!m)
        return;
    for (int l = 0; l < m->n; l++)
        MPI_Comm_free(&m->comm[l]);
    free(m->comm);
    free(m->rank);
    free(m->size);
    free(m);
    port->ctx = NULL;
}

int hiar_port_mpi_threads_ok(int *level)
{
    *level = MPI_THREAD_SINGLE;
    MPI_Query_thread(level);
    return *level == MPI_THREAD_MULTIPLE;
}
