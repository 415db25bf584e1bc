/*
 * hiar-bench's shared state: the implementations it compares, its options,
 * one measurement's result, and the bench_t that every part of it works on.
 * The benchmark's parts, one idea to a file:
 *
 *   hiar-bench.c    main, the hiar calls, the check and the timing loop
 *   bench-opts.c    the command line: options, usage, what the build allows
 *   bench-mem.c     the GPU, its stream, buffers and copies (host or device)
 *   bench-mpi.c     MPI_Allreduce as a user calls it (half ops, staging, avg);
 *                   --split's inter and link
 *   bench-nccl.c    ncclAllReduce (built with NCCL only)
 *   bench-print.c   the '#' lines, the table, CSV or JSON rows, the summary
 *   bench-check.c   inputs and the expected result (bench-check.h)
 *   bench-split.c   --split's communicators and columns (bench-split.h)
 *   bench-decode.c  --decode: allreduce + RMSNorm in CUDA graphs (bench-decode.h)
 *   bench-norm.cu   the norm kernel that follows a plain allreduce there
 *   bench-train.c   --train: DDP's bucket allreduces beside backward kernels (bench-train.h)
 *   bench-backward.cu  the backward kernel there: a set time on a few SMs
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdio.h>

#include <mpi.h>
#ifdef HIAR_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef HIAR_HAVE_NCCL
#include <nccl.h>
/* NCCL's symmetric windows (ncclCommWindowRegister, nccl-sym): 2.27 and later. */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
#define BENCH_NCCL_SYM 1
#endif
#endif

#include "bench-split.h"
#include "hiar.h"

/* The compared implementations, then --split's parts of hiar (bench-split.h); bench_impls' index. */
enum {
    IMPL_HIAR, IMPL_MPI, IMPL_NCCL, IMPL_NCCL_SYM, IMPL_MAIN_COUNT,
    IMPL_HIAR_INTRA = IMPL_MAIN_COUNT, IMPL_MPI_SHARD, IMPL_MPI_LINK, IMPL_HIAR_FLAT, IMPL_COUNT
};
#define IMPL_BIT(_impl) (1u << (_impl))

typedef enum { MODE_AUTO, MODE_HOST, MODE_DEVICE } bench_mode_t;

/* -n auto (hiar-bench.c): eager calls in rounds of the implementations in turn, for about this long a size
 * in all, at most this many calls; graphs replayed back to back for as long, at most this many times. */
#define BENCH_AUTO_SECONDS 0.02
/* ... and at least this many calls, the count -n auto takes where it does not apply (nccl-tests' default) */
#define BENCH_AUTO_MIN_ITERS 20
#define BENCH_AUTO_ROUNDS 5
#define BENCH_AUTO_MAX_ITERS 10000
#define BENCH_AUTO_MAX_REPLAYS 500
#define BENCH_AUTO_PROBE_SECONDS 0.001

/* Most values of --tokens and --hidden. */
#define BENCH_LIST_MAX 16

typedef struct {
    size_t min_bytes, max_bytes;
    int factor;
    hiar_dtype_t dtype;
    hiar_op_t op;
    int iters, warmup;
    int iters_auto; /* -n auto: eager calls of each size for about AUTO_SECONDS (hiar-bench.c), at least iters */
    bench_mode_t mode;
    unsigned impls; /* IMPL_BIT per implementation; 0: the default set */
    int csv, json, check, graph, inplace; /* csv, json: rows on stdout, '#' lines on stderr */
    const char *json_file; /* --json-file: JSON rows into this file as well (rank 0) */
    int mpi_device; /* pass device buffers to MPI_Allreduce as they are */
    int split;      /* also time hiar's parts: intra, inter, link, flat */
    int flat_only;  /* --flat: of the parts, flat only */
    int overlap;    /* --overlap: time how soon a call returns behind OVERLAP_MS of work on the stream */
    int sync;       /* --sync: wait for the stream after every timed call */
    int reg;        /* send/recv from hiar_mem_alloc, registered with NCCL too */
    int decode;     /* --decode: allreduce + RMSNorm steps of tensor-parallel decode (bench-decode.c) */
    size_t tokens[BENCH_LIST_MAX], hidden[BENCH_LIST_MAX];
    int ntokens, nhidden, layers;
    int train;           /* --train: data-parallel training steps (bench-train.c) */
    int buckets;         /* gradient buckets per step */
    size_t bucket_bytes; /* bytes per bucket; -b and -e are set to it */
    int compute_us;      /* per backward kernel; 0: as long as hiar's comm-only time over buckets */
    int compute_sms;     /* blocks per backward kernel */
    int tune;            /* --tune: hiar's crossovers measured and cached (HIAR_TUNE=1), nothing else */
} options_t;

/* Ordered: ranks agree on the worst status so that they all take one branch. */
typedef enum { RUN_OK, RUN_NA, RUN_FAILED } run_t;

typedef struct {
    run_t status;
    double time_us;  /* max over ranks of the per-rank mean */
    long long wrong; /* wrong elements summed over ranks; -1: not checked */
    double median_us, max_us; /* --overlap: max over ranks of the per-rank median and most of a call */
} result_t;

