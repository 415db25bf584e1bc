/* The step between hosts on the progress engine: jobs of pieces, slots, the kernels' arguments. */
#include "config.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/marks.h"
#include "core/hosts.h"
#include "cuda/api.h"
#include "net/coll.h"
#include "net/port.h"
#include "net/progress.h"

_Static_assert(HIAR_HOSTS_RING_MAX == HIAR_PROGRESS_MAX_RING, "the kernels' ring is the thread's");
_Static_assert(sizeof(hiar_piece_flags_t) == HIAR_HOSTS_FLAGS_BYTES, "the kernels' view of the flags");
_Static_assert(offsetof(hiar_piece_flags_t, arrived) == HIAR_HOSTS_ARRIVED_WORD * sizeof(uint32_t),
               "the kernels' view of the flags");

/*
 * Pieces of at most 256 KB through a ring of 16 positions: 4 MB of this
 * rank's shard in flight, in 4 MB of pinned memory (device memory for an
 * MPI that takes device pointers) per peer and direction whatever the
 * call's size.  One job, one kernel, serves all of a call's
 * pieces of a shard, so the wire never waits for a kernel's end between
 * them.  A job that fits the ring takes a block per piece; a longer one
 * half as many blocks as positions, each with 2 pieces out, copying one out
 * or reducing one while the other is on the wire.  Measured on the H200
 * machine (2 simulated hosts, bf16, --split, time over the link column's):
 * 0.84 at 64 MB and 0.75 at 256 MB that way, 0.91 and 0.76 with a block
 * per position.  Pieces of 256 KB against 512 KB, in one run: 2396 against
 * 3414 us at 16 MB (a shard of 8 MB then pipelines through the ring instead
 * of filling it once), 9665 against 10096 at 64 MB, 31429 against 33652 at
 * 256 MB; 128 KB pieces were slower at 64 MB (0.90 of the link, 0.80).
 * On one H100 (2026-12-06), two rounds of 256 / 128 / 64 KB pieces: 16 MB
 * 2841-2762 / 3262-2466 / 3813-3010 us, 64 MB 9979-9322 / 11075-9802 /
 * 12175-11863, 256 MB 37039-34053 / 42353-55895 / 50099-48958 (the link
 * column moved 1824-2683 us at 16 MB between these runs).
 * Rings of other sizes, one H100 (2026-12-06, same setup, rounds in turn in
 * one machine start, hiar's us at 16 / 64 MB): 32 positions (a 16 MB call's
 * whole shard in flight) 3842, 4269, 4593 / 12623, 11235, 13420 against
 * 16's 3064, 3665, 4026 / 10981, 10447, 12601; in another start 8 positions
 * 2564, 2575 / 9527, 9049 and 4 positions 2670, 4651 / 10515, 12053 against
 * 16's 2722, 2531 / 7725, 8481.  And a block per position for jobs longer
 * than the ring (16 blocks, not 8): 2665, 2635 / 8525, 8216 against 3517,
 * 2594 / 8127, 8524.  None faster; the link column moved by up to a third
 * between consecutive runs (1836-2401 us at 16 MB).
 */
#define HOSTS_PIECE_BYTES ((size_t)256 << 10)
/*
 * A job's first and last 2 pieces each cut in 4 (base/pieces.h): the
 * wire waits for the first piece's copy out and the call for the last
 * one's reduction (doc/guide.md, "MPI between hosts": at 16 MB on one
 * H100, the wire busy from then on, at the link column's speed; a block
 * took about 80 us to copy a 256 KB piece out and 175 us to reduce one).
 * On one H100 (2026-12-06, 2 simulated hosts of 2, bf16, --split, the
 * uncut tree and the cut one in turn, seven rounds in two machine starts
 * at 16 and 64 MB, three at 256 MB; hiar's us, then hiar/max(intra, link)):
 * 16 MB uncut 2699, 2744, 3081, 2880, 2971, 2751, 2774 (mean 2843; 1.29,
 * 1.31, 1.10, 1.16, 1.23, 1.24, 1.21), cut 2663, 2305, 2562, 2825, 2502,
 * 2789, 2575 (mean 2603; 1.15, 1.24, 0.70, 1.13, 1.12, 1.16, 1.13); 64 MB
 * 9944 against 9629 on average, 256 MB 38414 against 37534.  The link
 * column moved from 1854 to 3648 us at 16 MB over these runs.  Five more
 * rounds of the cut in another start: 16 MB 1.08, 1.37, 1.05, 1.18, 1.08.
 * Tried beside it there, each run after the tree in its round (on this VM
 * often the faster place): 2 pieces in 8 (16 MB 2235-3638 us, median
 * ratio 1.23 against the tree's 1.08) and 4 pieces in 4 (2462, 2372
 * against 2534, 2841: two rounds, not enough to change the tree on).
 * Jobs of 5-15 pieces (calls of 2-8 MB) outgrow the ring when cut and are
 * not slower for it: at 8 MB 1418, 1449 us cut, 1675, 1693 uncut
 * (doc/guide.md, "MPI between hosts").
 */
