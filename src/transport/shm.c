/* Shared-memory segment setup and the one-shot / two-shot steps over it. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/range.h"
#include "base/reduce.h"
#include "net/coll.h"
#include "transport/shm.h"
#include "transport/transport.h"

/* Flags sit on their own 128 bytes: two flags on one line would ping-pong it
 * between cores (and adjacent-line prefetch pairs 64-byte lines). */
#define FLAG_STRIDE 128
#define PAGE 4096
#define SEGMENT_NAME_MAX 64

typedef struct {
    _Alignas(FLAG_STRIDE) atomic_uint_least64_t epoch;
} hiar_shm_flag_t;

struct hiar_shm {
    int me, n;
    size_t slot_bytes;
    size_t map_bytes;
    void *base;               /* mapping (or private memory when n == 1) */
    hiar_shm_flag_t *flags;   /* [n] */
    unsigned char *data;      /* [n][2][slot_bytes] */
    uint64_t epoch;           /* barriers passed */
    uint64_t step;            /* calls or chunks started */
};

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

static unsigned char *slot(const hiar_shm_t *s, int rank, uint64_t step)
{
    return s->data + ((size_t)rank * 2 + (step & 1)) * s->slot_bytes;
}

size_t hiar_shm_slot_bytes(const hiar_shm_t *s)
{
    return s->slot_bytes;
}

/* Leader: create, size and map a fresh segment; its name goes to the peers. */
static hiar_result_t segment_create(size_t bytes, char name[SEGMENT_NAME_MAX], void **base)
{
    static atomic_uint counter;
    int fd = -1, err;

    for (int attempt = 0; fd < 0; attempt++) {
        snprintf(name, SEGMENT_NAME_MAX, "/hiar-%u-%ld-%u", (unsigned)getuid(), (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, S_IRUSR | S_IWUSR);
        if (fd < 0 && (errno != EEXIST || attempt > 100))
            return hiar_error_set(HIAR_SYSTEM_ERROR, "shm_open(%s) failed: %s", name, strerror(errno));
    }
    /* Reserve the pages now: a full /dev/shm fails here, not as SIGBUS later. */
    err = posix_fallocate(fd, 0, (off_t)bytes);
    if (err) {
        close(fd);
        shm_unlink(name);
        return hiar_error_set(HIAR_SYSTEM_ERROR,
                              "cannot reserve %zu bytes in /dev/shm for %s: %s; lower "
                              "HIAR_BUFFER_SIZE or enlarge /dev/shm (docker: --shm-size)",
                              bytes, name, strerror(err));
    }
    *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (*base == MAP_FAILED) {
        shm_unlink(name);
        return hiar_error_set(HIAR_SYSTEM_ERROR, "mmap of %zu bytes of %s failed: %s", bytes, name,
                              strerror(errno));
    }
    return HIAR_SUCCESS;
}

static hiar_result_t segment_open(const char *name, size_t bytes, void **base)
{
    int fd = shm_open(name, O_RDWR, 0);

    if (fd < 0)
        return hiar_error_set(HIAR_SYSTEM_ERROR,
                              "shm_open(%s) of the group leader's segment failed: %s (do the ranks "
                              "share /dev/shm?)",
                              name, strerror(errno));
    *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (*base == MAP_FAILED)
        return hiar_error_set(HIAR_SYSTEM_ERROR, "mmap of %zu bytes of %s failed: %s", bytes, name,
                              strerror(errno));
    return HIAR_SUCCESS;
}

/*
 * Maps the group's segment on every member.  Every member returns the same
 * result: failures are agreed with one allreduce, and the segment is unlinked
 * once all members have it mapped (or failed), so nothing outlives the job.
 */
static hiar_result_t segment_map(hiar_shm_t *s, MPI_Comm group_comm)
{
    char name[SEGMENT_NAME_MAX] = "";
    hiar_result_t rc = HIAR_SUCCESS;
    int any_failed;

    if (s->me == 0 && (rc = segment_create(s->map_bytes, name, &s->base)) != HIAR_SUCCESS) {
        /* Peers must not look for a segment that is gone (and blame /dev/shm sharing). */
        name[0] = '\0';
        HIAR_WARN(SHM, "%s", hiar_last_error());
    }
    hiar_net_bcast(group_comm, name, sizeof(name), 0);
    if (s->me != 0 && name[0] && (rc = segment_open(name, s->map_bytes, &s->base)) != HIAR_SUCCESS)
        HIAR_WARN(SHM, "%s", hiar_last_error());
    any_failed = rc != HIAR_SUCCESS || !name[0];
    if (hiar_net_max(group_comm, &any_failed, 1) != HIAR_SUCCESS)
        any_failed = 1;
    if (s->me == 0 && name[0])
        shm_unlink(name);
    if (rc == HIAR_SUCCESS && any_failed)
        rc = hiar_error_set(HIAR_SYSTEM_ERROR, "another rank of the group failed to map the "
                                               "shared segment (its log says why)");
    if (rc != HIAR_SUCCESS && s->base && s->base != MAP_FAILED)
        munmap(s->base, s->map_bytes);
    if (rc != HIAR_SUCCESS)
        s->base = NULL;
    else
        HIAR_INFO(SHM, "segment %s: %d ranks x 2 slots x %zu bytes, unlinked after mapping", name,
                  s->n, s->slot_bytes);
    return rc;
}

hiar_result_t hiar_shm_create(MPI_Comm group_comm, size_t slot_bytes, hiar_shm_t **out)
{
    hiar_shm_t *s = calloc(1, sizeof(*s));
    size_t header;
    hiar_result_t rc;

    if (!s)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the shm transport");
    MPI_Comm_rank(group_comm, &s->me);
    MPI_Comm_size(group_comm, &s->n);
    s->slot_bytes = round_up(slot_bytes, PAGE);
    header = round_up(sizeof(hiar_shm_flag_t) * (size_t)s->n, PAGE);
    s->map_bytes = header + (size_t)s->n * 2 * s->slot_bytes;
    if (s->n == 1) {
        s->base = aligned_alloc(PAGE, s->map_bytes);
        rc = s->base ? HIAR_SUCCESS
                     : hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %zu bytes of buffer",
                                      s->map_bytes);
        if (s->base)
            memset(s->base, 0, header);
    } else {
        rc = segment_map(s, group_comm);
    }
    if (rc != HIAR_SUCCESS) {
        free(s);
        return rc;
    }
    s->flags = s->base;
    s->data = (unsigned char *)s->base + header;
    *out = s;
    return HIAR_SUCCESS;
}

