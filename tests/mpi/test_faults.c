/*
 * Faults that really happen to a job, through the public API.  One mode per
 * run; the .test scripts in tests/mpi/ run them under mpirun:
 *
 *   test_faults --stall=stop [--at=K]   the last rank stops itself with SIGSTOP
 *                                       before its K-th call (default 5)
 *   test_faults --stall=sleep [--at=K]  the same rank sleeps instead
 *   test_faults --kill [--at=K]         the last rank SIGKILLs itself before its K-th call
 *   test_faults --basic                 create, one correct sum, destroy (for the
 *                                       environment-warning and log tests)
 *   test_faults --no-shm-space          hiar_comm_create must fail on every rank with
 *                                       HIAR_SYSTEM_ERROR, at once (faults-shm-full.test
 *                                       sets HIAR_BUFFER_SIZE beyond the size of /dev/shm)
 *   test_faults --comms=N               N communicators at once (at most 16), a correct
 *                                       sum on each (shm-small.test: in 64 MB of /dev/shm)
 *
 * A stall, step by step (HIAR_TIMEOUT_MS=500, T below):
 *
 *   stalled rank               the others
 *   calls 0..K-1 succeed       calls 0..K-1 succeed
 *   SIGSTOP (or sleep)         call K: HIAR_TIMEOUT after T (at most T + 1 s)
 *                              call K+1: HIAR_COMM_FAILED at once
 *                              hiar_comm_get_async_error: HIAR_COMM_FAILED
 *                              hiar_comm_abort: HIAR_SUCCESS
 *   <- SIGCONT from rank 0     (pids were exchanged over MPI beforehand)
 *   call K ends within T + 1 s, whatever it returns (its peers are gone)
 *   hiar_comm_abort: HIAR_SUCCESS
 *   every rank: a new communicator works; nothing of the job is left in /dev/shm
 *
 * HIAR_GROUPS (from the .test) decides where the others wait: with one group
 * all of them spin on the stalled rank's flag in shared memory; with groups
 * 0,1|2,3 and rank 3 stalled, rank 2 waits in shared memory while ranks 0
 * and 1 wait in the MPI step between groups (rank 2 never brings its shard).
 *
 * A killed rank cannot be resumed: --kill prints the ranks' pids ("pids: ...")
 * and leaves it to tests/mpi/faults-kill.test to check that the job ends in
 * bounded time, that no rank survives, and that /dev/shm is clean.
 *
 * Rank 0 ends with "np=4: 8 passed, 0 failed"; exit 0 only when all passed.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "hiar.h"

/* HIAR_TIMEOUT_MS of the stall tests, and how much later than it the error may come. */
#define TIMEOUT_MS 500
#define TIMEOUT_SLACK_S 1.0
/* A fast failure (HIAR_COMM_FAILED after a timeout) takes less than this. */
#define FAST_S 0.1
/* Elements of the small (one-shot up to 8 ranks: 1 KB) and large (two-shot, chunked: over the 1 MB slot) calls. */
#define SMALL_COUNT 256
#define LARGE_COUNT 300000
/* Calls of the kill loop: far more than the victim lives through. */
#define KILL_ITERS 100000
/* Most communicators of --comms. */
#define COMMS_MAX 16

/* Fills buf with this rank's input for call `it`: element i is rank + 1 + (i + it) % 4. */
static void fill(float *buf, size_t n, int it)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (float)(world_rank + 1 + (int)((i + (size_t)it) % 4));
}

/* Whether buf holds the sum of every rank's fill(); small integers, so exact. */
static int sum_correct(const float *buf, size_t n, int it)
{
    for (size_t i = 0; i < n; i++) {
        float want = (float)(world_size * (world_size + 1) / 2 + world_size * (int)((i + (size_t)it) % 4));
        if (buf[i] != want) {
            printf("[rank %d] call %d: element %zu is %g, expected %g\n", world_rank, it, i, buf[i], want);
            return 0;
        }
    }
    return 1;
}

