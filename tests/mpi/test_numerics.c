/*
 * NaN, Inf, signed zeros and overflow through every host path, for float32,
 * float64, bfloat16 and float16 and every op.  doc/guide.md ("Semantics")
 * promises: HIAR_MIN and HIAR_MAX propagate NaN (a NaN on any rank gives
 * NaN), HIAR_SUM, HIAR_PROD and HIAR_AVG follow IEEE arithmetic (Inf + -Inf
 * = NaN, 0 x Inf = NaN), and every rank gets the same bits, run after run.
 *
 * Element i of a call follows scenario i % NSCEN (the table below), so one
 * call covers all of them; each (path, dtype, op) runs a short call and one
 * larger than the 1 MB shared slot (chunked).  Checks per call:
 *   - each element against a reference folded in double, in rank order, from
 *     the same inputs (the IEEE special cases do not depend on the order);
 *   - every rank's result bytes are identical (an allgathered FNV-1a hash;
 *     on a mismatch the differing elements are printed with their bits).
 * Rank 0 prints one "digest PATH HEX" line per path: a hash of all of that
 * path's results.  tests/mpi/numerics.test runs the program twice and
 * compares the digests, so results must also be identical run to run.
 *
 * The paths: a comm per entry of `paths` below (HIAR_ALGO forces one-shot,
 * two-shot and MPI; HIAR_GROUPS makes two groups, even and uneven, for the
 * hierarchical path).  Needs 4 ranks or more (rank 1 and the last differ).
 * Rank 0 ends with "np=4: 205 passed, 0 failed".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hiar.h"
#include "reference.h"

/* Scenarios: what each rank holds at element i (i % NSCEN); see input(). */
enum {
    S_FINITE,        /* (r % 3) + 1 on every rank */
    S_NAN_FIRST,     /* NaN on rank 0, finite elsewhere */
    S_NAN_LAST,      /* NaN on the last rank */
    S_INF,           /* +Inf on rank 1 */
    S_NEG_INF,       /* -Inf on the last rank */
    S_INF_NEG_INF,   /* +Inf on rank 0, -Inf on the last: sum NaN, prod -Inf */
    S_NAN_ALL,       /* NaN everywhere */
    S_INF_ALL,       /* +Inf everywhere */
    S_ZERO_INF,      /* 0 on rank 0, +Inf on the last: prod NaN */
    S_NAN_AND_INF,   /* +Inf on rank 0, NaN on the last */
    S_NAN_PAYLOADS,  /* a different NaN (payload, sign) on every rank */
    S_SIGNED_ZEROS,  /* -0 on even ranks, +0 on odd ones */
    S_OVERFLOW,      /* the largest "round" finite value on every rank: sums overflow */
    NSCEN
};

/* Elements of the short call, and of the one larger than the 1 MB slot (float64: 1.07 MB). */
#define SHORT_COUNT ((size_t)NSCEN * 5)
#define LONG_COUNT ((size_t)NSCEN * 10243)
/* Differing elements printed per call. */
#define MAX_DIFFS 5

static const hiar_dtype_t dtypes[] = {HIAR_FLOAT32, HIAR_FLOAT64, HIAR_BFLOAT16, HIAR_FLOAT16};
static const hiar_op_t ops[] = {HIAR_SUM, HIAR_PROD, HIAR_MIN, HIAR_MAX, HIAR_AVG};
enum { NDTYPES = sizeof(dtypes) / sizeof(dtypes[0]), NOPS = sizeof(ops) / sizeof(ops[0]) };

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* A finite value that sums and multiplies past the dtype's range. */
static double huge(hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_FLOAT16: return 60000.0;
    case HIAR_FLOAT64: return 1.5e308;
    default: return 3.0e38; /* float32, bfloat16 */
    }
}

/* Rank r's value in scenario s (NAN for the plain NaN; S_NAN_PAYLOADS is written by store_input). */
static double input(hiar_dtype_t dtype, int s, int r)
{
    const int last = world_size - 1;
    double finite = r % 3 + 1;

    switch (s) {
    case S_NAN_FIRST: return r == 0 ? NAN : finite;
    case S_NAN_LAST: return r == last ? NAN : finite;
    case S_INF: return r == 1 ? INFINITY : finite;
    case S_NEG_INF: return r == last ? -INFINITY : finite;
    case S_INF_NEG_INF: return r == 0 ? INFINITY : r == last ? -INFINITY : finite;
    case S_NAN_ALL:
    case S_NAN_PAYLOADS: return NAN;
    case S_INF_ALL: return INFINITY;
    case S_ZERO_INF: return r == 0 ? 0.0 : r == last ? INFINITY : finite;
    case S_NAN_AND_INF: return r == 0 ? INFINITY : r == last ? NAN : finite;
    case S_SIGNED_ZEROS: return r % 2 ? 0.0 : -0.0;
    case S_OVERFLOW: return huge(dtype);
    default: return finite;
    }
}

