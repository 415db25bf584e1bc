/*
 * A plain MPI program: MPI_Iallreduce, persistent allreduce (MPI_Allreduce_init
 * or Open MPI's MPIX_Allreduce_init) and forwarded reductions (user ops,
 * MPI_MINLOC, derived datatypes) on host buffers, with every MPI function
 * that completes requests.
 *
 * Cases: non-blocking calls of the types and ops an interposer serves, in
 * place and not; several in flight at once, on two communicators, mixed in
 * one MPI_Waitall with the program's own point-to-point ring; a blocking
 * MPI_Allreduce between the start and the wait of a non-blocking one;
 * completion by MPI_Wait, Waitall, Waitany, Waitsome, Test, Testall,
 * Testany, Testsome; persistent calls started 5 times with new inputs, by
 * MPI_Start and MPI_Startall, then freed; MPI_Request_free on an inactive
 * persistent request; and blocking and non-blocking calls with a user op on
 * 16-bit integers, MPI_MINLOC on MPI_FLOAT_INT, a contiguous and a vector
 * datatype (holes: their bytes must stay as they were), large enough to be
 * cut in pieces when HIAR_PMPI_STAGE_BYTES is small.
 *
 * References come from the input formulas (small integers: exact), never
 * from MPI.  Like pmpi_host, rank 0 prints "expect: N intercepted, M
 * forwarded" (MPI_Allreduce, MPI_Iallreduce and MPI_Allreduce_init calls
 * an interposer of predefined types and ops should take; summed over
 * ranks), writes a hash per case to --out FILE, and ends with
 * "np=N: P passed, F failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "record.h"

#if MPI_VERSION >= 4
#define ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif

static int rank, nranks;
static long long intercepted, forwarded;

/* One case, its result hashed for --out. */
static void record(const char *name, int ok, const void *result, size_t bytes)
{
    record_case(name, ok, record_hash(result, bytes));
}

/* ---- served calls: int32 sum / max, float sum ---- */

static int value(int seed, int r, int i)
{
    return (r * 7 + i * 3 + seed * 5) % 11;
}

/* One non-blocking call's buffers and its reference. */
typedef struct {
    int seed, count, in_place, is_max;
    MPI_Comm comm;
    int *send, *recv;
    MPI_Request req;
} nb_t;

static void nb_start(nb_t *c, MPI_Comm comm, int seed, int count, int in_place, int is_max)
{
    *c = (nb_t){seed, count, in_place, is_max, comm, malloc(sizeof(int) * (size_t)count),
                malloc(sizeof(int) * (size_t)count), MPI_REQUEST_NULL};
    for (int i = 0; i < count; i++) {
        (in_place ? c->recv : c->send)[i] = value(seed, rank, i);
        if (!in_place)
            c->recv[i] = -1;
    }
    MPI_Iallreduce(in_place ? MPI_IN_PLACE : c->send, c->recv, count, MPI_INT, is_max ? MPI_MAX : MPI_SUM, comm,
                   &c->req);
    intercepted++;
}

/* Checks a completed call against its reference (comm is world or a dup of it). */
static void nb_check(nb_t *c, const char *how)
{
    char name[160];
    int ok = c->req == MPI_REQUEST_NULL;

    for (int i = 0; i < c->count; i++) {
        int ref = 0;
        for (int r = 0; r < nranks; r++)
            ref = c->is_max ? (value(c->seed, r, i) > ref ? value(c->seed, r, i) : ref) : ref + value(c->seed, r, i);
        ok &= c->recv[i] == ref;
    }
    snprintf(name, sizeof(name), "iallreduce/%s/%s/n=%d%s", how, c->is_max ? "max" : "sum", c->count,
             c->in_place ? "/in-place" : "");
    record(name, ok, c->recv, sizeof(int) * (size_t)c->count);
    free(c->send);
    free(c->recv);
}

