/*
 * MPI_Iallreduce and persistent allreduce (MPI_Allreduce_init,
 * MPIX_Allreduce_init) through hiar, with MPI's request semantics.
 *
 * The program's request is a real MPI request: a zero-byte receive from
 * this process on a private duplicate of MPI_COMM_SELF, tagged with the
 * request's slot here.  The call completes it by sending that message, so
 * every MPI function that takes requests (MPI_Waitall over the program's
 * own requests and ours, MPI_Testsome, statuses, MPI_Request_free) works as
 * MPI defines it.  Persistent requests are persistent receives (MPI_Start
 * posts them again), which generalized requests cannot be (MPI frees them
 * when they complete).  A request never completes early: MPI cannot see
 * the message before the call is done, also through functions this file
 * does not intercept.
 *
 * Nothing runs behind the program's back (hiar starts no threads): the
 * Wait and Test functions drive the pending calls first, i.e. poll the
 * event recorded after a device call's GPU work, or the MPI request of a
 * forwarded staged call, then copy results out and send the message.
 *
 * Order: a call starts when it is made, in the program's order, so hiar
 * sees the same sequence of calls on every rank, blocking and non-blocking
 * alike.  A host-buffer call through hiar runs to its end at the start.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif

#include "base/error.h"
#include "base/log.h"
#include "base/wait.h"
#include "pmpi.h"

/* Tags are slots; MPI_TAG_UB is at least 32767. */
#define REQ_MAX 32767

typedef struct {
    MPI_Request handle; /* the program's: the receive our message completes */
    int tag;
    int persistent, active;
    int freed;          /* MPI_Request_free while active: released when done */
    pmpi_args_t args;
    pmpi_comm_t *s;     /* the served call's comm, NULL when forwarded */
    pmpi_op_t op;
} req_t;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock; /* recursive: an error handler may call MPI */
    req_t **slot;
    int cap;
    atomic_int active;
    MPI_Comm self;
} R = {PTHREAD_ONCE_INIT};

static void init_once(void)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&R.lock, &attr);
    pthread_mutexattr_destroy(&attr);
    R.self = MPI_COMM_NULL;
}

static void lock(void)
{
    pthread_once(&R.once, init_once);
    pthread_mutex_lock(&R.lock);
}

static void unlock(void)
{
    pthread_mutex_unlock(&R.lock);
}

/* Ours: the slot of an MPI request, NULL for the program's own. */
static req_t *find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL)
        return NULL;
    for (int i = 0; i < R.cap; i++)
        if (R.slot[i] && R.slot[i]->handle == handle)
            return R.slot[i];
    return NULL;
}

/* A new request for a, in a free slot (locked). */
static req_t *req_new(const pmpi_args_t *a, int persistent)
{
    req_t *r = calloc(1, sizeof(*r));
    int tag = 0;

    if (!r)
        return NULL;
    if (R.self == MPI_COMM_NULL && PMPI_Comm_dup(MPI_COMM_SELF, &R.self) != MPI_SUCCESS)
        goto err;
    while (tag < R.cap && R.slot[tag])
        tag++;
    if (tag == R.cap) {
        int cap = R.cap ? 2 * R.cap : 16;
        req_t **slot = cap <= REQ_MAX ? realloc(R.slot, sizeof(*slot) * (size_t)cap) : NULL;
        if (!slot)
            goto err;
        for (int i = R.cap; i < cap; i++)
            slot[i] = NULL;
        R.slot = slot;
        R.cap = cap;
    }
    if ((persistent ? PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, tag, R.self, &r->handle)
                    : PMPI_Irecv(NULL, 0, MPI_BYTE, 0, tag, R.self, &r->handle)) != MPI_SUCCESS)
        goto err;
    r->tag = tag;
    r->persistent = persistent;
    r->args = *a;
    r->op = (pmpi_op_t)PMPI_OP_INIT;
    R.slot[tag] = r;
    return r;
err:
    free(r);
    return NULL;
}

