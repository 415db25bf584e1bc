/*
 * A plain MPI program: MPI_Allreduce on GPU buffers (cudaMalloc, managed),
 * as a CUDA-aware MPI program would call it; exits 77 (skip) without a GPU.
 *
 * Cases: several datatypes and ops, small and large counts, in place; ranks
 * that pass different memory kinds in one call (rank 0 host, the others
 * device; a rank with a host sendbuf and a device recvbuf); a device buffer
 * not aligned to the element size; a split communicator; back-to-back calls
 * with changing inputs.  Results are read back on a non-blocking stream,
 * which does not wait for the legacy default stream, so a call that returned
 * before its GPU work finished shows up as a wrong result.  References come
 * from the input formula (small integers: exact in every type).
 *
 * Forwarded calls (issue 20: the MPI here need not take device pointers,
 * so the preload stages them through host memory): a user op on bfloat16
 * passed as MPI_UINT16_T (as hiar-bench and PyTorch users send it),
 * MPI_MINLOC on MPI_FLOAT_INT, a contiguous datatype with a user sum and a
 * vector datatype with holes (their bytes must survive), blocking and
 * MPI_Iallreduce.  Non-blocking and persistent calls through hiar on device
 * buffers, waited for with the program's own requests.  Memory kinds that
 * change between calls of one signature, past the preload's re-agreement.
 *
 * Rank 0 prints "expect: N intercepted, M forwarded" and "np=N: P passed,
 * F failed".
 * Needs 2 or more ranks: calls on one rank are the MPI library's, which
 * takes device buffers only when it is CUDA-aware.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "../gpu/cuda_ok.h"

static int rank, nranks, passed, failed;
static long long calls, fcalls; /* intercepted, forwarded */
static cudaStream_t reader; /* non-blocking: no implicit wait for the default stream */

typedef enum { MEM_HOST, MEM_DEVICE, MEM_MANAGED } mem_t;

typedef struct {
    const char *name;
    MPI_Datatype type;
    int size, is_float;
} tdesc_t;

static const tdesc_t T_FLOAT = {"float", MPI_FLOAT, 4, 1}, T_DOUBLE = {"double", MPI_DOUBLE, 8, 1},
                     T_INT = {"int32", MPI_INT32_T, 4, 0}, T_INT64 = {"int64", MPI_INT64_T, 8, 0},
                     T_UINT8 = {"uint8", MPI_UINT8_T, 1, 0};

static long long input(MPI_Op op, int seed, int r, long long i)
{
    long long h = r * 7 + i * 3 + seed * 5;
    if (op == MPI_PROD)
        return h % 5 == 0 ? 2 : 1;
    /* Non-negative: uint8 is among the types, and MIN/MAX of unsigned values
     * must not be compared as signed ones. */
    return op == MPI_SUM ? h % 9 : h % 9 + (h % 2) * 4;
}

static void store(const tdesc_t *t, void *p, long long i, long long v)
{
    char *q = (char *)p + i * t->size;
    if (t->is_float && t->size == 4) {
        float f = (float)v;
        memcpy(q, &f, 4);
    } else if (t->is_float) {
        double d = (double)v;
        memcpy(q, &d, 8);
    } else if (t->size == 8) {
        int64_t x = v;
        memcpy(q, &x, 8);
    } else if (t->size == 4) {
        int32_t x = (int32_t)v;
        memcpy(q, &x, 4);
    } else {
        uint8_t x = (uint8_t)v;
        memcpy(q, &x, 1);
    }
}

static long long fold(MPI_Op op, long long a, long long b)
{
    if (op == MPI_SUM)
        return a + b;
    if (op == MPI_PROD)
        return a * b;
    if (op == MPI_MIN)
        return b < a ? b : a;
    return b > a ? b : a;
}

static void *alloc(mem_t kind, size_t bytes)
{
    void *p = NULL;
    if (kind == MEM_HOST)
        p = malloc(bytes);
    else if (kind == MEM_DEVICE)
        CUDA_OK(cudaMalloc(&p, bytes));
    else
        CUDA_OK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
    return p;
}

static void release(mem_t kind, void *p)
{
    if (kind == MEM_HOST)
        free(p);
    else
        CUDA_OK(cudaFree(p));
}