typedef struct {
    options_t opt;
    int rank, nranks;
    int device; /* send/recv are GPU memory */
    int ngpu;   /* GPUs of the rank with fewest (0 in host mode, but for --tune) */
    size_t esize;
    void *send, *recv; /* recv == send with --inplace */
    void *host;        /* host memory: inputs, results to check, MPI staging */
    hiar_comm_t *comm; /* NULL when hiar is not measured */
    bench_split_t split; /* --split's communicators */
    MPI_Datatype mpi_type;
    MPI_Op mpi_op;
    int mpi_user_op; /* mpi_op was created here (half types) */
    /* The timed MPI_Allreduce runs on its own communicator, made after the GPU
     * is chosen: a PMPI tool (libhiar_mpi.so) that sets up per communicator
     * at the first call then sees the right GPU, not the bench's bookkeeping. */
    MPI_Comm mpi_comm;
    int mpi_staged;  /* MPI sees device data through b->host */
    /* --split's link sends this rank's shards from b->send (link_device: MPI takes device
     * memory) or b->host, as hiar does, and receives each counterpart's into link_recv. */
    int link_device;
    void *link_recv;       /* (ngroups - 1) times the largest shard, on the same kind of memory */
    MPI_Request *link_req; /* [2 (ngroups - 1)]: one receive and one send per counterpart */
    int dead[IMPL_COUNT];            /* failed once: not run again */
    char na_reason[IMPL_COUNT][256]; /* why an implementation showed n/a */
    FILE *info; /* '#' lines: stdout, or stderr with --csv or --json */
    FILE *json_out; /* --json-file, open on rank 0 */
    double copy_gbps;   /* device buffers: rank 0's pinned device-to-host copy, the reference line */
    double copy_shared_gbps; /* every rank copying both ways at once: a rank's and direction's rate, slowest rank */
    size_t copy_bytes;
#ifdef HIAR_HAVE_CUDA
    cudaStream_t stream;
#endif
#ifdef HIAR_HAVE_NCCL
    ncclComm_t nccl;
    void *nccl_reg[2]; /* --register: ncclCommRegister's handles of send and recv */
#endif
#ifdef BENCH_NCCL_SYM
    /* nccl-sym: a communicator of its own, and send and recv (one buffer in place) from ncclMemAlloc,
     * registered as symmetric windows (bench-nccl.h) */
    ncclComm_t nccl_sym;
    void *sym_send, *sym_recv;
    ncclWindow_t sym_win[2];
#endif
} bench_t;

/*
 * One implementation, indexed by IMPL_*.  What several share is set up
 * before any setup here and goes after every teardown: the MPI communicator
 * and types (mpi, mpi-shard), the hiar comm (hiar, --split, --register's
 * buffers), the buffers (NCCL registers them).  NULL: nothing to do.
 */
typedef struct {
    const char *name; /* what --impl takes and the output shows */
    void (*setup)(bench_t *b);
    run_t (*run)(bench_t *b, int impl, size_t count); /* one allreduce of count elements */
    void (*teardown)(bench_t *b);                      /* after a failure (b->dead) too */
} bench_impl_t;

/* hiar-bench.c; run is NULL for NCCL when it is not built (--impl nccl is refused). */
extern const bench_impl_t bench_impls[IMPL_COUNT];

#define ERR_LEN 256

/* --overlap: work ahead of every timed call on the stream, in milliseconds. */
#define OVERLAP_MS 5

/* ---- errors */

/* The message with this rank's number on stderr, then MPI_Abort (hiar-bench.c). */
__attribute__((format(printf, 1, 2), noreturn)) void bench_die(const char *fmt, ...);

#ifdef HIAR_HAVE_CUDA
#define CUDA_DIE(_call)                                                                    \
    do {                                                                                   \
        cudaError_t cuda_err_ = (_call);                                                   \
        if (cuda_err_ != cudaSuccess)                                                      \
            bench_die("%s: %s", #_call, cudaGetErrorString(cuda_err_));                    \
    } while (0)
#endif

/* ---- shared by the modes (hiar-bench.c) */

/* The worst status over the ranks (a collective), so that they all take one branch. */
run_t bench_agree(run_t status);
/* hiar device calls: their asynchronous failure, once the stream is idle; status where not hiar or not OK. */
run_t bench_async_status(bench_t *b, int impl, run_t status);
/* The check's tolerance for AVG, in ulps of the inputs: 0 for other ops. */
int bench_avg_ulps(const bench_t *b, int impl);
/* The median of v[0..n) (n > 0; sorts v). */
double bench_median(double *v, int n);

static inline int has(const bench_t *b, int impl)
{
    return (b->opt.impls & IMPL_BIT(impl)) != 0;
}

/* The buffer an implementation reduces from (recv 0) or into (recv 1): b->send or b->recv, but nccl-sym's own. */
static inline void *buffer_of(const bench_t *b, int impl, int recv)
{
#ifdef BENCH_NCCL_SYM
    if (impl == IMPL_NCCL_SYM)
        return recv ? b->sym_recv : b->sym_send;
#endif
    (void)impl;
    return recv ? b->recv : b->send;
}

/*
 * The result check applies to all but --split's inter (several shards, each
 * over its own ranks) and link (point-to-point: nothing is reduced).
 */
static inline int checked(const bench_t *b, int impl)
{
    return b->opt.check && impl != IMPL_MPI_SHARD && impl != IMPL_MPI_LINK;
}

#endif