#define HOSTS_RAMP_ENDS 2
#define HOSTS_RAMP_CUT 4
/* Parts of at least 16 KB: smaller ones would cost the thread an MPI message each for little. */
#define HOSTS_RAMP_LEAST ((size_t)16 << 10)
_Static_assert(HOSTS_RAMP_LEAST >= HIAR_PIECES_CUT_ALIGN, "a smaller least part could leave parts empty");
#define HOSTS_RING HIAR_HOSTS_RING_MAX
/*
 * Eager jobs take these slots in turn (their flags), and share one ring's
 * memory, allocated with the comm: their kernels take turns (cuda/api.h),
 * so no call allocates.  An allocation of pinned memory on the call's path
 * costs milliseconds, and under CUDA MPS it could wait for other ranks'
 * kernels that wait for this rank: seen on the H200 machine as calls that
 * hung until HIAR_TIMEOUT_MS where the slots grew, 1 run in 2.  A call
 * waits on the host only when this many jobs are queued on the GPU (a call
 * queues one per shard it owns, or one per round).
 */
#define HOSTS_EAGER_SLOTS 32
/*
 * The rest are captured calls' jobs, a slot each with memory of its own,
 * until CUDA destroys the graph (then the slot and its memory serve the
 * next capture: a framework that captures a graph per batch size, and
 * again after a change, need not run out).
 */
#define HOSTS_SLOTS 4096
/* Where the receive areas' pieces start: apart by whole cache lines (cuda/hosts.cu reads them fresh). */
#define HOSTS_STRIDE_ALIGN 128

/*
 * Captured jobs whose graph is gone: the graph's destructor (a CUDA user
 * object's, on a thread of CUDA's, maybe after the comm is gone: so the
 * board is shared, and freed by its last holder) marks the slot; the
 * calling thread retires the marked slots at its next call.
 */
typedef struct {
    atomic_int refs;   /* the comm's, and one per graph alive */
    atomic_int marked; /* slots marked, not yet retired */
    atomic_uchar gone[HOSTS_SLOTS];
} hosts_board_t;

typedef struct {
    hosts_board_t *board;
    int slot;
} graph_slot_t;

static void board_release(hosts_board_t *b)
{
    if (atomic_fetch_sub(&b->refs, 1) == 1)
        free(b);
}

/* A captured job's graph is gone (cuda/api.h: no CUDA call here). */
static void graph_gone(void *arg)
{
    graph_slot_t *g = arg;

    atomic_store(&g->board->gone[g->slot], 1);
    atomic_fetch_add(&g->board->marked, 1);
    board_release(g->board);
    free(g);
}

/*
 * Every rank alone in its group (a rank per host): the one shard's owners
 * are all the ranks, and one job over all of them would send the whole
 * message to each of n - 1 peers.  Instead n is split into prime factors
 * (mixed radix, smallest first) and a job per factor p runs over the p
 * ranks that differ from this one in that digit only: each rank sends the
 * message (p - 1) times a round, sum(p - 1) in all (4 ranks: 2 rounds of 2,
 * twice the message, against 3 times in one job; 8 ranks: 3 against 7;
 * MPI's ring: about 2).  Each round's kernel reduces in the link's rank
 * order what the round before left alike on every rank of the link, so
 * every rank gets the same bits.  Only where every factor is at most
 * HOSTS_ROUND_MAX: a larger prime would take as many sends in its one
 * round, and such comms stay on staged MPI (core/gpu.c).  Small messages
 * go in one job over every rank (the latency path, hiar_hosts_run_whole):
 * one exchange instead of a round per factor, for (n - 1) sends against
 * the rounds' sum(p - 1) (hiar_hosts_alone_extra; core/plan.c).  On one
 * H100, 4 simulated hosts of one rank (2026-12-06), the rounds took 51 us
 * at 1 KB and 59 at 8 KB where staged MPI took 29 and 48; 111 against 189
 * at 64 KB.
 */
