/*
 * hiar_allreduce on host buffers, checked against an independent reference
 * (reference.c), for every rank order x dtype x op x count x in-place x offset.
 * Run under mpirun (tests/mpi/mpirun.sh); HIAR_* variables choose the grouping
 * and path.  Rank 0 ends with one line "np=4: 4543 passed, 0 failed"; the exit
 * status is 0 only when every case passed on every rank.
 *
 *   test_allreduce [--no-big] [--orders=world,reversed,halves,oddeven] [--groups=N]
 *
 * --groups=N checks that hiar_comm_group reports N groups (all orders but
 * the halves), so a grouping that silently fell back to one group fails.
 *
 * Rank orders are UCC's team shapes: the ranks of a communicator permuted, or
 * split, are what break grouping code (a group must not assume consecutive
 * ranks).  With 4 ranks:
 *
 *   order     communicator(s), as world ranks in hiar-rank order
 *   world     0 1 2 3
 *   reversed  3 2 1 0
 *   halves    0 1 | 2 3         two communicators (np >= 4)
 *   oddeven   0 2 1 3
 *
 * HIAR_GROUPS names ranks of the communicator, so when it is set the halves
 * (which have fewer ranks) are left out.
 *
 * Each case checks: the return code, every element against the reference,
 * that the 64 bytes before and after recvbuf's range are untouched, that an
 * out-of-place sendbuf is unchanged, and (after all cases of an order) that
 * every rank got bit-identical bytes.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hiar.h"
#include "reference.h"

/* Bytes checked on each side of recvbuf's range. */
#define GUARD_BYTES 64
#define GUARD_BYTE 0xA5
/* Details printed per rank before falling silent. */
#define MAX_REPORTS 20
/* Larger than the default shared slot (HIAR_BUFFER_SIZE), so it is cut into chunks. */
#define BIG_BYTES ((size_t)4 << 20)
/* Longest ref_period(). */
#define PATTERN_MAX (31 * 122)
/* Time a wedged call may take before hiar fails it instead of hanging the test. */
#define TEST_TIMEOUT_SETTING "HIAR_TIMEOUT_MS=100000"

typedef enum { ORDER_WORLD, ORDER_REVERSED, ORDER_HALVES, ORDER_ODDEVEN, ORDER_COUNT } order_t;

static const char *const order_names[ORDER_COUNT] = {"world", "reversed", "halves", "oddeven"};

static const size_t counts[] = {0, 1, 7, 64, 1000, 4097, 65536 + 3};
enum { NCOUNTS = sizeof(counts) / sizeof(counts[0]) };

/* Only these run the big count (BIG_BYTES / element size + 5): it is slow at np=8 on 2 cores. */
static const struct {
    hiar_dtype_t dtype;
    hiar_op_t op;
} big_cases[] = {{HIAR_FLOAT32, HIAR_SUM}, {HIAR_BFLOAT16, HIAR_AVG}, {HIAR_INT64, HIAR_MAX}};
enum { NBIG = sizeof(big_cases) / sizeof(big_cases[0]) };

typedef struct {
    hiar_dtype_t dtype;
    hiar_op_t op;
    size_t count;
    int inplace;
    size_t offset; /* elements past a 64-byte boundary: 0 or 1 */
} test_case_t;

typedef struct {
    const char *order;
    hiar_comm_t *comm;
    MPI_Comm mpi;
    int rank, size;      /* in the hiar communicator */
    unsigned char *send; /* GUARD_BYTES + offset + data + GUARD_BYTES */
    unsigned char *recv;
    int reports;
    int comm_failed; /* a call returned HIAR_TIMEOUT or HIAR_COMM_FAILED */
    /* One period of this rank's input and of the expected result, encoded. */
    hiar_dtype_t pattern_dtype;
    hiar_op_t pattern_op;
    size_t period;
    unsigned char input[PATTERN_MAX * 8], want[PATTERN_MAX * 8];
} context_t;

