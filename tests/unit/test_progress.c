/*
 * The progress engine (src/net/progress.c) without MPI or a GPU: ranks are
 * engines in one process over a fake port (messages matched by source,
 * destination and tag, in order, as MPI does), and a thread per rank plays
 * the kernel: it fills its pieces into the ring's positions, raises `ready`, and a ring later waits for
 * `arrived`, lowers it and checks what came from every other rank against
 * values it computes itself.  The pieces' layout (base/pieces.h) is checked
 * against a loop over chunks and pieces.  CI runs this under
 * ThreadSanitizer (tests/sanitize.sh) and AddressSanitizer.
 *
 *   test_progress            every case; exit 0 when all pass
 *   mpirun -np N test_progress --mpi
 *                            N ranks (2 to 4), one per process, over the MPI
 *                            port (src/net/port.c): eager and persistent
 *                            jobs, every byte checked; and (N of 2 to 8 whose
 *                            prime factors are 2 and 3) every rank alone in
 *                            rounds, each rank's sum checked
 *                            (tests/mpi/progress.test)
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "net/progress.h"

#define MAX_RANKS 4
#define RING 3
#define PIECE_BYTES 1000 /* not a multiple of anything: offsets must be exact */
#define CHUNK 2500
#define BYTES (2 * CHUNK + 1700) /* pieces of 1000, 1000, 500 twice, then 1000, 700 (cut: pieces()) */
#define RECV_STRIDE 1040         /* the others' pieces lie this far apart; the gaps must stay untouched */
#define GAP 0xEE
#define SENT_LOG 512 /* messages a fake rank logs */

/* ---- the fake network ---- */

typedef struct msg {
    int from, to, tag;
    size_t bytes;
    struct msg *next;
    char data[];
} msg_t;

typedef struct {
    pthread_mutex_t mu;
    msg_t *head, *tail;
} net_t;

typedef struct {
    int from, tag;
    void *buf;
    size_t bytes;
    int open;
} recv_t;

typedef struct {
    net_t *net;
    int me, n;
    recv_t recvs[256];
    int nsent;           /* messages sent, the first SENT_LOG logged: */
    int sent_tag[SENT_LOG];
    size_t sent_bytes[SENT_LOG];
} fake_t;

static int fake_rank(void *ctx, int link)
{
    (void)link;
    return ((fake_t *)ctx)->me;
}

static int fake_size(void *ctx, int link)
{
    (void)link;
    return ((fake_t *)ctx)->n;
}

/* Sends complete at once (the bytes are copied): request bits 0. */
static hiar_result_t fake_isend(void *ctx, int link, int to, int tag, const void *buf, size_t bytes,
                                hiar_port_req_t *r)
{
    fake_t *f = ctx;
    msg_t *m = malloc(sizeof(*m) + bytes);

    (void)link;
    if (!m)
        return hiar_error_set(HIAR_NO_MEMORY, "fake isend");
    *m = (msg_t){f->me, to, tag, bytes, NULL};
    memcpy(m->data, buf, bytes);
    if (f->nsent < SENT_LOG) {
        f->sent_tag[f->nsent] = tag;
        f->sent_bytes[f->nsent] = bytes;
    }
    f->nsent++;
    pthread_mutex_lock(&f->net->mu);
    if (f->net->tail)
        f->net->tail->next = m;
    else
        f->net->head = m;
    f->net->tail = m;
    pthread_mutex_unlock(&f->net->mu);
    r->bits = 0;
    return HIAR_SUCCESS;
}

/* A receive is a slot in recvs; request bits slot + 1. */
static hiar_result_t fake_irecv(void *ctx, int link, int from, int tag, void *buf, size_t bytes,
                                hiar_port_req_t *r)
{
    fake_t *f = ctx;

    (void)link;
    for (int k = 0; k < 256; k++)
        if (!f->recvs[k].open) {
            f->recvs[k] = (recv_t){from, tag, buf, bytes, 1};
            r->bits = (uint64_t)k + 1;
            return HIAR_SUCCESS;
        }
    return hiar_error_set(HIAR_NO_MEMORY, "fake irecv: too many open receives");
}

/* The first message from `from` to me with the tag, in sending order. */
static hiar_result_t fake_test(void *ctx, hiar_port_req_t *r, int *done)
{
    fake_t *f = ctx;
    recv_t *rv;
    msg_t **pp, *prev = NULL;

    *done = r->bits == 0;
    if (*done)
        return HIAR_SUCCESS;
    rv = &f->recvs[r->bits - 1];
    pthread_mutex_lock(&f->net->mu);
    for (pp = &f->net->head; *pp; prev = *pp, pp = &(*pp)->next) {
        msg_t *m = *pp;
        if (m->from != rv->from || m->to != f->me || m->tag != rv->tag)
            continue;
        if (m->bytes != rv->bytes) {
            pthread_mutex_unlock(&f->net->mu);
            return hiar_error_set(HIAR_MPI_ERROR, "fake test: %zu bytes for a receive of %zu", m->bytes, rv->bytes);
        }
        memcpy(rv->buf, m->data, m->bytes);
        *pp = m->next;
        if (f->net->tail == m)
            f->net->tail = prev;
        free(m);
        rv->open = 0;
        *done = 1;
        r->bits = 0;
        break;
    }
    pthread_mutex_unlock(&f->net->mu);
    return HIAR_SUCCESS;
}

/* ---- the engines' yields: counted on their threads (thread_init marks them) ---- */

static _Thread_local int on_engine;
static atomic_int engine_yields;

static void mark_engine(void *arg)
{
    (void)arg;
    on_engine = 1;
}

