/*
 * libhiar_mpi.so's own parts (not installed): the per-communicator state
 * (pmpi.c), the path a served call takes on this rank's buffers (path.c),
 * forwarded calls staged through host memory (stage.c) and the requests of
 * non-blocking and persistent calls (request.c).
 */
#ifndef HIAR_PMPI_H
#define HIAR_PMPI_H

#include <stddef.h>

#include <mpi.h>

#include "hiar.h"

/* The only symbols libhiar_mpi.so exports (the link keeps ^MPIX?_ only). */
#define PMPI_EXPORT __attribute__((visibility("default")))

/*
 * Signatures (count, dtype) whose agreed memory kind a communicator keeps
 * (path.c): a training step reduces a handful of bucket sizes and a few
 * metrics, so 16 slots hold them all.
 */
#define PMPI_KIND_SLOTS 16

/* The agreed path of one call signature on a communicator. */
typedef struct {
    size_t count;
    int dtype;  /* -1: slot empty */
    int device; /* every rank reduces device buffers */
    int uses;   /* calls since the kinds were agreed */
} pmpi_kind_slot_t;

/* hiar's state for one MPI communicator (the attribute's value). */
typedef struct pmpi_comm {
    MPI_Comm mpi;      /* the user's communicator */
    hiar_comm_t *hiar; /* NULL: every call on this communicator is forwarded */
    int all_gpu;       /* every rank has a GPU: device buffers may be reduced as they are */
    int device;        /* the GPU current when the hiar comm was made (-1: none) */
    int warned_device; /* buffers on another GPU were reported */
    int warned;        /* a failure was reported */
    pmpi_kind_slot_t kinds[PMPI_KIND_SLOTS];
    void *stream;      /* cudaStream_t of non-blocking device calls (NULL until the first) */
    void *ready;       /* cudaEvent_t: the default stream's work before such a call */
    int inflight;      /* non-blocking device calls on stream not yet finished */
    struct pmpi_comm *prev, *next;
} pmpi_comm_t;

/* Set while this thread is inside hiar: MPI calls from there go to MPI. */
extern _Thread_local int pmpi_inside_hiar;

/* One call's arguments (sendbuf already resolved from MPI_IN_PLACE when served). */
typedef struct {
    const void *send;
    void *recv;
    size_t count;
    MPI_Datatype type;
    MPI_Op op;
    MPI_Comm comm;
} pmpi_args_t;

/*
 * 1 when hiar serves this call (init done, enabled, mapped, a hiar comm):
 * *s, *dtype and *hop are set.  Collective on the first call on comm.
 */
int pmpi_served(const pmpi_args_t *a, pmpi_comm_t **s, hiar_dtype_t *dtype, hiar_op_t *hop);

/* Whether the preload is on (HIAR_PMPI, MPI initialized); reads the parameters once. */
int pmpi_enabled(void);

/*
 * How long the preload's wait loops spin before they yield the core: the
 * shortest of the hiar comms it has made (HIAR_YIELD, base/wait.h; a comm
 * freed since still counts); 0 (yield at every turn) before the first.
 */
unsigned long long pmpi_spin_ns(void);

/* Counts a call for HIAR_PMPI_STATS. */
void pmpi_count(int via_hiar);

/* A failure after hiar started: logged once, then MPI's error path; returns the MPI code. */
int pmpi_fail(pmpi_comm_t *s, MPI_Comm comm, hiar_result_t rc);

/* ---- path.c: one served call on this rank's buffers ---- */

/* What is left of a started call once its GPU work or its MPI request is done. */
typedef struct {
    pmpi_comm_t *s;    /* a served device call (NULL: none) */
    void *event;       /* cudaEvent_t recorded after its GPU work, or NULL */
    MPI_Request inner; /* a forwarded staged call's MPI request, or MPI_REQUEST_NULL */
    void *out;         /* then copy bytes from `from` to out (NULL: nothing) */
    const void *from;
    size_t bytes;
    int copy_device;   /* the copy involves device memory */
    void *host;        /* then free these (malloc, cudaMallocAsync) */
    void *scratch;
} pmpi_op_t;

#define PMPI_OP_INIT {NULL, NULL, MPI_REQUEST_NULL, NULL, NULL, 0, 0, NULL, NULL}

/*
 * Runs one served call.  Blocking (op NULL): returns when the result is in
 * recv.  Started (op set): device calls run on the communicator's stream
 * and op says what is left; host calls finish before it returns.
 */
hiar_result_t pmpi_path_run(pmpi_comm_t *s, const void *send, void *recv, size_t count, hiar_dtype_t dtype,
                            hiar_op_t hop, pmpi_op_t *op);

/* 1 when op is done (*rc its result), 0 while its work is pending.  Local. */
int pmpi_op_test(pmpi_op_t *op, hiar_result_t *rc);

/* Copies between host and device memory, or host and host (synchronous). */
hiar_result_t pmpi_copy(void *dst, const void *src, size_t bytes, int device);

/* The GPU of the memory at ptr, -1 for host memory (and in builds without CUDA). */
int pmpi_pointer_device(const void *ptr);

/* Releases the communicator's stream and event (its calls are finished). */
void pmpi_path_release(pmpi_comm_t *s);

/* ---- stage.c: forwarded calls on device buffers ---- */

/* Whether the MPI library takes device pointers (read once; the same on every rank). */
int pmpi_mpi_takes_device(void);

/* MPI_Allreduce(_c) forwarded, staged through host memory where needed (blocking); counted. */
int pmpi_forward(const pmpi_args_t *a, int large);

/* MPI_Allreduce(_c) to the MPI library as it is. */
int pmpi_forward_plain(const pmpi_args_t *a, int large);

/*
 * MPI_Iallreduce forwarded into op->inner (MPI's request), staged through
 * host memory on device buffers the MPI cannot take (op says what is left).
 */
int pmpi_forward_start(const pmpi_args_t *a, pmpi_op_t *op);

/* Whether a forwarded call on these buffers must be staged on this rank. */
int pmpi_stage_needed(const pmpi_args_t *a);

/* Frees the process-wide staging buffer (MPI_Finalize). */
void pmpi_stage_release(void);

/* ---- request.c ---- */

/* Waits for the pending calls of s (every one when s is NULL): before s goes. */
void pmpi_requests_finish(const pmpi_comm_t *s);

/* Finishes every request and frees the persistent ones left (MPI_Finalize, before hiar comms go). */
void pmpi_requests_drain(void);

#endif
