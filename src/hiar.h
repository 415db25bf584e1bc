/*
 * hiar — Hierarchical IPC AllReduce.
 *
 * Allreduce for MPI-launched jobs: inside a group of ranks that share a host
 * (or a PCIe switch) it reduces through shared memory / CUDA IPC, between
 * groups it uses MPI.  This is the whole public API.
 *
 * Every function returns a hiar_result_t; hiar_last_error() gives the detailed
 * message of the calling thread's last failure.  Outputs are written only on
 * success.
 */
#ifndef HIAR_H
#define HIAR_H

#include <stddef.h>
#include <stdio.h>
/* CUDA code (built with HIAR_WITHOUT_MPI) sees the API without mpi.h. */
#ifndef HIAR_WITHOUT_MPI
#include <mpi.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define HIAR_VERSION_MAJOR 0
#define HIAR_VERSION_MINOR 1
#define HIAR_VERSION_PATCH 0
#define HIAR_VERSION_STRING "0.1.0"
/* Comparable version: 10000 * major + 100 * minor + patch. */
#define HIAR_VERSION_CODE (HIAR_VERSION_MAJOR * 10000 + HIAR_VERSION_MINOR * 100 + HIAR_VERSION_PATCH)

#if defined(HIAR_BUILDING) && defined(__GNUC__)
#define HIAR_API __attribute__((visibility("default")))
#else
#define HIAR_API
#endif

/* Result codes: one list feeds the enum and hiar_strerror(). */
#define HIAR_RESULT_MAP(X)                                                        \
    X(SUCCESS, "success")                                                          \
    X(INVALID_ARGUMENT, "invalid argument (the call had no effect)")              \
    X(UNSUPPORTED, "unsupported dtype, op, memory kind or configuration")         \
    X(NO_MEMORY, "out of host or device memory")                                  \
    X(CUDA_ERROR, "CUDA runtime or driver error")                                 \
    X(MPI_ERROR, "MPI error")                                                     \
    X(SYSTEM_ERROR, "system call failed")                                         \
    X(TIMEOUT, "a peer did not arrive within HIAR_TIMEOUT_MS")                    \
    X(COMM_FAILED, "the communicator failed earlier; abort and re-create it")     \
    X(INVALID_USAGE, "invalid usage (destroyed comm, concurrent calls, ...)")     \
    X(INTERNAL_ERROR, "internal error in hiar")

typedef enum {
#define HIAR_RESULT_ENUM(name, text) HIAR_##name,
    HIAR_RESULT_MAP(HIAR_RESULT_ENUM)
#undef HIAR_RESULT_ENUM
    HIAR_RESULT_COUNT
} hiar_result_t;

typedef enum {
    HIAR_INT32 = 0,
    HIAR_INT64,
    HIAR_FLOAT16,
    HIAR_BFLOAT16,
    HIAR_FLOAT32,
    HIAR_FLOAT64,
    HIAR_UINT8,
    HIAR_INT8,
    HIAR_DTYPE_COUNT
} hiar_dtype_t;

/* Short aliases, as NCCL users write them. */
#define HIAR_BF16 HIAR_BFLOAT16
#define HIAR_FP16 HIAR_FLOAT16
#define HIAR_FP32 HIAR_FLOAT32
#define HIAR_FP64 HIAR_FLOAT64

/*
 * Reduction ops.  HIAR_AVG is the sum divided by the number of ranks
 * (integers: truncated toward zero).  HIAR_MIN/HIAR_MAX propagate NaN: a NaN
 * on any rank gives NaN.  HIAR_SUM/HIAR_PROD follow IEEE arithmetic.
 */
typedef enum {
    HIAR_SUM = 0,
    HIAR_PROD,
    HIAR_MIN,
    HIAR_MAX,
    HIAR_AVG,
    HIAR_OP_COUNT
} hiar_op_t;

typedef struct hiar_comm hiar_comm_t;

/* A cudaStream_t, or NULL for the default stream; ignored for host buffers. */
typedef void *hiar_stream_t;

/*
 * Configuration passed to hiar_comm_create.  Initialise with
 *     hiar_config_t cfg = HIAR_CONFIG_INIT;
 * `settings` holds parameters as "NAME=value" pairs separated by ';' or
 * newlines, e.g. "HIAR_ALGO=oneshot;HIAR_TIMEOUT_MS=500", with the names of
 * doc/params.md.  Precedence: settings > HIAR_* environment > default, for
 * the parameters of communicator scope; the process-wide ones (HIAR_DEBUG*,
 * HIAR_PMPI*) come from the environment only, and settings naming them fail
 * with HIAR_INVALID_ARGUMENT.
 */