/* Ours, before libc's: the engine's calls land here (linked into this program). */
int sched_yield(void)
{
    if (on_engine)
        atomic_fetch_add(&engine_yields, 1);
    return (int)syscall(SYS_sched_yield);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* ---- a rank: its engine, its buffers, its "kernels" ---- */

typedef struct {
    int me, n, first, rounds, nslots, persistent, stall, ahead, shared; /* rounds first .. first + rounds - 1 */
    int late_ms;   /* the first round's kernel starts this late after its submit */
    int submit_ms; /* the first round is submitted this late */
    atomic_int launched; /* with ahead: calls made, whose kernels the stream thread may run */
    fake_t port;
    atomic_int abort;
    int kernel_abort;
    hiar_progress_t *engine;
    hiar_piece_flags_t flags[4][RING];
    unsigned char send[4][RING][RECV_STRIDE];
    unsigned char recv[4][RING * (MAX_RANKS - 1) * RECV_STRIDE]; /* position q at q * (n - 1) * RECV_STRIDE */
    int wrong, timed_out;
    hiar_result_t submit_rc;
} rank_t;

static unsigned char value(int rank, int round, size_t at)
{
    return (unsigned char)(rank * 131 + round * 17 + at * 7 + at / 251);
}

/*
 * A job's pieces, its first and last 2 cut in 2 as core/hosts.c cuts a
 * job's ends (parts of at least 256 bytes here): 448 and 552, 448 and 552,
 * 500, 1000, 1000, 500, 448 and 552, 320 and 380 bytes.
 */
static hiar_pieces_t pieces(void)
{
    return hiar_pieces_ramp(hiar_pieces_make(BYTES, CHUNK, 1, 1, 0, PIECE_BYTES), 2, 2, 256);
}

/* The send and receive areas of a slot: its own, or with `shared` one for all, as the eager jobs' ring. */
static int area_of(const rank_t *r, int slot)
{
    return r->shared ? 0 : slot;
}

static hiar_progress_job_t job_of(rank_t *r, int slot)
{
    return (hiar_progress_job_t){slot, slot, r->persistent, 0, RING, pieces(), RECV_STRIDE,
                                 (char *)r->send[area_of(r, slot)], (char *)r->recv[area_of(r, slot)],
                                 r->flags[slot]};
}

/* Waits for arrived == 1 as a kernel does (bounded: 5 s), then lowers it. */
static int await_arrival(const int *kernel_abort, hiar_piece_flags_t *f)
{
    uint64_t until = hiar_now_ns() + 5000000000ull;

    while (__atomic_load_n(&f->arrived, __ATOMIC_ACQUIRE) != 1) {
        if (__atomic_load_n(kernel_abort, __ATOMIC_ACQUIRE) || hiar_now_ns() > until)
            return 0;
        sched_yield();
    }
    __atomic_store_n(&f->arrived, 0, __ATOMIC_RELAXED);
    return 1;
}

/* Piece i of round `round` as every other rank sent it, at its position; the gaps untouched. */
static void check_piece(rank_t *r, int slot, int round, int i)
{
    const hiar_pieces_t g = pieces();
    size_t off, bytes;

    hiar_pieces_at(&g, i, &off, &bytes);
    for (int from = 0; from < r->n; from++) {
        unsigned char *got;
        if (from == r->me)
            continue;
        got = r->recv[area_of(r, slot)] + ((size_t)(i % RING) * (size_t)(r->n - 1) + (size_t)(from < r->me ? from : from - 1)) *
                                  RECV_STRIDE;
        for (size_t j = 0; j < bytes; j++)
            r->wrong += got[j] != value(from, round, off + j);
        for (size_t j = bytes; j < RECV_STRIDE; j++)
            r->wrong += got[j] != GAP;
        /* The gap again before the position's next piece: the thread posts its receive only after `ready`. */
        memset(got, GAP, RECV_STRIDE);
    }
}

/* Piece i's bytes where the thread sends them from, then `ready`. */
static void hand_over(rank_t *r, int slot, int round, int i)
{
    const hiar_pieces_t g = pieces();
    size_t off, bytes;
    unsigned char *to;

    hiar_pieces_at(&g, i, &off, &bytes);
    to = r->send[area_of(r, slot)][i % RING];
    for (size_t j = 0; j < bytes; j++)
        to[j] = value(r->me, round, off + j);
    __atomic_store_n(&r->flags[slot][i % RING].ready, 1, __ATOMIC_RELEASE);
}

/* Round `round` as the kernel runs it with one block: piece i goes out once piece i - RING is in. */
static int kernel_round(rank_t *r, int round)
{
    const hiar_pieces_t g = pieces();
    int npieces = hiar_pieces_count(&g), slot = round % r->nslots;

    for (int i = 0; i - RING < npieces; i++) {
        if (i >= RING) {
            if (!await_arrival(&r->kernel_abort, &r->flags[slot][(i - RING) % RING]))
                return 0;
            check_piece(r, slot, round, i - RING);
        }
        if (i < npieces)
            hand_over(r, slot, round, i);
    }
    return 1;
}

/* The GPU of a rank whose calls are queued ahead: the rounds' kernels in order, each once its call is made. */
static void *stream_main(void *arg)
{
    rank_t *r = arg;

    for (int round = r->first; round < r->first + r->rounds; round++) {
        uint64_t until = hiar_now_ns() + 5000000000ull;
        while (atomic_load(&r->launched) <= round)
            if (hiar_now_ns() > until || atomic_load(&r->abort))
                return NULL;
            else
                sched_yield();
        if (!kernel_round(r, round)) {
            r->timed_out = 1;
            return NULL;
        }
    }
    return NULL;
}

/*
 * A rank's calls: each submits its job and then runs its kernel, or, with
 * `ahead`, only submits (waiting for a slot as a call does) while a stream
 * thread runs the kernels behind, so several jobs are out at once.
 */
static void *device_main(void *arg)
{
    rank_t *r = arg;
    hiar_wait_t w = hiar_wait_begin(5000, &r->abort, "test submit");
    pthread_t stream;

    if (r->ahead && !r->stall)
        pthread_create(&stream, NULL, stream_main, r);
    if (r->submit_ms)
        sleep_ms(r->submit_ms);
    for (int round = r->first; round < r->first + r->rounds; round++) {
        int slot = round % r->nslots;
        hiar_progress_job_t job = job_of(r, slot);
        if ((!r->persistent || round - r->first < r->nslots) &&
            (r->submit_rc = hiar_progress_submit(r->engine, &job, &w)) != HIAR_SUCCESS)
            break;
        if (round == r->first && r->late_ms)
            sleep_ms(r->late_ms);
        if (r->ahead)
            atomic_store(&r->launched, round + 1);
        else if (!r->stall && !kernel_round(r, round)) { /* a stalled rank's kernels never come */
            r->timed_out = 1;
            break;
        }
    }
    if (r->ahead && !r->stall) {
        if (r->submit_rc != HIAR_SUCCESS)
            atomic_store(&r->abort, 1);
        pthread_join(stream, NULL);
    }
    return NULL;
}

static int failures;

static void expect(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

typedef struct {
    int n, rounds, nslots, persistent, stall_rank, timeout_ms, ahead, shared;
} scenario_t;

/* The ranks and their engines, no calls yet (the caller frees). */
static rank_t *start_ranks(const scenario_t *sc)
{
    static net_t net = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};
    rank_t *ranks = calloc((size_t)sc->n, sizeof(*ranks));

    for (int k = 0; k < sc->n; k++) {
        rank_t *r = &ranks[k];
        hiar_progress_config_t cfg = {{&r->port, fake_rank, fake_size, fake_isend, fake_irecv, fake_test, 1 << 20},
                                      sc->nslots, sc->timeout_ms, &r->abort, mark_engine, NULL, &r->kernel_abort,
                                      sc->nslots / 2}; /* half the slots ready at start, half made at a first job */
        *r = (rank_t){.me = k, .n = sc->n, .rounds = sc->rounds, .nslots = sc->nslots,
                      .persistent = sc->persistent, .stall = k == sc->stall_rank, .ahead = sc->ahead,
                      .shared = sc->shared};
        r->port = (fake_t){.net = &net, .me = k, .n = sc->n};
        memset(r->recv, GAP, sizeof(r->recv));
        if (hiar_progress_start(&cfg, &r->engine) != HIAR_SUCCESS) {
            printf("FAIL: start: %s\n", hiar_last_error());
            exit(1);
        }
    }
    return ranks;
}

/* Runs the ranks; returns their states (the caller frees). */
static rank_t *run(const scenario_t *sc, int *left)
{
    rank_t *ranks = start_ranks(sc);
    pthread_t dev[MAX_RANKS];

    *left = 0;
    for (int k = 0; k < sc->n; k++)
        pthread_create(&dev[k], NULL, device_main, &ranks[k]);
    for (int k = 0; k < sc->n; k++)
        pthread_join(dev[k], NULL);
    return ranks;
}

static void finish(rank_t *ranks, int n, int *left)
{
    for (int k = 0; k < n; k++)
        *left += hiar_progress_stop(ranks[k].engine);
    free(ranks);
}

enum { PERSISTENT = 1, AHEAD = 2, SHARED = 4 };

/* Runs the ranks' calls again, rounds first .. first + rounds - 1, on their engines as they are. */
static void rerun(rank_t *ranks, int n, int first, int rounds, int persistent)
{
    pthread_t dev[MAX_RANKS];

    for (int k = 0; k < n; k++) {
        ranks[k].first = first;
        ranks[k].rounds = rounds;
        ranks[k].persistent = persistent;
        pthread_create(&dev[k], NULL, device_main, &ranks[k]);
    }
    for (int k = 0; k < n; k++)
        pthread_join(dev[k], NULL);
}

/* Whether slot of every rank's engine is free within 2 s. */
static int slots_free(rank_t *ranks, int n, int slot)
{
    uint64_t until = hiar_now_ns() + 2000000000ull;
    int free_all = 0;

    while (!free_all && hiar_now_ns() < until) {
        free_all = 1;
        for (int k = 0; k < n; k++)
            free_all &= hiar_progress_slot_free(ranks[k].engine, slot);
        sched_yield();
    }
    return free_all;
}

/* Waits (2 s at most) until the word is 0: the thread took the piece. */
static int taken(const uint32_t *ready)
{
    uint64_t until = hiar_now_ns() + 2000000000ull;

    while (__atomic_load_n(ready, __ATOMIC_ACQUIRE) && hiar_now_ns() < until)
        sched_yield();
    return !__atomic_load_n(ready, __ATOMIC_ACQUIRE);
}

/*
 * Whether an engine's wire sums (hiar_progress_wire_t) are those of `jobs`
 * eager jobs of this test's pieces, run within `wall_ns` through `nslots`
 * slots: each job's span inside the run, and a slot's jobs one after the
 * other, so the spans add up to at most nslots x the run; the time in
 * flight within them, and some.
 */
static int wire_ok(hiar_progress_t *engine, unsigned long long jobs, int nslots, uint64_t wall_ns)
{
    hiar_pieces_t g = pieces();
    hiar_progress_wire_t w;

    hiar_progress_wire(engine, &w);
    return w.jobs == jobs && w.pieces == jobs * (unsigned)hiar_pieces_count(&g) && w.flight_ns <= w.span_ns &&
           w.span_ns <= (uint64_t)nslots * wall_ns && (!jobs || (w.span_ns && w.flight_ns));
}

/*
 * A persistent job retired with an exchange in flight (its peer's piece not
 * sent yet) keeps its slot until the exchange is done, then leaves.
 */
static void test_retire_in_flight(void)
{
    scenario_t sc = {2, 1, 1, 1, -1, 5000, 0, 0};
    rank_t *ranks = start_ranks(&sc);
    atomic_int abort = 0;
    hiar_wait_t w = hiar_wait_begin(5000, &abort, "test submit");
    int ok = 1, left = 0;

    for (int k = 0; k < 2; k++) {
        hiar_progress_job_t job = job_of(&ranks[k], 0);
        ok &= hiar_progress_submit(ranks[k].engine, &job, &w) == HIAR_SUCCESS;
    }
    hand_over(&ranks[0], 0, 0, 0);
    ok &= taken(&ranks[0].flags[0][0].ready);
    hiar_progress_retire(ranks[0].engine, 0);
    sleep_ms(50); /* the piece still out, the slot taken */
    ok &= !hiar_progress_slot_free(ranks[0].engine, 0) && hiar_progress_slot_leaving(ranks[0].engine, 0);
    ok &= !hiar_progress_slot_leaving(ranks[1].engine, 0); /* not retired there */
    hand_over(&ranks[1], 0, 0, 0);
    ok &= slots_free(ranks, 1, 0) && await_arrival(&ranks[0].kernel_abort, &ranks[0].flags[0][0]);
    ok &= !hiar_progress_slot_leaving(ranks[0].engine, 0);
    check_piece(&ranks[0], 0, 0, 0);
    hiar_progress_retire(ranks[1].engine, 0);
    ok &= slots_free(ranks, 2, 0) && ranks[0].wrong == 0;
    finish(ranks, 2, &left);
    expect(ok && left == 0, "2 ranks: a persistent job retired with a piece in flight keeps its slot (50 ms, "
                            "leaving) until the piece is exchanged, then leaves; the piece arrived right");
}

/*
 * Persistent jobs (captured calls) replayed, then retired (their graphs
 * destroyed): the slots come free, and eager jobs in them, on new bytes,
 * arrive right; a slot not retired stays taken.
 */
static void test_retire(int n)
{
    scenario_t sc = {n, 20, 2, 1, -1, 5000, 0, 0};
    uint64_t t0 = hiar_now_ns();
    int left, wrong = 0, bad = 0;
    rank_t *ranks = run(&sc, &left);
    char what[200];

    for (int k = 0; k < n; k++)
        hiar_progress_retire(ranks[k].engine, 0);
    bad += !slots_free(ranks, n, 0);
    for (int k = 0; k < n; k++)
        bad += hiar_progress_slot_free(ranks[k].engine, 1);
    for (int k = 0; k < n; k++)
        hiar_progress_retire(ranks[k].engine, 1);
    bad += !slots_free(ranks, n, 1);
    rerun(ranks, n, 20, 20, 0);
    for (int k = 0; k < n; k++) {
        wrong += ranks[k].wrong;
        bad += ranks[k].timed_out || ranks[k].submit_rc != HIAR_SUCCESS ||
               hiar_progress_status(ranks[k].engine) != HIAR_SUCCESS;
    }
    bad += !slots_free(ranks, n, 0) || !slots_free(ranks, n, 1);
    for (int k = 0; k < n; k++) /* the eager rounds only: the retired persistent jobs never count */
        bad += !wire_ok(ranks[k].engine, 20, 2, hiar_now_ns() - t0);
    finish(ranks, n, &left);
    snprintf(what, sizeof(what), "%d ranks: persistent jobs retired (graphs destroyed): slots free, a slot not "
             "retired kept, then eager jobs in them, 20 rounds, every byte as sent, the wire's sums of those", n);
    expect(wrong == 0 && bad == 0 && left == 0, what);
}

/*
 * The sizes of a rank's sends (the first SENT_LOG) against its jobs'
 * pieces (pieces()): a tag's sends (a job's ring position) carry, job after
 * job, that position's pieces in order, each to the n - 1 others.
 */
static int sent_sizes_ok(const fake_t *f, int n)
{
    const hiar_pieces_t g = pieces();
    int npieces = hiar_pieces_count(&g), seen[64 * HIAR_PROGRESS_MAX_RING] = {0};

    for (int m = 0; m < f->nsent && m < SENT_LOG; m++) {
        int t = f->sent_tag[m], q = t % HIAR_PROGRESS_MAX_RING, here = (npieces - q + RING - 1) / RING;
        size_t off, bytes;
        if (t < 0 || t >= (int)(sizeof(seen) / sizeof(seen[0])) || q >= RING)
            return 0;
        hiar_pieces_at(&g, q + seen[t]++ / (n - 1) % here * RING, &off, &bytes);
        if (f->sent_bytes[m] != bytes)
            return 0;
    }
    return 1;
}

/* Every rank gets every other's pieces, round after round, through reused slots. */
static void test_rounds(int n, int nslots, int how)
{
    int persistent = how & PERSISTENT, ahead = how & AHEAD;
    scenario_t sc = {n, 40, nslots, persistent, -1, 5000, ahead, how & SHARED};
    uint64_t t0 = hiar_now_ns();
    int left, wrong = 0, bad = 0;
    rank_t *ranks = run(&sc, &left);
    char what[200];

    for (int k = 0; k < n; k++) {
        wrong += ranks[k].wrong;
        bad += ranks[k].timed_out || ranks[k].submit_rc != HIAR_SUCCESS ||
               hiar_progress_status(ranks[k].engine) != HIAR_SUCCESS;
    }
    for (int k = 0; k < n; k++)
        for (int s = 0; s < nslots && !persistent; s++)
            for (int w = 0; w < 1000 && !hiar_progress_slot_free(ranks[k].engine, s); w++)
                sched_yield();
    for (int k = 0; k < n; k++)
        for (int s = 0; s < nslots; s++)
            bad += hiar_progress_slot_free(ranks[k].engine, s) == persistent;
    for (int k = 0; k < n; k++) /* every eager job once, captured ones never */
        bad += !wire_ok(ranks[k].engine, persistent ? 0 : 40, nslots, hiar_now_ns() - t0) ||
               !sent_sizes_ok(&ranks[k].port, n);
    finish(ranks, n, &left);
    snprintf(what, sizeof(what), "%d ranks, %d slots, %s jobs%s%s: 40 rounds, every byte as sent in pieces of their "
             "sizes, slots %s after, the wire's sums right",
             n, nslots, persistent ? "persistent" : "eager",
             ahead ? ", calls queued ahead of their kernels" : "", how & SHARED ? ", one ring for all" : "",
             persistent ? "kept" : "free");
    expect(wrong == 0 && bad == 0 && left == 0, what);
}

/*
 * An eager job whose peer's kernel comes 50 ms late: with the comm's spin
 * set (HIAR_YIELD where each rank has its CPUs, 1 ms in the library; 10 s
 * here, past the test) the engines poll without yielding their cores; with
 * none (the start's, and where ranks outnumber CPUs) they yield after
 * HIAR_WAIT_SPINS polls.  With `idle`, both engines wait 200 ms for their
 * jobs, longer than a spin of 100 ms, and both kernels come 50 ms after the
 * submits: the new job starts the spin clock again (else the engines would
 * yield at once).  The bytes arrive right every time.
 */
static void test_spin(uint64_t spin_ns, int idle)
{
    scenario_t sc = {2, 1, 1, 0, -1, 5000, 0, 0};
    rank_t *ranks = start_ranks(&sc);
    pthread_t dev[2];
    int left = 0, bad = 0, yields;
    char what[240];

    for (int k = 0; k < 2; k++) {
        hiar_progress_set_spin(ranks[k].engine, spin_ns);
        ranks[k].submit_ms = idle ? 200 : 0;
        ranks[k].late_ms = idle || k == 1 ? 50 : 0;
    }
    atomic_store(&engine_yields, 0);
    for (int k = 0; k < 2; k++)
        pthread_create(&dev[k], NULL, device_main, &ranks[k]);
    for (int k = 0; k < 2; k++)
        pthread_join(dev[k], NULL);
    yields = atomic_load(&engine_yields);
    for (int k = 0; k < 2; k++)
        bad += ranks[k].wrong || ranks[k].timed_out || ranks[k].submit_rc != HIAR_SUCCESS;
    finish(ranks, 2, &left);
    snprintf(what, sizeof(what), "2 ranks, %s, the engines' spin %s: %d yields on their threads (expected %s), "
             "every byte as sent", idle ? "jobs after 200 ms idle, both kernels 50 ms late" : "a kernel 50 ms late",
             spin_ns ? (idle ? "100 ms" : "10 s") : "unset", yields, spin_ns ? "none" : "some");
    expect(bad == 0 && left == 0 && (spin_ns ? yields == 0 : yields > 0), what);
}

/* ---- the first exchange of a ring's memory (hiar_progress_warm) ---- */

/* The sizes of its rounds for a stride: each power of two p from 8, p + 16 and 1.5 p below it; then the stride. */
typedef struct {
    size_t stride;
    int nsizes;
    size_t sizes[24];
} warm_ladder_t;

static const warm_ladder_t ladders[] = {
    {RECV_STRIDE, 20, {8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 144, 192, 256, 272, 384, 512, 528, 768, 1024,
                       RECV_STRIDE}},
    {100, 10, {8, 12, 16, 24, 32, 48, 64, 80, 96, 100}}, /* capped at a stride off the ladder */
    {17, 4, {8, 12, 16, 17}},
    {8, 1, {8}},
};

/*
 * A rank's receive area after the first exchange of `positions`: every
 * other rank's send bytes of those positions at their places, untouched
 * (GAP) past them.
 */
static int warm_arrived(const unsigned char *recv, int me, int n, int positions, size_t stride)
{
    int ok = 1;

    for (int q = 0; q < positions; q++)
        for (int from = 0; from < n; from++) {
            const unsigned char *got = recv + ((size_t)q * (size_t)(n - 1) + (size_t)(from < me ? from : from - 1)) *
                                                  stride;
            for (size_t j = 0; j < stride && from != me; j++)
                ok &= got[j] == value(from, 0, (size_t)q * stride + j);
        }
    for (size_t j = (size_t)positions * (size_t)(n - 1) * stride; j < (size_t)RING * (MAX_RANKS - 1) * RECV_STRIDE;
         j++)
        ok &= recv[j] == GAP;
    return ok;
}

typedef struct {
    fake_t port;
    int calls, positions;
    size_t stride; /* at most RECV_STRIDE */
    unsigned char send[RING * RECV_STRIDE];
    unsigned char recv[RING * (MAX_RANKS - 1) * RECV_STRIDE];
    hiar_result_t rc;
    int left;
    char message[256];
} warm_rank_t;

static void *warm_main(void *arg)
{
    warm_rank_t *w = arg;
    hiar_port_t port = {&w->port, fake_rank, fake_size, fake_isend, fake_irecv, fake_test, 1 << 20};
    hiar_progress_job_t job = {.link = 0, .ring = RING, .stride = w->stride, .send = (char *)w->send,
                               .recv = (char *)w->recv};
    atomic_int abort = 0;
    hiar_wait_t wait = hiar_wait_begin(200, &abort, "first exchange");

    w->rc = w->calls ? hiar_progress_warm(&port, &job, w->positions, &wait, &w->left) : HIAR_SUCCESS;
    snprintf(w->message, sizeof(w->message), "%s", hiar_last_error());
    return NULL;
}

/* Rank k's messages: each round's size to every peer from every position, in order, on the first exchanges' tags. */
static int warm_sent(const fake_t *f, int positions, const warm_ladder_t *l)
{
    int per = positions * (f->n - 1), ok;

    ok = f->nsent == per * l->nsizes && f->nsent <= SENT_LOG;
    for (int m = 0; ok && m < f->nsent; m++)
        ok &= f->sent_bytes[m] == l->sizes[m / per] && f->sent_tag[m] / HIAR_PROGRESS_MAX_RING == (1 << 20) / 16 - 1;
    return ok;
}

/*
 * Every rank's ring lands in every other's receive area, each peer's at its
 * place, in rounds of growing size on a tag no job takes; with `stall`, the
 * last rank never calls and the others end in HIAR_TIMEOUT after the
 * timeout (200 ms), naming it, with their receives left posted.
 */
static void test_warm(int n, int positions, int stall, const warm_ladder_t *l)
{
    net_t net = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};
    warm_rank_t *w = calloc((size_t)n, sizeof(*w));
    pthread_t t[MAX_RANKS];
    uint64_t t0 = hiar_now_ns();
    int ok = 1;
    char what[200];

    for (int k = 0; k < n; k++) {
        w[k] = (warm_rank_t){.port = {.net = &net, .me = k, .n = n}, .calls = !stall || k < n - 1,
                             .positions = positions, .stride = l->stride};
        for (size_t j = 0; j < sizeof(w[k].send); j++)
            w[k].send[j] = value(k, 0, j);
        memset(w[k].recv, GAP, sizeof(w[k].recv));
        pthread_create(&t[k], NULL, warm_main, &w[k]);
    }
    for (int k = 0; k < n; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < n; k++)
        if (stall && k < n - 1)
            ok &= w[k].rc == HIAR_TIMEOUT && strstr(w[k].message, "HIAR_TIMEOUT_MS=200") && w[k].left > 0;
        else
            ok &= w[k].rc == HIAR_SUCCESS && (stall || (warm_arrived(w[k].recv, k, n, positions, l->stride) &&
                                                        warm_sent(&w[k].port, positions, l)));
    ok &= (hiar_now_ns() - t0) < 3000000000ull;
    while (net.head) { /* a stalled run leaves messages no one received */
        msg_t *m = net.head;
        net.head = m->next;
        free(m);
    }
    free(w);
    snprintf(what, sizeof(what), "first exchange of %d of %d positions of %zu bytes, %d ranks%s", positions, RING,
             l->stride, n,
             stall ? ", one never calls: the others end in HIAR_TIMEOUT after HIAR_TIMEOUT_MS, receives left posted"
                   : ": every position's bytes from every peer at its place, nothing past them, the sizes' ladder");
    expect(ok, what);
}