/* Every completion function, each on a few calls in flight at once. */
static void completions(MPI_Comm dup)
{
    enum { N = 4 };
    nb_t c[N];
    MPI_Request reqs[N];
    int index, flag, outcount, indices[N], done = 0, seed = 100;

    nb_start(&c[0], MPI_COMM_WORLD, seed++, 1000, 0, 0);
    MPI_Wait(&c[0].req, MPI_STATUS_IGNORE);
    nb_check(&c[0], "wait");

    for (int k = 0; k < N; k++)
        nb_start(&c[k], k % 2 ? dup : MPI_COMM_WORLD, seed++, 100 + 900 * k, k == 2, k == 3);
    for (int k = 0; k < N; k++)
        reqs[k] = c[k].req;
    MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < N; k++) {
        c[k].req = reqs[k];
        nb_check(&c[k], "waitall, two comms");
    }

    for (int k = 0; k < N; k++) {
        nb_start(&c[k], MPI_COMM_WORLD, seed++, 50 + k, k == 1, 0);
        reqs[k] = c[k].req;
    }
    for (int k = 0; k < N; k++) {
        MPI_Waitany(N, reqs, &index, MPI_STATUS_IGNORE);
        if (index >= 0 && index < N)
            c[index].req = reqs[index];
    }
    MPI_Waitany(N, reqs, &index, MPI_STATUS_IGNORE); /* all done: MPI_UNDEFINED */
    for (int k = 0; k < N; k++)
        nb_check(&c[k], index == MPI_UNDEFINED ? "waitany" : "waitany (no MPI_UNDEFINED at the end)");

    for (int k = 0; k < N; k++) {
        nb_start(&c[k], dup, seed++, 3000, 0, k % 2);
        reqs[k] = c[k].req;
    }
    for (done = 0; done < N; done += outcount) {
        MPI_Waitsome(N, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        for (int j = 0; j < outcount; j++)
            c[indices[j]].req = reqs[indices[j]];
    }
    for (int k = 0; k < N; k++)
        nb_check(&c[k], "waitsome");

    nb_start(&c[0], MPI_COMM_WORLD, seed++, 777, 1, 1);
    for (flag = 0; !flag;)
        MPI_Test(&c[0].req, &flag, MPI_STATUS_IGNORE);
    nb_check(&c[0], "test");

    for (int k = 0; k < N; k++) {
        nb_start(&c[k], MPI_COMM_WORLD, seed++, 10 * (k + 1), 0, 0);
        reqs[k] = c[k].req;
    }
    for (flag = 0; !flag;)
        MPI_Testall(N, reqs, &flag, MPI_STATUSES_IGNORE);
    for (int k = 0; k < N; k++) {
        c[k].req = reqs[k];
        nb_check(&c[k], "testall");
    }

    for (int k = 0; k < N; k++) {
        nb_start(&c[k], dup, seed++, 64, 0, 1);
        reqs[k] = c[k].req;
    }
    for (done = 0; done < N;) {
        MPI_Testany(N, reqs, &index, &flag, MPI_STATUS_IGNORE);
        if (flag && index != MPI_UNDEFINED)
            c[index].req = reqs[index], done++;
    }
    for (int k = 0; k < N; k++)
        nb_check(&c[k], "testany");

    for (int k = 0; k < N; k++) {
        nb_start(&c[k], MPI_COMM_WORLD, seed++, 4096, k == 0, 0);
        reqs[k] = c[k].req;
    }
    for (done = 0; done < N; done += outcount) {
        MPI_Testsome(N, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
        for (int j = 0; j < outcount; j++)
            c[indices[j]].req = reqs[indices[j]];
    }
    for (int k = 0; k < N; k++)
        nb_check(&c[k], "testsome");
}

/* Non-blocking calls and a ring of the program's own messages in one MPI_Waitall; a blocking call between. */
static void mixed(void)
{
    nb_t a, b;
    int token = rank * 10, got = -1, ok;
    int left = (rank + nranks - 1) % nranks, right = (rank + 1) % nranks;
    MPI_Request reqs[4];

    nb_start(&a, MPI_COMM_WORLD, 7, 2000, 0, 0);
    MPI_Irecv(&got, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&token, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &reqs[1]);
    nb_start(&b, MPI_COMM_WORLD, 8, 33, 1, 1);
    reqs[2] = a.req;
    reqs[3] = b.req;
    MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    a.req = reqs[2];
    b.req = reqs[3];
    nb_check(&a, "waitall with point-to-point");
    nb_check(&b, "waitall with point-to-point");
    ok = got == left * 10;
    record("ring in the same waitall", ok, &got, sizeof(got));

    /* started, then a blocking call on the same comm, then the wait */
    {
        int x[100], y[100];
        nb_start(&a, MPI_COMM_WORLD, 9, 5000, 0, 1);
        for (int i = 0; i < 100; i++)
            x[i] = value(10, rank, i);
        MPI_Allreduce(x, y, 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        intercepted++;
        MPI_Wait(&a.req, MPI_STATUS_IGNORE);
        nb_check(&a, "blocking call before the wait");
        ok = 1;
        for (int i = 0; i < 100; i++) {
            int ref = 0;
            for (int r = 0; r < nranks; r++)
                ref += value(10, r, i);
            ok &= y[i] == ref;
        }
        record("allreduce between start and wait", ok, y, sizeof(y));
    }
}

#ifdef ALLREDUCE_INIT
/* Persistent: started 5 times with new inputs (MPI_Start, MPI_Startall), then freed. */
static void persistent(MPI_Comm dup)
{
    enum { COUNT = 3000 };
    float *fs = malloc(sizeof(float) * COUNT), *fr = malloc(sizeof(float) * COUNT);
    int *is = malloc(sizeof(int) * COUNT);
    MPI_Request reqs[2];
    int ok = 1;

    ALLREDUCE_INIT(fs, fr, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]);
    ALLREDUCE_INIT(MPI_IN_PLACE, is, COUNT, MPI_INT, MPI_MAX, dup, MPI_INFO_NULL, &reqs[1]);
    intercepted += 2;
    for (int it = 0; it < 5; it++) {
        for (int i = 0; i < COUNT; i++) {
            fs[i] = (float)value(it, rank, i);
            fr[i] = -1;
            is[i] = value(it + 50, rank, i);
        }
        if (it % 2)
            MPI_Startall(2, reqs);
        else {
            MPI_Start(&reqs[0]);
            MPI_Start(&reqs[1]);
        }
        if (it == 3) {
            int flag = 0;
#ifdef MPICH
            /* MPICH 5.0.2 and Intel MPI 2021.19 fail MPI_Testall on persistent collectives still running
             * (MPI_ERR_IN_STATUS, a status of MPI_ERR_PENDING) instead of giving flag = 0: MPI_Test each. */
            for (int k = 0; k < 2; k++)
                for (flag = 0; !flag;)
                    MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE);
#else
            while (!flag)
                MPI_Testall(2, reqs, &flag, MPI_STATUSES_IGNORE);
#endif
        } else
            MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        ok &= reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL; /* persistent: kept */
        for (int i = 0; i < COUNT; i++) {
            int sum = 0, max = 0;
            for (int r = 0; r < nranks; r++) {
                sum += value(it, r, i);
                max = value(it + 50, r, i) > max ? value(it + 50, r, i) : max;
            }
            ok &= fr[i] == (float)sum && is[i] == max;
        }
    }
    /* inactive persistent requests: a wait returns at once */
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    ok &= reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL;
    record("persistent/5 starts/float sum + int max in place", ok, fr, sizeof(float) * COUNT);
    free(fs);
    free(fr);
    free(is);
}
#endif