/* Element i of rank r's input; NaNs with payload r + 1 (negative on odd ranks) for S_NAN_PAYLOADS. */
static void store_input(hiar_dtype_t dtype, void *buf, size_t i, int r)
{
    int s = (int)(i % NSCEN);
    unsigned char *p = (unsigned char *)buf + i * hiar_dtype_size(dtype);

    if (s != S_NAN_PAYLOADS) {
        ref_store(dtype, buf, i, input(dtype, s, r));
        return;
    }
    switch (dtype) {
    case HIAR_FLOAT32: {
        uint32_t u = 0x7fc00000u | (uint32_t)(r + 1) | (r % 2 ? 0x80000000u : 0);
        memcpy(p, &u, sizeof(u));
        break;
    }
    case HIAR_FLOAT64: {
        uint64_t u = 0x7ff8000000000000ull | (uint64_t)(r + 1) | (r % 2 ? 0x8000000000000000ull : 0);
        memcpy(p, &u, sizeof(u));
        break;
    }
    default: { /* float16: quiet bit 0x200; bfloat16: 0x40; payloads fit below them */
        uint16_t u = (uint16_t)((dtype == HIAR_FLOAT16 ? 0x7e00u : 0x7fc0u) | (unsigned)(r + 1) |
                                (r % 2 ? 0x8000u : 0));
        memcpy(p, &u, sizeof(u));
        break;
    }
    }
}

/*
 * The expected element of scenario s, folded in double in rank order and
 * rounded to dtype.  *any is set where only agreement across ranks is
 * checked: AVG of overflowing values (whether the sum overflows depends on
 * the accumulator: float32 inside a group, each MPI step's dtype between
 * groups), and MIN/MAX of signed zeros (-0 == +0: which one wins is not
 * specified).
 */
