/*
 * A plain MPI program: MPI_Allreduce on host buffers over many datatypes,
 * ops, counts and communicators (world, dup, split halves in reversed order,
 * self, an intercommunicator, a freed and re-created dup, a dup never freed),
 * in place and out of place, with buffers not aligned to the element size on
 * rank 0.
 *
 * Every result is checked against a reference computed here from the input
 * formula over the ranks of the group (MPI_Group_translate_ranks), never from
 * MPI's output.  Inputs are small integers, so float results are exact; the
 * unsigned 32/64-bit sums wrap on purpose.  The program itself calls no
 * MPI_Allreduce but the ones under test (its bookkeeping uses MPI_Reduce and
 * MPI_Gather), so a tool that intercepts MPI_Allreduce sees exactly them.
 *
 * Each case says whether an interposer that serves predefined C types with
 * MPI_SUM/PROD/MIN/MAX on intracommunicators of 2 or more ranks (count > 0,
 * unsigned 32/64-bit with SUM/PROD only) should take it; rank 0 prints the
 * totals as "expect: N intercepted, M forwarded" (calls summed over ranks).
 *
 * --thread-multiple: MPI_Init_thread(MPI_THREAD_MULTIPLE) (MPI's locks then
 * guard attribute callbacks too).
 * --out FILE: rank 0 writes one line per case with a hash of every rank's
 * result, so two runs (with and without a tool) can be compared bit for bit.
 * Rank 0 ends with "np=N: P passed, F failed"; exit 0 only if none failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "record.h"

typedef enum { F, S, U } kind_t; /* float, signed, unsigned */

typedef struct {
    const char *name;
    MPI_Datatype type;
    kind_t kind;
    int size;
    int big; /* unsigned inputs near the top of the range: sums wrap */
} tdesc_t;

/* The reference's arithmetic for an op. */
typedef enum { R_SUM, R_PROD, R_MIN, R_MAX, R_BAND, R_BOR } rop_t;

typedef struct {
    const char *name;
    MPI_Op op;
    rop_t ref;
} odesc_t;

static int world_rank, world_size;
static long long intercepted, forwarded; /* this rank's calls, by expectation */

/* ---- values: element i of world rank r in case c ---- */

static long long input(const tdesc_t *t, MPI_Op op, int c, int r, int i)
{
    long long h = (long long)(r * 7 + i * 3 + c * 5);
    if (op == MPI_PROD) /* products stay small: 1, -1 or 2 (2 at most twice per element in 8 ranks) */
        return (h % 5 == 0) ? 2 : (t->kind != U && h % 3 == 0) ? -1 : 1;
    if (t->kind == U)
        return t->big ? -1 - (h % 1000) : h % 9; /* -1 - k is UINT_MAX - k once stored */
    return h % 9 - 4;
}

static void store(const tdesc_t *t, void *buf, int i, long long v)
{
    char *p = (char *)buf + (size_t)i * (size_t)t->size;
    if (t->kind == F) {
        if (t->size == 4) {
            float f = (float)v;
            memcpy(p, &f, 4);
        } else {
            double d = (double)v;
            memcpy(p, &d, 8);
        }
        return;
    }
    /* Two's complement, little or big endian: take the low `size` bytes. */
    uint64_t u = (uint64_t)v;
    switch (t->size) {
    case 1: { uint8_t x = (uint8_t)u; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)u; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); break; }
    default: memcpy(p, &u, 8); break;
    }
}