/* [*lo, *hi) of part p of nparts of [lo, hi), on units from lo, as a reduce-scatter over that range cuts it. */
static void part_of(size_t unit, int nparts, int p, size_t *lo, size_t *hi)
{
    size_t n = *hi > *lo ? *hi - *lo : 0, plo, phi;

    hiar_range_scaled((n + unit - 1) / unit, unit, nparts, p, &plo, &phi);
    phi = phi < n ? phi : n;
    plo = plo < phi ? plo : phi;
    *hi = *lo + phi;
    *lo += plo;
}

/*
 * base/pieces.h against the loop it replaces: chunk after chunk, the
 * shard's range (and with parts, part p of it) cut from its start in steps
 * of `piece`.
 */
static void test_pieces(void)
{
    static const size_t bytes[] = {1, 64, 1000, 4096, 65537, 1 << 20, (5 << 20) + 12345};
    static const size_t chunks[] = {64, 4096, 100000, 1 << 20};
    static const int nshards[] = {1, 2, 3, 7};
    enum { NPARTS = 6 };
    static const int parts[NPARTS][2] = {{1, 0}, {2, 0}, {2, 1}, {3, 0}, {3, 1}, {3, 2}}; /* of how many, which */
    int bad = 0, cases = 0;

    for (size_t b = 0; b < sizeof(bytes) / sizeof(bytes[0]); b++)
        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++)
            for (size_t k = 0; k < sizeof(nshards) / sizeof(nshards[0]); k++)
                for (int sp = 0; sp < nshards[k] * NPARTS; sp++) {
                    int s = sp / NPARTS, np = parts[sp % NPARTS][0], p = parts[sp % NPARTS][1];
                    size_t unit = 64, piece = 4000, chunk = chunks[c] * (size_t)nshards[k];
                    hiar_pieces_t g = hiar_pieces_make(bytes[b], chunk, unit, nshards[k], s, piece);
                    size_t largest = 0;
                    int i = 0;
                    if (np > 1)
                        g = hiar_pieces_part(g, unit, np, p);
                    for (size_t c0 = 0; c0 < bytes[b]; c0 += chunk) {
                        size_t cbytes = bytes[b] - c0 < chunk ? bytes[b] - c0 : chunk, lo, hi;
                        hiar_range_scaled((cbytes + unit - 1) / unit, unit, nshards[k], s, &lo, &hi);
                        hi = hi < cbytes ? hi : cbytes;
                        part_of(unit, np, p, &lo, &hi);
                        for (size_t off = lo; off < hi; off += piece, i++) {
                            size_t want = hi - off < piece ? hi - off : piece, got_off = 0, got = 0;
                            if (i < hiar_pieces_count(&g))
                                hiar_pieces_at(&g, i, &got_off, &got);
                            bad += got_off != c0 + off || got != want;
                            largest = want > largest ? want : largest;
                        }
                    }
                    bad += i != hiar_pieces_count(&g) || (i && largest != hiar_pieces_largest(&g));
                    cases++;
                }
    printf("pieces: %d layouts checked, %d wrong\n", cases, bad);
    expect(bad == 0, "pieces: every layout's pieces are the chunks' shard ranges (or parts of them, cut once) cut in "
                     "order, and the largest");
}