static void req_release(req_t *r)
{
    R.slot[r->tag] = NULL;
    free(r);
}

/* The call is done: the program's request completes (locked). */
static void req_complete(req_t *r)
{
    PMPI_Send(NULL, 0, MPI_BYTE, 0, r->tag, R.self);
    r->active = 0;
    atomic_fetch_sub(&R.active, 1);
    if (!r->persistent || r->freed)
        req_release(r);
}

/*
 * Starts r's call: hiar's, else forwarded (staged where needed) into *op.
 * Returns an MPI code.  HIAR_PMPI_STATS counts MPI_Iallreduce calls here,
 * persistent ones at MPI_Allreduce_init.
 */
static int req_run(req_t *r, pmpi_op_t *op)
{
    pmpi_args_t *a = &r->args;
    hiar_dtype_t dtype;
    hiar_op_t hop;
    hiar_result_t rc;

    r->s = NULL;
    if (pmpi_served(a, &r->s, &dtype, &hop)) {
        pmpi_inside_hiar++;
        rc = pmpi_path_run(r->s, a->send == MPI_IN_PLACE ? a->recv : a->send, a->recv, a->count, dtype, hop, op);
        pmpi_inside_hiar--;
        if (rc == HIAR_SUCCESS) {
            if (!r->persistent)
                pmpi_count(1);
            return MPI_SUCCESS;
        }
        if (rc != HIAR_INVALID_ARGUMENT && rc != HIAR_UNSUPPORTED)
            return pmpi_fail(r->s, a->comm, rc);
        HIAR_INFO(MPI, "MPI_Iallreduce forwarded to MPI: %s", hiar_last_error());
        r->s = NULL;
    }
    if (!r->persistent)
        pmpi_count(0);
    return pmpi_forward_start(a, op);
}

/* Polls r; completes it when done (locked). */
static void req_poll(req_t *r)
{
    pmpi_comm_t *s = r->s;
    MPI_Comm comm = r->args.comm;
    hiar_result_t rc;

    if (!r->active || !pmpi_op_test(&r->op, &rc))
        return;
    req_complete(r); /* first: an error handler may call MPI (and poll) again */
    if (rc != HIAR_SUCCESS)
        pmpi_fail(s, comm, rc);
}

/*
 * Not locked: the call may block (host buffers), and another thread's
 * MPI_Wait must not wait for it.  r becomes active, for the others to
 * poll, once its op is set.
 */
static int req_start(req_t *r)
{
    pmpi_op_t op = PMPI_OP_INIT;
    int rc;

    if (r->persistent && (rc = PMPI_Start(&r->handle)) != MPI_SUCCESS)
        return rc;
    rc = req_run(r, &op);
    if (rc != MPI_SUCCESS)
        op = (pmpi_op_t)PMPI_OP_INIT; /* nothing left to run: completes at once */
    lock();
    r->op = op;
    r->active = 1;
    atomic_fetch_add(&R.active, 1);
    req_poll(r);
    unlock();
    return rc;
}

/* Drives every pending call once (locked). */
static void progress(void)
{
    for (int i = 0; i < R.cap; i++)
        if (R.slot[i])
            req_poll(R.slot[i]);
}

/* Whether any of reqs is ours and pending. */
static int any_pending(int n, const MPI_Request *reqs)
{
    int pending = 0;

    if (pmpi_inside_hiar || atomic_load(&R.active) == 0)
        return 0;
    lock();
    for (int i = 0; i < n && !pending; i++) {
        req_t *r = find(reqs[i]);
        pending = r && r->active;
    }
    unlock();
    return pending;
}

/* Drives the pending calls, and MPI's progress (a peer may need it to get to its call). */
static void progress_all(void)
{
    int flag;

    if (pmpi_inside_hiar || atomic_load(&R.active) == 0)
        return;
    lock();
    progress();
    if (R.self != MPI_COMM_NULL)
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, R.self, &flag, MPI_STATUS_IGNORE);
    unlock();
}