/* ---- forwarded: a user op on 16-bit values, MINLOC, derived datatypes ---- */

/* Sums uint16_t (as a bf16-as-MPI_UINT16_T op would be called), also inside derived types of them. */
static void sum_u16(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int size;
    MPI_Type_size(*type, &size);
    for (int i = 0; i < *len * (size / 2); i++)
        ((uint16_t *)inout)[i] = (uint16_t)(((uint16_t *)inout)[i] + ((uint16_t *)in)[i]);
}

/* The same on the vector type of forwarded_cases: values 0,1 4,5 8,9 of every 12 (MPI passes its layout). */
static void sum_vec(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int k = 0; k < *len; k++)
        for (int j = 0; j < 10; j++)
            if (j % 4 < 2)
                ((uint16_t *)inout)[12 * k + j] = (uint16_t)(((uint16_t *)inout)[12 * k + j] + ((uint16_t *)in)[12 * k + j]);
}

/* Element j of rank r: small, so the sum fits 16 bits. */
static uint16_t u16(int r, int j)
{
    return (uint16_t)((r * 3 + j * 7) % 13);
}

/* Contiguous types: every value is in the type. */
static int no_holes(size_t j)
{
    (void)j;
    return 0;
}

/* The vector of forwarded_cases: values 0,1 4,5 8,9 of every 12 are in it. */
static int vector_holes(size_t j)
{
    return (j % 12) % 4 >= 2 || j % 12 >= 10;
}

/*
 * count elements of `type`, each `stride` uint16_t values of which those
 * with holes(j) are not in the type (their bytes must stay), blocking or not.
 */