/* The rounds' job (pieces()): its pieces as its comment lists them, one after another from 0 to BYTES. */
static void test_cut_pieces(void)
{
    static const size_t want[] = {448, 552, 448, 552, 500, 1000, 1000, 500, 448, 552, 320, 380};
    const hiar_pieces_t g = pieces();
    int n = hiar_pieces_count(&g), ok = n == (int)(sizeof(want) / sizeof(want[0]));
    size_t end = 0;

    for (int i = 0; ok && i < n; i++) {
        size_t off, bytes;
        hiar_pieces_at(&g, i, &off, &bytes);
        ok = off == end && bytes == want[i];
        end = off + bytes;
    }
    expect(ok && end == BYTES, "cut pieces: the rounds' job has its first and last 2 pieces cut in 2, on 64 bytes");
}

/*
 * hiar_pieces_fitted: a link of more peers than its ring was laid out for
 * (core/hosts.c: ranks alone, the link over all of them beside rounds of 2
 * or 3) gets pieces that keep a ring's worth within the ring's memory, a
 * multiple of the alignment, at least 8 KB up to 32 ranks (hosts.c's most);
 * as many peers or fewer keep the full piece.
 */
static void test_pieces_fitted(void)
{
    const size_t piece = 256 << 10, align = 128;
    int bad = 0;

    for (int ring_peers = 1; ring_peers <= 2; ring_peers++)
        for (int peers = 1; peers <= 64; peers++) {
            size_t p = hiar_pieces_fitted(piece, align, ring_peers, peers);
            bad += (size_t)peers * p > (size_t)ring_peers * piece || p % align || p > piece;
            bad += peers <= ring_peers && p != piece;
            bad += peers <= 31 && p < (8 << 10);
            bad += peers > ring_peers && (size_t)peers * (p + align) <= (size_t)ring_peers * piece; /* the most */
        }
    expect(hiar_pieces_fitted(piece, align, 1, 4096) == 0, "pieces fitted: 0 where not even the alignment fits");
    expect(bad == 0, "pieces fitted: within the ring, aligned, the most that fits, the full piece where it fits");
}

