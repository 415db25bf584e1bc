/* The step between hosts on the progress engine: jobs of pieces, slots, the kernels' arguments. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/hosts.h"
#include "cuda/api.h"
#include "net/coll.h"
#include "net/port.h"
#include "net/progress.h"

_Static_assert(HIAR_HOSTS_MAX_PIECES == HIAR_PROGRESS_MAX_PIECES, "a kernel takes a job");
_Static_assert(sizeof(hiar_piece_flags_t) == HIAR_HOSTS_FLAGS_BYTES, "the kernels' view of the flags");
_Static_assert(offsetof(hiar_piece_flags_t, arrived) == HIAR_HOSTS_ARRIVED_WORD * sizeof(uint32_t),
               "the kernels' view of the flags");

/*
 * Pieces of at most 512 KB, jobs of at most 16 pieces (8 MB of this rank's
 * shards per kernel).  Inside a job the copies out, the MPI messages and the
 * reductions of different pieces overlap; between two jobs the stream waits
 * for one piece's exchange, 1/16 of a job.
 */
#define HOSTS_PIECE_BYTES ((size_t)512 << 10)
#define HOSTS_JOB_PIECES 16
/*
 * Eager jobs take these slots in turn: a call waits on the host only when
 * this many jobs are queued on the GPU.  A slot's areas start at
 * HOSTS_AREA_MIN and go straight to a whole job's when a job needs more, so
 * that an eager call allocates at most twice per slot in a comm's life:
 * 8 x 16 MB of pinned memory at most between 2 hosts.
 */
#define HOSTS_EAGER_SLOTS 8
#define HOSTS_AREA_MIN ((size_t)1 << 20)
/* The rest are captured calls' jobs, a slot each for good (areas as they need). */
#define HOSTS_SLOTS 4096
/* Where the receive areas' pieces start: apart by whole cache lines (cuda/hosts.cu reads them fresh). */
#define HOSTS_STRIDE_ALIGN 128

struct hiar_hosts {
    hiar_progress_t *engine;
    hiar_port_t port;
    hiar_hosts_gpu_t *gpu;
    int nshards;
    int *link_of; /* [nshards]: the link of a shard this rank owns, else -1 */
    int *next_tag; /* [links]: the next job's tag, counted alike by every rank of the link */
    int device_pointers, device;
    int next_eager, next_kept;
};

static void thread_init(void *arg)
{
    hiar_cuda_use_device(*(int *)arg);
}

static const char *blocking_reason(const hiar_hosts_config_t *cfg)
{
    int level;

    if (!cfg->setting)
        return "HIAR_PROGRESS=0";
    if (!hiar_port_mpi_threads_ok(&level))
        return "the MPI was not initialised with MPI_THREAD_MULTIPLE (MPI_Init_thread), which a thread of hiar "
               "calling MPI beside the application needs";
    return NULL;
}

/*
 * The eager slots' first areas, now rather than in the first calls: an
 * allocation of pinned memory takes about a millisecond (measured on the
 * H200 machine: a call that returned in 52 us took 1.5 ms when it made
 * them).  Every link crosses the same hosts: n ranks.
 */
static hiar_result_t allocate_eager(hiar_hosts_t *h, int n)
{
    hiar_hosts_area_t a;

    for (int s = 0; s < HOSTS_EAGER_SLOTS; s++)
        HIAR_CHECK(hiar_hosts_gpu_slot(h->gpu, s, h->device_pointers ? 0 : HOSTS_AREA_MIN,
                                       (size_t)(n - 1) * HOSTS_AREA_MIN, h->device_pointers, &a));
    return HIAR_SUCCESS;
}

/* The links (owned shards' communicators, in shard order), the GPU's half, the thread. */
static hiar_result_t connect(hiar_hosts_t *h, const hiar_tier_t *t, const hiar_hosts_config_t *cfg)
{
    MPI_Comm *links = malloc(sizeof(MPI_Comm) * (size_t)t->nshards);
    int n = 0;
    hiar_result_t rc;
    hiar_progress_config_t pc = {.nslots = HOSTS_SLOTS, .timeout_ms = cfg->timeout_ms, .abort = cfg->abort,
                                 .thread_init = thread_init};

    h->nshards = t->nshards;
    if (!links || !(h->link_of = malloc(sizeof(int) * (size_t)t->nshards)) ||
        !(h->next_tag = calloc((size_t)t->nshards, sizeof(int)))) {
        free(links);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the links of %d shards", t->nshards);
    }
    for (int s = 0; s < t->nshards; s++) {
        h->link_of[s] = hiar_tier_owns(t, s) ? n : -1;
        if (h->link_of[s] >= 0)
            links[n++] = t->shard_comm[s];
    }
    rc = hiar_port_mpi(links, n, &h->port);
    free(links);
    HIAR_CHECK(rc);
    HIAR_CHECK(hiar_hosts_gpu_create(cfg->timeout_ms, cfg->sharers, HOSTS_SLOTS, &h->gpu));
    pc.port = h->port;
    pc.thread_arg = &h->device;
    pc.kernel_abort = hiar_hosts_gpu_abort_word(h->gpu);
    HIAR_CHECK(hiar_progress_start(&pc, &h->engine));
    return n ? allocate_eager(h, h->port.size(h->port.ctx, 0)) : HIAR_SUCCESS;
}

