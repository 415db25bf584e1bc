/*
 * libhiar_mpi.so: MPI_Allreduce, MPI_Iallreduce and persistent allreduce
 * through hiar for programs written against plain MPI (the MPI profiling
 * interface).  Preload it into the ranks:
 *
 *     mpirun -np 8 -x LD_PRELOAD=/usr/local/lib/libhiar_mpi.so ./train
 *
 * Every rank must take the same branch of a collective, or it hangs.  So the
 * choice between hiar and the MPI library depends only on what MPI requires
 * to be equal on every rank, or is agreed:
 *
 *   | step                                   | decided from              | same on every rank   |
 *   | -------------------------------------- | ------------------------- | -------------------- |
 *   | HIAR_PMPI=0 -> forward                 | environment               | yes (documented)     |
 *   | datatype, op not mapped -> forward     | (datatype, op)            | yes (MPI requires)   |
 *   | intercomm, size 1, no hiar comm -> fwd | the communicator          | yes (creation agreed)|
 *   | host / device buffers                  | this rank's buffers       | no: agreed (path.c)  |
 *   | forwarded on device buffers -> staged  | this rank's buffers       | no need (stage.c)    |
 *
 * This file: the datatype table, one hiar communicator per MPI communicator,
 * the blocking entry points and MPI_Finalize.  path.c runs a served call,
 * stage.c a forwarded one, request.c the non-blocking and persistent ones.
 *
 * State: one hiar communicator per MPI communicator, created on the first
 * eligible call (collective: every rank of the communicator makes that call)
 * and kept in an attribute; MPI_Comm_free runs its delete callback, and
 * MPI_Finalize deletes the ones left, newest first, before PMPI_Finalize.
 * MPI_Comm_dup does not copy it (MPI_COMM_NULL_COPY_FN): a duplicate gets its
 * own on its first call.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "base/error.h"
#include "hiar.h"
#include "base/log.h"
#include "base/param.h"
#include "core/allreduce.h"
#include "pmpi.h"
#ifdef HIAR_HAVE_CUDA
#include "cuda/api.h"
#endif

/* Most predefined datatypes mapped (the list in types_init). */
#define TYPES_MAX 32

/* Bits of type_map_t.ops: which hiar ops a datatype may use. */
#define OPS_ALL ((1u << HIAR_SUM) | (1u << HIAR_PROD) | (1u << HIAR_MIN) | (1u << HIAR_MAX))
#define OPS_WRAP ((1u << HIAR_SUM) | (1u << HIAR_PROD))

typedef struct {
    MPI_Datatype type;
    hiar_dtype_t dtype;
    unsigned ops;
} type_map_t;

static struct {
    pthread_once_t once;
    int enabled, stats, keyval;
    type_map_t types[TYPES_MAX];
    int ntypes;
    pthread_mutex_t lock;
    pmpi_comm_t *live; /* newest first */
    atomic_ullong via, forwarded;
    atomic_ullong deleted; /* comm_delete calls so far: a thread's `last` of fewer is stale */
    atomic_ullong spin_ns; /* the shortest spin of the hiar comms made (HIAR_YIELD); 0 before the first */
    int spin_known;        /* under lock */
} g = {PTHREAD_ONCE_INIT, 0, 0, MPI_KEYVAL_INVALID, {{0}}, 0, PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0};

/*
 * The communicator this thread called on last and its state, valid while no
 * state was deleted since (a freed communicator's handle may come back for a
 * new one).  It spares MPI_Comm_get_attr: about 200 of the preload's 540
 * instructions a call beside hiar's own (callgrind, 2 ranks, 1 KB float32
 * host calls on Open MPI 4.1).  Only communicators that hold the attribute
 * are kept, so each one's end passes through comm_delete.
 */
typedef struct {
    MPI_Comm comm;
    pmpi_comm_t *s;
    unsigned long long deleted;
    int valid;
} last_comm_t;

static _Thread_local last_comm_t last;

_Thread_local int pmpi_inside_hiar;

/* ---- parameters and the datatype table ---- */

/* A BOOL parameter from the environment; an invalid value warns and gives the default. */
static int param_bool(hiar_param_id_t id)
{
    long long num = 0;

    if (hiar_param_env(id, &num) != HIAR_SUCCESS)
        HIAR_WARN(INIT, "%s; using the default \"%s\"", hiar_last_error(), hiar_param_table[id].def);
    return (int)num;
}

typedef enum { KIND_FLOAT, KIND_SIGNED, KIND_UNSIGNED, KIND_HALF, KIND_BHALF } type_kind_t;