/* A rank whose kernels never come: the others' engines time out, tell their kernels, and keep the error. */
static void test_stall(void)
{
    scenario_t sc = {3, 1, 1, 0, 2, 200, 0, 0};
    int left, ok = 1;
    uint64_t t0 = hiar_now_ns();
    rank_t *ranks = run(&sc, &left);
    double s = (double)(hiar_now_ns() - t0) / 1e9;

    for (int k = 0; k < 2; k++) {
        hiar_result_t rc = hiar_progress_status(ranks[k].engine);
        ok &= rc == HIAR_TIMEOUT && strstr(hiar_last_error(), "HIAR_TIMEOUT_MS=200") && __atomic_load_n(&ranks[k].kernel_abort, __ATOMIC_ACQUIRE) &&
              ranks[k].timed_out;
    }
    ok &= hiar_progress_status(ranks[2].engine) == HIAR_SUCCESS && s < 3.0;
    finish(ranks, 3, &left);
    expect(ok && left > 0, "a stalled rank: the others end in HIAR_TIMEOUT after HIAR_TIMEOUT_MS, receives left "
                           "posted");
}

/* An abort stops the thread; the next submit says why. */
static void test_abort(void)
{
    static net_t net = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};
    rank_t *r = calloc(1, sizeof(*r));
    hiar_progress_config_t cfg = {{&r->port, fake_rank, fake_size, fake_isend, fake_irecv, fake_test, 1 << 20},
                                  2, 5000, &r->abort, NULL, NULL, &r->kernel_abort, 0};
    hiar_wait_t w = hiar_wait_begin(1000, &r->abort, "test");
    hiar_progress_job_t job;
    hiar_result_t rc = HIAR_SUCCESS;
    int ok;

    r->port = (fake_t){.net = &net, .me = 0, .n = 2};
    r->n = 2;
    r->nslots = 2;
    ok = hiar_progress_start(&cfg, &r->engine) == HIAR_SUCCESS;
    job = job_of(r, 0);
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_SUCCESS;
    atomic_store(&r->abort, 1);
    for (int i = 0; i < 100000 && (rc = hiar_progress_status(r->engine)) == HIAR_SUCCESS; i++)
        sched_yield();
    ok &= rc == HIAR_COMM_FAILED && __atomic_load_n(&r->kernel_abort, __ATOMIC_ACQUIRE);
    job = job_of(r, 1);
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_COMM_FAILED && strstr(hiar_last_error(), "aborted");
    hiar_progress_stop(r->engine);
    free(r);
    expect(ok, "abort: the thread stops, kernels are told, the next submit fails with HIAR_COMM_FAILED");
}