hiar_result_t hiar_hosts_setup(MPI_Comm mpi, const hiar_tier_t *t, const hiar_hosts_config_t *cfg,
                               hiar_hosts_t **out, char *why, size_t why_size)
{
    const char *no = blocking_reason(cfg);
    int ok = !no;
    hiar_hosts_t *h = NULL;
    hiar_result_t rc = HIAR_SUCCESS;

    *out = NULL;
    HIAR_CHECK(hiar_net_min(mpi, &ok, 1));
    if (ok) {
        if (!(h = calloc(1, sizeof(*h))))
            rc = hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the step between hosts");
        else {
            h->device_pointers = cfg->device_pointers;
            h->device = cfg->device;
            rc = connect(h, t, cfg);
        }
        if (rc != HIAR_SUCCESS)
            HIAR_WARN(MPI, "the step between hosts stays on the calling thread: %s", hiar_last_error());
        ok = rc == HIAR_SUCCESS;
        HIAR_CHECK(hiar_net_min(mpi, &ok, 1));
    }
    if (!ok) {
        hiar_hosts_free(h);
        snprintf(why, why_size, "on the calling thread, blocking (%s)",
                 no ? no : rc != HIAR_SUCCESS ? "its thread could not start" : "another rank cannot run it asynchronously");
        return HIAR_SUCCESS;
    }
    snprintf(why, why_size, "asynchronous: a progress thread runs MPI, kernels reduce (%s)",
             h->device_pointers ? "MPI on device memory" : "through pinned host memory");
    *out = h;
    return HIAR_SUCCESS;
}

/* A job being made: one link's pieces, in order. */
typedef struct {
    hiar_hosts_t *h;
    const hiar_call_t *c;
    int link, capturing;
    size_t stride_sum;
    hiar_progress_job_t job;
    hiar_hosts_job_t kernel;
} job_build_t;

static size_t stride_of(size_t bytes)
{
    return (bytes + HOSTS_STRIDE_ALIGN - 1) / HOSTS_STRIDE_ALIGN * HOSTS_STRIDE_ALIGN;
}

/* An eager slot's area for `need` bytes per rank: HOSTS_AREA_MIN, else a whole job's; a captured one's, exact. */
static size_t area_bytes(size_t need, int capturing)
{
    if (capturing)
        return need;
    return need <= HOSTS_AREA_MIN ? HOSTS_AREA_MIN : HOSTS_JOB_PIECES * stride_of(HOSTS_PIECE_BYTES);
}

static hiar_result_t take_slot(hiar_hosts_t *h, int capturing, int *slot)
{
    if (!capturing) {
        *slot = h->next_eager;
        h->next_eager = (h->next_eager + 1) % HOSTS_EAGER_SLOTS;
        return HIAR_SUCCESS;
    }
    if (HOSTS_EAGER_SLOTS + h->next_kept >= HOSTS_SLOTS)
        return hiar_error_set(HIAR_UNSUPPORTED, "a comm keeps at most %d captured jobs between hosts (8 MB of a "
                                                "rank's shards each) for the life of the comm; capture fewer or "
                                                "smaller calls, or use another comm", HOSTS_SLOTS - HOSTS_EAGER_SLOTS);
    *slot = HOSTS_EAGER_SLOTS + h->next_kept++;
    return HIAR_SUCCESS;
}