/* hiar's dtype for a datatype of this kind and size here, HIAR_DTYPE_COUNT if none. */
static hiar_dtype_t dtype_of(type_kind_t kind, int size)
{
    if (size < 1 || size > 8)
        return HIAR_DTYPE_COUNT;
    switch (kind * 16 + size) {
    case KIND_FLOAT * 16 + 4: return HIAR_FLOAT32;
    case KIND_FLOAT * 16 + 8: return HIAR_FLOAT64;
    case KIND_SIGNED * 16 + 1: return HIAR_INT8;
    case KIND_SIGNED * 16 + 4: case KIND_UNSIGNED * 16 + 4: return HIAR_INT32;
    case KIND_SIGNED * 16 + 8: case KIND_UNSIGNED * 16 + 8: return HIAR_INT64;
    case KIND_UNSIGNED * 16 + 1: return HIAR_UINT8;
    case KIND_HALF * 16 + 2: return HIAR_FLOAT16;
    case KIND_BHALF * 16 + 2: return HIAR_BFLOAT16;
    default: return HIAR_DTYPE_COUNT;
    }
}

/*
 * Maps one predefined datatype by its size here (MPI_LONG is 4 or 8 bytes).
 * Unsigned 32/64-bit types take SUM and PROD only, as int32/int64: hiar's
 * integer sum and product wrap, which gives the unsigned bits; MIN and MAX
 * would compare them as signed.
 */
static void type_add(MPI_Datatype type, type_kind_t kind)
{
    int size = 0;
    hiar_dtype_t dtype;

    if (type == MPI_DATATYPE_NULL || g.ntypes == TYPES_MAX || PMPI_Type_size(type, &size) != MPI_SUCCESS)
        return;
    dtype = dtype_of(kind, size);
    if (dtype == HIAR_DTYPE_COUNT)
        return;
    g.types[g.ntypes++] = (type_map_t){type, dtype, kind == KIND_UNSIGNED && size > 1 ? OPS_WRAP : OPS_ALL};
}

static void types_init(void)
{
    type_add(MPI_FLOAT, KIND_FLOAT);
    type_add(MPI_DOUBLE, KIND_FLOAT);
    type_add(MPI_INT, KIND_SIGNED);
    type_add(MPI_LONG, KIND_SIGNED);
    type_add(MPI_LONG_LONG, KIND_SIGNED);
    type_add(MPI_SIGNED_CHAR, KIND_SIGNED);
    type_add(MPI_INT8_T, KIND_SIGNED);
    type_add(MPI_INT32_T, KIND_SIGNED);
    type_add(MPI_INT64_T, KIND_SIGNED);
    type_add(MPI_AINT, KIND_SIGNED);
    type_add(MPI_OFFSET, KIND_SIGNED);
    type_add(MPI_COUNT, KIND_SIGNED);
    type_add(MPI_UNSIGNED_CHAR, KIND_UNSIGNED);
    type_add(MPI_UINT8_T, KIND_UNSIGNED);
    type_add(MPI_UNSIGNED, KIND_UNSIGNED);
    type_add(MPI_UNSIGNED_LONG, KIND_UNSIGNED);
    type_add(MPI_UNSIGNED_LONG_LONG, KIND_UNSIGNED);
    type_add(MPI_UINT32_T, KIND_UNSIGNED);
    type_add(MPI_UINT64_T, KIND_UNSIGNED);
#ifdef MPIX_C_FLOAT16
    type_add(MPIX_C_FLOAT16, KIND_HALF);
#endif
#ifdef MPIX_BFLOAT16
    type_add(MPIX_BFLOAT16, KIND_BHALF);
#endif
}

static int comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra);

static void init_once(void)
{
    int initialized = 0;

    g.enabled = param_bool(HIAR_P_PMPI);
    g.stats = param_bool(HIAR_P_PMPI_STATS);
    PMPI_Initialized(&initialized);
    if (!initialized) {
        g.enabled = 0; /* MPI_Allreduce before MPI_Init: MPI says why */
        return;
    }
    types_init();
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete, &g.keyval, NULL) != MPI_SUCCESS) {
        HIAR_WARN(INIT, "libhiar_mpi: MPI_Comm_create_keyval failed; every MPI_Allreduce goes to MPI");
        g.enabled = 0;
    }
}

/* hiar's dtype and op for a call, or 0: forward it. */
static int map_call(MPI_Datatype type, MPI_Op op, hiar_dtype_t *dtype, hiar_op_t *hop)
{
    if (op == MPI_SUM)
        *hop = HIAR_SUM;
    else if (op == MPI_PROD)
        *hop = HIAR_PROD;
    else if (op == MPI_MIN)
        *hop = HIAR_MIN;
    else if (op == MPI_MAX)
        *hop = HIAR_MAX;
    else
        return 0;
    for (int i = 0; i < g.ntypes; i++)
        if (g.types[i].type == type) {
            *dtype = g.types[i].dtype;
            return (g.types[i].ops >> *hop) & 1u;
        }
    return 0;
}

