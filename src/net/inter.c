/*
 * MPI allreduce between groups, built on point-to-point messages and hiar's
 * own host reductions.
 *
 * Why not MPI_Iallreduce: it must be non-blocking (a peer that never comes
 * must not hang the caller), and Open MPI 4.1's non-blocking allreduce with
 * a user op (needed for bf16/f16 and NaN-propagating min/max) measured 2x
 * slower than MPI_Allreduce (2 ranks, bf16, 1 KB-1 MB).  Here every message
 * is an Isend/Irecv pair polled through the caller's wait, and reductions
 * run in reduce.c, which knows every dtype.
 *
 * Algorithms, over the G ranks of the communicator:
 *   small messages: recursive doubling (log2 G exchanges of everything);
 *   large ones: ring reduce-scatter then ring all-gather (2 (G-1) steps of
 *   1/G of the message each).
 * Every rank gets the same bits: in recursive doubling both partners reduce
 * the same two operands in the same order (the lower ranks' partial first);
 * in the ring each segment is reduced once and then copied.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/range.h"
#include "base/reduce.h"
#include "net/coll.h"
#include "net/inter.h"

/* Bytes per message: MPI counts are int. */
#define INTER_PIECE_MAX ((size_t)1 << 30)
/* Up to this size, recursive doubling: fewer steps beat fewer bytes. */
#define INTER_DOUBLING_MAX ((size_t)32 << 10)
#define INTER_TAG 0x4841

/*
 * Where received data lands before it is reduced: per thread, kept between
 * calls.  A call that fails may leave a receive posted into it, so then the
 * buffer is abandoned (never freed) and the next call takes a new one.
 */
static _Thread_local struct {
    char *buf;
    size_t bytes;
} recv_area;

static char *recv_buffer(size_t bytes)
{
    if (recv_area.bytes < bytes) {
        char *p = realloc(recv_area.buf, bytes);
        if (!p)
            return NULL;
        recv_area.buf = p;
        recv_area.bytes = bytes;
    }
    return recv_area.buf;
}

static void abandon_recv_buffer(void)
{
    recv_area.buf = NULL;
    recv_area.bytes = 0;
}

typedef struct {
    MPI_Comm comm;
    int rank, size;
    hiar_dtype_t dtype;
    hiar_op_t op;
    size_t esize;
    hiar_wait_t *wait;
} inter_t;

/* Sends `sbytes` to `to` while receiving `rbytes` from `from` (either may be 0 bytes: skipped). */
static hiar_result_t exchange(const inter_t *x, const void *send, size_t sbytes, int to, void *recv, size_t rbytes,
                              int from)
{
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int mrc = MPI_SUCCESS;
    hiar_result_t rc;

    if (rbytes)
        mrc = MPI_Irecv(recv, (int)rbytes, MPI_BYTE, from, INTER_TAG, x->comm, &req[0]);
    if (mrc == MPI_SUCCESS && sbytes)
        mrc = MPI_Isend(send, (int)sbytes, MPI_BYTE, to, INTER_TAG, x->comm, &req[1]);
    rc = mrc == MPI_SUCCESS ? hiar_net_wait(2, req, x->wait)
                            : hiar_error_mpi(mrc, "MPI point-to-point between groups");
    if (rc != HIAR_SUCCESS)
        abandon_recv_buffer();
    return rc;
}

/* dst = lower op higher, element-wise: the lower ranks' operand first, on both sides. */
static void combine(const inter_t *x, void *dst, const void *lower, const void *higher, size_t count)
{
    const void *srcs[2] = {lower, higher};
    hiar_reduce_host(dst, srcs, 2, count, x->dtype, x->op, 0);
}

/*
 * Recursive doubling.  With G not a power of two, the last G - P ranks (P the
 * largest power of two below G) first hand their data to rank r - P and get
 * the result back at the end.
 */