/*
 * A wait loop's turn that found nothing done (*since: 0 at the loop's
 * start).  Such a turn takes the lock twice and asks CUDA and MPI, so
 * where ranks outnumber CPUs (pmpi_spin_ns 0, and before the first comm)
 * every turn yields the core, as before HIAR_YIELD; else the loop spins that
 * long first, as hiar's own waits do (base/wait.h says why).
 */
static void idle(uint64_t *since)
{
    if (!*since)
        *since = hiar_now_ns();
    if (hiar_wait_spun(*since, pmpi_spin_ns()))
        sched_yield();
}

/* Until none of reqs is ours and pending. */
static void wait_ours(int n, const MPI_Request *reqs)
{
    uint64_t since = 0;

    while (any_pending(n, reqs)) {
        progress_all();
        idle(&since);
    }
}

/* Whether a request of s (every one when s is NULL) is pending (locked). */
static int comm_pending(const pmpi_comm_t *s)
{
    for (int i = 0; i < R.cap; i++)
        if (R.slot[i] && R.slot[i]->active && (!s || R.slot[i]->s == s))
            return 1;
    return 0;
}

void pmpi_requests_finish(const pmpi_comm_t *s)
{
    uint64_t since = 0;

    for (;;) {
        int pending;
        lock();
        pending = comm_pending(s);
        if (pending)
            progress();
        unlock();
        if (!pending)
            return;
        idle(&since);
    }
}

void pmpi_requests_drain(void)
{
    pmpi_requests_finish(NULL);
    lock();
    for (int i = 0; i < R.cap; i++)
        if (R.slot[i]) { /* persistent, never freed */
            PMPI_Request_free(&R.slot[i]->handle);
            req_release(R.slot[i]);
        }
    free(R.slot);
    R.slot = NULL;
    R.cap = 0;
    if (R.self != MPI_COMM_NULL)
        PMPI_Comm_free(&R.self);
    unlock();
}

/* ---- making requests ---- */

/* Whether the preload takes this call (else MPI's own request serves it); *served: hiar does. */
static int ours(const pmpi_args_t *a, int *served)
{
    pmpi_comm_t *s;
    hiar_dtype_t dtype;
    hiar_op_t hop;

    *served = !pmpi_inside_hiar && pmpi_served(a, &s, &dtype, &hop);
    return *served || (!pmpi_inside_hiar && pmpi_enabled() && pmpi_stage_needed(a));
}

static int make(const pmpi_args_t *a, int persistent, MPI_Request *req)
{
    req_t *r;
    int rc = MPI_SUCCESS;

    lock();
    r = req_new(a, persistent);
    unlock();
    if (!r)
        return MPI_ERR_NO_MEM;
    *req = r->handle;
    if (!persistent && (rc = req_start(r)) != MPI_SUCCESS)
        PMPI_Wait(req, MPI_STATUS_IGNORE); /* completed by req_start */
    return rc;
}

PMPI_EXPORT int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm, MPI_Request *request)
{
    pmpi_args_t a = {sendbuf, recvbuf, count < 0 ? 0 : (size_t)count, datatype, op, comm};
    int served;

    if (count <= 0 || !ours(&a, &served)) {
        if (!pmpi_inside_hiar)
            pmpi_count(0);
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    }
    return make(&a, 0, request);
}

static int allreduce_init(const pmpi_args_t *a, int count, MPI_Info info, MPI_Request *request,
                          int (*mpi_init)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Info,
                                          MPI_Request *))
{
    int served = 0, taken = count > 0 && ours(a, &served);

    if (!pmpi_inside_hiar)
        pmpi_count(served);
    if (!taken)
        return mpi_init(a->send, a->recv, count, a->type, a->op, a->comm, info, request);
    return make(a, 1, request);
}

/* MPI_Allreduce_init (MPI 4) and MPIX_Allreduce_init (Open MPI 4.1): the same entry point. */
#define ALLREDUCE_INIT_ENTRY(name, pmpi_name)                                                            \
    PMPI_EXPORT int name(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, \
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)                             \
    {                                                                                                    \
        pmpi_args_t a = {sendbuf, recvbuf, count < 0 ? 0 : (size_t)count, datatype, op, comm};          \
        return allreduce_init(&a, count, info, request, pmpi_name);                                     \
    }