static void derived(const char *what, MPI_Datatype type, int count, int stride, int (*holes)(size_t), MPI_Op op,
                    int blocking)
{
    size_t total = (size_t)count * (size_t)stride;
    uint16_t *send = calloc(total, 2), *recv = calloc(total, 2);
    int ok = 1;
    char name[160];
    MPI_Request req;

    for (size_t j = 0; j < total; j++) {
        send[j] = u16(rank, (int)j);
        recv[j] = 0xbeef;
    }
    if (blocking)
        MPI_Allreduce(send, recv, count, type, op, MPI_COMM_WORLD);
    else {
        MPI_Iallreduce(send, recv, count, type, op, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    forwarded++;
    for (size_t j = 0; j < total; j++) {
        uint16_t ref = holes(j) ? 0xbeef : 0;
        for (int r = 0; r < nranks && !holes(j); r++)
            ref = (uint16_t)(ref + u16(r, (int)j));
        ok &= recv[j] == ref;
    }
    snprintf(name, sizeof(name), "%s/%s/n=%d", blocking ? "allreduce" : "iallreduce", what, count);
    record(name, ok, recv, 2 * total);
    free(send);
    free(recv);
}

/* MPI_MINLOC on MPI_FLOAT_INT: the smallest value and the lowest rank holding it. */
static void minloc(int count, int blocking)
{
    struct fi {
        float v;
        int i;
    } *in = malloc(sizeof(struct fi) * (size_t)count), *res = malloc(sizeof(struct fi) * (size_t)count);
    int ok = 1;
    char name[80];
    MPI_Request req;

    for (int j = 0; j < count; j++)
        in[j] = (struct fi){(float)((rank * 5 + j * 3) % 7), rank};
    if (blocking)
        MPI_Allreduce(in, res, count, MPI_FLOAT_INT, MPI_MINLOC, MPI_COMM_WORLD);
    else {
        MPI_Iallreduce(in, res, count, MPI_FLOAT_INT, MPI_MINLOC, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    forwarded++;
    for (int j = 0; j < count; j++) {
        float best = 1e9f;
        int who = -1;
        for (int r = 0; r < nranks; r++) {
            float v = (float)((r * 5 + j * 3) % 7);
            if (v < best)
                best = v, who = r;
        }
        ok &= res[j].v == best && res[j].i == who;
    }
    snprintf(name, sizeof(name), "%s/minloc float_int/n=%d", blocking ? "allreduce" : "iallreduce", count);
    record(name, ok, res, sizeof(struct fi) * (size_t)count);
    free(in);
    free(res);
}

static void forwarded_cases(void)
{
    MPI_Op op, op_vec;
    MPI_Datatype pair, vec;

    MPI_Op_create(sum_u16, 1, &op);
    MPI_Op_create(sum_vec, 1, &op_vec);
    MPI_Type_contiguous(2, MPI_UINT16_T, &pair);
    MPI_Type_commit(&pair);
    /* 3 blocks of 2 values, 4 apart; resized to 12 values: each element has holes inside and after */
    {
        MPI_Datatype v;
        MPI_Type_vector(3, 2, 4, MPI_UINT16_T, &v);
        MPI_Type_create_resized(v, 0, 12 * 2, &vec);
        MPI_Type_free(&v);
        MPI_Type_commit(&vec);
    }
    for (int blocking = 1; blocking >= 0; blocking--) {
        derived("user op uint16", MPI_UINT16_T, 20001, 1, no_holes, op, blocking);
        derived("user op contiguous(2, uint16)", pair, 10001, 2, no_holes, op, blocking);
        derived("user op vector(3,2,4) resized 12", vec, 3001, 12, vector_holes, op_vec, blocking);
        minloc(5001, blocking);
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
    MPI_Op_free(&op_vec);
}

int main(int argc, char **argv)
{
    MPI_Comm dup;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    record_open(argc, argv);
    if (nranks < 2) {
        if (rank == 0)
            printf("SKIP: needs 2 or more ranks\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    completions(dup);
    mixed();
#ifdef ALLREDUCE_INIT
    persistent(dup);
#else
    if (rank == 0)
        printf("no persistent allreduce in this MPI: not tested\n");
#endif
    forwarded_cases();
    MPI_Comm_free(&dup);

    int bad = record_finish(intercepted, forwarded);
    MPI_Finalize();
    return bad ? 1 : 0;
}