static hiar_result_t doubling(const inter_t *x, char *buf, size_t count)
{
    size_t bytes = count * x->esize;
    int pow2 = 1, r = x->rank;
    char *tmp = recv_buffer(bytes);

    if (!tmp)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %zu bytes to receive between groups", bytes);
    while (pow2 * 2 <= x->size)
        pow2 *= 2;
    if (r >= pow2) {
        HIAR_CHECK(exchange(x, buf, bytes, r - pow2, NULL, 0, 0));
        return exchange(x, NULL, 0, 0, buf, bytes, r - pow2);
    }
    if (r + pow2 < x->size) {
        HIAR_CHECK(exchange(x, NULL, 0, 0, tmp, bytes, r + pow2));
        combine(x, buf, buf, tmp, count);
    }
    for (int mask = 1; mask < pow2; mask <<= 1) {
        int peer = r ^ mask;
        HIAR_CHECK(exchange(x, buf, bytes, peer, tmp, bytes, peer));
        combine(x, buf, peer < r ? tmp : buf, peer < r ? buf : tmp, count);
    }
    if (r + pow2 < x->size)
        HIAR_CHECK(exchange(x, buf, bytes, r + pow2, NULL, 0, 0));
    return HIAR_SUCCESS;
}

/*
 * Ring: in step k of the reduce-scatter rank r passes its partial of segment
 * r - k to r + 1 and adds the partial of segment r - k - 1 from r - 1 (the
 * partial holds the ranks before r on the ring: it goes first); after G - 1
 * steps r holds segment r + 1 complete, and the all-gather passes the
 * complete segments round.
 */
static hiar_result_t ring(const inter_t *x, char *buf, size_t count)
{
    int g = x->size, r = x->rank, next = (r + 1) % g, prev = (r + g - 1) % g;
    size_t first, n, rfirst, rn, es = x->esize;
    char *tmp;

    hiar_range_part(count, x->size, 0, &first, &n);
    if (!(tmp = recv_buffer(n * es)))
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %zu bytes to receive between groups", n * es);
    for (int k = 0; k < g - 1; k++) {
        hiar_range_part(count, x->size, (r - k + g) % g, &first, &n);
        hiar_range_part(count, x->size, (r - k - 1 + 2 * g) % g, &rfirst, &rn);
        HIAR_CHECK(exchange(x, buf + first * es, n * es, next, tmp, rn * es, prev));
        combine(x, buf + rfirst * es, tmp, buf + rfirst * es, rn);
    }
    for (int k = 0; k < g - 1; k++) {
        hiar_range_part(count, x->size, (r + 1 - k + g) % g, &first, &n);
        hiar_range_part(count, x->size, (r - k + g) % g, &rfirst, &rn);
        HIAR_CHECK(exchange(x, buf + first * es, n * es, next, buf + rfirst * es, rn * es, prev));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_inter_allreduce(void *buf, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                                   MPI_Comm mpi_comm, hiar_wait_t *wait)
{
    inter_t x = {mpi_comm, 0, 1, dtype, op == HIAR_AVG ? HIAR_SUM : op, hiar_dtype_size(dtype), wait};
    size_t piece = INTER_PIECE_MAX / x.esize;

    MPI_Comm_rank(mpi_comm, &x.rank);
    MPI_Comm_size(mpi_comm, &x.size);
    if (x.size == 1)
        return HIAR_SUCCESS;
    for (size_t off = 0; off < count; off += piece) {
        size_t n = count - off < piece ? count - off : piece;
        char *p = (char *)buf + off * x.esize;
        HIAR_CHECK(n * x.esize <= INTER_DOUBLING_MAX || n < (size_t)x.size ? doubling(&x, p, n) : ring(&x, p, n));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_inter_oneshot(char *sum, size_t n, hiar_dtype_t dtype, hiar_op_t op, const MPI_Comm *shard_comm,
                                 int first, int step, int nshards, int divisor, hiar_wait_t *wait, char **result)
{
    size_t bytes = n * hiar_dtype_size(dtype);
    char *copy = sum + bytes;

    for (int s = first; s < nshards; s += step, copy += bytes) {
        memcpy(copy, sum, bytes);
        HIAR_CHECK(hiar_inter_allreduce(copy, n, dtype, op, shard_comm[s], wait));
    }
    *result = sum + bytes; /* the first owned shard's copy; the others are equal */
    if (op == HIAR_AVG)
        hiar_reduce_divide(*result, n, dtype, divisor);
    return HIAR_SUCCESS;
}