typedef struct hiar_config {
    size_t size;          /* sizeof(hiar_config_t), set by HIAR_CONFIG_INIT */
    unsigned int version; /* HIAR_VERSION_CODE the caller was built with */
    const char *settings; /* NULL: environment and defaults only */
} hiar_config_t;

#define HIAR_CONFIG_INIT {sizeof(hiar_config_t), HIAR_VERSION_CODE, NULL}

/* Name of a result code; never NULL. */
HIAR_API const char *hiar_strerror(hiar_result_t rc);

/* Detailed message of the calling thread's last failure ("" if none). */
HIAR_API const char *hiar_last_error(void);

/* The level of a log line, as HIAR_DEBUG names them. */
#define HIAR_LOG_LEVEL_WARN 1
#define HIAR_LOG_LEVEL_INFO 2
#define HIAR_LOG_LEVEL_TRACE 3

/*
 * Receives one log line: level is HIAR_LOG_LEVEL_*, subsys the subsystem
 * ("INIT", "SHM", ...), line the whole line as it would be written, without
 * the newline, e.g.
 *     node01:4242:3 hiar WARN SHM cannot reserve ... in /dev/shm (shm.c:72)
 * The strings are valid during the call only.
 */
typedef void (*hiar_log_handler_t)(void *arg, int level, const char *subsys, const char *line);

/*
 * Process-wide: sends every log line that HIAR_DEBUG and HIAR_DEBUG_SUBSYS
 * let through to handler(arg, ...) instead of stderr or HIAR_DEBUG_FILE
 * (for programs that embed hiar, e.g. into Python's logging); NULL restores
 * the file.  Any thread may call it at any time, before the first
 * hiar_comm_create included.  The handler runs on the thread that logs,
 * which is the thread inside a hiar call (hiar starts no threads), one call
 * at a time under a lock of hiar's; once hiar_log_set_handler returns, the
 * old handler is not running and is not called again, so its arg may be
 * freed.  The handler must not call hiar (its lines would go to the file;
 * hiar_log_set_handler fails with HIAR_INVALID_USAGE), and a lock it takes
 * (Python's GIL) must not be held by threads while they call hiar.
 */
HIAR_API hiar_result_t hiar_log_set_handler(hiar_log_handler_t handler, void *arg);

/* Run-time library version, e.g. "0.1.0". */
HIAR_API const char *hiar_version(void);

/* Size in bytes of one element of dtype, 0 for an unknown dtype. */
HIAR_API size_t hiar_dtype_size(hiar_dtype_t dtype);

/* Names as hiar-bench prints them ("bfloat16", "sum"); NULL when unknown. */
HIAR_API const char *hiar_dtype_name(hiar_dtype_t dtype);
HIAR_API const char *hiar_op_name(hiar_op_t op);

/*
 * Create a communicator over the ranks of `mpi_comm` (collective over it; the
 * MPI communicator is duplicated, so the caller may free its own).  Groups
 * ranks (HIAR_GROUPS, HIAR_GROUP_LEVEL, HIAR_HOST_ID) and sets up the
 * shared-memory transport.  cfg may be NULL.  Blocks the calling thread.
 */
#ifndef HIAR_WITHOUT_MPI
HIAR_API hiar_result_t hiar_comm_create(MPI_Comm mpi_comm, const hiar_config_t *cfg,
                                        hiar_comm_t **out);

/*
 * hiar_comm_create for callers that cannot name MPI_Comm, whose type differs
 * between MPI ABIs (a pointer in Open MPI, an int in MPICH): `fcomm` is the
 * communicator's Fortran handle, MPI_Comm_c2f(comm) or mpi4py's
 * comm.py2f(), an integer in every ABI.  HIAR_INVALID_ARGUMENT when fcomm
 * names no communicator (under MPICH-derived MPIs, whose MPI_Comm_f2c
 * cannot tell: when fcomm lacks a communicator handle's bit pattern);
 * otherwise as hiar_comm_create.
 */