static double expected(hiar_dtype_t dtype, hiar_op_t op, int s, int *any)
{
    double acc = input(dtype, s, 0);
    int nan = isnan(acc);

    *any = (op == HIAR_AVG && s == S_OVERFLOW) ||
           ((op == HIAR_MIN || op == HIAR_MAX) && s == S_SIGNED_ZEROS);
    for (int r = 1; r < world_size; r++) {
        double v = input(dtype, s, r);
        nan |= isnan(v);
        switch (op) {
        case HIAR_PROD: acc *= v; break;
        case HIAR_MIN: acc = v < acc ? v : acc; break;
        case HIAR_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (nan)
        return NAN; /* every op: a NaN input gives NaN */
    if (op == HIAR_AVG)
        acc /= world_size;
    return ref_round(dtype, acc);
}

/* Checks every element of recv; prints the first few that are wrong. */
static int values_ok(const char *what, hiar_dtype_t dtype, hiar_op_t op, const void *recv, size_t count)
{
    double want[NSCEN];
    int any[NSCEN], bad = 0;

    for (int s = 0; s < NSCEN; s++)
        want[s] = expected(dtype, op, s, &any[s]);
    for (size_t i = 0; i < count; i++) {
        int s = (int)(i % NSCEN);
        double got = ref_load(dtype, recv, i);
        int ok = any[s] || (isnan(want[s]) ? isnan(got) : got == want[s]);
        /* SUM and AVG of zeros: IEEE gives +0 as soon as one +0 is added. */
        if (ok && s == S_SIGNED_ZEROS && (op == HIAR_SUM || op == HIAR_AVG))
            ok = !signbit(got);
        if (!ok && bad++ < MAX_DIFFS)
            printf("[rank %d] %s: element %zu (scenario %d) is %g, expected %g\n", world_rank, what, i, s,
                   got, want[s]);
    }
    return bad == 0;
}

/* Whether all ranks hold the same bytes; if not, the elements where they differ from rank 0's. */
static int same_on_every_rank(const char *what, hiar_dtype_t dtype, const void *recv, size_t count)
{
    size_t esize = hiar_dtype_size(dtype), bytes = count * esize;
    uint64_t mine = fnv1a(recv, bytes, 1469598103934665603ull), *all = malloc(sizeof(uint64_t) * (size_t)world_size);
    int same = 1;

    MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 1; r < world_size; r++)
        same &= all[r] == all[0];
    free(all);
    if (!same) {
        unsigned char *root = malloc(bytes);
        int shown = 0;
        if (world_rank == 0)
            memcpy(root, recv, bytes);
        MPI_Bcast(root, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (size_t i = 0; i < count && shown < MAX_DIFFS; i++)
            if (memcmp(root + i * esize, (const unsigned char *)recv + i * esize, esize) != 0) {
                uint64_t a = 0, b = 0;
                memcpy(&a, root + i * esize, esize);
                memcpy(&b, (const unsigned char *)recv + i * esize, esize);
                printf("[rank %d] %s: element %zu (scenario %zu) has bits 0x%llx, rank 0 has 0x%llx\n",
                       world_rank, what, i, i % NSCEN, (unsigned long long)b, (unsigned long long)a);
                shown++;
            }
        free(root);
    }
    return same;
}

/* All dtypes x ops x {short, long} on one comm; returns the digest of the results. */
static uint64_t run_path(const char *path, hiar_comm_t *comm, void *send, void *recv)
{
    uint64_t digest = 1469598103934665603ull;

    for (int d = 0; d < NDTYPES; d++)
        for (int o = 0; o < NOPS; o++)
            for (int l = 0; l < 2; l++) {
                hiar_dtype_t dtype = dtypes[d];
                hiar_op_t op = ops[o];
                size_t count = l ? LONG_COUNT : SHORT_COUNT, bytes = count * hiar_dtype_size(dtype);
                char what[128];
                hiar_result_t rc;
                int ok;

                snprintf(what, sizeof(what), "%s %s %s count=%zu", path, hiar_dtype_name(dtype),
                         hiar_op_name(op), count);
                for (size_t i = 0; i < NSCEN; i++)
                    store_input(dtype, send, i, world_rank);
                for (size_t i = NSCEN; i < count; i++) /* the same period again */
                    memcpy((char *)send + i * hiar_dtype_size(dtype),
                           (char *)send + (i % NSCEN) * hiar_dtype_size(dtype), hiar_dtype_size(dtype));
                memset(recv, 0xA5, bytes);
                rc = hiar_allreduce(send, recv, count, dtype, op, comm, NULL);
                ok = rc == HIAR_SUCCESS;
                if (!ok)
                    printf("[rank %d] %s returned %s: %s\n", world_rank, what, hiar_strerror(rc),
                           hiar_last_error());
                ok = ok && values_ok(what, dtype, op, recv, count);
                ok &= same_on_every_rank(what, dtype, recv, count);
                harness_verdict(what, ok);
                digest = fnv1a(recv, bytes, digest);
            }
    return digest;
}

int main(int argc, char **argv)
{
    char halves[64], uneven[64];
    struct {
        const char *name, *settings;
    } paths[] = {
        {"oneshot", "HIAR_ALGO=oneshot"}, {"twoshot", "HIAR_ALGO=twoshot"}, {"hier", halves},
        {"hier-uneven", uneven},          {"mpi", "HIAR_ALGO=mpi"},
    };
    void *send, *recv;

    if (!harness_init(&argc, &argv, "test_numerics", 4))
        return HARNESS_SKIP;
    snprintf(halves, sizeof(halves), "HIAR_GROUPS=0-%d|%d-%d", world_size / 2 - 1, world_size / 2,
             world_size - 1);
    snprintf(uneven, sizeof(uneven), "HIAR_GROUPS=0|1-%d", world_size - 1);
    send = malloc(LONG_COUNT * sizeof(double));
    recv = malloc(LONG_COUNT * sizeof(double));
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        hiar_config_t cfg = HIAR_CONFIG_INIT;
        hiar_comm_t *comm = NULL;
        hiar_result_t rc;
        uint64_t digest;

        cfg.settings = paths[p].settings;
        rc = hiar_comm_create(MPI_COMM_WORLD, &cfg, &comm);
        harness_verdict(paths[p].settings, rc == HIAR_SUCCESS);
        if (rc != HIAR_SUCCESS) {
            printf("[rank %d] hiar_comm_create(\"%s\"): %s\n", world_rank, paths[p].settings, hiar_last_error());
            continue;
        }
        digest = run_path(paths[p].name, comm, send, recv);
        if (world_rank == 0)
            printf("digest %s %016llx\n", paths[p].name, (unsigned long long)digest);
        hiar_comm_destroy(comm);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return harness_summary();
}
