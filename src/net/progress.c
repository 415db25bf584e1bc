/* The progress engine's thread, slots and pieces (net/progress.h). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "base/error.h"
#include "base/log.h"
#include "net/progress.h"

/*
 * With only captured calls' jobs to watch and nothing to do for this long,
 * the thread sleeps between polls of the flags (PROGRESS_NAP_NS each, with
 * a timer slack of 1 us), so that a comm with a captured call does not spin
 * a core for ever: a replay that comes after a nap starts at most a nap
 * late.  While an eager job is out the thread spins, and yields the core
 * as the comm's waits do (HIAR_YIELD, hiar_progress_set_spin): where each
 * rank has the CPUs for its two threads, a yield would hand the core to any
 * other runnable process for a scheduler slice in the middle of the step
 * between hosts (the waits' measurement: base/wait.h).
 */
#define PROGRESS_IDLE_NS 200000u
#define PROGRESS_NAP_NS 10000
/*
 * With no job at all, the thread naps so for this long after its last
 * move before it sleeps on the condition variable: a call within it finds
 * the thread awake and hands its job over without a wake-up (a futex call
 * and, in a VM, an interrupt to another CPU).  On one H100 VM, 2 simulated
 * hosts of 2 ranks, back-to-back calls' hand-off went from 5.4 to 2.4 us
 * at 1 KB and from 15.1 to 7.5 at 64 KB with it (HIAR_CALL_MARKS,
 * 2026-12-05, two machine starts).  50 ms covers the gaps between a
 * training step's buckets; an idle comm sleeps after it.
 */
#define PROGRESS_DOZE_NS 50000000u

/* A ring position: the piece it serves next, and that piece's exchange. */
typedef struct {
    int piece, inflight, nreq;
    uint64_t since_ns;
    hiar_port_req_t req[2 * (HIAR_PROGRESS_MAX_LINK - 1)];
} position_t;

typedef struct {
    atomic_int busy; /* a job is in the slot (the thread's until it sets 0) */
    atomic_int retire; /* a persistent job's end asked for (hiar_progress_retire) */
    hiar_progress_job_t job;
    int npieces;
    position_t *pos; /* [HIAR_PROGRESS_MAX_RING], allocated at the slot's first job */
    unsigned long long arrived; /* pieces that arrived (a persistent job's over every replay) */
    int nflight; /* positions with an exchange out */
    uint64_t first_ns, last_ns, flight_ns, flight_since; /* the job's wire (hiar_progress_wire_t) */
} slot_t;

struct hiar_progress {
    hiar_progress_config_t cfg;
    slot_t *slots;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int *queue, nqueued; /* slots submitted, not yet taken by the thread (under mu) */
    int sleeping;        /* the thread waits on wake (under mu): a submit signals it */
    atomic_int pending;  /* 1 after a submit, until the thread takes the queue */
    int *active, nactive; /* the thread's own */
    int neager;           /* of them eager: a call is waiting for them, so the thread never naps */
    atomic_int stop;
    atomic_uint_least64_t spin_ns; /* hiar_progress_set_spin */
    atomic_int error;     /* the first error (HIAR_SUCCESS: none) */
    char message[512];    /* its message, under mu */
    hiar_progress_wire_t wire; /* under mu */
};

static uint64_t tag_of(int tag, int position)
{
    return (uint64_t)tag * HIAR_PROGRESS_MAX_RING + (uint64_t)position;
}

/* What the thread was serving when it failed: each job's pieces, and where its positions stand. */
static void log_active(const hiar_progress_t *p)
{
    for (int a = 0; a < p->nactive; a++) {
        const slot_t *sl = &p->slots[p->active[a]];
        char line[400];
        int len = 0;
        for (int q = 0; q < sl->job.ring && len < (int)sizeof(line) - 40; q++) {
            const hiar_piece_flags_t *f = &sl->job.flags[q];
            len += snprintf(line + len, sizeof(line) - (size_t)len, " %d:%d%s(%u,%u)", q, sl->pos[q].piece,
                            sl->pos[q].inflight ? "*" : "", __atomic_load_n(&f->ready, __ATOMIC_RELAXED),
                            __atomic_load_n(&f->arrived, __ATOMIC_RELAXED));
        }
        HIAR_WARN(MPI, "between hosts, %s job in slot %d, tag %d: %llu pieces arrived of %d a round; position:piece"
                       "(* in flight) (ready, arrived):%s",
                  sl->job.persistent ? "a persistent" : "an eager", p->active[a], sl->job.tag, sl->arrived,
                  sl->npieces, line);
    }
}