/* One correct sum of n elements on comm. */
static int sum_works(hiar_comm_t *comm, size_t n)
{
    float *buf = malloc(n * sizeof(float));
    int ok;

    if (!buf)
        return 0;
    fill(buf, n, 0);
    ok = harness_expect("a valid allreduce", hiar_allreduce(buf, buf, n, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
                        HIAR_SUCCESS, NULL) &&
         sum_correct(buf, n, 0);
    free(buf);
    return ok;
}

/* Every rank's pid, in world rank order (malloc'ed). */
static pid_t *gather_pids(void)
{
    long mine = (long)getpid(), *all = malloc(sizeof(long) * (size_t)world_size);
    pid_t *pids = malloc(sizeof(pid_t) * (size_t)world_size);

    MPI_Allgather(&mine, 1, MPI_LONG, all, 1, MPI_LONG, MPI_COMM_WORLD);
    for (int r = 0; r < world_size; r++)
        pids[r] = (pid_t)all[r];
    free(all);
    return pids;
}

/* No /dev/shm/hiar-<uid>-<pid>-* of any rank of this job (segments are unlinked once mapped). */
static int nothing_left(const pid_t *pids)
{
    DIR *dir = opendir("/dev/shm");
    struct dirent *e;
    int ok = 1;

    while (dir && (e = readdir(dir)))
        for (int r = 0; r < world_size; r++) {
            char prefix[64];
            snprintf(prefix, sizeof(prefix), "hiar-%u-%ld-", (unsigned)getuid(), (long)pids[r]);
            if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
                printf("[rank %d] /dev/shm/%s was left behind\n", world_rank, e->d_name);
                ok = 0;
            }
        }
    if (dir)
        closedir(dir);
    return ok;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* What each rank saw of the stall, for the verdicts. */
typedef struct {
    int before_ok;   /* the calls before the stall succeeded with correct sums */
    int timeout_ok;  /* others: HIAR_TIMEOUT within the time allowed */
    int failed_ok;   /* others: HIAR_COMM_FAILED afterwards, fast, also as async error */
    int resumed_ok;  /* stalled rank: its call ended within the time allowed */
    int abort_ok;    /* hiar_comm_abort succeeded */
} stall_seen_t;

/* The others' side: the timeout, the failed comm, the abort. */
static void others_after_stall(hiar_comm_t *comm, float *buf, hiar_result_t rc, double elapsed,
                               stall_seen_t *seen)
{
    hiar_result_t async = HIAR_SUCCESS;
    double t0;

    seen->timeout_ok =
        harness_expect("the call the stalled rank never joined", rc, HIAR_TIMEOUT, "HIAR_TIMEOUT_MS");
    printf("[rank %d] %s after %.3f s: %s\n", world_rank, hiar_strerror(rc), elapsed, hiar_last_error());
    if (elapsed < 0.9 * TIMEOUT_MS / 1000.0 || elapsed > TIMEOUT_MS / 1000.0 + TIMEOUT_SLACK_S) {
        printf("[rank %d] HIAR_TIMEOUT came after %.3f s; expected %.2f to %.2f s\n", world_rank, elapsed,
               TIMEOUT_MS / 1000.0, TIMEOUT_MS / 1000.0 + TIMEOUT_SLACK_S);
        seen->timeout_ok = 0;
    }
    t0 = MPI_Wtime();
    seen->failed_ok = harness_expect(
        "the next call", hiar_allreduce(buf, buf, SMALL_COUNT, HIAR_FLOAT32, HIAR_SUM, comm, NULL),
        HIAR_COMM_FAILED, "abort");
    if (MPI_Wtime() - t0 > FAST_S) {
        printf("[rank %d] HIAR_COMM_FAILED took %.3f s; it should fail at once\n", world_rank, MPI_Wtime() - t0);
        seen->failed_ok = 0;
    }
    seen->failed_ok &= harness_expect("hiar_comm_get_async_error", hiar_comm_get_async_error(comm, &async),
                                      HIAR_SUCCESS, NULL);
    if (async != HIAR_COMM_FAILED) {
        printf("[rank %d] hiar_comm_get_async_error gives %s, expected HIAR_COMM_FAILED\n", world_rank,
               hiar_strerror(async));
        seen->failed_ok = 0;
    }
    seen->abort_ok = harness_expect("hiar_comm_abort", hiar_comm_abort(comm), HIAR_SUCCESS, NULL);
}

/*
 * One rank really stops (SIGSTOP, or a sleep) before call `at`; see the top
 * of the file for what every rank must see.
 */
static void run_stall(int use_stop, int at)
{
    const int victim = world_size - 1;
    char settings[64];
    pid_t *pids = gather_pids();
    float *buf = malloc(sizeof(float) * LARGE_COUNT);
    stall_seen_t seen = {1, 1, 1, 1, 1};
    MPI_Comm others;
    hiar_comm_t *comm;
    hiar_result_t rc = HIAR_SUCCESS;
    double elapsed = 0;

    MPI_Comm_split(MPI_COMM_WORLD, world_rank == victim ? MPI_UNDEFINED : 0, world_rank, &others);
    snprintf(settings, sizeof(settings), "HIAR_TIMEOUT_MS=%d", TIMEOUT_MS);
    comm = harness_create(settings);
    harness_verdict("hiar_comm_create", comm != NULL);
    if (!comm)
        return;
    if (world_rank == 0)
        printf("stall: rank %d (pid %ld) %s before call %d; HIAR_TIMEOUT_MS=%d\n", victim,
               (long)pids[victim], use_stop ? "stops itself (SIGSTOP)" : "sleeps", at, TIMEOUT_MS);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it <= at; it++) {
        size_t n = it % 2 ? LARGE_COUNT : SMALL_COUNT;
        double t0;
        fill(buf, n, it);
        if (world_rank == victim && it == at) {
            if (use_stop)
                raise(SIGSTOP); /* until rank 0 sends SIGCONT */
            else
                sleep_s(2 * TIMEOUT_MS / 1000.0 + TIMEOUT_SLACK_S);
        }
        t0 = MPI_Wtime();
        rc = hiar_allreduce(buf, buf, n, HIAR_FLOAT32, HIAR_SUM, comm, NULL);
        elapsed = MPI_Wtime() - t0;
        if (it < at)
            seen.before_ok &=
                harness_expect("a call before the stall", rc, HIAR_SUCCESS, NULL) && sum_correct(buf, n, it);
    }
    if (world_rank != victim) {
        others_after_stall(comm, buf, rc, elapsed, &seen);
        MPI_Barrier(others); /* every other rank has aborted: let the stalled one go */
        if (world_rank == 0 && use_stop && kill(pids[victim], SIGCONT) != 0) {
            perror("kill(SIGCONT)");
            seen.abort_ok = 0;
        }
        MPI_Comm_free(&others);
    } else {
        /* Its peers are gone: the call may succeed (all had arrived) or fail, but in time. */
        if (elapsed > TIMEOUT_MS / 1000.0 + TIMEOUT_SLACK_S ||
            (rc != HIAR_SUCCESS && rc != HIAR_TIMEOUT && rc != HIAR_COMM_FAILED)) {
            printf("[rank %d] after the stall my call returned %s after %.3f s (%s); expected it to end "
                   "within %.2f s\n",
                   world_rank, hiar_strerror(rc), elapsed, hiar_last_error(),
                   TIMEOUT_MS / 1000.0 + TIMEOUT_SLACK_S);
            seen.resumed_ok = 0;
        }
        seen.abort_ok =
            harness_expect("hiar_comm_abort on the resumed rank", hiar_comm_abort(comm), HIAR_SUCCESS, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    harness_verdict("the calls before the stall succeed", seen.before_ok);
    harness_verdict("the others get HIAR_TIMEOUT within HIAR_TIMEOUT_MS + 1 s", seen.timeout_ok);
    harness_verdict("then HIAR_COMM_FAILED at once, also from hiar_comm_get_async_error", seen.failed_ok);
    harness_verdict("hiar_comm_abort succeeds on every rank, the stalled one too", seen.abort_ok);
    harness_verdict("the stalled rank's call ends within HIAR_TIMEOUT_MS + 1 s once it runs again",
                    seen.resumed_ok);

    comm = harness_create(settings);
    harness_verdict("a new communicator works after the stall",
                    comm && sum_works(comm, SMALL_COUNT) && hiar_comm_destroy(comm) == HIAR_SUCCESS);
    harness_verdict("nothing of this job is left in /dev/shm", nothing_left(pids));
    free(buf);
    free(pids);
}

/*
 * The last rank SIGKILLs itself before call `at`.  The survivors keep
 * calling: they must end, by mpirun's hand or by HIAR_TIMEOUT (then they
 * abort the comm and exit non-zero, as a real job would).  Never returns
 * normally on the survivors: the job has lost a rank.
 */
static int run_kill(int at)
{
    const int victim = world_size - 1;
    pid_t *pids = gather_pids();
    float buf[SMALL_COUNT];
    hiar_comm_t *comm = harness_create(NULL);

    if (world_rank == 0) {
        printf("pids:");
        for (int r = 0; r < world_size; r++)
            printf(" %ld", (long)pids[r]);
        printf("\nkill: rank %d SIGKILLs itself before call %d\n", victim, at);
    }
    fflush(stdout);
    if (!comm)
        return 1;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < KILL_ITERS; it++) {
        double t0 = MPI_Wtime();
        hiar_result_t rc;
        if (world_rank == victim && it == at)
            raise(SIGKILL);
        fill(buf, SMALL_COUNT, it);
        rc = hiar_allreduce(buf, buf, SMALL_COUNT, HIAR_FLOAT32, HIAR_SUM, comm, NULL);
        if (rc != HIAR_SUCCESS) {
            printf("[rank %d] call %d returned %s after %.3f s: %s; aborting\n", world_rank, it,
                   hiar_strerror(rc), MPI_Wtime() - t0, hiar_last_error());
            fflush(stdout);
            hiar_comm_abort(comm);
            _exit(3); /* MPI_Finalize would wait for the dead rank */
        }
    }
    printf("FAIL [rank %d] %d calls succeeded although rank %d was killed\n", world_rank, KILL_ITERS, victim);
    return 1;
}

/*
 * /dev/shm cannot hold the segment: creation fails on every rank together,
 * the group leader naming /dev/shm and what to do, and quickly (the space
 * is reserved at creation: nothing waits for a SIGBUS later).
 */
static void run_no_shm_space(void)
{
    pid_t *pids = gather_pids();
    hiar_comm_t *comm = (hiar_comm_t *)&world_rank;
    double t0 = MPI_Wtime(), elapsed;
    hiar_result_t rc = hiar_comm_create(MPI_COMM_WORLD, NULL, &comm);
    int ok;

    elapsed = MPI_Wtime() - t0;
    printf("[rank %d] hiar_comm_create: %s after %.3f s: %s\n", world_rank, hiar_strerror(rc), elapsed,
           hiar_last_error());
    /* The leader says why; the others that another rank failed (not that /dev/shm is not shared). */
    ok = harness_expect("hiar_comm_create without room in /dev/shm", rc, HIAR_SYSTEM_ERROR,
                        world_rank == 0 ? "/dev/shm" : "another rank");
    if (world_rank == 0)
        ok &= harness_expect("the leader's message", rc, HIAR_SYSTEM_ERROR, "HIAR_BUFFER_SIZE");
    if (comm != (hiar_comm_t *)&world_rank) {
        printf("[rank %d] the failed hiar_comm_create wrote *out\n", world_rank);
        ok = 0;
    }
    harness_verdict("no room in /dev/shm: hiar_comm_create fails on every rank, naming /dev/shm", ok);
    harness_verdict("... within 5 s", elapsed < 5.0);
    harness_verdict("nothing of this job is left in /dev/shm", nothing_left(pids));
    free(pids);
}

/*
 * n communicators at once, each giving a correct sum of LARGE_COUNT floats
 * (more than one chunk where slots are small).  shm-small.test runs it in a
 * /dev/shm of 64 MB, Docker's default, where the default host slots of 16
 * MB a comm filled it at the fourth: they shrink to fit instead.
 */
static void run_comms(int n)
{
    hiar_comm_t *comm[COMMS_MAX];
    int made = 0, sums = 1, destroyed = 1;

    /* A failed creation fails on every rank: all stop at the same one. */
    while (made < n && (comm[made] = harness_create(NULL)) != NULL)
        made++;
    for (int i = 0; i < made; i++)
        sums &= sum_works(comm[i], LARGE_COUNT);
    for (int i = made - 1; i >= 0; i--)
        destroyed &= hiar_comm_destroy(comm[i]) == HIAR_SUCCESS;
    harness_verdict("every communicator is created", made == n);
    harness_verdict("each gives a correct sum of LARGE_COUNT floats", sums);
    harness_verdict("each is destroyed", destroyed);
}

static void run_basic(void)
{
    hiar_comm_t *comm = harness_create(NULL);

    harness_verdict("hiar_comm_create, a correct sum, hiar_comm_destroy",
                    comm && sum_works(comm, SMALL_COUNT) && hiar_comm_destroy(comm) == HIAR_SUCCESS);
}

int main(int argc, char **argv)
{
    enum { NONE, STALL_STOP, STALL_SLEEP, KILL, BASIC, NO_SHM_SPACE, COMMS } mode = NONE;
    int at = 5, rc = 0, comms = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--stall=stop") == 0)
            mode = STALL_STOP;
        else if (strcmp(argv[i], "--stall=sleep") == 0)
            mode = STALL_SLEEP;
        else if (strcmp(argv[i], "--kill") == 0)
            mode = KILL;
        else if (strcmp(argv[i], "--basic") == 0)
            mode = BASIC;
        else if (strcmp(argv[i], "--no-shm-space") == 0)
            mode = NO_SHM_SPACE;
        else if (strncmp(argv[i], "--comms=", 8) == 0 && atoi(argv[i] + 8) > 0 && atoi(argv[i] + 8) <= COMMS_MAX)
            mode = COMMS, comms = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "--at=", 5) == 0 && atoi(argv[i] + 5) > 0)
            at = atoi(argv[i] + 5);
        else
            mode = NONE, i = argc;
    }
    if (mode == NONE) {
        fprintf(stderr, "usage: test_faults --stall=stop|--stall=sleep|--kill|--basic|--no-shm-space|--comms=N "
                        "[--at=K]\n");
        return 99;
    }
    /* --basic runs on one rank too; the other modes need peers, or a shared segment. */
    if (!harness_init(&argc, &argv, "test_faults", mode == BASIC ? 1 : 2))
        return HARNESS_SKIP;
    switch (mode) {
    case STALL_STOP:
    case STALL_SLEEP: run_stall(mode == STALL_STOP, at); break;
    case KILL: rc = run_kill(at); break;
    case NO_SHM_SPACE: run_no_shm_space(); break;
    case COMMS: run_comms(comms); break;
    default: run_basic(); break;
    }
    if (mode == KILL)
        return rc; /* not reached on a healthy run: the job ends without us */
    MPI_Finalize();
    return harness_summary();
}
