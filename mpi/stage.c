/*
 * Forwarded calls on device buffers: an MPI library that does not take
 * device pointers (Open MPI built without CUDA) reads them as host memory
 * and crashes, so each rank with device buffers copies them to host memory,
 * makes the MPI call on the copies and copies the result back.  That works
 * for any op and datatype (user ops, MPI_MINLOC, derived types), and a rank
 * decides it from its own buffers alone: the MPI calls stay the same.
 *
 * A blocking call is cut in pieces of whole elements of about
 * HIAR_PMPI_STAGE_BYTES, so the host memory stays bounded.  Every rank must
 * make the same MPI calls, so every rank cuts every forwarded call the same
 * way, host buffers included: the cut depends only on the count, the
 * datatype's size and HIAR_PMPI_STAGE_BYTES, the same everywhere.  A piece
 * of k elements spans (k - 1) * extent + true extent bytes from the true
 * lower bound of its first element.  Reductions are elementwise, so pieces
 * are exact for any op.  Types whose elements overlap or go backwards
 * (true extent > extent, extent <= 0) are staged whole.
 *
 * A non-blocking call (MPI_Iallreduce) is staged whole: its copies live
 * until the request completes.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif

#include "base/error.h"
#include "base/log.h"
#include "base/param.h"
#include "pmpi.h"
#ifdef HIAR_HAVE_CUDA
#include "cuda/api.h"
#endif

/*
 * The MPI's own answer, not hiar's HIAR_MPI_DEVICE (net/mpidev.c): what is
 * forwarded here is a collective, and Open MPI over a CUDA UCX (which that
 * check counts as taking device pointers) moves device buffers point to
 * point only; its collectives read them as host memory and crash.
 */
int pmpi_mpi_takes_device(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    static int takes = -1;
    if (takes < 0)
        takes = MPIX_Query_cuda_support() != 0;
    return takes;
#else
    return 0;
#endif
}

/* Whether any rank may stage: then every rank cuts forwarded calls alike. */
static int staging_possible(void)
{
#ifdef HIAR_HAVE_CUDA
    return !pmpi_mpi_takes_device();
#else
    return 0;
#endif
}

int pmpi_stage_needed(const pmpi_args_t *a)
{
    return staging_possible() &&
           ((a->send != MPI_IN_PLACE && pmpi_pointer_device(a->send) >= 0) || pmpi_pointer_device(a->recv) >= 0);
}

/* The memory layout of count elements of a datatype. */
typedef struct {
    MPI_Count size, lb, extent; /* size and extent of one element; true lower bound */
    MPI_Count true_extent;
    int dense;                  /* no holes: recv need not be copied in */
    int cuttable;               /* elements lie one after another */
} layout_t;

