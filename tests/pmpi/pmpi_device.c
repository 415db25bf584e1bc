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
 * Rank 0 prints "expect: N intercepted, M forwarded" (every call here is a
 * predefined type and op on 2+ ranks) and "np=N: P passed, F failed".
 * Needs 2 or more ranks: calls on one rank are the MPI library's, which
 * takes device buffers only when it is CUDA-aware.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../gpu/cuda_ok.h"

static int rank, nranks, passed, failed;
static long long calls;
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

int main(int argc, char **argv)
{
    MPI_Comm local, reversed;
    int lrank, ndev = 0;
    long long all_calls = 0;
    const MPI_Op ops[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    const tdesc_t *types[5] = {&T_FLOAT, &T_DOUBLE, &T_INT, &T_INT64, &T_UINT8};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0 || nranks < 2) {
        if (rank == 0)
            printf("SKIP: %s\n", nranks < 2 ? "needs 2 or more ranks" : "no GPU");
        MPI_Finalize();
        return 77;
    }
    /* One GPU per local rank, chosen before the first MPI_Allreduce. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    CUDA_OK(cudaSetDevice(lrank % ndev));
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

    MPI_Reduce(&calls, &all_calls, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("expect: %lld intercepted, 0 forwarded\n", all_calls);
        printf("np=%d: %d passed, %d failed\n", nranks, passed, failed);
    }
    int bad = rank == 0 && (failed || !passed);
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    cudaStreamDestroy(reader);
    MPI_Finalize();
    return bad ? 1 : 0;
}