void hiar_shm_destroy(hiar_shm_t *s)
{
    if (!s)
        return;
    if (s->n == 1)
        free(s->base);
    else
        munmap(s->base, s->map_bytes);
    free(s);
}

/* All members have reached this point; see shm.h for why one per step suffices. */
static hiar_result_t barrier(hiar_shm_t *s, hiar_wait_t *wait)
{
    uint64_t e = ++s->epoch;

    atomic_store_explicit(&s->flags[s->me].epoch, e, memory_order_release);
    for (int p = 0; p < s->n; p++) {
        /* Signed difference: correct across wrap-around of the counter. */
        while ((int64_t)(atomic_load_explicit(&s->flags[p].epoch, memory_order_acquire) - e) < 0) {
            hiar_result_t rc = hiar_wait_poll(wait);
            if (rc != HIAR_SUCCESS)
                return rc;
        }
    }
    return HIAR_SUCCESS;
}

/* Pointers to the same byte offset in every member's slot, in rank order. */
static void slot_pointers(const hiar_shm_t *s, size_t offset, const void **out)
{
    for (int p = 0; p < s->n; p++)
        out[p] = slot(s, p, s->step) + offset;
}

hiar_result_t hiar_shm_oneshot(hiar_shm_t *s, const void *sendbuf, void *recvbuf, size_t count,
                               hiar_dtype_t dtype, hiar_op_t op, int divisor, hiar_wait_t *wait)
{
    const void *srcs[s->n];
    size_t bytes = count * hiar_dtype_size(dtype);

    s->step++;
    memcpy(slot(s, s->me, s->step), sendbuf, bytes);
    HIAR_CHECK(barrier(s, wait));
    slot_pointers(s, 0, srcs);
    hiar_reduce_host(recvbuf, srcs, s->n, count, dtype, op, divisor);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_shm_reduce_scatter(hiar_shm_t *s, const void *sendbuf, size_t count,
                                      hiar_dtype_t dtype, hiar_op_t op, int nshards, int divisor,
                                      hiar_wait_t *wait)
{
    size_t esize = hiar_dtype_size(dtype);
    const void *srcs[s->n];

    s->step++;
    memcpy(slot(s, s->me, s->step), sendbuf, count * esize);
    HIAR_CHECK(barrier(s, wait));
    for (int sh = s->me; sh < nshards; sh += s->n) {
        size_t first, n;
        hiar_shard_range(count, esize, nshards, sh, &first, &n);
        slot_pointers(s, first * esize, srcs);
        hiar_reduce_host(slot(s, s->me, s->step) + first * esize, srcs, s->n, n, dtype, op, divisor);
    }
    return HIAR_SUCCESS;
}

void *hiar_shm_shard(hiar_shm_t *s, size_t count, hiar_dtype_t dtype, int nshards, int sh,
                     size_t *shard_count)
{
    size_t first;

    hiar_shard_range(count, hiar_dtype_size(dtype), nshards, sh, &first, shard_count);
    return slot(s, s->me, s->step) + first * hiar_dtype_size(dtype);
}

hiar_result_t hiar_shm_allgather(hiar_shm_t *s, void *recvbuf, size_t count, hiar_dtype_t dtype,
                                 int nshards, hiar_wait_t *wait)
{
    size_t esize = hiar_dtype_size(dtype);

    HIAR_CHECK(barrier(s, wait));
    for (int sh = 0; sh < nshards; sh++) {
        size_t first, n;
        hiar_shard_range(count, esize, nshards, sh, &first, &n);
        memcpy((unsigned char *)recvbuf + first * esize, slot(s, sh % s->n, s->step) + first * esize,
               n * esize);
    }
    return HIAR_SUCCESS;
}

/* ---- the transport interface (transport.h) ---- */

/* Every rank alone: no shared memory, MPI carries everything. */
static int shm_usable(const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why, size_t len)
{
    (void)cfg;
    if (t->groups.ngroups == t->groups.nranks && t->groups.nranks > 1) {
        snprintf(why, len, "none: every rank alone");
        return 0;
    }
    return 1;
}

static hiar_result_t shm_setup(const hiar_tier_t *t, const hiar_transport_config_t *cfg, void **state, char *why,
                               size_t len)
{
    snprintf(why, len, "shm");
    return hiar_shm_create(t->group_comm, cfg->slot_bytes, (hiar_shm_t **)state);
}

static hiar_result_t shm_run(void *state, const hiar_tier_t *t, const hiar_call_t *c, hiar_step_t step)
{
    hiar_shm_t *s = state;

    switch (step) {
    case HIAR_STEP_REDUCE_SCATTER:
        return hiar_shm_reduce_scatter(s, c->sendbuf, c->count, c->dtype, c->op, c->nshards, 0, c->wait);
    case HIAR_STEP_ALLGATHER:
        return hiar_shm_allgather(s, c->recvbuf, c->count, c->dtype, c->nshards, c->wait);
    default:
        if (c->plan.alg == HIAR_ALG_ONESHOT)
            return hiar_shm_oneshot(s, c->sendbuf, c->recvbuf, c->count, c->dtype, c->op, c->divisor, c->wait);
        HIAR_CHECK(hiar_shm_reduce_scatter(s, c->sendbuf, c->count, c->dtype, c->op, t->local_size, c->divisor,
                                           c->wait));
        return hiar_shm_allgather(s, c->recvbuf, c->count, c->dtype, t->local_size, c->wait);
    }
}

static size_t shm_max_bytes(const void *state)
{
    return hiar_shm_slot_bytes(state);
}

/* A failed call may have left receives posted into the segment (net/inter.c): then it stays. */
static void shm_teardown(void *state, const hiar_tier_t *t, int flags)
{
    (void)t;
    if (!(flags & HIAR_TEARDOWN_KEEP))
        hiar_shm_destroy(state);
}

const hiar_transport_t hiar_transport_shm = {
    .name = "shm",
    .usable = shm_usable,
    .setup = shm_setup,
    .run = shm_run,
    .max_bytes = shm_max_bytes,
    .status = hiar_transport_no_status,
    .abort = hiar_transport_no_abort,
    .teardown = shm_teardown,
};