static void report(context_t *ctx, const test_case_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(context_t *ctx, const test_case_t *c, const char *fmt, ...)
{
    char what[512];
    va_list ap;

    if (ctx->reports++ >= MAX_REPORTS)
        return;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    printf("FAIL [rank %d/%d, order %s] %s %s count=%zu %s offset=%zu: %s\n", ctx->rank, ctx->size,
           ctx->order, hiar_dtype_name(c->dtype), hiar_op_name(c->op), c->count,
           c->inplace ? "in-place" : "out-of-place", c->offset, what);
    fflush(stdout);
}

/* FNV-1a: enough to tell whether two ranks hold the same bytes. */
static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int guards_intact(const unsigned char *region, size_t data_start, size_t data_bytes)
{
    for (size_t i = 0; i < data_start; i++)
        if (region[i] != GUARD_BYTE)
            return 0;
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (region[data_start + data_bytes + i] != GUARD_BYTE)
            return 0;
    return 1;
}

/*
 * Inputs and results repeat every ref_period() elements, so the case encodes
 * one period of this rank's input and of the expected result, fills sendbuf
 * by copying and compares recvbuf period by period (element by element only
 * where the bytes differ: a NaN's payload, or float avg's 1-ulp allowance).
 */
static void make_patterns(context_t *ctx, hiar_dtype_t dtype, hiar_op_t op)
{
    if (ctx->pattern_dtype == dtype && ctx->pattern_op == op)
        return;
    ctx->pattern_dtype = dtype;
    ctx->pattern_op = op;
    ctx->period = ref_period(op);
    for (size_t i = 0; i < ctx->period; i++) {
        ref_store(dtype, ctx->input, i, ref_input(dtype, op, ctx->rank, i));
        ref_store(dtype, ctx->want, i, ref_expected(dtype, op, ctx->size, i));
    }
}

static void fill_repeating(unsigned char *dst, size_t bytes, const unsigned char *pattern,
                           size_t pattern_bytes)
{
    for (size_t off = 0; off < bytes; off += pattern_bytes)
        memcpy(dst + off, pattern, bytes - off < pattern_bytes ? bytes - off : pattern_bytes);
}

/* First element of got[0, count) that does not match `pattern` repeated; count if none. */
static size_t first_mismatch(const context_t *ctx, const test_case_t *c, const unsigned char *got,
                             const unsigned char *pattern, hiar_op_t op)
{
    size_t esize = hiar_dtype_size(c->dtype);

    for (size_t first = 0; first < c->count; first += ctx->period) {
        size_t n = c->count - first < ctx->period ? c->count - first : ctx->period;
        if (memcmp(got + first * esize, pattern, n * esize) == 0)
            continue;
        for (size_t k = 0; k < n; k++)
            if (!ref_matches(c->dtype, op, ref_load(c->dtype, got, first + k),
                             ref_load(c->dtype, pattern, k)))
                return first + k;
    }
    return c->count;
}

/* Runs one case; returns 1 if it failed on this rank.  *hash gets the result's hash. */
static int run_case(context_t *ctx, const test_case_t *c, uint64_t *hash)
{
    size_t esize = hiar_dtype_size(c->dtype);
    size_t start = GUARD_BYTES + c->offset * esize, bytes = c->count * esize, bad;
    unsigned char *recv = ctx->recv + start;
    unsigned char *send = c->inplace ? recv : ctx->send + start;
    hiar_result_t rc;
    int failed = 0;

    make_patterns(ctx, c->dtype, c->op);
    memset(ctx->recv, GUARD_BYTE, start + bytes + GUARD_BYTES);
    if (!c->inplace)
        memset(ctx->send, GUARD_BYTE, start + bytes + GUARD_BYTES);
    fill_repeating(send, bytes, ctx->input, ctx->period * esize);

    rc = hiar_allreduce(send, recv, c->count, c->dtype, c->op, ctx->comm, NULL);
    *hash = hash_bytes(recv, bytes);
    if (rc != HIAR_SUCCESS) {
        report(ctx, c, "returned %s: %s", hiar_strerror(rc), hiar_last_error());
        ctx->comm_failed |= rc == HIAR_TIMEOUT || rc == HIAR_COMM_FAILED;
        return 1;
    }
    if (!guards_intact(ctx->recv, start, bytes)) {
        report(ctx, c, "wrote outside recvbuf's %zu bytes", bytes);
        failed = 1;
    }
    if (!c->inplace && (bad = first_mismatch(ctx, c, send, ctx->input, HIAR_SUM)) < c->count) {
        report(ctx, c, "changed sendbuf[%zu] from %g to %g", bad,
               ref_load(c->dtype, ctx->input, bad % ctx->period), ref_load(c->dtype, send, bad));
        failed = 1;
    }
    if ((bad = first_mismatch(ctx, c, recv, ctx->want, c->op)) < c->count) {
        report(ctx, c, "element %zu is %.9g, expected %.9g", bad, ref_load(c->dtype, recv, bad),
               ref_load(c->dtype, ctx->want, bad % ctx->period));
        failed = 1;
    }
    return failed;
}

/* The cases of one order, in the same sequence on every rank. */
static int list_cases(test_case_t *out, int with_big)
{
    int n = 0;

    for (int d = 0; d < HIAR_DTYPE_COUNT; d++)
        for (int o = 0; o < HIAR_OP_COUNT; o++) {
            size_t list[NCOUNTS + 1];
            int ncounts = NCOUNTS;
            memcpy(list, counts, sizeof(counts));
            for (int b = 0; with_big && b < NBIG; b++)
                if (big_cases[b].dtype == (hiar_dtype_t)d && big_cases[b].op == (hiar_op_t)o)
                    list[ncounts++] = BIG_BYTES / hiar_dtype_size((hiar_dtype_t)d) + 5;
            for (int k = 0; k < ncounts; k++)
                for (int inplace = 0; inplace < 2; inplace++)
                    for (size_t offset = 0; offset < 2; offset++) {
                        if (out)
                            out[n] = (test_case_t){(hiar_dtype_t)d, (hiar_op_t)o, list[k], inplace,
                                                   offset};
                        n++;
                    }
        }
    return n;
}

/* This rank's communicator in an order (see the table at the top). */
static MPI_Comm make_comm(order_t order, int wrank, int wsize)
{
    int color = 0, key = wrank;
    MPI_Comm comm;

    switch (order) {
    case ORDER_REVERSED: key = wsize - 1 - wrank; break;
    case ORDER_HALVES: color = wrank >= wsize / 2; break;
    case ORDER_ODDEVEN: key = (wrank % 2) * wsize + wrank; break;
    default: break;
    }
    MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm);
    return comm;
}