/* The first error stays; the kernels are told to give up. */
static void engine_fail(hiar_progress_t *p, hiar_result_t rc)
{
    log_active(p);
    pthread_mutex_lock(&p->mu);
    if (atomic_load(&p->error) == HIAR_SUCCESS) {
        snprintf(p->message, sizeof(p->message), "%s", hiar_last_error());
        atomic_store(&p->error, rc);
    }
    pthread_mutex_unlock(&p->mu);
    if (p->cfg.kernel_abort)
        __atomic_store_n(p->cfg.kernel_abort, 1, __ATOMIC_RELEASE);
}

/* Position q's bytes: receives from every other rank of the link into their places, and sends to each. */
static hiar_result_t post_position(const hiar_port_t *port, const hiar_progress_job_t *job, int q, size_t bytes,
                                   position_t *s)
{
    int me = port->rank(port->ctx, job->link), n = port->size(port->ctx, job->link), tag = (int)tag_of(job->tag, q);
    char *recv = job->recv + (size_t)q * (size_t)(n - 1) * job->stride;
    const char *send = job->send + (size_t)q * job->stride;

    s->nreq = 0;
    for (int r = 0; r < n; r++)
        if (r != me)
            HIAR_CHECK(port->irecv(port->ctx, job->link, r, tag, recv + (size_t)(r < me ? r : r - 1) * job->stride,
                                   bytes, &s->req[s->nreq++]));
    for (int r = 0; r < n; r++)
        if (r != me)
            HIAR_CHECK(port->isend(port->ctx, job->link, r, tag, send, bytes, &s->req[s->nreq++]));
    return HIAR_SUCCESS;
}

/* Tests the requests still open (completed ones leave the array); *done once none are. */
static hiar_result_t test_position(const hiar_port_t *port, position_t *s, int *done)
{
    for (int k = 0; k < s->nreq;) {
        int finished = 0;
        HIAR_CHECK(port->test(port->ctx, &s->req[k], &finished));
        if (finished)
            s->req[k] = s->req[--s->nreq];
        else
            k++;
    }
    *done = s->nreq == 0;
    return HIAR_SUCCESS;
}

/*
 * The job's wire (hiar_progress_wire_t): a piece posted at `now`, the first
 * of the job starting its span, the first in flight a stretch of flight.
 */
static void wire_out(slot_t *sl, uint64_t now)
{
    if (!sl->first_ns)
        sl->first_ns = now;
    if (sl->nflight++ == 0)
        sl->flight_since = now;
}

/* A piece arrived at `now`: the span's end so far; the last in flight ends a stretch. */
static void wire_in(slot_t *sl, uint64_t now)
{
    sl->last_ns = now;
    if (--sl->nflight == 0)
        sl->flight_ns += now - sl->flight_since;
}

/*
 * One look at position q of a slot; *moved when something happened.  After
 * its piece arrived the position serves the piece a ring later, and a
 * persistent job's, past the last, its first again (the next replay).
 */