HIAR_API hiar_result_t hiar_comm_create_f(MPI_Fint fcomm, const hiar_config_t *cfg, hiar_comm_t **out);
#endif

/* Collective: releases everything.  comm may be NULL (no-op). */
HIAR_API hiar_result_t hiar_comm_destroy(hiar_comm_t *comm);

/*
 * Not collective: releases the communicator without talking to peers, e.g.
 * after HIAR_TIMEOUT.  Peers still waiting on this rank time out.
 */
HIAR_API hiar_result_t hiar_comm_abort(hiar_comm_t *comm);

/*
 * Errors of earlier asynchronous calls (device buffers): *error becomes
 * HIAR_TIMEOUT once a kernel gave up waiting for a peer, HIAR_COMM_FAILED
 * after any earlier failure, HIAR_SUCCESS otherwise.  Does not wait for the
 * GPU: poll it, e.g. while cudaStreamQuery reports work pending.
 */
HIAR_API hiar_result_t hiar_comm_get_async_error(hiar_comm_t *comm, hiar_result_t *error);

/* Writes the ranks, the groups and why they were chosen, and the paths. */
HIAR_API hiar_result_t hiar_comm_describe(const hiar_comm_t *comm, FILE *out);

/*
 * This rank's group: the grouping of host buffers (device = 0) or of device
 * buffers (device = 1; in builds without CUDA or on a rank without GPU, the
 * host grouping).  Any output may be NULL.  Groups are numbered by their
 * smallest rank; local_rank is this rank's position in its group.
 */
HIAR_API hiar_result_t hiar_comm_group(const hiar_comm_t *comm, int device, int *ngroups, int *group,
                                       int *local_rank, int *local_size);

/* Rank and size of comm (as in the MPI communicator it was created from). */
HIAR_API hiar_result_t hiar_comm_rank(const hiar_comm_t *comm, int *rank);
HIAR_API hiar_result_t hiar_comm_size(const hiar_comm_t *comm, int *size);

/*
 * Allreduce `count` elements of `dtype` with `op` over all ranks of comm;
 * in place when sendbuf == recvbuf.  Buffers must not otherwise overlap and
 * must be aligned to the element size.  count == 0 is a no-op.
 *
 * Collective: every rank calls it with the same count, dtype and op, in the
 * same order as its other calls on comm, and from one thread at a time.
 *
 * Host buffers: synchronous, blocks the calling thread until the result is in
 * recvbuf; `stream` is ignored.  Every rank gets bit-identical results.
 *
 * Device buffers (CUDA builds), one group with CUDA IPC: asynchronous on
 * `stream` (a cudaStream_t, NULL for the legacy default stream), and can be
 * captured in a CUDA graph; the inputs are read when the kernel runs.  A comm of
 * one rank does the same with a copy on `stream` (in place: nothing to do),
 * whatever HIAR_ALGO says.  All ranks must pass device buffers in the same
 * call.  One call in flight per comm: issue calls on one stream.  A peer that
 * never arrives makes the kernel give up after HIAR_TIMEOUT_MS; that call's
 * result is undefined, and the next call (or hiar_comm_get_async_error) returns
 * HIAR_TIMEOUT.  Device buffers over several groups, or in a group of several
 * ranks without IPC: the call blocks the calling thread through the MPI step,
 * reads the inputs before it returns, and leaves the rest of the work (copies
 * back, all-gather kernel) on `stream`: wait for the stream before reading
 * recvbuf, as with one group, and issue the comm's calls on one stream (the
 * next call reuses pinned buffers that copies left on the stream may still
 * read).  These calls cannot be captured in a CUDA graph: HIAR_INVALID_USAGE,
 * before anything is sent, and the communicator stays usable.
 *
 * On HIAR_TIMEOUT the communicator has failed: later calls return
 * HIAR_COMM_FAILED and the caller should hiar_comm_abort() it.  A CUDA
 * graph captured before does not ask: its replays after a timeout leave
 * undefined results (check hiar_comm_get_async_error).
 */
HIAR_API hiar_result_t hiar_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                      hiar_dtype_t dtype, hiar_op_t op, hiar_comm_t *comm,
                                      hiar_stream_t stream);