typedef struct {
    int passed, failed;
} tally_t;

/* Records one test that passed only if it passed on every rank. */
static void tally_add(tally_t *t, int failed_here, const char *what, int wrank)
{
    int failed_anywhere;

    MPI_Allreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (failed_anywhere) {
        t->failed++;
        if (wrank == 0)
            printf("FAIL %s\n", what);
    } else {
        t->passed++;
    }
}

/* The number of host-buffer groups (hiar_comm_group), or -1 on failure. */
static int comm_groups(const hiar_comm_t *comm)
{
    int ngroups = -1;

    if (hiar_comm_group(comm, 0, &ngroups, NULL, NULL, NULL) != HIAR_SUCCESS)
        return -1;
    return ngroups;
}

static void run_order(order_t order, int with_big, int expect_groups, unsigned char *send,
                      unsigned char *recv, tally_t *tally, int wrank, int wsize)
{
    int ncases = list_cases(NULL, with_big);
    test_case_t *cases = malloc(sizeof(*cases) * (size_t)ncases);
    int *failed = calloc((size_t)ncases, sizeof(int));
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)ncases), *all_hashes = NULL;
    context_t ctx = {.order = order_names[order], .mpi = make_comm(order, wrank, wsize), .send = send,
                     .recv = recv, .pattern_dtype = HIAR_DTYPE_COUNT};
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_result_t rc;
    char what[128];
    int bad, any_comm_failed;
    double t0 = MPI_Wtime();

    if (!cases || !failed || !hashes) {
        fprintf(stderr, "test_allreduce: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    list_cases(cases, with_big);
    MPI_Comm_rank(ctx.mpi, &ctx.rank);
    MPI_Comm_size(ctx.mpi, &ctx.size);

    /* A wedged call then fails with HIAR_TIMEOUT instead of hanging until mpirun.sh's timeout. */
    if (!getenv("HIAR_TIMEOUT_MS"))
        cfg.settings = TEST_TIMEOUT_SETTING;
    rc = hiar_comm_create(ctx.mpi, &cfg, &ctx.comm);
    if (rc != HIAR_SUCCESS)
        printf("FAIL [rank %d, order %s] hiar_comm_create returned %s: %s\n", wrank, ctx.order,
               hiar_strerror(rc), hiar_last_error());
    snprintf(what, sizeof(what), "%s: hiar_comm_create", ctx.order);
    bad = rc != HIAR_SUCCESS;
    tally_add(tally, bad, what, wrank);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad) {
        hiar_comm_abort(ctx.comm);
        goto out;
    }
    if (ctx.rank == 0 && order == ORDER_WORLD)
        hiar_comm_describe(ctx.comm, stdout);
    if (expect_groups > 0 && order != ORDER_HALVES) {
        int ngroups = comm_groups(ctx.comm);
        snprintf(what, sizeof(what), "%s: %d groups", ctx.order, expect_groups);
        if (ngroups != expect_groups)
            printf("FAIL [rank %d, order %s] hiar_comm_group says %d groups, expected %d\n", wrank,
                   ctx.order, ngroups, expect_groups);
        tally_add(tally, ngroups != expect_groups, what, wrank);
    }

    {
        int r = -1, s = -1;
        hiar_comm_rank(ctx.comm, &r);
        hiar_comm_size(ctx.comm, &s);
        snprintf(what, sizeof(what), "%s: hiar_comm_rank/size", ctx.order);
        if (r != ctx.rank || s != ctx.size)
            printf("FAIL [rank %d, order %s] hiar_comm_rank/size give %d/%d, MPI says %d/%d\n", wrank,
                   ctx.order, r, s, ctx.rank, ctx.size);
        tally_add(tally, r != ctx.rank || s != ctx.size, what, wrank);
    }

    for (int k = 0; k < ncases; k++)
        failed[k] = run_case(&ctx, &cases[k], &hashes[k]);

    /* Every rank of the communicator must hold the same bytes. */
    all_hashes = malloc(sizeof(uint64_t) * (size_t)ncases * (size_t)ctx.size);
    if (!all_hashes) {
        fprintf(stderr, "test_allreduce: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Allgather(hashes, ncases, MPI_UINT64_T, all_hashes, ncases, MPI_UINT64_T, ctx.mpi);
    for (int k = 0; k < ncases; k++)
        for (int r = 1; r < ctx.size; r++)
            if (all_hashes[(size_t)r * (size_t)ncases + (size_t)k] != all_hashes[k]) {
                if (ctx.rank == r)
                    report(&ctx, &cases[k], "result bytes differ from rank 0's");
                failed[k] = 1;
            }
    MPI_Allreduce(MPI_IN_PLACE, failed, ncases, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < ncases; k++)
        failed[k] ? tally->failed++ : tally->passed++;

    /* A failed comm must be aborted (destroy would wait for peers that gave up). */
    MPI_Allreduce(&ctx.comm_failed, &any_comm_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    rc = any_comm_failed ? hiar_comm_abort(ctx.comm) : hiar_comm_destroy(ctx.comm);
    snprintf(what, sizeof(what), "%s: hiar_comm_%s", ctx.order, any_comm_failed ? "abort" : "destroy");
    if (rc != HIAR_SUCCESS)
        printf("FAIL [rank %d, order %s] %s returned %s: %s\n", wrank, ctx.order, what,
               hiar_strerror(rc), hiar_last_error());
    tally_add(tally, rc != HIAR_SUCCESS, what, wrank);
    if (wrank == 0)
        printf("order %-8s %d cases in %.1f s\n", ctx.order, ncases, MPI_Wtime() - t0);
out:
    MPI_Comm_free(&ctx.mpi);
    free(all_hashes);
    free(hashes);
    free(failed);
    free(cases);
}

/* Whether `name` is in the comma-separated list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *orders = "world,reversed,halves,oddeven";
    const char *groups = getenv("HIAR_GROUPS");
    int with_big = 1, expect_groups = 0, wrank, wsize;
    /* Guards, an offset and the big count of the widest type, rounded up for aligned_alloc. */
    size_t region = (GUARD_BYTES + 8 + BIG_BYTES + 5 * 8 + GUARD_BYTES + 63) / 64 * 64;
    unsigned char *send, *recv;
    tally_t tally = {0, 0};

    int mpi_thread_level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-big") == 0) {
            with_big = 0;
        } else if (strncmp(argv[i], "--orders=", 9) == 0) {
            orders = argv[i] + 9;
        } else if (strncmp(argv[i], "--groups=", 9) == 0) {
            expect_groups = atoi(argv[i] + 9);
        } else {
            if (wrank == 0)
                fprintf(stderr,
                        "usage: %s [--no-big] [--orders=world,reversed,halves,oddeven] "
                        "[--groups=N]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    send = aligned_alloc(64, region);
    recv = aligned_alloc(64, region);
    if (!send || !recv) {
        fprintf(stderr, "test_allreduce: cannot allocate 2 x %zu bytes\n", region);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int o = 0; o < ORDER_COUNT; o++) {
        if (!listed(orders, order_names[o]))
            continue;
        /* Halves need two ranks each, and HIAR_GROUPS names ranks of the whole world. */
        if (o == ORDER_HALVES && (wsize < 4 || (groups && *groups)))
            continue;
        run_order((order_t)o, with_big, expect_groups, send, recv, &tally, wrank, wsize);
    }
    free(send);
    free(recv);
    if (wrank == 0) {
        printf("np=%d: %d passed, %d failed\n", wsize, tally.passed, tally.failed);
        fflush(stdout);
    }
    MPI_Finalize();
    return tally.failed || tally.passed == 0 ? 1 : 0;
}