#define HOSTS_ROUND_MAX 3
/* Ranks alone with a whole link at most: its pieces, cut to fit the shared
 * ring (piece_of_link), stay 8 KB or more at 2-rank rounds. */
#define HOSTS_WHOLE_MAX 32

struct hiar_hosts {
    hiar_progress_t *engine;
    hosts_board_t *board;
    hiar_port_t port;
    hiar_hosts_gpu_t *gpu;
    int nrounds; /* every rank alone on more than 2: the rounds' links, in order; 0: a link per shard */
    MPI_Comm rounds[HIAR_TIER_ROUNDS_MAX]; /* their communicators (this object's own) */
    int whole;           /* ... and then the link over every rank (a round's where one round is all), else -1 */
    int ring_peers;      /* the peers of the widest link but whole: the shared eager ring's whole pieces */
    MPI_Comm *links;     /* [nlinks]: the tier's shard communicators or the rounds' (the port dups them) */
    int nshards, nlinks; /* links: the shards this rank owns */
    int *link_of; /* [nshards]: the link of a shard this rank owns, else -1 */
    int *next_tag;  /* [links]: the next eager job's tag, counted alike by every rank of the link */
    int *kept_tags; /* [links]: tags captured jobs keep, from the top of the range down */
    int device_pointers, device;
    int left; /* requests a failed first exchange left posted: the areas they point into stay */
    int next_eager, next_kept;
    int warned_marks;                    /* a graph's end could not be watched: said once */
    hiar_hosts_area_t ring; /* the eager jobs' memory */
    unsigned turn;          /* the last eager job's */
};

/*
 * The thread's CUDA calls, and those the MPI makes on it (UCX pins staging
 * memory when it first needs it), must not be refused while the
 * application captures a stream in the default (global) mode: seen on the
 * H200 machine as UCX's cuMemHostRegister failing with "operation not
 * permitted when stream is capturing", then MPI_ERR_INTERN.
 */
static void thread_init(void *arg)
{
    hiar_cuda_use_device(*(int *)arg);
    hiar_cuda_capture_mode_relax();
}

/*
 * A ring's first exchange (net/progress.h) on this thread: at creation, or
 * while capturing, where the MPI's CUDA calls must not spoil the capture.
 * What a failure leaves posted is counted, so its memory stays.
 */