/* Jobs the engine cannot serve are refused with a message. */
static void test_bad_jobs(void)
{
    static net_t net = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};
    rank_t *r = calloc(1, sizeof(*r));
    hiar_progress_config_t cfg = {{&r->port, fake_rank, fake_size, fake_isend, fake_irecv, fake_test, 300},
                                  8, 5000, &r->abort, NULL, NULL, NULL, 8};
    hiar_wait_t w = hiar_wait_begin(1000, &r->abort, "test");
    hiar_progress_job_t job;
    int ok;

    r->port = (fake_t){.net = &net, .me = 0, .n = 2};
    ok = hiar_progress_start(&cfg, &r->engine) == HIAR_SUCCESS;
    job = job_of(r, 0);
    job.pieces.nfull = job.pieces.per_last = 0;
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_INTERNAL_ERROR && strstr(hiar_last_error(), "0 pieces");
    job = job_of(r, 0);
    job.ring = HIAR_PROGRESS_MAX_RING + 1;
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_INTERNAL_ERROR && strstr(hiar_last_error(), "17 positions");
    job = job_of(r, 0);
    job.stride = PIECE_BYTES - 1;
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_INTERNAL_ERROR && strstr(hiar_last_error(), "999 apart");
    job = job_of(r, 0);
    job.slot = 8;
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_INTERNAL_ERROR && strstr(hiar_last_error(), "slot 8 of 8");
    job = job_of(r, 0);
    job.tag = 17; /* tags 272..274 fit the bound 300, but job tag 17 is the first exchanges' */
    ok &= hiar_progress_submit(r->engine, &job, &w) == HIAR_INTERNAL_ERROR && strstr(hiar_last_error(), "tag bound 300");
    ok &= hiar_progress_max_job_tag(&cfg.port) == 16;
    job = job_of(r, 0);
    for (int bad = 0; bad < 2; bad++) { /* more positions than the ring, a stride under 8 bytes */
        int left = -1;
        job.stride = bad ? 4 : job.stride;
        ok &= hiar_progress_warm(&cfg.port, &job, bad ? 1 : RING + 1, &w, &left) == HIAR_INTERNAL_ERROR &&
              strstr(hiar_last_error(), "first exchange") && left == 0;
    }
    ok &= hiar_progress_stop(r->engine) == 0;
    free(r);
    expect(ok, "bad jobs: no pieces, a slot past the engine's, too many positions, a stride under a piece, tags past "
               "the bound, first exchanges of too many positions or too few bytes: HIAR_INTERNAL_ERROR with a message");
}