/* Passed only if it passed on every rank (MPI_Reduce: no MPI_Allreduce here). */
static void record(int ok, const char *what)
{
    int all = 0;
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        all ? passed++ : failed++;
        if (!all)
            printf("FAIL %s\n", what);
    }
}

/*
 * One call: sendbuf of kind `skind`, recvbuf of kind `rkind` (this rank),
 * both offset by `off` bytes; in place when skind < 0.
 */
static int one_call(MPI_Comm comm, const tdesc_t *t, MPI_Op op, long long count, int skind, mem_t rkind, int off,
                    int seed)
{
    size_t bytes = (size_t)count * (size_t)t->size;
    int in_place = skind < 0, me, n, ok = 1;
    char *host = malloc(bytes + 8), *ref = malloc(bytes + 8);
    char *send = in_place ? NULL : alloc((mem_t)skind, bytes + 8);
    char *recv = alloc(rkind, bytes + 8);
    MPI_Group world, group;
    int *members, *wranks;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_group(comm, &group);
    members = malloc(sizeof(int) * (size_t)n);
    wranks = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        members[i] = i;
    MPI_Group_translate_ranks(group, n, members, world, wranks);
    MPI_Group_free(&group);
    MPI_Group_free(&world);

    for (long long i = 0; i < count; i++)
        store(t, host, i, input(op, seed, rank, i));
    CUDA_OK(cudaMemcpy((in_place ? recv : send) + off, host, bytes, cudaMemcpyDefault));
    if (!in_place && rkind == MEM_HOST)
        memset(recv, 0x5a, bytes + 8);
    else if (!in_place)
        CUDA_OK(cudaMemset(recv, 0x5a, bytes + 8));
    if (MPI_Allreduce(in_place ? MPI_IN_PLACE : send + off, recv + off, (int)count, t->type, op, comm) !=
        MPI_SUCCESS)
        ok = 0;
    calls++;
    /* Read back without waiting for the default stream: the call must have waited. */
    CUDA_OK(cudaMemcpyAsync(host, recv + off, bytes, cudaMemcpyDefault, reader));
    CUDA_OK(cudaStreamSynchronize(reader));
    for (long long i = 0; i < count; i++) {
        long long acc = input(op, seed, wranks[0], i);
        for (int k = 1; k < n; k++)
            acc = fold(op, acc, input(op, seed, wranks[k], i));
        store(t, ref, i, acc);
    }
    if (ok && memcmp(host, ref, bytes) != 0) {
        for (long long i = 0; i < count; i++)
            if (memcmp(host + i * t->size, ref + i * t->size, (size_t)t->size) != 0) {
                fprintf(stderr, "rank %d: %s count %lld: element %lld differs\n", rank, t->name, count, i);
                break;
            }
        ok = 0;
    }
    free(members);
    free(wranks);
    free(host);
    free(ref);
    if (send)
        release((mem_t)skind, send);
    release(rkind, recv);
    return ok;
}

static void check(MPI_Comm comm, const char *what, const tdesc_t *t, MPI_Op op, long long count, int skind,
                  mem_t rkind, int off)
{
    static int seed;
    char name[200];
    snprintf(name, sizeof(name), "%s: %s count %lld", what, t->name, count);
    record(one_call(comm, t, op, count, skind, rkind, off, seed++), name);
}

/* ---- forwarded calls: staged through host memory when the MPI cannot take device pointers ---- */

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact: the values here are small integers */
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bfloat16 sum, called by MPI on host memory (the staged copies). */
static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++)
        ((uint16_t *)inout)[i] = to_bf16(from_bf16(((uint16_t *)inout)[i]) + from_bf16(((uint16_t *)in)[i]));
}

/* Sum of contiguous(3, MPI_INT) elements: Open MPI refuses predefined ops on derived datatypes (MPI_ERR_OP). */
static void int3_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < 3 * *len; i++)
        ((int32_t *)inout)[i] += ((int32_t *)in)[i];
}

