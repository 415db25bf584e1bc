/*
 * Layout and kernel arguments of the CUDA IPC transport (cuda/ only).
 *
 * Each rank makes one IPC-exported allocation; peers map it.  Inside it:
 *
 *   | signals (flags, 128 B apart) | LL packets: 2 parities x n senders | data: 4 slots |
 *
 * Calls are numbered by an epoch kept on the device (so CUDA graphs replay
 * correctly), one copy per block index so that no block waits for another:
 * block b reads and advances copy b, and block 0 also advances the copies of
 * the blocks the call did not launch.  A call's buffers are
 * chosen by the epoch's parity: a rank writes into a peer's buffers of parity
 * p only in call e, whose previous use was call e-2; during call e-1 it
 * received something the peer sent in call e-1, i.e. after the peer's kernel
 * e-2 had finished reading (and, in the LL packet buffers, putting the
 * "nothing pending" mark back: oneshot.cu).  So no call needs a start or
 * end barrier.
 */
#ifndef HIAR_IPC_H
#define HIAR_IPC_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "cuda/api.h"
#include "hiar.h"

#define HIAR_IPC_MAX_RANKS HIAR_IPC_MAX_GROUP
/* Blocks of a kernel: one-shot kernels use up to 128 (one per SM), two-shot
 * of large messages up to max_blocks (api.h; see hiar_blocks_for); fewer
 * where ranks share a GPU (hiar_ipc_set_launch). */
#define HIAR_IPC_MAX_BLOCKS HIAR_IPC_BLOCKS_MAX
#define HIAR_IPC_ONESHOT_BLOCKS HIAR_IPC_BLOCKS_DEFAULT
/* Flags 128 bytes apart: no two flags share a line on PCIe or NVLink. */
#define HIAR_IPC_FLAG_STRIDE 128
/* Largest one-shot (LL) message: packets of integer types carry 8 data bytes in 16. */
#define HIAR_IPC_LL_MAX_BYTES (512 * 1024)
#define HIAR_IPC_LL_AREA_BYTES (2 * HIAR_IPC_LL_MAX_BYTES)
#define HIAR_IPC_SIGNAL_BYTES (2 * HIAR_IPC_MAX_BLOCKS * HIAR_IPC_MAX_RANKS * HIAR_IPC_FLAG_STRIDE + \
                               HIAR_IPC_MAX_RANKS * HIAR_IPC_FLAG_STRIDE)


/*
 * Per-rank device state (not shared): calls completed, per block index.  64
 * bits: flag values are epoch << 24 | step, compared modulo 2^64
 * (wait_peers), so a flag reads as old while it is less than 2^39 calls
 * behind: 16 days of back-to-back calls of 2.5 us for a block index no call
 * used meanwhile.  With 32 bits, values went back to 0 after 2^32 calls, 3
 * hours at that rate, and a waiter took old flags for new ones.
 */
/* Phase marks (api.h hiar_ipc_marks_lines): the stamps, in order, and the kernels marked. */
enum { HIAR_MARK_ENTRY, HIAR_MARK_BEGUN, HIAR_MARK_PUSHED, HIAR_MARK_GATHERED, HIAR_MARK_SUMMED, HIAR_MARK_STORED,
       HIAR_MARK_FINISHED, HIAR_MARKS };
enum { HIAR_MARK_LL, HIAR_MARK_LL_NORM, HIAR_MARK_KINDS };

typedef struct {
    uint64_t epoch[HIAR_IPC_MAX_BLOCKS];
    /* The fused norm's partial sums of squares, per block: epoch << 32 | f32 bits (cuda/norm.cu). */
    uint64_t norm_partial[HIAR_IPC_MAX_BLOCKS];
    /* Phase marks: this call's stamps (0: not reached), its entry kept at BEGUN, and per kernel the ns since
     * the stamp before summed per phase, [0] the calls. */
    uint64_t mark_stamp[HIAR_MARKS];
    uint64_t mark_entry;
    uint64_t mark_sum[HIAR_MARK_KINDS][HIAR_MARKS];
} hiar_ipc_state_t;

typedef struct {
    char *base[HIAR_IPC_MAX_RANKS]; /* every rank's allocation, mapped here (own included) */
    int n, me;
    hiar_ipc_state_t *state;
    const hiar_ipc_control_t *ctl;
    int *failed; /* the comm's, or the transport's own (hiar_cuda_control_t) */
    uint64_t timeout_ns;
    size_t slot_bytes; /* one of the 4 data slots */
    /* Most blocks of each kernel, the same on every rank of the group (hiar_ipc_set_launch). */
    unsigned max_blocks, push_blocks, ll_blocks;
    int pdl;             /* launch for programmatic dependent launch (hiar_ipc_launch) */
    int clusters;        /* kernels may run in thread-block clusters (sm_90: hiar_ipc_launch_clusters) */
    int host_memory;     /* the buffers are pinned host memory (hiar_ipc_create_pinned), every rank's: one kind a transport */
    size_t ll_offset, data_offset;
} hiar_ipc_args_t;