#ifndef HIAR_TEST_NO_MPI
#include <math.h>

#include "net/port.h"
#include "net/tier.h"

/* hiar_progress_warm over the MPI port: every position's bytes from every peer at its place. */
static int mpi_warm(int me, int n)
{
    static unsigned char send[RING * RECV_STRIDE], recv[RING * (MAX_RANKS - 1) * RECV_STRIDE];
    MPI_Comm world = MPI_COMM_WORLD;
    hiar_port_t port;
    hiar_progress_job_t job = {.link = 0, .ring = RING, .stride = RECV_STRIDE, .send = (char *)send,
                               .recv = (char *)recv};
    atomic_int abort = 0;
    hiar_wait_t wait = hiar_wait_begin(20000, &abort, "first exchange");
    int ok, left;

    for (size_t j = 0; j < sizeof(send); j++)
        send[j] = value(me, 0, j);
    memset(recv, GAP, sizeof(recv));
    ok = hiar_port_mpi(&world, 1, &port) == HIAR_SUCCESS &&
         hiar_progress_warm(&port, &job, RING, &wait, &left) == HIAR_SUCCESS &&
         warm_arrived(recv, me, n, RING, RECV_STRIDE);
    hiar_port_mpi_free(&port);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (me == 0)
        printf("%s: MPI port, %d ranks: first exchange of a ring, every position's bytes from every peer\n",
               ok ? "PASS" : "FAIL", n);
    return ok;
}

/*
 * Every rank alone on n hosts (core/hosts.c): one engine whose links are the
 * rounds' communicators (net/tier.h hiar_tier_rounds, MPI_Comm_split by
 * color and key), a call's jobs submitted together, one per round, sharing
 * one ring's memory (as eager jobs do), and this thread playing each
 * round's kernel in turn: a piece out once the piece a ring before is in,
 * which it reduces in the link's rank order into the data that the next
 * round sends.  After every call each rank must hold the sum of every
 * rank's values, with the same bits as rank 0's.
 */
#define ROUND_FLOATS (BYTES / 4)

/* Element e of a rank's input in a call: eighths, so that sums of up to 8 ranks are exact and bits differ
 * only by the order of the sum. */
static float round_value(int rank, int call, int e)
{
    return (float)((rank + 1) * (e % 13 + call) % 97) / 8.0f + 1.0f / (float)(1 + rank + e % 5);
}

static int rounds_kernel(const hiar_progress_job_t *job, const int *kernel_abort, float *data, int me, int size)
{
    const int npieces = hiar_pieces_count(&job->pieces);

    for (int i = 0; i - job->ring < npieces; i++) {
        size_t off, bytes;
        if (i >= job->ring) {
            const int q = (i - job->ring) % job->ring;
            if (!await_arrival(kernel_abort, &job->flags[q]))
                return 0;
            hiar_pieces_at(&job->pieces, i - job->ring, &off, &bytes);
            for (size_t e = 0; e < bytes / 4; e++) {
                float acc = 0;
                for (int k = 0; k < size; k++) {
                    float v;
                    if (k == me)
                        v = data[off / 4 + e];
                    else
                        memcpy(&v, job->recv + ((size_t)q * (size_t)(size - 1) + (size_t)(k < me ? k : k - 1)) *
                                                   job->stride + e * 4, 4);
                    acc = k ? acc + v : v;
                }
                data[off / 4 + e] = acc;
            }
        }
        if (i < npieces) {
            hiar_pieces_at(&job->pieces, i, &off, &bytes);
            memcpy((char *)job->send + (size_t)(i % job->ring) * job->stride, (char *)data + off, bytes);
            __atomic_store_n(&job->flags[i % job->ring].ready, 1, __ATOMIC_RELEASE);
        }
    }
    return 1;
}