/*
 * Allreduce + residual add + RMSNorm, the step after attention and after the
 * MLP in tensor-parallel decode, in one call.  input, residual and out are
 * [tokens x hidden] row-major of dtype; weight is [hidden] of weight_dtype:
 *
 *     s = allreduce_sum(input)                          (over comm, as dtype)
 *     r = residual ? (residual += s) : s                (rounded to dtype, written back)
 *     out[t] = r[t] / sqrt(mean(r[t]^2) + eps) * w      (w = weight, or 1 + weight
 *                                                        with HIAR_RMSNORM_GEMMA)
 *
 * computed in f32 and rounded once to dtype.  dtype and weight_dtype are each
 * HIAR_FLOAT32, HIAR_FLOAT16 or HIAR_BFLOAT16.  out == input is allowed (in
 * place); residual may be NULL and must not overlap input, out or weight.
 * residual holds the same values on every rank, as in tensor parallelism
 * (larger device calls add a row's sum to the residual of the rank that
 * owns the row and hand r to the others).  Every rank gets the same bits in
 * out and residual.  tokens == 0 is a no-op.
 *
 * The collective rules, memory kinds, streams, graph capture and failures
 * are those of hiar_allreduce, with weight and residual of the same memory
 * kind as input.  Device buffers in one group with CUDA IPC (or pinned host
 * memory) take one kernel: up to the one-shot limit (HIAR_ONESHOT_MAX, else
 * the 512 KB packet area on any number of ranks; 16 KB over pinned host
 * memory) with hidden x the element size a multiple of 16 bytes, each row
 * reduced, added, normalised and written once; above it (while the rows
 * fit a slot, HIAR_BUFFER_SIZE / 3; not where the plan takes pull:
 * HIAR_ALGO=pull or tuning's choice), each rank reduces and normalises the
 * rows it owns and sends r and the row's scale to the others.
 * Elsewhere the call is hiar_allreduce into out followed by a norm kernel on
 * the stream (host buffers: a host loop), with the same result.
 */
#define HIAR_RMSNORM_GEMMA 1u

HIAR_API hiar_result_t hiar_allreduce_rmsnorm(const void *input, void *residual, const void *weight, void *out,
                                              size_t tokens, size_t hidden, hiar_dtype_t dtype,
                                              hiar_dtype_t weight_dtype, float eps, unsigned flags,
                                              hiar_comm_t *comm, hiar_stream_t stream);

/*
 * Registered memory: zero-copy outputs for device buffers.  A two-shot call
 * (large messages, inside one group with CUDA IPC) whose recvbuf lies at the
 * same offset of registered memory on every rank of the group, with count
 * elements inside it, writes the result straight into every rank's recvbuf
 * instead of copying it out of hiar's own buffers: less memory traffic, a
 * higher bandwidth (doc/guide.md has the numbers).  Any other call works
 * as before; sendbuf need not be registered.
 *
 * All four are collective over comm: every rank calls them, in the same
 * order as its other calls on comm, with its own pointer and size; they
 * succeed or fail on every rank together (an error on one rank is reported
 * on all), but for a comm this rank cannot use (destroyed, failed, or in
 * use by another thread), which fails at once as hiar_allreduce does.
 * HIAR_UNSUPPORTED where a rank has no GPU, or CUDA cannot share the memory
 * with other processes (stream-ordered pools, VMM and managed memory;
 * cudaMalloc'd memory can be shared).  A CUDA graph that captured a call
 * into registered memory writes into the peers' memory through that
 * registration: do not replay it after the memory is deregistered or freed.
 *
 * hiar_mem_alloc: bytes of device memory on the comm's GPU, registered.
 * hiar_mem_free: releases it, after the GPU work that uses it is done.
 * hiar_mem_register: registers [ptr, ptr + bytes) of the caller's device
 *   memory; the smallest bytes over the group is what counts.
 * hiar_mem_deregister: undoes hiar_mem_register (ptr as registered).
 * hiar_comm_destroy releases what is still registered, and frees what
 * hiar_mem_alloc gave (hiar_comm_abort and a failed comm leave it
 * allocated: peers may still write into it).
 */
HIAR_API hiar_result_t hiar_mem_alloc(hiar_comm_t *comm, size_t bytes, void **ptr);
HIAR_API hiar_result_t hiar_mem_free(hiar_comm_t *comm, void *ptr);
HIAR_API hiar_result_t hiar_mem_register(hiar_comm_t *comm, void *ptr, size_t bytes);
HIAR_API hiar_result_t hiar_mem_deregister(hiar_comm_t *comm, void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* HIAR_H */