/* The reference: fold the stored values of every contributing rank, in the type's arithmetic. */
static void reference(const tdesc_t *t, const odesc_t *o, int c, const int *ranks, int n, int count, void *ref)
{
    MPI_Op op = o->op;
    rop_t r = o->ref;

    for (int i = 0; i < count; i++) {
        if (t->kind == F) {
            double acc = 0;
            for (int k = 0; k < n; k++) {
                double v = (double)input(t, op, c, ranks[k], i);
                acc = k == 0 ? v : r == R_SUM ? acc + v : r == R_PROD ? acc * v
                                 : r == R_MIN ? (v < acc ? v : acc) : (v > acc ? v : acc);
            }
            store(t, ref, i, (long long)acc);
            continue;
        }
        unsigned bits = 8u * (unsigned)t->size;
        uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1, acc = 0;
        for (int k = 0; k < n; k++) {
            uint64_t v = (uint64_t)input(t, op, c, ranks[k], i) & mask;
            /* signed values compared sign-extended, unsigned as they are */
            int64_t sv = bits == 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
            int64_t sa = bits == 64 ? (int64_t)acc : (int64_t)(acc << (64 - bits)) >> (64 - bits);
            int less = t->kind == U ? v < acc : sv < sa;
            if (k == 0)
                acc = v;
            else if (r == R_SUM)
                acc = (acc + v) & mask;
            else if (r == R_PROD)
                acc = (acc * v) & mask;
            else if (r == R_BAND)
                acc &= v;
            else if (r == R_BOR)
                acc |= v;
            else if (r == R_MIN)
                acc = less ? v : acc;
            else
                acc = less ? acc : v;
        }
        store(t, ref, i, (long long)acc);
    }
}

/* World ranks of comm's group (or of the remote group of an intercommunicator). */
static int *group_ranks(MPI_Comm comm, int remote, int *n)
{
    MPI_Group world, group;
    int *local, *ranks;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (remote)
        MPI_Comm_remote_group(comm, &group);
    else
        MPI_Comm_group(comm, &group);
    MPI_Group_size(group, n);
    local = malloc(sizeof(int) * (size_t)*n);
    ranks = malloc(sizeof(int) * (size_t)*n);
    for (int i = 0; i < *n; i++)
        local[i] = i;
    MPI_Group_translate_ranks(group, *n, local, world, ranks);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    free(local);
    return ranks;
}

/*
 * One MPI_Allreduce of `count` elements of t with op on comm; `misalign` (on
 * rank 0 only) offsets both buffers by one byte.  `expect` is 1 when the call
 * should be intercepted.
 */
static void run_case(const char *label, MPI_Comm comm, const tdesc_t *t, const odesc_t *o, int count,
                     int in_place, int misalign, int expect)
{
    static int case_id;
    int c = case_id++, inter = 0, n, ok = 1;
    size_t bytes = (size_t)count * (size_t)t->size;
    char name[160];
    int off = misalign && world_rank == 0 ? 1 : 0;
    char *send = malloc(bytes + 16), *recv = malloc(bytes + 16), *ref = malloc(bytes + 16);
    int *ranks;

    MPI_Comm_test_inter(comm, &inter);
    ranks = group_ranks(comm, inter, &n);
    memset(recv, 0x5a, bytes + 16); /* out of place: nothing of it may survive */
    for (int i = 0; i < count; i++)
        store(t, (in_place ? recv : send) + off, i, input(t, o->op, c, world_rank, i));
    if (MPI_Allreduce(in_place ? MPI_IN_PLACE : send + off, recv + off, count, t->type, o->op, comm) !=
        MPI_SUCCESS)
        ok = 0;
    reference(t, o, c, ranks, n, count, ref);
    if (ok && memcmp(recv + off, ref, bytes) != 0) {
        for (int i = 0; i < count; i++)
            if (memcmp(recv + off + (size_t)i * (size_t)t->size, ref + (size_t)i * (size_t)t->size,
                       (size_t)t->size) != 0) {
                printf("rank %d: %s %s %s count %d: element %d differs from the reference\n", world_rank,
                       label, t->name, o->name, count, i);
                break;
            }
        ok = 0;
    }
    expect ? intercepted++ : forwarded++;
    snprintf(name, sizeof(name), "%s/%s/%s/n=%d%s%s", label, t->name, o->name, count, in_place ? "/in-place" : "",
             misalign ? "/misaligned" : "");
    record_case(name, ok, record_hash(recv + off, bytes));
    free(ranks);
    free(send);
    free(recv);
    free(ref);
}