/* Offsets of the two flag arrays and the probe words inside the signals. */
__host__ __device__ static inline size_t hiar_ipc_flag_offset(int which, int block, int sender)
{
    return (((size_t)which * HIAR_IPC_MAX_BLOCKS + (size_t)block) * HIAR_IPC_MAX_RANKS + (size_t)sender) *
           HIAR_IPC_FLAG_STRIDE;
}
#define HIAR_IPC_FLAG_RS 0
#define HIAR_IPC_FLAG_AG 1
/* Beside a block's RS flag, in the same line: the tag of its output (hiar_ipc_direct_t). */
__host__ __device__ static inline size_t hiar_ipc_tag_offset(int block, int sender)
{
    return hiar_ipc_flag_offset(HIAR_IPC_FLAG_RS, block, sender) + sizeof(uint64_t);
}
__host__ __device__ static inline size_t hiar_ipc_probe_offset(int sender)
{
    return hiar_ipc_flag_offset(2, 0, 0) + (size_t)sender * HIAR_IPC_FLAG_STRIDE;
}

/*
 * Launches kernel k with grid x block threads on stream, where a->pdl with
 * the attribute that lets it start before the previous kernel on the stream
 * ends (the kernel waits for it in begin_call, device.cuh), and with cluster
 * > 1 in thread-block clusters of that many blocks (grid a multiple of it;
 * a->clusters says whether the kernels can).  Measured on 2 H200 in CUDA
 * graphs: see doc/guide.md.
 */
#ifdef __CUDACC__
template <typename... P, typename... A>
static cudaError_t hiar_ipc_launch_clusters(const hiar_ipc_args_t *a, void (*k)(P...), unsigned grid, unsigned block,
                                            unsigned cluster, cudaStream_t stream, A... args)
{
    cudaLaunchAttribute attr[2];
    cudaLaunchConfig_t cfg = {};

    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.stream = stream;
    cfg.attrs = attr;
    if (a->pdl) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[cfg.numAttrs++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster > 1) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[cfg.numAttrs].val.clusterDim.x = cluster;
        attr[cfg.numAttrs].val.clusterDim.y = 1;
        attr[cfg.numAttrs++].val.clusterDim.z = 1;
    }
    return cudaLaunchKernelEx(&cfg, k, args...);
}

template <typename... P, typename... A>
static cudaError_t hiar_ipc_launch(const hiar_ipc_args_t *a, void (*k)(P...), unsigned grid, unsigned block,
                                   cudaStream_t stream, A... args)
{
    return hiar_ipc_launch_clusters(a, k, grid, block, 1, stream, args...);
}
#endif

/* The fewest blocks of the LL (ll = 1: also the hierarchical LL kernel) or push / pull one-shot kernel, or of the
 * two-shot kernel, of any dtype (and for LL, op and packet format) that fit
 * one SM; and the PTX architecture the kernels were built from for this
 * device (90 for sm_90), 0 if unknown. */
int hiar_ipc_oneshot_per_sm(int ll);
int hiar_ipc_twoshot_per_sm(void);
/* ... and of the kernels with a norm fused in: the LL one (ll = 1), which counts in the LL caps, and the
 * rows one, which counts in the two-shot caps. */
int hiar_ipc_norm_per_sm(int ll);
/* Whether the fused LL kernel's calls in clusters of `sharers` ranks on one GPU fit it at once (norm.cu). */
int hiar_ipc_norm_clusters_fit(unsigned sharers);
int hiar_ipc_ptx_version(void);

/*
 * Launchers (oneshot.cu, twoshot.cu), reading the call: one-shot LL, push or
 * pull (kernel); two-shot of the steps (HIAR_STEP_ALLREDUCE: the whole call in the
 * group, divided, into the out_window if any; a half: call->nshards shards,
 * undivided, for the hierarchical path) in chunks of `chunk` bytes.
 */
cudaError_t hiar_ipc_launch_oneshot(const hiar_ipc_args_t *a, const hiar_call_t *c, hiar_kernel_t kernel);
/*
 * The call with c->norm fused into one kernel (cuda/norm.cu): the LL
 * one-shot kernel with a norm epilogue where the plan says LL, else the
 * rows kernel.  hiar_ipc_norm_fits says whether one kernel can take it:
 * LL rows of whole 16-byte packets, or a push or two-shot plan whose
 * rows fit a slot.
 */
int hiar_ipc_norm_fits(const hiar_ipc_args_t *a, const hiar_call_t *c);
cudaError_t hiar_ipc_launch_norm(const hiar_ipc_args_t *a, const hiar_call_t *c);
cudaError_t hiar_ipc_launch_twoshot(const hiar_ipc_args_t *a, const hiar_call_t *c, hiar_step_t steps, size_t chunk);
/*
 * The transports of one kernel over groups: this rank's group (n == 1 for
 * a group of one, which has no group steps and nothing mapped) and the
 * counterparts of every shard it owns, in shard order (a rank of a smaller
 * group stands in for its group in several sets).  Each keeps its own
 * epoch, parity and waits.
 */
typedef struct {
    hiar_ipc_args_t group;
    hiar_ipc_args_t between[HIAR_IPC_MAX_GROUP];
    int nbetween;
    unsigned ll_blocks, max_blocks; /* most blocks of the LL and two-shot kernels: the same on every rank */
} hiar_ipc_hier_args_t;

/* Over groups in one kernel: the latency path (LL in the group, then between groups; oneshot.cu) and the
 * bandwidth path (reduce-scatter in the group and between groups, all-gather back; twoshot.cu) in chunks
 * of c->plan.chunk. */
cudaError_t hiar_ipc_launch_hier_ll(const hiar_ipc_hier_args_t *h, const hiar_call_t *c);
cudaError_t hiar_ipc_launch_hier_twoshot(const hiar_ipc_hier_args_t *h, const hiar_call_t *c);

#endif