/* ---- one hiar communicator per MPI communicator ---- */

static void live_add(pmpi_comm_t *s)
{
    pthread_mutex_lock(&g.lock);
    s->next = g.live;
    if (g.live)
        g.live->prev = s;
    g.live = s;
    pthread_mutex_unlock(&g.lock);
}

static void live_remove(pmpi_comm_t *s)
{
    pthread_mutex_lock(&g.lock);
    if (s->prev)
        s->prev->next = s->next;
    else if (g.live == s)
        g.live = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    pthread_mutex_unlock(&g.lock);
}

/* Delete callback: MPI_Comm_free (collective) or MPI_Finalize. */
static int comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    pmpi_comm_t *s = attr;

    (void)comm;
    (void)keyval;
    (void)extra;
    atomic_fetch_add_explicit(&g.deleted, 1, memory_order_release);
    live_remove(s);
    pmpi_requests_finish(s);
    pmpi_path_release(s);
    if (s->hiar) {
        pmpi_inside_hiar++;
        hiar_comm_destroy(s->hiar);
        pmpi_inside_hiar--;
    }
    free(s);
    return MPI_SUCCESS;
}

/* This rank's current GPU, -1 without one. */
static int current_device(void)
{
#ifdef HIAR_HAVE_CUDA
    char bus_id[32];
    int device = -1;
    hiar_cuda_current_device(&device, bus_id);
    return device;
#else
    return -1;
#endif
}

/* Whether every rank of comm has a GPU (else device buffers are reduced on the host). */
static int all_gpu(MPI_Comm comm)
{
#ifdef HIAR_HAVE_CUDA
    int mine = current_device() >= 0, all = 0;

    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
#else
    (void)comm;
    return 0;
#endif
}

/* A new hiar comm's spin time: the preload's waits take the shortest (the one for the most ranks per CPU). */
static void note_spin(unsigned long long ns)
{
    pthread_mutex_lock(&g.lock);
    if (!g.spin_known || ns < atomic_load(&g.spin_ns))
        atomic_store(&g.spin_ns, ns);
    g.spin_known = 1;
    pthread_mutex_unlock(&g.lock);
}

unsigned long long pmpi_spin_ns(void)
{
    return atomic_load_explicit(&g.spin_ns, memory_order_relaxed);
}

/*
 * First eligible call on comm (every rank of comm is in this call): creates
 * the hiar communicator, or records that calls on comm are forwarded.
 * hiar_comm_create agrees on failure, so every rank records the same.
 */
static pmpi_comm_t *comm_attach(MPI_Comm comm)
{
    pmpi_comm_t *s = calloc(1, sizeof(*s));
    int inter = 0, size = 1;

    if (!s) {
        HIAR_WARN(MPI, "libhiar_mpi: out of memory; this MPI_Allreduce goes to MPI");
        return NULL;
    }
    s->mpi = comm;
    PMPI_Comm_test_inter(comm, &inter);
    if (!inter)
        PMPI_Comm_size(comm, &size);
    if (!inter && size > 1) {
        hiar_result_t rc;
        pmpi_inside_hiar++;
        rc = hiar_comm_create(comm, NULL, &s->hiar);
        pmpi_inside_hiar--;
        if (rc != HIAR_SUCCESS) {
            HIAR_WARN(MPI, "libhiar_mpi: no hiar communicator for this MPI communicator (%s: %s); "
                           "its MPI_Allreduce calls go to MPI",
                      hiar_strerror(rc), hiar_last_error());
            s->hiar = NULL;
        } else {
            note_spin(hiar_comm_spin_ns(s->hiar));
            s->all_gpu = all_gpu(comm);
            s->device = current_device();
            for (int i = 0; i < PMPI_KIND_SLOTS; i++)
                s->kinds[i].dtype = -1;
        }
    }
    if (PMPI_Comm_set_attr(comm, g.keyval, s) != MPI_SUCCESS) {
        comm_delete(comm, g.keyval, s, NULL);
        return NULL;
    }
    live_add(s);
    return s;
}

static pmpi_comm_t *comm_state(MPI_Comm comm)
{
    unsigned long long deleted = atomic_load_explicit(&g.deleted, memory_order_acquire);
    pmpi_comm_t *s = NULL;
    int found = 0;

    if (last.valid && last.comm == comm && last.deleted == deleted)
        return last.s;
    if (PMPI_Comm_get_attr(comm, g.keyval, &s, &found) != MPI_SUCCESS)
        return NULL;
    if (!found)
        s = comm_attach(comm);
    if (s)
        last = (last_comm_t){comm, s, deleted, 1};
    return s;
}