/* Lays the job's pieces out in its slot, hands it to the thread, launches its kernel. */
static hiar_result_t flush(job_build_t *b)
{
    hiar_hosts_t *h = b->h;
    int n = b->kernel.n, slot = 0;
    size_t send_off = 0, recv_off = 0;
    hiar_hosts_area_t a;

    if (!b->job.npieces)
        return HIAR_SUCCESS;
    HIAR_CHECK(take_slot(h, b->capturing, &slot));
    /* An area that grows leaves the old one to the slot's last job (freed with the comm); its
     * flags are the same words: hiar_progress_submit waits for that job before the kernel comes. */
    HIAR_CHECK(hiar_hosts_gpu_slot(h->gpu, slot, h->device_pointers ? 0 : area_bytes(b->stride_sum, b->capturing),
                                   (size_t)(n - 1) * area_bytes(b->stride_sum, b->capturing), h->device_pointers,
                                   &a));
    for (int i = 0; i < b->job.npieces; i++) {
        hiar_progress_piece_t *p = &b->job.piece[i];
        hiar_hosts_piece_t *k = &b->kernel.piece[i];
        k->send = h->device_pointers ? NULL : a.send_dev + send_off;
        k->recv = a.recv_dev + recv_off;
        k->flags = a.flags_dev + (size_t)i * HIAR_HOSTS_FLAGS_BYTES / sizeof(uint32_t);
        p->send = h->device_pointers ? k->data : a.send_host + send_off;
        p->recv = a.recv_host + recv_off;
        p->flags = (hiar_piece_flags_t *)(a.flags_host + (size_t)i * HIAR_HOSTS_FLAGS_BYTES / sizeof(uint32_t));
        send_off += k->stride;
        recv_off += (size_t)(n - 1) * k->stride;
    }
    b->job.slot = slot;
    b->job.persistent = b->capturing;
    b->job.tag = h->next_tag[b->link];
    h->next_tag[b->link] = (h->next_tag[b->link] + 1) % (hiar_progress_max_job_tag(&h->port) + 1);
    HIAR_CHECK(hiar_progress_submit(h->engine, &b->job, b->c->wait));
    HIAR_CHECK(hiar_hosts_reduce(h->gpu, &b->kernel, b->c));
    b->job.npieces = b->kernel.npieces = 0;
    b->stride_sum = 0;
    return HIAR_SUCCESS;
}

static hiar_result_t add_piece(job_build_t *b, char *data, size_t bytes)
{
    int i = b->job.npieces;
    hiar_hosts_piece_t *k = &b->kernel.piece[i];

    *k = (hiar_hosts_piece_t){data, NULL, NULL, stride_of(bytes), bytes, NULL};
    /* The thread places the others' pieces where the kernel reads them: the same stride. */
    b->job.piece[i] = (hiar_progress_piece_t){NULL, NULL, bytes, k->stride, b->link, NULL};
    b->stride_sum += k->stride;
    b->job.npieces = b->kernel.npieces = i + 1;
    return i + 1 == HOSTS_JOB_PIECES ? flush(b) : HIAR_SUCCESS;
}

hiar_result_t hiar_hosts_run(hiar_hosts_t *h, const hiar_call_t *c, const hiar_tier_t *t)
{
    size_t bytes = hiar_call_bytes(c), chunk = c->plan.chunk;
    job_build_t b = {.h = h, .c = c};

    HIAR_CHECK(hiar_hosts_status(h));
    HIAR_CHECK(hiar_cuda_is_capturing(c->stream, &b.capturing));
    for (int s = t->local; s < t->nshards; s += t->local_size) {
        b.link = h->link_of[s];
        HIAR_ASSERT(b.link >= 0);
        b.kernel.n = h->port.size(h->port.ctx, b.link);
        b.kernel.me = h->port.rank(h->port.ctx, b.link);
        for (size_t c0 = 0; c0 < bytes; c0 += chunk) {
            size_t cbytes = bytes - c0 < chunk ? bytes - c0 : chunk, lo, hi;
            hiar_ipc_shard_range(cbytes, t->nshards, s, &lo, &hi);
            hi = hi < cbytes ? hi : cbytes;
            for (size_t off = lo; off < hi; off += HOSTS_PIECE_BYTES)
                HIAR_CHECK(add_piece(&b, (char *)c->recvbuf + c0 + off,
                                     hi - off < HOSTS_PIECE_BYTES ? hi - off : HOSTS_PIECE_BYTES));
        }
        HIAR_CHECK(flush(&b));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_hosts_status(hiar_hosts_t *h)
{
    HIAR_CHECK(hiar_progress_status(h->engine));
    return hiar_hosts_gpu_status(h->gpu);
}

void hiar_hosts_abort(hiar_hosts_t *h)
{
    hiar_hosts_gpu_abort(h->gpu);
}

void hiar_hosts_free(hiar_hosts_t *h)
{
    int left = 0;

    if (!h)
        return;
    if (h->engine)
        left = hiar_progress_stop(h->engine);
    hiar_port_mpi_free(&h->port);
    /* Receives still posted may land in the slots' areas: those stay allocated. */
    if (!left)
        hiar_hosts_gpu_destroy(h->gpu);
    free(h->link_of);
    free(h->next_tag);
    free(h);
}