static hiar_result_t step_position(hiar_progress_t *p, int slot, int q, uint64_t now, int *moved)
{
    slot_t *sl = &p->slots[slot];
    position_t *s = &sl->pos[q];
    hiar_piece_flags_t *f = &sl->job.flags[q];
    size_t off, bytes;
    int done;

    if (s->piece >= sl->npieces)
        return HIAR_SUCCESS; /* an eager job's position with nothing left */
    if (!s->inflight) {
        if (__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) != 1)
            return HIAR_SUCCESS;
        __atomic_store_n(&f->ready, 0, __ATOMIC_RELAXED);
        s->inflight = 1;
        s->since_ns = now;
        wire_out(sl, now);
        *moved = 1;
        hiar_pieces_at(&sl->job.pieces, s->piece, &off, &bytes);
        return post_position(&p->cfg.port, &sl->job, q, bytes, s);
    }
    HIAR_CHECK(test_position(&p->cfg.port, s, &done));
    if (!done) {
        if (now - s->since_ns > (uint64_t)p->cfg.timeout_ms * 1000000u)
            return hiar_error_set(HIAR_TIMEOUT, "between hosts: piece %d of slot %d was not exchanged with every "
                                                "peer within HIAR_TIMEOUT_MS=%d ms",
                                  s->piece, slot, p->cfg.timeout_ms);
        return HIAR_SUCCESS;
    }
    s->inflight = 0;
    wire_in(sl, now);
    s->piece += sl->job.ring;
    if (s->piece >= sl->npieces && sl->job.persistent)
        s->piece = q;
    sl->arrived++;
    *moved = 1;
    __atomic_store_n(&f->arrived, 1, __ATOMIC_RELEASE);
    return HIAR_SUCCESS;
}

/* Whether a job is done: an eager one when every piece arrived, a persistent one when retired and idle. */
static int job_done(slot_t *sl)
{
    if (!sl->job.persistent)
        return sl->arrived == (unsigned long long)sl->npieces;
    if (!atomic_load_explicit(&sl->retire, memory_order_acquire))
        return 0;
    for (int q = 0; q < sl->job.ring; q++)
        if (sl->pos[q].inflight)
            return 0;
    return 1;
}

/* An eager job's wire into the engine's sums. */
static void count_wire(hiar_progress_t *p, const slot_t *sl)
{
    pthread_mutex_lock(&p->mu);
    p->wire.jobs++;
    p->wire.pieces += (unsigned long long)sl->npieces;
    p->wire.span_ns += sl->last_ns - sl->first_ns;
    p->wire.flight_ns += sl->flight_ns;
    pthread_mutex_unlock(&p->mu);
}

/* Every position of every active slot once; jobs that are done leave. */
static hiar_result_t sweep(hiar_progress_t *p, int *moved)
{
    uint64_t now = hiar_now_ns();

    for (int a = 0; a < p->nactive;) {
        slot_t *sl = &p->slots[p->active[a]];
        for (int q = 0; q < sl->job.ring; q++)
            HIAR_CHECK(step_position(p, p->active[a], q, now, moved));
        if (job_done(sl)) {
            if (!sl->job.persistent)
                count_wire(p, sl);
            p->neager -= !sl->job.persistent;
            atomic_store_explicit(&sl->busy, 0, memory_order_release);
            p->active[a] = p->active[--p->nactive];
        } else
            a++;
    }
    return HIAR_SUCCESS;
}

/*
 * Takes the submitted slots (returns how many); with no job and nothing
 * moved since last for PROGRESS_DOZE_NS, sleeps until a submit or stop.
 */
static int take_queue(hiar_progress_t *p, uint64_t last)
{
    int took;

    if (!atomic_load_explicit(&p->pending, memory_order_acquire) &&
        (p->nactive || hiar_now_ns() - last < PROGRESS_DOZE_NS))
        return 0; /* the lock only when a submit came (the submitting thread waits for it), or to sleep */
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->pending, 0, memory_order_relaxed);
    while (!p->nqueued && !p->nactive && !atomic_load(&p->stop)) {
        p->sleeping = 1;
        pthread_cond_wait(&p->wake, &p->mu);
        p->sleeping = 0;
    }
    for (int q = 0; q < p->nqueued; q++) {
        p->active[p->nactive++] = p->queue[q];
        p->neager += !p->slots[p->queue[q]].job.persistent;
    }
    took = p->nqueued;
    p->nqueued = 0;
    pthread_mutex_unlock(&p->mu);
    return took;
}

void hiar_progress_set_spin(hiar_progress_t *p, uint64_t spin_ns)
{
    atomic_store_explicit(&p->spin_ns, spin_ns, memory_order_relaxed);
}

/* Whether a poll that found nothing to move, `polls` of them since `last` moved, yields the core. */
static int yields_now(hiar_progress_t *p, unsigned polls, uint64_t last)
{
    return polls > HIAR_WAIT_SPINS && hiar_wait_spun(last, atomic_load_explicit(&p->spin_ns, memory_order_relaxed));
}