/* ---- entry points ---- */

void pmpi_count(int via_hiar)
{
    atomic_fetch_add_explicit(via_hiar ? &g.via : &g.forwarded, 1, memory_order_relaxed);
}

int pmpi_enabled(void)
{
    pthread_once(&g.once, init_once);
    return g.enabled;
}

int pmpi_served(const pmpi_args_t *a, pmpi_comm_t **s, hiar_dtype_t *dtype, hiar_op_t *hop)
{
    return pmpi_enabled() && a->count > 0 && a->comm != MPI_COMM_NULL && map_call(a->type, a->op, dtype, hop) &&
           (*s = comm_state(a->comm)) != NULL && (*s)->hiar != NULL;
}

/* A failure after hiar started: MPI's error path (fatal by default, as MPI's own errors). */
int pmpi_fail(pmpi_comm_t *s, MPI_Comm comm, hiar_result_t rc)
{
    int code = rc == HIAR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;

    if (!s || !s->warned) {
        if (s)
            s->warned = 1;
        HIAR_WARN(MPI, "MPI_Allreduce through hiar failed: %s: %s", hiar_strerror(rc), hiar_last_error());
    }
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

static int allreduce(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, int large)
{
    pmpi_args_t a = {sendbuf, recvbuf, count, type, op, comm};
    hiar_dtype_t dtype;
    hiar_op_t hop;
    hiar_result_t rc;
    pmpi_comm_t *s;

    if (pmpi_inside_hiar)
        return pmpi_forward_plain(&a, large);
    if (!pmpi_served(&a, &s, &dtype, &hop))
        return g.enabled ? pmpi_forward(&a, large) : (pmpi_count(0), pmpi_forward_plain(&a, large));
    pmpi_inside_hiar++;
    rc = pmpi_path_run(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, dtype, hop, NULL);
    pmpi_inside_hiar--;
    if (rc == HIAR_SUCCESS) {
        pmpi_count(1);
        return MPI_SUCCESS;
    }
    /* Refused before any data moved (e.g. overlapping buffers): MPI decides. */
    if (rc == HIAR_INVALID_ARGUMENT || rc == HIAR_UNSUPPORTED) {
        HIAR_INFO(MPI, "MPI_Allreduce forwarded to MPI: %s", hiar_last_error());
        return pmpi_forward(&a, large);
    }
    return pmpi_fail(s, comm, rc);
}

PMPI_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm)
{
    if (count < 0) /* MPI reports it */
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return allreduce(sendbuf, recvbuf, (size_t)count, datatype, op, comm, 0);
}

#ifdef HAVE_MPI_ALLREDUCE_C
PMPI_EXPORT int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                MPI_Op op, MPI_Comm comm)
{
    if (count < 0 || (unsigned long long)count > SIZE_MAX / 8)
        return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
    return allreduce(sendbuf, recvbuf, (size_t)count, datatype, op, comm, 1);
}
#endif

/* "hiar-pmpi: N calls via hiar, M forwarded" from world rank 0 when any rank asked. */
static void report_stats(void)
{
    unsigned long long mine[3] = {atomic_load(&g.via), atomic_load(&g.forwarded), (unsigned long long)g.stats};
    unsigned long long sum[3] = {0, 0, 0};
    int rank = 0;

    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (PMPI_Reduce(mine, sum, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
        rank == 0 && sum[2]) {
        fprintf(stderr, "hiar-pmpi: %llu calls via hiar, %llu forwarded\n", sum[0], sum[1]);
        fflush(stderr);
    }
}

/*
 * Destroys the hiar communicators of communicators never freed, newest first:
 * their creation was collective and ordered alike on the ranks they share,
 * so the reverse order is too.  MPI would otherwise run the callbacks (or
 * not) while it is shutting down.
 */
static void detach_all(void)
{
    for (;;) {
        pmpi_comm_t *s;
        pthread_mutex_lock(&g.lock);
        s = g.live;
        pthread_mutex_unlock(&g.lock);
        if (!s)
            break;
        if (PMPI_Comm_delete_attr(s->mpi, g.keyval) != MPI_SUCCESS)
            live_remove(s); /* MPI still holds it: leave it to MPI */
    }
    if (g.keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&g.keyval);
}

PMPI_EXPORT int MPI_Finalize(void)
{
    int finalized = 0;

    PMPI_Finalized(&finalized);
    if (!finalized) {
        pthread_once(&g.once, init_once);
        pmpi_requests_drain();
        report_stats();
        detach_all();
        pmpi_stage_release();
    }
    return PMPI_Finalize();
}