#ifdef HAVE_MPI_ALLREDUCE_INIT
ALLREDUCE_INIT_ENTRY(MPI_Allreduce_init, PMPI_Allreduce_init)
#endif
#ifdef HAVE_MPIX_ALLREDUCE_INIT
ALLREDUCE_INIT_ENTRY(MPIX_Allreduce_init, PMPIX_Allreduce_init)
#endif

/* ---- starting, waiting, testing, freeing ---- */

/* Our persistent request behind handle, NULL for others. */
static req_t *persistent_of(MPI_Request handle)
{
    req_t *r;

    if (pmpi_inside_hiar || handle == MPI_REQUEST_NULL)
        return NULL;
    lock();
    r = find(handle);
    unlock();
    return r && r->persistent ? r : NULL;
}

PMPI_EXPORT int MPI_Start(MPI_Request *request)
{
    req_t *r = persistent_of(*request);
    int active;

    if (!r)
        return PMPI_Start(request);
    lock();
    active = r->active;
    unlock();
    return active ? MPI_ERR_REQUEST : req_start(r);
}

PMPI_EXPORT int MPI_Startall(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int rc = MPI_Start(&requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

PMPI_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    wait_ours(1, request);
    return PMPI_Wait(request, status);
}

PMPI_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    wait_ours(count, requests);
    return PMPI_Waitall(count, requests, statuses);
}

/* Waitany and Waitsome: test in turn (another request may finish first). */
PMPI_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    uint64_t since = 0;
    int flag = 0, rc;

    if (!any_pending(count, requests))
        return PMPI_Waitany(count, requests, index, status);
    for (;;) {
        progress_all();
        if ((rc = PMPI_Testany(count, requests, index, &flag, status)) != MPI_SUCCESS || flag)
            return rc;
        idle(&since);
    }
}

PMPI_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                             MPI_Status statuses[])
{
    uint64_t since = 0;
    int rc;

    if (!any_pending(incount, requests))
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    for (;;) {
        progress_all();
        if ((rc = PMPI_Testsome(incount, requests, outcount, indices, statuses)) != MPI_SUCCESS || *outcount)
            return rc;
        idle(&since);
    }
}

PMPI_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    progress_all();
    return PMPI_Test(request, flag, status);
}

PMPI_EXPORT int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    progress_all();
    return PMPI_Testall(count, requests, flag, statuses);
}

PMPI_EXPORT int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    progress_all();
    return PMPI_Testany(count, requests, index, flag, status);
}

PMPI_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                             MPI_Status statuses[])
{
    progress_all();
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

PMPI_EXPORT int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    progress_all();
    return PMPI_Request_get_status(request, flag, status);
}

/* An active call goes on to its end; its request is released then. */
PMPI_EXPORT int MPI_Request_free(MPI_Request *request)
{
    req_t *r;

    if (pmpi_inside_hiar || *request == MPI_REQUEST_NULL)
        return PMPI_Request_free(request);
    lock();
    if ((r = find(*request)) != NULL) {
        r->handle = MPI_REQUEST_NULL; /* MPI may reuse the handle */
        if (r->active)
            r->freed = 1;
        else
            req_release(r);
    }
    unlock();
    return PMPI_Request_free(request);
}

/* MPI: calling MPI_Cancel on a collective's request is erroneous. */
PMPI_EXPORT int MPI_Cancel(MPI_Request *request)
{
    req_t *r;
    MPI_Comm comm = MPI_COMM_NULL;

    if (pmpi_inside_hiar || *request == MPI_REQUEST_NULL)
        return PMPI_Cancel(request);
    lock();
    if ((r = find(*request)) != NULL)
        comm = r->args.comm;
    unlock();
    if (comm == MPI_COMM_NULL)
        return PMPI_Cancel(request);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
}