/* The same on the vector of vector_case: values 0,1 4,5 of every 8. */
static void bf16_sum_vec(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int k = 0; k < *len; k++)
        for (int j = 0; j < 6; j++)
            if (j % 4 < 2) {
                uint16_t *o = (uint16_t *)inout + 8 * k + j, *i = (uint16_t *)in + 8 * k + j;
                *o = to_bf16(from_bf16(*o) + from_bf16(*i));
            }
}

static int small(int r, long long j)
{
    return (int)((r * 5 + j * 3) % 9);
}

/* MPI_Allreduce, or MPI_Iallreduce + MPI_Wait. */
static int call(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, int blocking)
{
    MPI_Request req;
    if (blocking)
        return MPI_Allreduce(send, recv, count, type, op, MPI_COMM_WORLD);
    if (MPI_Iallreduce(send, recv, count, type, op, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return MPI_ERR_OTHER;
    return MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/* Device recv read back on the non-blocking stream. */
static void read_back(void *host, const void *dev, size_t bytes)
{
    CUDA_OK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDefault, reader));
    CUDA_OK(cudaStreamSynchronize(reader));
}

/* bf16 user op on MPI_UINT16_T, in place on rank 1; count large enough to be cut in pieces. */
static void bf16_case(int count, int blocking)
{
    size_t bytes = (size_t)count * 2;
    uint16_t *h = malloc(bytes), *ref = malloc(bytes);
    void *send, *recv;
    MPI_Op op;
    int ok = 1, in_place = rank == 1;
    char name[100];

    MPI_Op_create(bf16_sum, 1, &op);
    CUDA_OK(cudaMalloc(&send, bytes));
    CUDA_OK(cudaMalloc(&recv, bytes));
    for (int i = 0; i < count; i++)
        h[i] = to_bf16((float)small(rank, i));
    CUDA_OK(cudaMemcpy(in_place ? recv : send, h, bytes, cudaMemcpyHostToDevice));
    ok &= call(in_place ? MPI_IN_PLACE : send, recv, count, MPI_UINT16_T, op, blocking) == MPI_SUCCESS;
    fcalls++;
    read_back(h, recv, bytes);
    for (int i = 0; i < count; i++) {
        int sum = 0;
        for (int r = 0; r < nranks; r++)
            sum += small(r, i);
        ref[i] = to_bf16((float)sum);
    }
    ok &= memcmp(h, ref, bytes) == 0;
    snprintf(name, sizeof(name), "forwarded %s: bf16 user op as MPI_UINT16_T, count %d",
             blocking ? "MPI_Allreduce" : "MPI_Iallreduce", count);
    record(ok, name);
    CUDA_OK(cudaFree(send));
    CUDA_OK(cudaFree(recv));
    MPI_Op_free(&op);
    free(h);
    free(ref);
}

/* MPI_MINLOC on MPI_FLOAT_INT: the smallest value, the lowest rank with it; rank 0 host buffers. */
static void minloc_case(int count, int blocking)
{
    typedef struct {
        float v;
        int i;
    } fi_t;
    size_t bytes = sizeof(fi_t) * (size_t)count;
    fi_t *h = malloc(bytes);
    mem_t kind = rank == 0 ? MEM_HOST : MEM_DEVICE;
    void *send = alloc(kind, bytes), *recv = alloc(kind, bytes);
    int ok = 1;
    char name[100];

    for (int j = 0; j < count; j++)
        h[j] = (fi_t){(float)small(rank, j), rank};
    CUDA_OK(cudaMemcpy(send, h, bytes, cudaMemcpyDefault));
    ok &= call(send, recv, count, MPI_FLOAT_INT, MPI_MINLOC, blocking) == MPI_SUCCESS;
    fcalls++;
    read_back(h, recv, bytes);
    for (int j = 0; j < count; j++) {
        int best = 1 << 30, who = -1;
        for (int r = 0; r < nranks; r++)
            if (small(r, j) < best)
                best = small(r, j), who = r;
        ok &= h[j].v == (float)best && h[j].i == who;
    }
    snprintf(name, sizeof(name), "forwarded %s: MPI_MINLOC on MPI_FLOAT_INT, rank 0 host, count %d",
             blocking ? "MPI_Allreduce" : "MPI_Iallreduce", count);
    record(ok, name);
    release(kind, send);
    release(kind, recv);
    free(h);
}

/*
 * Derived datatypes, each with a user op (MPI defines the predefined ops on
 * predefined datatypes only): contiguous(3, MPI_INT), and a vector of bf16
 * (2 of every 4, 3 times; resized to 8), whose holes in the receive buffer
 * must keep their bytes.
 */
static void derived_case(int vector, int count, int blocking)
{
    int per = vector ? 8 : 3; /* values (int or uint16_t) per element */
    size_t vsize = vector ? 2 : 4, n = (size_t)count * (size_t)per, bytes = n * vsize;
    char *h = malloc(bytes), *ref = malloc(bytes);
    void *send, *recv;
    MPI_Datatype type, v;
    MPI_Op op;
    int ok = 1;
    char name[120];

    if (vector) {
        MPI_Type_vector(2, 2, 4, MPI_UINT16_T, &v);
        MPI_Type_create_resized(v, 0, 16, &type);
        MPI_Type_free(&v);
        MPI_Op_create(bf16_sum_vec, 1, &op);
    } else {
        MPI_Type_contiguous(3, MPI_INT, &type);
        MPI_Op_create(int3_sum, 1, &op);
    }
    MPI_Type_commit(&type);
    CUDA_OK(cudaMalloc(&send, bytes));
    CUDA_OK(cudaMalloc(&recv, bytes));
    for (size_t j = 0; j < n; j++) {
        if (vector) {
            uint16_t x = to_bf16((float)small(rank, (long long)j));
            memcpy(h + 2 * j, &x, 2);
        } else {
            int32_t x = small(rank, (long long)j);
            memcpy(h + 4 * j, &x, 4);
        }
    }
    CUDA_OK(cudaMemcpy(send, h, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(recv, 0x5a, bytes));
    ok &= call(send, recv, count, type, op, blocking) == MPI_SUCCESS;
    fcalls++;
    read_back(h, recv, bytes);
    for (size_t j = 0; j < n; j++) {
        int sum = 0, in = !vector || (j % 8 < 6 && j % 4 < 2);
        for (int r = 0; r < nranks; r++)
            sum += small(r, (long long)j);
        if (!in)
            memset(ref + vsize * j, 0x5a, vsize);
        else if (vector) {
            uint16_t x = to_bf16((float)sum);
            memcpy(ref + 2 * j, &x, 2);
        } else {
            int32_t x = sum;
            memcpy(ref + 4 * j, &x, 4);
        }
    }
    ok &= memcmp(h, ref, bytes) == 0;
    snprintf(name, sizeof(name), "forwarded %s: %s, count %d", blocking ? "MPI_Allreduce" : "MPI_Iallreduce",
             vector ? "vector(2,2,4) of bf16 resized to 8, user op (holes kept)" : "contiguous(3, int), user sum", count);
    record(ok, name);
    CUDA_OK(cudaFree(send));
    CUDA_OK(cudaFree(recv));
    MPI_Type_free(&type);
    MPI_Op_free(&op);
    free(h);
    free(ref);
}

/* ---- non-blocking and persistent calls through hiar on device buffers ---- */

static float fval(int it, int r, long long i)
{
    return (float)((r * 7 + i * 3 + it * 5) % 9);
}

/* count floats summed, on the device of kind; checks and frees. */
typedef struct {
    mem_t kind;
    float *buf;
    int count, it;
} fbuf_t;

static fbuf_t fbuf(mem_t kind, int count, int it)
{
    fbuf_t b = {kind, alloc(kind, sizeof(float) * (size_t)count), count, it};
    float *h = malloc(sizeof(float) * (size_t)count);
    for (int i = 0; i < count; i++)
        h[i] = fval(it, rank, i);
    CUDA_OK(cudaMemcpy(b.buf, h, sizeof(float) * (size_t)count, cudaMemcpyDefault));
    free(h);
    return b;
}

static int fbuf_ok(fbuf_t *b)
{
    float *h = malloc(sizeof(float) * (size_t)b->count);
    int ok = 1;
    read_back(h, b->buf, sizeof(float) * (size_t)b->count);
    for (int i = 0; i < b->count; i++) {
        float sum = 0;
        for (int r = 0; r < nranks; r++)
            sum += fval(b->it, r, i);
        ok &= h[i] == sum;
    }
    free(h);
    return ok;
}

static void nonblocking_cases(void)
{
    enum { N = 3 };
    fbuf_t b[N];
    MPI_Request reqs[N + 2];
    int token = rank, got = -1, ok = 1;
    float *pb;
    MPI_Request preq;

    /* three in flight (two device, one host), the program's own ring, one MPI_Waitall */
    for (int k = 0; k < N; k++) {
        b[k] = fbuf(k == 1 ? MEM_HOST : MEM_DEVICE, 1000 << (3 * k), 40 + k);
        MPI_Iallreduce(MPI_IN_PLACE, b[k].buf, b[k].count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[k]);
        calls++;
    }
    MPI_Irecv(&got, 1, MPI_INT, (rank + nranks - 1) % nranks, 3, MPI_COMM_WORLD, &reqs[N]);
    MPI_Isend(&token, 1, MPI_INT, (rank + 1) % nranks, 3, MPI_COMM_WORLD, &reqs[N + 1]);
    MPI_Waitall(N + 2, reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < N; k++) {
        ok &= fbuf_ok(&b[k]);
        release(b[k].kind, b[k].buf);
    }
    ok &= got == (rank + nranks - 1) % nranks;
    record(ok, "MPI_Iallreduce x3 (device, host, device) and a ring in one MPI_Waitall");

    /* a blocking call between start and wait, then MPI_Test until done */
    {
        int flag = 0;
        fbuf_t a = fbuf(MEM_DEVICE, 1 << 20, 50), c = fbuf(MEM_DEVICE, 4096, 51);
        MPI_Iallreduce(MPI_IN_PLACE, a.buf, a.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
        MPI_Allreduce(MPI_IN_PLACE, c.buf, c.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        calls += 2;
        while (!flag)
            MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE);
        record(fbuf_ok(&a) && fbuf_ok(&c), "MPI_Iallreduce, MPI_Allreduce, then MPI_Test: device");
        release(MEM_DEVICE, a.buf);
        release(MEM_DEVICE, c.buf);
    }

#if MPI_VERSION >= 4 || (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
    /* persistent, device buffers, started 3 times with new inputs */
    CUDA_OK(cudaMalloc((void **)&pb, sizeof(float) * 100000));
#if MPI_VERSION >= 4
    MPI_Allreduce_init(MPI_IN_PLACE, pb, 100000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
#else
    MPIX_Allreduce_init(MPI_IN_PLACE, pb, 100000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
#endif
    calls++;
    ok = 1;
    for (int it = 0; it < 3; it++) {
        fbuf_t t = fbuf(MEM_DEVICE, 100000, 60 + it);
        float *input = t.buf;
        CUDA_OK(cudaMemcpy(pb, input, sizeof(float) * 100000, cudaMemcpyDeviceToDevice));
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        t.buf = pb;
        ok &= fbuf_ok(&t);
        release(MEM_DEVICE, input);
    }
    MPI_Request_free(&preq);
    record(ok, "persistent allreduce on device buffers, 3 starts");
    CUDA_OK(cudaFree(pb));
#else
    (void)pb;
    (void)preq;
#endif
}

/* One signature, 200 calls; each rank's kind changes now and then (past the preload's re-agreement). */
static void changing_kinds(void)
{
    int ok = 1;
    for (int it = 0; it < 200; it++) {
        mem_t kind = (it / 37 + rank) % 3 == 0 ? MEM_HOST : MEM_DEVICE;
        fbuf_t b = fbuf(kind, 2048, 70 + it);
        ok &= MPI_Allreduce(MPI_IN_PLACE, b.buf, b.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
        calls++;
        ok &= fbuf_ok(&b);
        release(kind, b.buf);
    }
    record(ok, "200 calls of one signature, memory kinds changing between them");
}

int main(int argc, char **argv)
{
    MPI_Comm reversed;
    long long all_calls = 0, all_fcalls = 0;
    const MPI_Op ops[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    const tdesc_t *types[5] = {&T_FLOAT, &T_DOUBLE, &T_INT, &T_INT64, &T_UINT8};

    cuda_ok_mpi_init(&argc, &argv, &rank, &nranks);
    CUDA_OK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));

    /* Device buffers on every rank: every type and op, small and large, in place. */
    for (int k = 0; k < 5; k++)
        for (int o = 0; o < 4; o++) {
            check(MPI_COMM_WORLD, "device", types[k], ops[o], 1000 + k, MEM_DEVICE, MEM_DEVICE, 0);
            check(MPI_COMM_WORLD, "device in place", types[k], ops[o], 4099, -1, MEM_DEVICE, 0);
        }
    check(MPI_COMM_WORLD, "device large", &T_FLOAT, MPI_SUM, 3 << 20, MEM_DEVICE, MEM_DEVICE, 0);
    check(MPI_COMM_WORLD, "device large in place", &T_DOUBLE, MPI_MAX, 1 << 20, -1, MEM_DEVICE, 0);
    check(MPI_COMM_WORLD, "managed", &T_FLOAT, MPI_SUM, 10000, MEM_MANAGED, MEM_MANAGED, 0);

    /* Memory kinds that differ between ranks, or between a rank's two buffers. */
    check(MPI_COMM_WORLD, "rank 0 host, others device", &T_FLOAT, MPI_SUM, 1000, rank ? MEM_DEVICE : MEM_HOST,
          rank ? MEM_DEVICE : MEM_HOST, 0);
    check(MPI_COMM_WORLD, "rank 0 host, others device, large", &T_INT, MPI_MAX, 1 << 20,
          rank ? MEM_DEVICE : MEM_HOST, rank ? MEM_DEVICE : MEM_HOST, 0);
    check(MPI_COMM_WORLD, "rank 0 host in place, others device", &T_DOUBLE, MPI_MIN, 777, -1,
          rank ? MEM_DEVICE : MEM_HOST, 0);
    check(MPI_COMM_WORLD, "host sendbuf, device recvbuf", &T_FLOAT, MPI_SUM, 5000, MEM_HOST, MEM_DEVICE, 0);
    check(MPI_COMM_WORLD, "device sendbuf, host recvbuf on rank 1", &T_INT64, MPI_SUM, 5000,
          MEM_DEVICE, rank == 1 ? MEM_HOST : MEM_DEVICE, 0);
    check(MPI_COMM_WORLD, "device buffers 1 byte off alignment on rank 0", &T_INT, MPI_SUM, 3001, MEM_DEVICE,
          MEM_DEVICE, rank == 0);

    /* A communicator from MPI_Comm_split: every rank, in reversed order. */
    MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &reversed);
    check(reversed, "split, reversed", &T_FLOAT, MPI_SUM, 65536, MEM_DEVICE, MEM_DEVICE, 0);
    check(reversed, "split, reversed, in place", &T_INT, MPI_MIN, 100, -1, MEM_DEVICE, 0);
    MPI_Comm_free(&reversed);

    /* Back to back with changing inputs: a result read early is caught. */
    {
        int ok = 1;
        for (int it = 0; it < 200; it++)
            ok &= one_call(MPI_COMM_WORLD, &T_FLOAT, MPI_SUM, 4096 + it, -1, MEM_DEVICE, 0, 1000 + it);
        record(ok, "200 back-to-back calls, in place, changing inputs");
    }

    /* Forwarded: staged through host memory (HIAR_PMPI_STAGE_BYTES cuts the blocking ones). */
    for (int blocking = 1; blocking >= 0; blocking--) {
        bf16_case(4 << 20, blocking);
        bf16_case(1001, blocking);
        minloc_case(300001, blocking);
        derived_case(0, 500001, blocking);
        derived_case(1, 400001, blocking);
    }
    nonblocking_cases();
    changing_kinds();

    MPI_Reduce(&calls, &all_calls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&fcalls, &all_fcalls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("expect: %lld intercepted, %lld forwarded\n", all_calls, all_fcalls);
        printf("np=%d: %d passed, %d failed\n", nranks, passed, failed);
    }
    int bad = rank == 0 && (failed || !passed);
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cudaStreamDestroy(reader);
    MPI_Finalize();
    return bad ? 1 : 0;
}