/* ---- the cases ---- */

static const odesc_t ops[] = {{"sum", MPI_SUM, R_SUM}, {"prod", MPI_PROD, R_PROD}, {"min", MPI_MIN, R_MIN},
                               {"max", MPI_MAX, R_MAX}};
#define NOPS 4

/* Every type with every op, a few counts, out of place and in place. */
static void matrix(const char *label, MPI_Comm comm, int served)
{
    const tdesc_t types[] = {
        {"float", MPI_FLOAT, F, sizeof(float), 0},         {"double", MPI_DOUBLE, F, sizeof(double), 0},
        {"int", MPI_INT, S, sizeof(int), 0},               {"long", MPI_LONG, S, sizeof(long), 0},
        {"long_long", MPI_LONG_LONG, S, sizeof(long long), 0},
        {"int8", MPI_INT8_T, S, 1, 0},                     {"int32", MPI_INT32_T, S, 4, 0},
        {"int64", MPI_INT64_T, S, 8, 0},                   {"signed_char", MPI_SIGNED_CHAR, S, 1, 0},
        {"uint8", MPI_UINT8_T, U, 1, 0},                   {"unsigned_char", MPI_UNSIGNED_CHAR, U, 1, 0},
        {"unsigned", MPI_UNSIGNED, U, sizeof(unsigned), 1}, {"uint32", MPI_UINT32_T, U, 4, 1},
        {"uint64", MPI_UINT64_T, U, 8, 1},                 {"unsigned_long", MPI_UNSIGNED_LONG, U, sizeof(long), 1},
        {"short", MPI_SHORT, S, sizeof(short), 0},         {"uint16", MPI_UINT16_T, U, 2, 0},
    };
    const int counts[] = {1, 7, 1000};

    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
        for (int o = 0; o < NOPS; o++)
            for (int ci = 0; ci < 3; ci++) {
                const tdesc_t *t = &types[k];
                int mapped = t->size != 2 && (t->kind != U || t->size == 1 || o < 2);
                run_case(label, comm, t, &ops[o], counts[ci], ci == 1, 0, served && mapped);
            }
}