static int layout_of(MPI_Datatype type, layout_t *l)
{
    MPI_Count lb = 0;

    if (PMPI_Type_size_x(type, &l->size) != MPI_SUCCESS || PMPI_Type_get_extent_x(type, &lb, &l->extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(type, &l->lb, &l->true_extent) != MPI_SUCCESS)
        return 0;
    l->cuttable = l->extent > 0 && l->true_extent <= l->extent;
    l->dense = l->size == l->extent && l->size == l->true_extent;
    return 1;
}

/* Bytes spanned by k >= 1 elements. */
static size_t span(const layout_t *l, size_t k)
{
    return (size_t)((MPI_Count)(k - 1) * l->extent + l->true_extent);
}

static int mpi_allreduce(const void *send, void *recv, size_t count, const pmpi_args_t *a, int large)
{
#ifdef HAVE_MPI_ALLREDUCE_C
    if (large)
        return PMPI_Allreduce_c(send, recv, (MPI_Count)count, a->type, a->op, a->comm);
#else
    (void)large;
#endif
    return PMPI_Allreduce(send, recv, (int)count, a->type, a->op, a->comm);
}

int pmpi_forward_plain(const pmpi_args_t *a, int large)
{
    return mpi_allreduce(a->send, a->recv, a->count, a, large);
}

#ifdef HIAR_HAVE_CUDA
/* The process-wide host buffer of pieces: pinned (copies at full speed), kept between calls. */
static struct {
    pthread_mutex_t lock;
    void *buf;
    size_t bytes;
} cache = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* bytes of host memory: the cached buffer (*cached = 1, locked) unless another thread has it. */
static void *stage_get(size_t bytes, int *cached)
{
    *cached = pthread_mutex_trylock(&cache.lock) == 0;
    if (!*cached)
        return malloc(bytes);
    if (cache.bytes < bytes) {
        hiar_cuda_host_free(cache.buf);
        cache.buf = NULL;
        cache.bytes = 0;
        if (hiar_cuda_host_alloc(bytes, &cache.buf) == HIAR_SUCCESS)
            cache.bytes = bytes;
    }
    if (cache.buf)
        return cache.buf;
    pthread_mutex_unlock(&cache.lock);
    *cached = 0;
    return malloc(bytes);
}

static void stage_put(void *buf, int cached)
{
    if (cached)
        pthread_mutex_unlock(&cache.lock);
    else
        free(buf);
}
#endif

void pmpi_stage_release(void)
{
#ifdef HIAR_HAVE_CUDA
    pthread_mutex_lock(&cache.lock);
    hiar_cuda_host_free(cache.buf);
    cache.buf = NULL;
    cache.bytes = 0;
    pthread_mutex_unlock(&cache.lock);
#endif
}

/* Elements per piece: HIAR_PMPI_STAGE_BYTES of them, at least one; 0: not cut. */
static size_t piece_elements(const layout_t *l, size_t count)
{
    static long long bytes = -1;
    size_t k;

    if (bytes < 0 && hiar_param_env(HIAR_P_PMPI_STAGE_BYTES, &bytes) != HIAR_SUCCESS)
        HIAR_WARN(INIT, "%s; using the default \"%s\"", hiar_last_error(),
                  hiar_param_table[HIAR_P_PMPI_STAGE_BYTES].def);
    if (!l->cuttable || l->size <= 0)
        return 0;
    k = (size_t)(bytes / l->size);
    k = k ? k : 1;
    return k < count ? k : 0;
}

/* One piece: elements [first, first + k) of a, this rank's device buffers through host memory. */
static int stage_piece(const pmpi_args_t *a, const layout_t *l, size_t first, size_t k, int large)
{
    int rc = MPI_ERR_NO_MEM;
#ifdef HIAR_HAVE_CUDA
    size_t bytes = span(l, k), off = (size_t)((MPI_Count)first * l->extent + l->lb);
    int in_place = a->send == MPI_IN_PLACE;
    int send_dev = !in_place && pmpi_pointer_device(a->send) >= 0, recv_dev = pmpi_pointer_device(a->recv) >= 0;
    const char *send = in_place ? MPI_IN_PLACE : (const char *)a->send + off;
    char *recv = (char *)a->recv + off;
    int cached;
    char *host = stage_get(2 * bytes, &cached);

    if (!host)
        return rc;
    rc = MPI_ERR_OTHER;
    if (send_dev && hiar_cuda_copy(host, send, bytes, NULL) != HIAR_SUCCESS)
        goto out;
    if (recv_dev && (in_place || !l->dense) && hiar_cuda_copy(host + bytes, recv, bytes, NULL) != HIAR_SUCCESS)
        goto out;
    /* MPI gets addresses of element `first` (the copies start at its true lower bound). */
    rc = mpi_allreduce(in_place ? MPI_IN_PLACE : (const void *)((send_dev ? host : send) - l->lb),
                       (recv_dev ? host + bytes : recv) - l->lb, k, a, large);
    if (rc == MPI_SUCCESS && recv_dev && hiar_cuda_copy(recv, host + bytes, bytes, NULL) != HIAR_SUCCESS)
        rc = MPI_ERR_OTHER;
out:
    stage_put(host, cached);
#else
    (void)a, (void)l, (void)first, (void)k, (void)large;
#endif
    return rc;
}

int pmpi_forward(const pmpi_args_t *a, int large)
{
    layout_t l;
    size_t k;

    pmpi_count(0);
    if (!staging_possible() || a->count == 0 || !layout_of(a->type, &l))
        return mpi_allreduce(a->send, a->recv, a->count, a, large);
    k = piece_elements(&l, a->count);
    for (size_t first = 0; k && first < a->count; first += k) {
        size_t n = a->count - first < k ? a->count - first : k;
        pmpi_args_t piece = *a;
        int rc;
        if (a->send != MPI_IN_PLACE)
            piece.send = (const char *)a->send + (MPI_Count)first * l.extent;
        piece.recv = (char *)a->recv + (MPI_Count)first * l.extent;
        piece.count = n;
        rc = pmpi_stage_needed(&piece) ? stage_piece(a, &l, first, n, large)
                                       : mpi_allreduce(piece.send, piece.recv, n, a, large);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    if (k)
        return MPI_SUCCESS;
    return pmpi_stage_needed(a) ? stage_piece(a, &l, 0, a->count, large)
                                : mpi_allreduce(a->send, a->recv, a->count, a, large);
}

int pmpi_forward_start(const pmpi_args_t *a, pmpi_op_t *op)
{
    layout_t l;
    size_t bytes;
    int in_place = a->send == MPI_IN_PLACE, send_dev, recv_dev, rc;
    char *host;

    *op = (pmpi_op_t)PMPI_OP_INIT;
    if (!pmpi_stage_needed(a) || !layout_of(a->type, &l) || a->count > INT32_MAX)
        return PMPI_Iallreduce(a->send, a->recv, (int)a->count, a->type, a->op, a->comm, &op->inner);
    bytes = span(&l, a->count);
    send_dev = !in_place && pmpi_pointer_device(a->send) >= 0;
    recv_dev = pmpi_pointer_device(a->recv) >= 0;
    if (!(host = malloc(2 * bytes)))
        return MPI_ERR_NO_MEM;
    if ((send_dev && pmpi_copy(host, (const char *)a->send + l.lb, bytes, 1) != HIAR_SUCCESS) ||
        (recv_dev && (in_place || !l.dense) &&
         pmpi_copy(host + bytes, (char *)a->recv + l.lb, bytes, 1) != HIAR_SUCCESS)) {
        free(host);
        return MPI_ERR_OTHER;
    }
    op->host = host;
    if (recv_dev) {
        op->out = (char *)a->recv + l.lb;
        op->from = host + bytes;
        op->bytes = bytes;
        op->copy_device = 1;
    }
    rc = PMPI_Iallreduce(in_place ? MPI_IN_PLACE : send_dev ? (const void *)(host - l.lb) : a->send,
                         recv_dev ? host + bytes - l.lb : a->recv, (int)a->count, a->type, a->op, a->comm,
                         &op->inner);
    if (rc != MPI_SUCCESS) {
        free(host);
        *op = (pmpi_op_t)PMPI_OP_INIT;
    }
    return rc;
}