static void nap(void)
{
    struct timespec ts = {0, PROGRESS_NAP_NS};
    nanosleep(&ts, NULL);
}

static void *engine_main(void *arg)
{
    hiar_progress_t *p = arg;
    uint64_t last = hiar_now_ns();
    unsigned polls = 0;

    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    if (p->cfg.thread_init)
        p->cfg.thread_init(p->cfg.thread_arg);
    while (!atomic_load(&p->stop)) {
        int moved = take_queue(p, last) > 0; /* a new job starts the idle and spin clocks again */
        hiar_result_t rc;
        if (atomic_load_explicit(p->cfg.abort, memory_order_relaxed))
            rc = hiar_error_set(HIAR_COMM_FAILED, "between hosts: the communicator was aborted");
        else
            rc = sweep(p, &moved);
        if (rc != HIAR_SUCCESS) {
            engine_fail(p, rc);
            break;
        }
        if (moved) {
            last = hiar_now_ns();
            polls = 0;
        } else if (++polls > HIAR_WAIT_SPINS && !p->neager && hiar_now_ns() - last > PROGRESS_IDLE_NS)
            nap();
        else if (yields_now(p, polls, last))
            sched_yield();
    }
    return NULL;
}

/* A slot's positions, allocated and their pages touched once. */
static hiar_result_t slot_state(slot_t *sl)
{
    if (sl->pos)
        return HIAR_SUCCESS;
    if (!(sl->pos = malloc(sizeof(*sl->pos) * HIAR_PROGRESS_MAX_RING)))
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the state of a progress slot");
    memset(sl->pos, 0, sizeof(*sl->pos) * HIAR_PROGRESS_MAX_RING);
    return HIAR_SUCCESS;
}

/* Frees an engine whose thread is not running (never started, or joined). */
static void engine_free(hiar_progress_t *p)
{
    for (int s = 0; p->slots && s < p->cfg.nslots; s++)
        free(p->slots[s].pos);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->active);
    free(p->queue);
    free(p->slots);
    free(p);
}

hiar_result_t hiar_progress_start(const hiar_progress_config_t *cfg, hiar_progress_t **out)
{
    hiar_progress_t *p = calloc(1, sizeof(*p));
    size_t n = cfg->nslots > 0 ? (size_t)cfg->nslots : 0;
    int rc;

    *out = NULL;
    if (!p)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the progress engine");
    p->cfg = *cfg;
    atomic_init(&p->spin_ns, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (!n || !(p->slots = calloc(n, sizeof(*p->slots))) || !(p->queue = malloc(sizeof(int) * n)) ||
        !(p->active = malloc(sizeof(int) * n))) {
        engine_free(p);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the progress engine (%d slots)", cfg->nslots);
    }
    for (int s = 0; s < cfg->nready && s < cfg->nslots; s++)
        if (slot_state(&p->slots[s]) != HIAR_SUCCESS) {
            engine_free(p);
            return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the progress engine's %d ready slots", cfg->nready);
        }
    if ((rc = pthread_create(&p->thread, NULL, engine_main, p)) != 0) {
        engine_free(p);
        return hiar_error_set(HIAR_INTERNAL_ERROR, "cannot start the progress thread: pthread_create returned %d", rc);
    }
    *out = p;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_progress_status(hiar_progress_t *p)
{
    hiar_result_t rc = atomic_load(&p->error);
    char message[sizeof(p->message)];

    if (rc == HIAR_SUCCESS)
        return rc;
    pthread_mutex_lock(&p->mu);
    memcpy(message, p->message, sizeof(message));
    pthread_mutex_unlock(&p->mu);
    return hiar_error_set(rc, "%s", message);
}

void hiar_progress_retire(hiar_progress_t *p, int slot)
{
    atomic_store_explicit(&p->slots[slot].retire, 1, memory_order_release);
}

int hiar_progress_slot_leaving(hiar_progress_t *p, int slot)
{
    return atomic_load_explicit(&p->slots[slot].retire, memory_order_relaxed) && !hiar_progress_slot_free(p, slot);
}

int hiar_progress_slot_free(hiar_progress_t *p, int slot)
{
    return !atomic_load_explicit(&p->slots[slot].busy, memory_order_acquire);
}

/* The job tag of the first exchanges (hiar_progress_warm), the largest the port leaves room for. */
static int warm_tag(const hiar_port_t *port)
{
    return port->max_tag / HIAR_PROGRESS_MAX_RING - 1;
}

int hiar_progress_max_job_tag(const hiar_port_t *port)
{
    return warm_tag(port) - 1;
}

static hiar_result_t check_job(const hiar_progress_t *p, const hiar_progress_job_t *job)
{
    const hiar_port_t *port = &p->cfg.port;
    int n = port->size(port->ctx, job->link), npieces = hiar_pieces_count(&job->pieces);
    size_t largest = hiar_pieces_largest(&job->pieces);

    if (job->slot < 0 || job->slot >= p->cfg.nslots || npieces < 1 || job->ring < 1 ||
        job->ring > HIAR_PROGRESS_MAX_RING)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "progress job: slot %d of %d, %d pieces through %d positions "
                              "(at least 1 piece, 1 to %d positions expected)", job->slot, p->cfg.nslots, npieces,
                              job->ring, HIAR_PROGRESS_MAX_RING);
    if (job->tag < 0 || job->tag > hiar_progress_max_job_tag(port))
        return hiar_error_set(HIAR_INTERNAL_ERROR, "progress job: tag %d, past the largest job tag %d that the MPI's "
                              "tag bound %d leaves", job->tag, hiar_progress_max_job_tag(port), port->max_tag);
    if (n < 2 || n > HIAR_PROGRESS_MAX_LINK || largest > (size_t)INT32_MAX || job->stride < largest)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "progress job: a link of %d ranks (2 to %d expected), pieces of up "
                              "to %zu bytes %zu apart", n, HIAR_PROGRESS_MAX_LINK, largest, job->stride);
    return HIAR_SUCCESS;
}