/* Sums ints, also in a datatype made of ints (len counts that datatype). */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int size;
    MPI_Type_size(*type, &size);
    for (int i = 0; i < *len * (size / (int)sizeof(int)); i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    const tdesc_t t_int = {"int", MPI_INT, S, sizeof(int), 0}, t_double = {"double", MPI_DOUBLE, F, 8, 0};
    const tdesc_t t_float = {"float", MPI_FLOAT, F, 4, 0}, t_int64 = {"int64", MPI_INT64_T, S, 8, 0};
    const odesc_t o_band = {"band", MPI_BAND, R_BAND}, o_bor = {"bor", MPI_BOR, R_BOR};
    MPI_Comm dup, half, self_dup, inter = MPI_COMM_NULL;
    MPI_Op user_op;

    int thread_multiple = 0, provided;
    for (int i = 1; i < argc; i++)
        thread_multiple |= strcmp(argv[i], "--thread-multiple") == 0;
    if (thread_multiple)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    record_open(argc, argv);
    int multi = world_size > 1;

    /* World: the whole matrix; sizes across the shared-buffer chunking. */
    matrix("world", MPI_COMM_WORLD, multi);
    run_case("world", MPI_COMM_WORLD, &t_double, &ops[0], 300001, 0, 0, multi);
    run_case("world", MPI_COMM_WORLD, &t_int, &ops[3], 300001, 1, 0, multi);
    run_case("world", MPI_COMM_WORLD, &t_float, &ops[0], 0, 0, 0, 0); /* count 0 */

    /* Buffers not aligned to the element size on rank 0 only. */
    run_case("world", MPI_COMM_WORLD, &t_int, &ops[0], 1001, 0, 1, multi);
    run_case("world", MPI_COMM_WORLD, &t_double, &ops[2], 5, 1, 1, multi);

    /* Not reductions of the interposer's: other ops, a user op, a derived type. */
    run_case("world", MPI_COMM_WORLD, &t_int, &o_band, 100, 0, 0, 0);
    run_case("world", MPI_COMM_WORLD, &t_int64, &o_bor, 100, 1, 0, 0);
    MPI_Op_create(user_sum, 1, &user_op);
    {
        odesc_t o_user = {"user_sum", user_op, R_SUM};
        run_case("world", MPI_COMM_WORLD, &t_int, &o_user, 100, 0, 0, 0);
        /* a derived type (two ints) with the user op: the reference sums ints */
        int pair_in[2 * 50], pair_out[2 * 50], ref = 0, ok = 1;
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        for (int i = 0; i < 100; i++)
            pair_in[i] = world_rank * 3 + i;
        MPI_Allreduce(pair_in, pair_out, 50, pair, user_op, MPI_COMM_WORLD);
        forwarded++;
        for (int i = 0; i < 100; i++) {
            ref = world_size * i + 3 * world_size * (world_size - 1) / 2;
            ok &= pair_out[i] == ref;
        }
        record_case("world/pair_of_int/user_sum/n=50", ok, record_hash(pair_out, sizeof(pair_out)));
        MPI_Type_free(&pair);
    }
    MPI_Op_free(&user_op);

    /* A duplicate: its own state; freed, and a new duplicate used again. */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_case("dup", dup, &t_double, &ops[0], 1000, 0, 0, multi);
    run_case("dup", dup, &t_int, &ops[2], 7, 1, 0, multi);
    MPI_Comm_free(&dup);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_case("dup-again", dup, &t_int64, &ops[3], 1000, 0, 0, multi);
    run_case("world-after-free", MPI_COMM_WORLD, &t_float, &ops[0], 33, 0, 0, multi);
    /* Never freed: MPI_Finalize must clean up after it. */
    MPI_Comm leaked;
    MPI_Comm_dup(MPI_COMM_WORLD, &leaked);
    run_case("leaked-dup", leaked, &t_int, &ops[0], 10, 0, 0, multi);

    /* Halves, ranks in reversed order; a rank alone in its half (odd np) is size 1. */
    int lower = world_rank < world_size / 2 || world_size == 1;
    MPI_Comm_split(MPI_COMM_WORLD, lower, world_size - world_rank, &half);
    int half_size;
    MPI_Comm_size(half, &half_size);
    matrix(lower ? "lower-half" : "upper-half", half, half_size > 1);
    run_case("half", half, &t_double, &ops[0], 300001, 1, 0, half_size > 1);

    /* Size 1: MPI_COMM_SELF and a duplicate of it. */
    run_case("self", MPI_COMM_SELF, &t_double, &ops[0], 100, 0, 0, 0);
    MPI_Comm_dup(MPI_COMM_SELF, &self_dup);
    run_case("self-dup", self_dup, &t_int, &ops[3], 100, 1, 0, 0);
    MPI_Comm_free(&self_dup);

    /* An intercommunicator between the halves: each side gets the other's reduction. */
    if (world_size > 1) {
        /* leaders: rank 0 of each half, the highest world rank of it (reversed order) */
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, lower ? world_size - 1 : world_size / 2 - 1, 99, &inter);
        run_case("inter", inter, &t_int, &ops[0], 100, 0, 0, 0);
        run_case("inter", inter, &t_double, &ops[3], 100, 0, 0, 0);
        MPI_Comm_free(&inter);
    }
    run_case("half-after-inter", half, &t_int, &ops[1], 10, 0, 0, half_size > 1);
    MPI_Comm_free(&half);

    int bad = record_finish(intercepted, forwarded);
    MPI_Finalize();
    return bad ? 1 : 0;
}