static hiar_result_t warm(hiar_hosts_t *h, const hiar_progress_job_t *job, int positions, hiar_wait_t *wait)
{
    int mode = hiar_cuda_capture_mode_relax(), left;
    hiar_result_t rc = hiar_progress_warm(&h->port, job, positions, wait, &left);

    hiar_cuda_capture_mode_restore(mode);
    h->left += left;
    return rc;
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

static size_t stride_of(size_t bytes)
{
    return (bytes + HOSTS_STRIDE_ALIGN - 1) / HOSTS_STRIDE_ALIGN * HOSTS_STRIDE_ALIGN;
}

/*
 * A link's pieces: HOSTS_PIECE_BYTES, but over a link of more peers than the
 * shared eager ring was sized for (the whole link of ranks alone) as much
 * less as fits it, so the ring never grows with the ranks (8 ranks alone in
 * rounds of 2: 4 MB in all, not 28).
 */
static size_t piece_of_link(const hiar_hosts_t *h, int link)
{
    return hiar_pieces_fitted(HOSTS_PIECE_BYTES, HOSTS_STRIDE_ALIGN, h->ring_peers, h->port.size(h->port.ctx, link) - 1);
}

/*
 * The eager slots' flags, and the ring they share in slot 0 (a whole ring
 * of the largest pieces per peer and direction: 4 MB, 8 MB at 2 hosts),
 * for links of up to h->ring_peers peers (piece_of_link).
 */
static hiar_result_t allocate_eager(hiar_hosts_t *h)
{
    size_t ring = HOSTS_RING * stride_of(HOSTS_PIECE_BYTES);
    hiar_hosts_area_t a;

    HIAR_CHECK(hiar_hosts_gpu_slot(h->gpu, 0, ring, (size_t)h->ring_peers * ring, &h->ring));
    for (int s = 1; s < HOSTS_EAGER_SLOTS; s++)
        HIAR_CHECK(hiar_hosts_gpu_slot(h->gpu, s, 0, 0, &a));
    return HIAR_SUCCESS;
}

/* The eager ring's first exchange over every link, in shard order (every rank's order). */
static hiar_result_t warm_eager(hiar_hosts_t *h, const hiar_hosts_config_t *cfg)
{
    hiar_wait_t wait = hiar_wait_begin(cfg->timeout_ms, cfg->abort, "between hosts, the first exchange of the ring");

    for (int l = 0; l < h->nlinks; l++) {
        hiar_progress_job_t job = {.link = l, .ring = HOSTS_RING, .stride = stride_of(piece_of_link(h, l)),
                                   .send = h->ring.send_host, .recv = h->ring.recv_host};
        HIAR_CHECK(warm(h, &job, HOSTS_RING, &wait));
    }
    return HIAR_SUCCESS;
}

int hiar_hosts_alone_ok(int nranks)
{
    hiar_tier_round_t r[HIAR_TIER_ROUNDS_MAX];

    return hiar_tier_rounds(nranks, 0, HOSTS_ROUND_MAX, r) > 0;
}

/*
 * Every rank alone on more than 2 ranks (the tier's one shard over all of
 * them): the rounds' communicators, one MPI_Comm_split each; else none.
 * Collective: on every rank before anything that could fail on one only.
 */
static hiar_result_t split_rounds(const hiar_tier_t *t, MPI_Comm *rounds, int *nrounds)
{
    hiar_tier_round_t r[HIAR_TIER_ROUNDS_MAX];
    int n = 0, me, k;

    *nrounds = 0;
    if (t->local_size == 1 && t->nshards == 1)
        MPI_Comm_size(t->shard_comm[0], &n);
    if (n <= 2)
        return HIAR_SUCCESS;
    MPI_Comm_rank(t->shard_comm[0], &me);
    k = hiar_tier_rounds(n, me, HOSTS_ROUND_MAX, r);
    for (; *nrounds < k; ++*nrounds)
        if (MPI_Comm_split(t->shard_comm[0], r[*nrounds].color, r[*nrounds].key, &rounds[*nrounds]) != MPI_SUCCESS)
            return hiar_error_set(HIAR_MPI_ERROR, "between hosts: MPI_Comm_split of round %d of %d failed",
                                  *nrounds + 1, k);
    return HIAR_SUCCESS;
}

static void free_rounds(MPI_Comm *rounds, int nrounds)
{
    for (int r = 0; r < nrounds; r++)
        MPI_Comm_free(&rounds[r]);
}

/* The peers of the widest link but the whole link of ranks alone: the shared eager ring holds a piece from each. */
static int widest_peers(const hiar_hosts_t *h)
{
    int n = 0;

    for (int l = 0; l < h->nlinks; l++)
        if (l != h->whole || h->nrounds == 1)
            n = h->port.size(h->port.ctx, l) > n ? h->port.size(h->port.ctx, l) : n;
    return n - 1;
}

/*
 * The links' communicators (owned shards', in shard order; every rank alone
 * on more than 2: the rounds', then, past one round, the whole one over
 * every rank), the tags' counters and the port's links: this rank's memory
 * alone, agreed before the links' collective set-up (hiar_hosts_setup).
 */
static hiar_result_t links_allocate(hiar_hosts_t *h, const hiar_tier_t *t)
{
    int n = 0, most = t->nshards + h->nrounds + 1;

    h->nshards = t->nshards;
    h->whole = -1;
    if ((h->board = calloc(1, sizeof(*h->board))))
        atomic_init(&h->board->refs, 1);
    if (!h->board || !(h->links = malloc(sizeof(MPI_Comm) * (size_t)most)) ||
        !(h->link_of = malloc(sizeof(int) * (size_t)t->nshards)) ||
        !(h->next_tag = calloc((size_t)most, sizeof(int))) || !(h->kept_tags = calloc((size_t)most, sizeof(int))))
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the links of %d shards", t->nshards);
    for (int s = 0; s < t->nshards; s++) {
        h->link_of[s] = hiar_tier_owns(t, s) && !h->nrounds ? n : -1;
        if (h->link_of[s] >= 0)
            h->links[n++] = t->shard_comm[s];
    }
    for (int r = 0; r < h->nrounds; r++)
        h->links[n++] = h->rounds[r];
    if (h->nrounds == 1)
        h->whole = 0;
    else if (h->nrounds && t->groups.ngroups <= HOSTS_WHOLE_MAX) { /* every rank alone: a group each */
        h->whole = n;
        h->links[n++] = t->shard_comm[0]; /* the one shard's owners: every rank */
    }
    h->nlinks = n;
    return hiar_port_mpi_alloc(n, &h->port);
}

/* The port's links (a collective MPI_Comm_dup of each; its memory allocated before), the GPU's half, the thread. */
static hiar_result_t connect(hiar_hosts_t *h, const hiar_hosts_config_t *cfg)
{
    hiar_progress_config_t pc = {.nslots = HOSTS_SLOTS, .timeout_ms = cfg->timeout_ms, .abort = cfg->abort,
                                 .thread_init = thread_init, .nready = HOSTS_EAGER_SLOTS};

    HIAR_CHECK(hiar_port_mpi_dup(&h->port, h->links));
    HIAR_CHECK(hiar_hosts_gpu_create(cfg->timeout_ms, cfg->sharers, HOSTS_SLOTS, h->device_pointers, &h->gpu));
    if (cfg->control)
        hiar_hosts_gpu_share_control(h->gpu, cfg->control);
    pc.port = h->port;
    pc.thread_arg = &h->device;
    pc.kernel_abort = hiar_hosts_gpu_abort_word(h->gpu);
    HIAR_CHECK(hiar_progress_start(&pc, &h->engine));
    h->ring_peers = widest_peers(h);
    return h->nlinks ? allocate_eager(h) : HIAR_SUCCESS;
}

/* A set-up step's outcome on this rank (a WARN if it failed), then whether it worked on every rank. */
static hiar_result_t settle(MPI_Comm mpi, hiar_result_t rc, int *ok)
{
    if (rc != HIAR_SUCCESS)
        HIAR_WARN(MPI, "the step between hosts stays on the calling thread: %s", hiar_last_error());
    *ok = rc == HIAR_SUCCESS;
    return hiar_net_min(mpi, ok, 1);
}

hiar_result_t hiar_hosts_setup(MPI_Comm mpi, const hiar_tier_t *t, const hiar_hosts_config_t *cfg,
                               hiar_hosts_t **out, char *why, size_t why_size)
{
    const char *no = blocking_reason(cfg);
    int v[2] = {!no, cfg->device_pointers}, ok; /* every rank can, and hands MPI device pointers */
    hiar_hosts_t *h = NULL;
    hiar_result_t rc = HIAR_SUCCESS;

    *out = NULL;
    HIAR_CHECK(hiar_net_min(mpi, v, 2));
    ok = v[0];
    if (ok) {
        MPI_Comm rounds[HIAR_TIER_ROUNDS_MAX];
        int nrounds;
        rc = split_rounds(t, rounds, &nrounds);
        if (rc == HIAR_SUCCESS && !(h = calloc(1, sizeof(*h))))
            rc = hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the step between hosts");
        if (h) {
            memcpy(h->rounds, rounds, sizeof(MPI_Comm) * (size_t)nrounds);
            h->nrounds = nrounds;
            h->device_pointers = v[1];
            h->device = cfg->device;
            rc = links_allocate(h, t);
        } else
            free_rounds(rounds, nrounds);
        /* Every rank with its memory before the links' MPI_Comm_dup, which all must enter. */
        HIAR_CHECK(settle(mpi, rc, &ok));
        if (ok) {
            rc = connect(h, cfg);
            HIAR_CHECK(settle(mpi, rc, &ok));
        }
    }
    /* Only once every rank has its ring: a peer that failed never makes the others wait. */
    if (ok && v[1]) {
        rc = warm_eager(h, cfg);
        HIAR_CHECK(settle(mpi, rc, &ok));
    }
    if (!ok) {
        hiar_hosts_free(h);
        snprintf(why, why_size, "on the calling thread, blocking (%s)",
                 no ? no : rc != HIAR_SUCCESS ? "it could not be set up on this rank" : "another rank could not set it up");
        return HIAR_SUCCESS;
    }
    snprintf(why, why_size, "asynchronous: a progress thread runs MPI, kernels reduce (%s)%s%s",
             h->device_pointers ? "MPI on device memory" : "through pinned host memory",
             h->nrounds ? "; every rank alone: in rounds over the prime factors of the ranks" : "",
             hiar_hosts_alone_extra(h) ? ", or one exchange with every rank (the latency path)" : "");
    *out = h;
    return HIAR_SUCCESS;
}

/* The slots of captured jobs whose graph is gone leave the thread (and come free). */
static void retire_gone(hiar_hosts_t *h)
{
    for (int s = HOSTS_EAGER_SLOTS; atomic_load(&h->board->marked) && s < HOSTS_EAGER_SLOTS + h->next_kept; s++)
        if (atomic_exchange(&h->board->gone[s], 0)) {
            atomic_fetch_sub(&h->board->marked, 1);
            hiar_progress_retire(h->engine, s);
        }
}

/* A captured job's slot that is free (its graph gone and its job dropped), or -1. */
static int free_kept(hiar_hosts_t *h)
{
    for (int s = HOSTS_EAGER_SLOTS; s < HOSTS_EAGER_SLOTS + h->next_kept; s++)
        if (hiar_progress_slot_free(h->engine, s))
            return s;
    return -1;
}

/* Whether a slot is retired but its job not yet dropped by the thread. */
static int any_retiring(const hiar_hosts_t *h)
{
    for (int s = HOSTS_EAGER_SLOTS; s < HOSTS_EAGER_SLOTS + h->next_kept; s++)
        if (hiar_progress_slot_leaving(h->engine, s))
            return 1;
    return 0;
}

/*
 * An eager job's slot in turn; a captured one's a free one of those used
 * before, else a new one; with none left, one retired but not yet free (the
 * thread drops its job within a sweep), waited for through wait.
 */
static hiar_result_t take_slot(hiar_hosts_t *h, int capturing, hiar_wait_t *wait, int *slot)
{
    if (!capturing) {
        *slot = h->next_eager;
        h->next_eager = (h->next_eager + 1) % HOSTS_EAGER_SLOTS;
        return HIAR_SUCCESS;
    }
    if ((*slot = free_kept(h)) >= 0)
        return HIAR_SUCCESS;
    if (HOSTS_EAGER_SLOTS + h->next_kept < HOSTS_SLOTS) {
        *slot = HOSTS_EAGER_SLOTS + h->next_kept++;
        return HIAR_SUCCESS;
    }
    while ((*slot = free_kept(h)) < 0 && any_retiring(h))
        HIAR_CHECK(hiar_wait_poll(wait));
    if (*slot >= 0)
        return HIAR_SUCCESS;
    return hiar_error_set(HIAR_UNSUPPORTED, "a comm keeps at most %d captured steps between hosts (one per "
                                            "captured call and shard or round) in graphs alive at once; destroy graphs "
                                            "no longer replayed, or use another comm",
                          HOSTS_SLOTS - HOSTS_EAGER_SLOTS);
}

/* Marks slot's board entry when the graph being captured on stream is destroyed. */
static hiar_result_t mark_on_destroy(hiar_hosts_t *h, void *stream, int slot)
{
    graph_slot_t *g = malloc(sizeof(*g));
    hiar_result_t rc;

    if (!g)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate a captured job's graph mark");
    *g = (graph_slot_t){h->board, slot};
    atomic_fetch_add(&h->board->refs, 1);
    if ((rc = hiar_cuda_capture_on_destroy(stream, graph_gone, g)) != HIAR_SUCCESS) {
        board_release(h->board);
        free(g);
    }
    return rc;
}

/*
 * A job's tag, counted alike by every rank of the link (calls and captures
 * come in the same order everywhere).  Captured jobs keep theirs for the
 * comm's life, taken from the top of the range down; eager ones cycle
 * through the rest, so that no eager job shares a tag with a captured one
 * that a graph may replay at the same time.
 */
static hiar_result_t take_tag(hiar_hosts_t *h, int link, int capturing, int *tag)
{
    int top = hiar_progress_max_job_tag(&h->port);

    if (capturing) {
        if (h->kept_tags[link] >= top)
            return hiar_error_set(HIAR_UNSUPPORTED, "between hosts: %d captured steps would leave no MPI tag for "
                                                    "eager calls (the MPI's tag bound allows %d jobs); capture "
                                                    "fewer calls, or use another comm", h->kept_tags[link] + 1,
                                  top + 1);
        *tag = top - h->kept_tags[link]++;
        return HIAR_SUCCESS;
    }
    if (h->next_tag[link] > top - h->kept_tags[link])
        h->next_tag[link] = 0;
    *tag = h->next_tag[link]++;
    return HIAR_SUCCESS;
}

/*
 * The ring and the blocks of a job of npieces.  The ring, a power of two,
 * follows from npieces alone, so every rank of a link numbers positions
 * alike (their kernels' caps may differ): a job of at most 16 pieces takes
 * a position per piece, the ring rounded up to a power of two (positions
 * past the last piece stay unused).  The blocks, a power of two at most the
 * kernel's cap and the pieces (half the ring for longer jobs), divide it.
 */
static void shape(unsigned cap, int npieces, int *ring, int *blocks)
{
    int want = npieces > HOSTS_RING ? HOSTS_RING / 2 : npieces, g = 1, r = 1;

    while (r < npieces && r < HOSTS_RING)
        r *= 2;
    while (2 * g <= want && 2 * (unsigned)g <= cap)
        g *= 2;
    *ring = r;
    *blocks = g;
}

/*
 * The eager slots' flags with the shared ring's memory; a captured job's
 * own, allocated now: need bytes (the positions it uses) per peer and
 * direction.
 */
static hiar_result_t job_area(hiar_hosts_t *h, int slot, int capturing, size_t need, int n, hiar_hosts_area_t *a)
{
    if (capturing)
        return hiar_hosts_gpu_slot(h->gpu, slot, need, (size_t)(n - 1) * need, a);
    HIAR_CHECK(hiar_hosts_gpu_slot(h->gpu, slot, 0, 0, a));
    a->send_host = h->ring.send_host;
    a->send_dev = h->ring.send_dev;
    a->recv_host = h->ring.recv_host;
    a->recv_dev = h->ring.recv_dev;
    return HIAR_SUCCESS;
}

/* The pieces of c over link: lays them out in a slot, hands the job to the thread, launches its kernel. */
static hiar_result_t run_job(hiar_hosts_t *h, const hiar_call_t *c, int link, hiar_pieces_t pieces, int capturing)
{
    int slot = 0;
    hiar_progress_job_t job = {.link = link, .persistent = capturing,
                               .pieces = hiar_pieces_ramp(pieces, HOSTS_RAMP_ENDS, HOSTS_RAMP_CUT, HOSTS_RAMP_LEAST)};
    hiar_hosts_job_t k = {.data = c->recvbuf, .src = c->sendbuf};
    hiar_hosts_area_t a;
    int npieces, used; /* positions the job uses */

    HIAR_ASSERT(link >= 0);
    if (!(npieces = hiar_pieces_count(&job.pieces)))
        return HIAR_SUCCESS;
    k.n = h->port.size(h->port.ctx, link);
    k.me = h->port.rank(h->port.ctx, link);
    shape(hiar_hosts_gpu_blocks(h->gpu), npieces, &job.ring, &k.blocks);
    used = npieces < job.ring ? npieces : job.ring;
    job.stride = stride_of(hiar_pieces_largest(&job.pieces));
    HIAR_CHECK(take_slot(h, capturing, c->wait, &slot));
    HIAR_MARK(c, "slot taken");
    /* The flags are the slot's last job's too: hiar_progress_submit waits for it before the kernel comes. */
    HIAR_CHECK(job_area(h, slot, capturing, (size_t)used * job.stride, k.n, &a));
    HIAR_CHECK(take_tag(h, link, capturing, &job.tag));
    HIAR_MARK(c, "slot's flags and tag");
    job.slot = slot;
    job.send = a.send_host;
    job.recv = a.recv_host;
    job.flags = (hiar_piece_flags_t *)a.flags_host;
    k.pieces = job.pieces;
    k.send = a.send_dev;
    k.recv = a.recv_dev;
    k.flags = a.flags_dev;
    k.stride = job.stride;
    k.ring = job.ring;
    /* A captured job's own memory meets the MPI now, not first in a replay (net/progress.h). */
    if (capturing && h->device_pointers)
        HIAR_CHECK(warm(h, &job, used, c->wait));
    HIAR_CHECK(hiar_progress_submit(h->engine, &job, c->wait));
    HIAR_MARK(c, "hand-off to the thread");
    /* A job no graph will tell the end of keeps its slot for the comm's life, as all did before recycling. */
    if (capturing && mark_on_destroy(h, c->stream, slot) != HIAR_SUCCESS && !h->warned_marks) {
        h->warned_marks = 1;
        HIAR_WARN(MPI, "between hosts: a captured call's slot will not be recycled when its graph is destroyed "
                       "(%s); a comm keeps %d such steps", hiar_last_error(), HOSTS_SLOTS - HOSTS_EAGER_SLOTS);
    }
    /* Eager kernels take turns (cuda/api.h): a turn only once its kernel is on its way. */
    if (!capturing)
        k.turn = hiar_hosts_next_turn(h->turn);
    HIAR_CHECK(hiar_hosts_reduce(h->gpu, &k, c));
    HIAR_MARK(c, "hosts kernel");
    if (!capturing)
        h->turn = k.turn;
    return HIAR_SUCCESS;
}

/* Whether c's stream is being captured, once the thread is known to be well and gone graphs' slots retired. */
static hiar_result_t job_start(hiar_hosts_t *h, const hiar_call_t *c, int *capturing)
{
    HIAR_CHECK(hiar_hosts_status(h));
    HIAR_CHECK(hiar_cuda_is_capturing(c->stream, capturing));
    retire_gone(h);
    return HIAR_SUCCESS;
}

static hiar_pieces_t shard_pieces(const hiar_call_t *c, int nshards, int s)
{
    return hiar_pieces_make(hiar_call_bytes(c), c->plan.chunk, HIAR_IPC_SHARD_UNIT, nshards, s, HOSTS_PIECE_BYTES);
}

hiar_result_t hiar_hosts_run(hiar_hosts_t *h, const hiar_call_t *c, const hiar_tier_t *t)
{
    int capturing;

    HIAR_CHECK(job_start(h, c, &capturing));
    for (int r = 0; r < h->nrounds; r++) { /* in stream order: a round's kernel reduces what the last one left */
        hiar_call_t round = *c;
        round.divisor = r + 1 < h->nrounds ? 0 : c->divisor; /* HIAR_AVG's division once, in the last round */
        if (r)
            round.sendbuf = c->recvbuf; /* what the round before left */
        HIAR_CHECK(run_job(h, &round, r, shard_pieces(c, 1, 0), capturing));
    }
    for (int s = t->local; s < t->nshards && !h->nrounds; s += t->local_size)
        HIAR_CHECK(run_job(h, c, h->link_of[s], shard_pieces(c, t->nshards, s), capturing));
    return HIAR_SUCCESS;
}

int hiar_hosts_whole_ok(const hiar_hosts_t *h, const hiar_tier_t *t)
{
    const hiar_grouping_t *g = &t->groups;

    for (int k = 0; k < g->ngroups; k++)
        if (g->start[k + 1] - g->start[k] != t->nshards)
            return 0;
    return !h->nrounds || h->whole >= 0;
}

int hiar_hosts_alone_extra(const hiar_hosts_t *h)
{
    int extra;

    if (!h->nrounds || h->whole < 0)
        return 0;
    extra = h->port.size(h->port.ctx, h->whole) - 1;
    for (int r = 0; r < h->nrounds; r++)
        extra -= h->port.size(h->port.ctx, r) - 1;
    return extra;
}

hiar_result_t hiar_hosts_run_whole(hiar_hosts_t *h, const hiar_call_t *c, const hiar_tier_t *t)
{
    size_t bytes = hiar_call_bytes(c);
    int link = h->nrounds ? h->whole : h->link_of[t->local], capturing;

    HIAR_ASSERT(link >= 0); /* hiar_hosts_whole_ok, checked at creation */
    HIAR_CHECK(job_start(h, c, &capturing));
    return run_job(h, c, link,
                   hiar_pieces_make(bytes, bytes, HIAR_IPC_SHARD_UNIT, 1, 0, piece_of_link(h, link)), capturing);
}

hiar_result_t hiar_hosts_run_part(hiar_hosts_t *h, const hiar_call_t *c, int s, const hiar_tier_t *parts)
{
    int capturing;
    hiar_pieces_t g = hiar_pieces_part(shard_pieces(c, c->nshards, s), HIAR_IPC_SHARD_UNIT, parts->nshards,
                                       parts->local);

    HIAR_CHECK(job_start(h, c, &capturing));
    return run_job(h, c, h->link_of[parts->local], g, capturing);
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

void hiar_hosts_set_spin(hiar_hosts_t *h, uint64_t spin_ns)
{
    if (h->engine)
        hiar_progress_set_spin(h->engine, spin_ns);
}

void hiar_hosts_free(hiar_hosts_t *h)
{
    int left = 0;

    if (!h)
        return;
    if (h->engine)
        left = hiar_progress_stop(h->engine);
    left += h->left;
    hiar_port_mpi_free(&h->port);
    free_rounds(h->rounds, h->nrounds);
#ifdef HIAR_KERNEL_MARKS
    if (!left && h->gpu && hiar_hosts_gpu_status(h->gpu) == HIAR_SUCCESS) {
        char text[256];
        if (hiar_hosts_gpu_marks(h->gpu, text, sizeof(text)))
            HIAR_INFO(MPI, "kernel marks, %s", text);
    }
#endif
    /* Receives still posted may land in the slots' areas: those stay allocated. */
    if (!left)
        hiar_hosts_gpu_destroy(h->gpu);
    free(h->links);
    free(h->link_of);
    free(h->next_tag);
    free(h->kept_tags);
    if (h->board)
        board_release(h->board);
    free(h);
}