static int mpi_rounds(int me, int n, int persistent)
{
    enum { CALLS = 20, SLOTS = 8 };
    hiar_tier_round_t rd[HIAR_TIER_ROUNDS_MAX];
    int k = hiar_tier_rounds(n, me, 3, rd), ok = k > 0, sizes[HIAR_TIER_ROUNDS_MAX];
    MPI_Comm links[HIAR_TIER_ROUNDS_MAX];
    static unsigned char send[RING * RECV_STRIDE], recv[RING * 2 * RECV_STRIDE]; /* links of at most 3 */
    static hiar_piece_flags_t flags[SLOTS][RING];
    static float data[ROUND_FLOATS], first[ROUND_FLOATS];
    atomic_int abort = 0;
    int kernel_abort = 0;
    hiar_progress_config_t cfg = {.nslots = SLOTS, .timeout_ms = 20000, .abort = &abort,
                                  .kernel_abort = &kernel_abort, .nready = SLOTS / 2};
    hiar_progress_t *engine = NULL;
    hiar_wait_t wait = hiar_wait_begin(20000, &abort, "rounds");
    double worst = 0;

    for (int r = 0; r < k; r++) {
        int link_me;
        MPI_Comm_split(MPI_COMM_WORLD, rd[r].color, rd[r].key, &links[r]);
        MPI_Comm_size(links[r], &sizes[r]);
        MPI_Comm_rank(links[r], &link_me);
        ok &= sizes[r] == rd[r].size && link_me == rd[r].key;
    }
    /* The port in core/hosts.c's two steps: its memory, agreed with the links' sizes, then the dups. */
    ok = ok && hiar_port_mpi_alloc(k, &cfg.port) == HIAR_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* links of their sizes on every rank */
    ok = ok && hiar_port_mpi_dup(&cfg.port, links) == HIAR_SUCCESS;
    ok = ok && hiar_progress_start(&cfg, &engine) == HIAR_SUCCESS;
    for (int call = 0; ok && call < CALLS; call++) {
        hiar_progress_job_t jobs[HIAR_TIER_ROUNDS_MAX];
        for (int e = 0; e < ROUND_FLOATS; e++)
            data[e] = round_value(me, call, e);
        /* Eager: a call's jobs, a slot and a tag each; persistent (a graph's, replayed): the first call's, for all. */
        for (int r = 0; r < k; r++) {
            int slot = persistent ? r : (call * k + r) % SLOTS;
            jobs[r] = (hiar_progress_job_t){slot, persistent ? 0 : call, persistent, r, RING, pieces(), RECV_STRIDE,
                                            (char *)send, (char *)recv, flags[slot]};
        }
        for (int r = 0; ok && r < k && (!persistent || call == 0); r++)
            ok = hiar_progress_submit(engine, &jobs[r], &wait) == HIAR_SUCCESS;
        for (int r = 0; ok && r < k; r++)
            ok = rounds_kernel(&jobs[r], &kernel_abort, data, rd[r].key, sizes[r]);
        /* Every rank's values summed in double against the result; rank 0's bits against every rank's. */
        for (int e = 0; ok && e < ROUND_FLOATS; e++) {
            double want = 0;
            for (int o = 0; o < n; o++)
                want += (double)round_value(o, call, e);
            worst = fabs(want - data[e]) / fabs(want) > worst ? fabs(want - data[e]) / fabs(want) : worst;
        }
        memcpy(first, data, sizeof(data));
        MPI_Bcast(first, ROUND_FLOATS, MPI_FLOAT, 0, MPI_COMM_WORLD);
        ok = ok && memcmp(first, data, sizeof(data)) == 0 && worst < 1e-5;
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    if (engine) {
        ok &= hiar_progress_status(engine) == HIAR_SUCCESS;
        ok &= hiar_progress_stop(engine) == 0;
    }
    if (!ok)
        fprintf(stderr, "rank %d: rounds: largest relative error %g, %s\n", me, worst, hiar_last_error());
    hiar_port_mpi_free(&cfg.port);
    for (int r = 0; r < k; r++)
        MPI_Comm_free(&links[r]);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (me == 0)
        printf("%s: MPI port, %d ranks alone: %d rounds over their prime factors, %d calls of %d floats%s, each "
               "the sum of every rank's, rank 0's bits everywhere\n",
               ok ? "PASS" : "FAIL", n, k, CALLS, ROUND_FLOATS, persistent ? " (persistent jobs, replayed)" : "");
    return ok;
}

/* This process is one rank; the others are the other processes of MPI_COMM_WORLD. */
static int mpi_main(int argc, char **argv)
{
    static const int cases[][4] = {{1, 0, 0, 0}, {3, 0, 0, 0}, {2, 1, 0, 0}, {3, 0, 1, 0}, {4, 0, 1, 1}};
    /* slots, persistent, ahead, shared */
    int level, me, n, bad = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (level != MPI_THREAD_MULTIPLE || n < 2 || n > 8) {
        if (me == 0)
            printf("SKIP: needs MPI_THREAD_MULTIPLE and 2 to 8 ranks (thread level %d, %d ranks)\n", level, n);
        MPI_Finalize();
        return 77;
    }
    if (hiar_tier_rounds(n, 0, 3, (hiar_tier_round_t[HIAR_TIER_ROUNDS_MAX]){{0}}) > 0) {
        bad += !mpi_rounds(me, n, 0);
        bad += !mpi_rounds(me, n, 1);
    }
    if (n > MAX_RANKS) { /* the rest keeps a receive area for MAX_RANKS */
        MPI_Finalize();
        return bad != 0;
    }
    bad += !mpi_warm(me, n);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        rank_t *r = calloc(1, sizeof(*r));
        MPI_Comm world = MPI_COMM_WORLD;
        hiar_progress_config_t cfg = {.nslots = cases[c][0], .timeout_ms = 20000, .abort = &r->abort,
                                      .kernel_abort = &r->kernel_abort};
        int ok;
        *r = (rank_t){.me = me, .n = n, .rounds = 40, .nslots = cases[c][0], .persistent = cases[c][1],
                      .ahead = cases[c][2], .shared = cases[c][3]};
        memset(r->recv, GAP, sizeof(r->recv));
        ok = hiar_port_mpi(&world, 1, &cfg.port) == HIAR_SUCCESS && hiar_progress_start(&cfg, &r->engine) == HIAR_SUCCESS;
        if (ok) {
            device_main(r);
            ok = !r->wrong && !r->timed_out && r->submit_rc == HIAR_SUCCESS &&
                 hiar_progress_status(r->engine) == HIAR_SUCCESS;
            ok &= hiar_progress_stop(r->engine) == 0;
        }
        if (!ok)
            fprintf(stderr, "rank %d: %d wrong bytes, %s\n", me, r->wrong, hiar_last_error());
        hiar_port_mpi_free(&cfg.port);
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (me == 0)
            printf("%s: MPI port, %d ranks, %d slots, %s jobs%s%s: 40 rounds, every byte as sent\n",
                   ok ? "PASS" : "FAIL", n, cases[c][0], cases[c][1] ? "persistent" : "eager",
                   cases[c][2] ? ", calls queued ahead" : "", cases[c][3] ? ", one ring for all" : "");
        bad += !ok;
        free(r);
    }
    MPI_Finalize();
    return bad != 0;
}
#endif

int main(int argc, char **argv)
{
#ifndef HIAR_TEST_NO_MPI
    if (argc > 1 && strcmp(argv[1], "--mpi") == 0)
        return mpi_main(argc, argv);
#else
    (void)argc;
    (void)argv;
#endif
    test_pieces();
    test_cut_pieces();
    test_pieces_fitted();
    test_rounds(2, 1, 0);
    test_rounds(2, 3, 0);
    test_rounds(3, 2, 0);
    test_rounds(4, 4, 0);
    test_rounds(3, 2, PERSISTENT);
    test_rounds(2, 1, PERSISTENT);
    test_rounds(2, 4, AHEAD);
    test_rounds(4, 3, AHEAD);
    test_rounds(3, 4, AHEAD | SHARED); /* the eager jobs' one ring: each job's memory is the next one's */
    test_retire(2);
    test_retire(4);
    test_retire_in_flight();
    test_spin(10000000000ull, 0);
    test_spin(0, 0);
    test_spin(100000000ull, 1);
    test_warm(2, RING, 0, &ladders[0]);
    test_warm(4, RING - 1, 0, &ladders[0]);
    for (size_t l = 1; l < sizeof(ladders) / sizeof(ladders[0]); l++)
        test_warm(2, 1, 0, &ladders[l]);
    test_warm(3, RING, 1, &ladders[0]);
    test_stall();
    test_abort();
    test_bad_jobs();
    printf("%s\n", failures ? "FAIL" : "PASS: all");
    return failures != 0;
}