/*
 * The first exchange's sizes after `bytes`, up to the stride: every power
 * of two p from 8 bytes, p + 16 and 1.5 p, so that each of the MPI's
 * protocols (eager in one or several fragments, rendezvous, pipelined
 * staging) meets the memory once, unless its size range is narrower than
 * these steps (at most 1.5x).  8x steps missed one (H200 machine, Open MPI
 * with pml ucx over the CUDA UCX 1.22, device memory): the first 4112-byte
 * message, between rounds of 4096 and 32768, never completed while the
 * kernels waited for it, though 4082- and 8208-byte ones had.  About 3
 * rounds a doubling: 43 up to 256 KB.
 */
static size_t warm_next(size_t bytes, size_t stride)
{
    size_t next = stride;

    for (size_t p = 8; p <= 2 * bytes && p < stride; p *= 2) {
        const size_t sizes[] = {p, p + 16, p + p / 2};
        for (int k = 0; k < 3; k++)
            if (sizes[k] > bytes && sizes[k] < next)
                next = sizes[k];
    }
    return next;
}

/* Every position's exchange of `bytes` at once, waited for; on failure *left: requests still posted. */
static hiar_result_t warm_round(const hiar_port_t *port, const hiar_progress_job_t *job, int positions, size_t bytes,
                                hiar_wait_t *wait, int *left)
{
    position_t s[HIAR_PROGRESS_MAX_RING];
    hiar_result_t rc = HIAR_SUCCESS;
    int posted = 0, open = 1;

    for (; posted < positions && rc == HIAR_SUCCESS; posted++)
        rc = post_position(port, job, posted, bytes, &s[posted]);
    while (rc == HIAR_SUCCESS && open) {
        open = 0;
        for (int q = 0; q < posted && rc == HIAR_SUCCESS; q++) {
            int done;
            rc = test_position(port, &s[q], &done);
            open += !done;
        }
        if (rc == HIAR_SUCCESS && open)
            rc = hiar_wait_poll(wait);
    }
    for (int q = 0; q < posted && rc != HIAR_SUCCESS; q++)
        *left += s[q].nreq;
    return rc;
}

hiar_result_t hiar_progress_warm(const hiar_port_t *port, const hiar_progress_job_t *job, int positions,
                                 hiar_wait_t *wait, int *left)
{
    int n = port->size(port->ctx, job->link);
    hiar_progress_job_t warm = *job;

    *left = 0;
    if (n < 2 || n > HIAR_PROGRESS_MAX_LINK || positions < 1 || positions > job->ring ||
        job->ring > HIAR_PROGRESS_MAX_RING || job->stride < 8 || job->stride > (size_t)INT32_MAX)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "first exchange of a ring: %d of %d positions of %zu bytes over a "
                              "link of %d ranks (2 to %d ranks, 1 to %d positions, 8 bytes or more expected)",
                              positions, job->ring, job->stride, n, HIAR_PROGRESS_MAX_LINK, HIAR_PROGRESS_MAX_RING);
    warm.tag = warm_tag(port);
    for (size_t bytes = 8;; bytes = warm_next(bytes, job->stride)) {
        HIAR_CHECK(warm_round(port, &warm, positions, bytes, wait, left));
        if (bytes >= job->stride)
            return HIAR_SUCCESS;
    }
}

/* Waits (through wait, bounded) until slot is free; fails with the engine's error once it has one. */
static hiar_result_t slot_wait(hiar_progress_t *p, int slot, hiar_wait_t *wait)
{
    HIAR_CHECK(hiar_progress_status(p));
    while (!hiar_progress_slot_free(p, slot)) {
        HIAR_CHECK(hiar_wait_poll(wait));
        HIAR_CHECK(hiar_progress_status(p));
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_progress_submit(hiar_progress_t *p, const hiar_progress_job_t *job, hiar_wait_t *wait)
{
    slot_t *sl;
    int asleep;

    HIAR_CHECK(check_job(p, job));
    HIAR_CHECK(slot_wait(p, job->slot, wait));
    sl = &p->slots[job->slot];
    HIAR_CHECK(slot_state(sl));
    sl->job = *job;
    sl->npieces = hiar_pieces_count(&job->pieces);
    for (int q = 0; q < job->ring; q++) { /* not the whole struct: its requests are 1 KB a position */
        sl->pos[q].piece = q;
        sl->pos[q].inflight = sl->pos[q].nreq = 0;
    }
    sl->arrived = 0;
    sl->nflight = 0;
    sl->first_ns = sl->last_ns = sl->flight_ns = 0;
    atomic_store_explicit(&sl->retire, 0, memory_order_relaxed);
    atomic_store_explicit(&sl->busy, 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    p->queue[p->nqueued++] = job->slot;
    atomic_store_explicit(&p->pending, 1, memory_order_release);
    asleep = p->sleeping;
    pthread_mutex_unlock(&p->mu);
    /* A dozing thread takes the queue by the pending flag; one asleep needs the signal (after the unlock:
     * woken, it takes the mutex at once). */
    if (asleep)
        pthread_cond_signal(&p->wake);
    return HIAR_SUCCESS;
}

void hiar_progress_wire(hiar_progress_t *p, hiar_progress_wire_t *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->wire;
    pthread_mutex_unlock(&p->mu);
}

/* The eager jobs' wire, once the thread is gone (INFO, subsystem MPI). */
static void log_wire(const hiar_progress_t *p)
{
    const hiar_progress_wire_t *w = &p->wire;

    if (w->jobs)
        HIAR_INFO(MPI, "between hosts: %llu eager jobs, %.1f pieces each; per job %.1f us from the first piece sent "
                       "to the last arrived, %.1f of them with a piece on the wire",
                  w->jobs, (double)w->pieces / (double)w->jobs, (double)w->span_ns / 1e3 / (double)w->jobs,
                  (double)w->flight_ns / 1e3 / (double)w->jobs);
}

int hiar_progress_stop(hiar_progress_t *p)
{
    int left = 0;

    if (!p)
        return 0;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    log_wire(p);
    for (int s = 0; s < p->cfg.nslots; s++)
        for (int q = 0; p->slots[s].pos && q < p->slots[s].job.ring; q++)
            left += p->slots[s].pos[q].nreq;
    engine_free(p);
    return left;
}
