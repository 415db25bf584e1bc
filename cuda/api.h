/*
 * The only cuda/ header src/ includes: C entry points into the CUDA code
 * (runtime glue, CUDA IPC memory, the IPC transport's buffers and kernels).
 * Nothing here needs MPI; src/transport exchanges the handles.
 */
#ifndef HIAR_CUDA_API_H
#define HIAR_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#include "base/call.h"
#include "base/pieces.h"
#include "base/range.h"
#include "hiar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *on_device = 1 when ptr is device (or managed) memory, 0 for host memory. */
hiar_result_t hiar_cuda_is_device_pointer(const void *ptr, int *on_device);
/* *device = the GPU of device (or managed) memory at ptr, -1 for host memory (one CUDA query). */
hiar_result_t hiar_cuda_pointer_device(const void *ptr, int *device);

/* The current device and its PCI bus id ("0000:3b:00.0"); *device = -1 without a GPU. */
hiar_result_t hiar_cuda_current_device(int *device, char bus_id[32]);

/* CUDA's UUID of device (the MIG instance's under MIG); left zero if CUDA cannot say. */
void hiar_cuda_device_uuid(int device, unsigned char uuid[16]);

/*
 * What a tuned choice on device depends on, in one line: "NVIDIA H200
 * sm_90 sms=132 driver=13000" ("unknown" where CUDA cannot say).
 */
void hiar_cuda_device_facts(int device, char *out, size_t len);

/* Makes device current; returns the device that was, to give back with cudaSetDevice. */
int hiar_cuda_use_device(int device);

/* Waits for all work on device (then its buffers can be freed); the current device stays. */
void hiar_cuda_device_sync(int device);

/* Whether a CUDA MPS control daemon appears to be running for this user. */
int hiar_cuda_mps_running(void);
#ifdef HIAR_KERNEL_MARKS
/*
 * A kernel's phase marks as one line, "NAME: N calls, us per call in block
 * 0: phase 1.23, ...", from sum[0] (the calls) and sum[p] (ns in phase p,
 * 1 <= p < n; phases with none left out) into text; 0 where no call ran.
 */
int hiar_kernel_marks_text(const char *name, const char *const *phases, const uint64_t *sum, int n, char *text,
                           size_t size);
#endif

/* Pinned host memory, and a stream-ordered copy that returns when done. */
hiar_result_t hiar_cuda_host_alloc(size_t bytes, void **out);
void hiar_cuda_host_free(void *ptr);
hiar_result_t hiar_cuda_copy(void *dst, const void *src, size_t bytes, void *stream);
/* Pins host memory (a shared segment) for every GPU; *dev: its address in kernels. */
hiar_result_t hiar_cuda_host_register(void *ptr, size_t bytes, char **dev);
void hiar_cuda_host_unregister(void *ptr);
hiar_result_t hiar_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream);
hiar_result_t hiar_cuda_sync(void *stream);
/* Zeroes bytes of device memory (cudaMemset, then the device synchronised). */
hiar_result_t hiar_cuda_zero(void *ptr, size_t bytes);

/* *capturing = 1 while stream is being captured into a CUDA graph. */
hiar_result_t hiar_cuda_is_capturing(void *stream, int *capturing);
/*
 * fn(arg) once the graph being captured on stream is destroyed, with every
 * executable graph made from it (a CUDA user object the graph owns).  fn
 * runs on a thread of CUDA's, maybe after the caller's objects are gone,
 * and must not call CUDA.  Fails, without fn ever running, if stream is not
 * capturing or CUDA refuses.
 */
hiar_result_t hiar_cuda_capture_on_destroy(void *stream, void (*fn)(void *), void *arg);

/* A non-blocking stream of hiar's own (tuning times captured calls on it); destroy takes NULL. */
hiar_result_t hiar_cuda_stream_create(void **stream);
void hiar_cuda_stream_destroy(void *stream);
/*
 * An executable graph of what enqueue(arg) puts on stream, captured in this
 * thread's mode (cudaStreamCaptureModeThreadLocal); enqueue's own failure
 * wins over the capture's.  Launch replays it on stream; destroy takes NULL.
 */
hiar_result_t hiar_cuda_graph_capture(void *stream, hiar_result_t (*enqueue)(void *), void *arg, void **exec);
hiar_result_t hiar_cuda_graph_launch(void *exec, void *stream);
void hiar_cuda_graph_destroy(void *exec);

/* Host memory mapped into the device: the host can stop a spinning kernel, a kernel can say it gave up. */
typedef struct {
    int abort;  /* set by the host: kernels give up */
    int status; /* set by a kernel: HIAR_TIMEOUT */
} hiar_ipc_control_t;

/*
 * Such words, as the host (host) and kernels (dev) address them, and a word
 * in device memory (failed) that a kernel giving up sets: every later kernel
 * of the comm reads it at its start (beside its epoch, from L2, not over
 * PCIe) and does nothing, so that no peer takes its stale data for a result.
 */
typedef struct hiar_cuda_control {
    hiar_ipc_control_t *host, *dev;
    int *failed;
} hiar_cuda_control_t;

/* Zeroed words, in mapped host memory and on the device; destroy frees them (twice is safe). */
hiar_result_t hiar_cuda_control_create(hiar_cuda_control_t *c);
void hiar_cuda_control_destroy(hiar_cuda_control_t *c);

/*
 * Sets this thread's capture interaction mode (cudaStreamCaptureMode) to
 * relaxed, returning the one it had, for hiar_cuda_capture_mode_restore:
 * the CUDA calls a thread then makes (hiar's, or an MPI's on its behalf,
 * such as UCX pinning its staging memory) are not refused, and do not spoil
 * a capture, while a stream of this or another thread is being captured.
 * -1 if CUDA refused (the mode is then unchanged; restore does nothing).
 */
int hiar_cuda_capture_mode_relax(void);
void hiar_cuda_capture_mode_restore(int mode);

/* ---- CUDA IPC transport (cuda/ipc.cu) ---- */

/* Shards start on 16-byte multiples of the chunk: whole vectors, whole elements. */
#define HIAR_IPC_SHARD_UNIT 16

/*
 * Byte range [*lo, *hi) of shard s of a chunk of `bytes` cut in nshards, the
 * same on the host and in kernels (*hi may pass bytes inside its last unit).
 */
HIAR_HD static inline void hiar_ipc_shard_range(size_t bytes, int nshards, int s, size_t *lo, size_t *hi)
{
    hiar_range_scaled((bytes + HIAR_IPC_SHARD_UNIT - 1) / HIAR_IPC_SHARD_UNIT, HIAR_IPC_SHARD_UNIT, nshards, s, lo, hi);
}

/*
 * Chunk of a two-shot step for n ranks and nshards shards: a slot holds, per
 * sender, the shards the owner takes (at most ceil(nshards / n) of chunk /
 * nshards bytes each), then the gathered chunk.
 */
HIAR_HD static inline size_t hiar_ipc_chunk_bytes(size_t slot_bytes, int n, int nshards)
{
    size_t k = ((size_t)nshards + (size_t)n - 1) / (size_t)n;
    size_t cap = slot_bytes / ((size_t)n * k + (size_t)nshards) / HIAR_IPC_SHARD_UNIT * HIAR_IPC_SHARD_UNIT;
    return cap * (size_t)nshards;
}

/* Halves of the two-shot kernel, for the hierarchical path (hiar_step_t's bits). */
#define HIAR_IPC_STEP_RS HIAR_STEP_REDUCE_SCATTER
#define HIAR_IPC_STEP_AG HIAR_STEP_ALLGATHER

typedef struct hiar_ipc hiar_ipc_t;

/* Most ranks in one CUDA IPC group. */
#define HIAR_IPC_MAX_GROUP 8

/* Bytes of one rank's exported handle (a cudaIpcMemHandle_t). */
#define HIAR_IPC_HANDLE_BYTES 64

/* Largest message the one-shot (LL) kernel takes. */
size_t hiar_ipc_oneshot_max(void);

/*
 * After a transport's setup passed its checks (a probe that timed out must
 * not fail the comm): its kernels give up, and report, through the comm's
 * control words, so that once one kernel of the comm gave up every later
 * one does at once, rather than go on with what the failed one left
 * (a peer's next step would take stale data for an answer).
 */
void hiar_ipc_share_control(hiar_ipc_t *ipc, const hiar_cuda_control_t *comm);

/*
 * Allocates this rank's buffers (4 data slots of slot_bytes, LL packets,
 * signals) on the current device and writes its handle.  Collective setup
 * (src/transport/ipc.c) goes: create -> exchange handles and map the peers'
 * (src/transport/peers.c) -> set_peers -> probe.
 */
hiar_result_t hiar_ipc_create(int me, int n, size_t slot_bytes, int timeout_ms, hiar_ipc_t **out,
                              unsigned char handle[HIAR_IPC_HANDLE_BYTES]);

/*
 * Thread blocks of a two-shot kernel: at most HIAR_IPC_BLOCKS_DEFAULT (one
 * per SM) unless set higher, up to HIAR_IPC_BLOCKS_MAX (two per SM).  Every
 * block spins on its peers' same block, so all blocks of a kernel must be
 * resident at once, beside any other spinning kernel on the GPU (another
 * communicator's, another process's).  Every rank of the group sets the same.
 */
#define HIAR_IPC_BLOCKS_DEFAULT 128
#define HIAR_IPC_BLOCKS_MAX 256

/* Most blocks of each kernel of a group: the same on every rank of it. */
typedef struct {
    unsigned ll, push, twoshot;
} hiar_ipc_caps_t;

/*
 * Blocks of one kernel when the kernels of `sharers` ranks must be resident
 * on one GPU of `sms` SMs at once (every block spins until its peers' same
 * block arrives) and per_sm of its blocks fit an SM; at most limit, at least 1.
 */
static inline unsigned hiar_ipc_blocks_cap(unsigned sms, unsigned per_sm, unsigned sharers, unsigned limit)
{
    unsigned long long blocks = (unsigned long long)sms * per_sm / (sharers ? sharers : 1);

    blocks = blocks < limit ? blocks : limit;
    return blocks ? (unsigned)blocks : 1;
}

/*
 * This GPU's caps when `sharers` ranks may use it (the comm's, or HIAR_GPU_SHARERS; the group
 * agrees on the minimum over its ranks): from its SM count and how many
 * blocks of 512 threads of each kernel fit an SM; mixed: kernels of other
 * kinds run beside them (transport/ipc.c): at most two blocks per SM of the
 * share, each in half an SM (LL, hierarchical LL and two-shot kernels use at
 * most 64 registers a thread; push, up to 114, is then not launched).
 */
void hiar_ipc_fit_caps(const hiar_ipc_t *ipc, unsigned sharers, int mixed, hiar_ipc_caps_t *caps);

/* Whether this rank's GPU can run the kernels in thread-block clusters (sm_90 and later, kernels built for it),
 * with room for the clusters of `sharers` ranks' calls at once. */
int hiar_ipc_clusters_usable(const hiar_ipc_t *ipc, unsigned sharers);

/*
 * How kernels launch: the group's caps (twoshot also within
 * HIAR_IPC_BLOCKS_MAX), pdl = 1 for programmatic dependent launch where
 * the kernels were built for it (sm_90 and later), and clusters = 1 for
 * thread-block clusters (the fused norm's slices), already agreed over the
 * group where every rank's hiar_ipc_clusters_usable says 1.  Returns the
 * HIAR_IPC_LAUNCH_* they use.
 */
#define HIAR_IPC_LAUNCH_PDL 1
#define HIAR_IPC_LAUNCH_CLUSTERS 2
int hiar_ipc_set_launch(hiar_ipc_t *ipc, const hiar_ipc_caps_t *caps, int pdl, int clusters);
void hiar_ipc_get_caps(const hiar_ipc_t *ipc, hiar_ipc_caps_t *caps);

/*
 * Phase marks, in builds with HIAR_KERNEL_MARKS defined (./configure
 * CPPFLAGS=-DHIAR_KERNEL_MARKS; doc/testing.md): where the time of the LL
 * kernels goes, plain and with a norm fused.  Thread 0 of block 0 stamps
 * %globaltimer at each phase (of its last row, in the fused kernel) and
 * adds the time since the phase before to its kernel's sums.  Other builds
 * stamp nothing: the kernels are the same code as without marks.
 * hiar_ipc_marks_lines gives line() one line per kernel that ran ("ll-norm:
 * 2000 calls, us per call in block 0: ..."), once the GPU has finished them.
 */
#ifdef HIAR_KERNEL_MARKS
hiar_result_t hiar_ipc_marks_lines(const hiar_ipc_t *ipc, void (*line)(void *arg, const char *text), void *arg);
#endif

/*
 * The same transport over pinned host memory, for GPUs without P2P
 * (transport/pinned.c): rank p's buffers (hiar_ipc_region_bytes each) lie
 * at p times that in one shared segment registered with
 * hiar_cuda_host_register; bases[] are their addresses in kernels.  This
 * rank initialises its own (the group must wait for all before a call).
 * The segment stays the caller's: hiar_ipc_segment gives it back for the
 * teardown.
 */
size_t hiar_ipc_region_bytes(int n, size_t slot_bytes);
hiar_result_t hiar_ipc_create_pinned(int me, int n, size_t slot_bytes, int timeout_ms, void *segment,
                                     size_t segment_bytes, char *const *bases, hiar_ipc_t **out);
void *hiar_ipc_segment(const hiar_ipc_t *ipc, size_t *bytes);

/* Every rank's allocation as mapped here, in rank order (own: ignored); ipc unmaps them. */
void hiar_ipc_set_peers(hiar_ipc_t *ipc, char *const *bases);

/* The GPU the transport's buffers are on. */
int hiar_ipc_device(const hiar_ipc_t *ipc);

/*
 * The P2P check: probe_write stores `token` into every peer's memory; after a
 * barrier, probe_check reads back what every peer stored here.  Drivers can
 * claim P2P that does not work; this is the real thing.
 */
hiar_result_t hiar_ipc_probe_write(hiar_ipc_t *ipc, uint64_t token);
hiar_result_t hiar_ipc_probe_check(hiar_ipc_t *ipc, uint64_t token, int *ok);

/*
 * A call's output in registered memory (hiar_mem_register): every rank's
 * recvbuf as mapped here, and a tag that names where it lies, (window index
 * + 1) << 40 | offset in the window.  The two-shot kernel then writes the
 * gathered shards straight into the peers' outputs, with no copy out of the
 * slots, when every rank of the group offers the same tag (the kernel
 * checks); otherwise it takes the slots.  tag 0: nothing registered.
 */
typedef struct hiar_ipc_direct {
    char *out[HIAR_IPC_MAX_GROUP];
    uint64_t tag;
} hiar_ipc_direct_t;

/*
 * Allreduce of the call's device buffers with its plan's kernel (LL, push or
 * two-shot), asynchronous on its stream and capturable in a CUDA graph; a
 * two-shot call with an out_window writes straight into the peers' outputs.
 */
hiar_result_t hiar_ipc_allreduce(hiar_ipc_t *ipc, const hiar_call_t *call);

/*
 * Whether hiar_ipc_allreduce fuses call->norm into its kernel (one group's
 * call planned LL with rows of whole 16-byte packets, or push or two-shot
 * with its rows fitting a slot); else the caller runs the norm after it.  The same
 * on every rank of the group.
 */
int hiar_ipc_norm_fuses(const hiar_ipc_t *ipc, const hiar_call_t *call);

/*
 * The norm of call->norm on call->recvbuf, which holds the sums (after the
 * allreduce, on its stream): asynchronous on call->stream, capturable.
 */
hiar_result_t hiar_cuda_norm(const hiar_call_t *call);

/* ---- memory shared by CUDA IPC (cuda/ipcmem.cu) ---- */

/* Device memory for hiar_mem_alloc on device (the current device stays). */
hiar_result_t hiar_cuda_mem_alloc(int device, size_t bytes, void **ptr);
void hiar_cuda_mem_free(void *ptr);

/*
 * The IPC handle of the allocation that holds [ptr, ptr + bytes), and ptr's
 * offset in it: HIAR_UNSUPPORTED where the allocation cannot be exported
 * (stream-ordered pools, VMM, managed or host memory).  `what` names the
 * caller in messages.
 */
hiar_result_t hiar_cuda_export(const void *ptr, size_t bytes, unsigned char handle[HIAR_IPC_HANDLE_BYTES],
                               size_t *offset, const char *what);

/* Maps a peer's allocation (its base) into device; hiar_cuda_unmap undoes it.  The current device stays. */
hiar_result_t hiar_cuda_map(int device, const unsigned char handle[HIAR_IPC_HANDLE_BYTES], char **base,
                            const char *what);
void hiar_cuda_unmap(int device, char *base);

/*
 * Chunk of the hierarchical steps: the same in every group whatever its size
 * n <= nshards (shards must match across groups), and it fits a slot: the
 * owner's share n * ceil(nshards / n) <= 2 nshards - 1 shards, plus the chunk.
 */
HIAR_HD static inline size_t hiar_ipc_hier_chunk(size_t slot_bytes, int nshards)
{
    size_t cap = slot_bytes / (3 * (size_t)nshards) / HIAR_IPC_SHARD_UNIT * HIAR_IPC_SHARD_UNIT;
    return cap * (size_t)nshards;
}

/*
 * The kernel over groups' bandwidth path cuts each shard of a chunk into
 * ngroups parts of whole units (the last may be short), one per
 * counterpart; a set of counterparts' slot holds, per counterpart, the part
 * it reduces and the part it gathers.  Bytes of one part, from the largest
 * shard of a chunk (cap).
 */
HIAR_HD static inline size_t hiar_ipc_part_bytes(size_t cap, int ngroups)
{
    return (cap / HIAR_IPC_SHARD_UNIT + (size_t)ngroups - 1) / (size_t)ngroups * HIAR_IPC_SHARD_UNIT;
}

/*
 * Block b of nblocks' piece of part j of parts of shard s of a chunk of
 * `bytes` in nshards shards: bytes [*lo, *hi) of the chunk, and the shard's
 * start *s_lo.  Part j is the shard's bytes from j part spans on
 * (hiar_ipc_part_bytes of span); the piece is cut from a part span and then
 * clipped to the shard.  span: a whole number of units, at least the
 * largest shard of the chunk (a full shard where the call has several
 * chunks: then a block's pieces lie at the same place of a shard in every
 * chunk).  The two-shot kernels' (cuda/twoshot.cu).
 */
HIAR_HD static inline void hiar_ipc_piece(size_t bytes, int nshards, int s, size_t span, int parts, int j,
                                          int nblocks, int b, size_t *lo, size_t *hi, size_t *s_lo)
{
    size_t s_hi, rel_lo, rel_hi, len, pspan = hiar_ipc_part_bytes(span, parts);

    hiar_ipc_shard_range(bytes, nshards, s, s_lo, &s_hi);
    hiar_range_scaled(pspan / HIAR_IPC_SHARD_UNIT, HIAR_IPC_SHARD_UNIT, nblocks, b, &rel_lo, &rel_hi);
    rel_lo += (size_t)j * pspan;
    rel_hi += (size_t)j * pspan;
    len = s_hi - *s_lo;
    *lo = *s_lo + (rel_lo < len ? rel_lo : len);
    *hi = *s_lo + (rel_hi < len ? rel_hi : len);
}

/*
 * Its chunk: a group's slot holds spread shards of every sender (the most
 * of any group: n x ceil(nshards / n) for a group of n, nshards where the
 * groups are even) and the gathered chunk; the counterparts' smallest slot
 * (between_slot) the parts.  Larger than hiar_ipc_hier_chunk's (which
 * allows for any group) where the groups are even: fewer exchanges.
 */
HIAR_HD static inline size_t hiar_ipc_hier_fused_chunk(size_t slot_bytes, int spread, size_t between_slot,
                                                       int nshards, int ngroups)
{
    size_t cap = slot_bytes / ((size_t)spread + (size_t)nshards) / HIAR_IPC_SHARD_UNIT * HIAR_IPC_SHARD_UNIT;
    size_t fits = between_slot / (2 * (size_t)ngroups * HIAR_IPC_SHARD_UNIT) * HIAR_IPC_SHARD_UNIT * (size_t)ngroups;

    return (cap < fits ? cap : fits) * (size_t)nshards;
}

/*
 * One half of a hierarchical call (asynchronous on its stream), per chunk of
 * `chunk` bytes, the call cut in call->nshards shards:
 * HIAR_STEP_REDUCE_SCATTER leaves each owned shard (s % n == local rank)
 * reduced over the group in recvbuf, undivided; HIAR_STEP_ALLGATHER sends
 * the owned shards of recvbuf to every peer, so all of recvbuf is complete.
 */
hiar_result_t hiar_ipc_hier_step(hiar_ipc_t *ipc, const hiar_call_t *call, hiar_step_t step, size_t chunk);


/*
 * A call over groups in one kernel (asynchronous, capturable), with this
 * rank's group (NULL: a group of one) and the counterparts of every shard
 * this rank owns (between[0..n), each a transport of its own), in at most
 * caps' blocks (LL, two-shot), which must be the same on every rank of the
 * comm (each transport's own are agreed among its ranks only); the call's
 * divisor is applied once.  call->plan.alg HIAR_ALG_HIER_ONESHOT: LL in
 * the group, then LL with the counterparts, packet by packet (requires
 * bytes <= hiar_ipc_oneshot_max()).  HIAR_ALG_HIER: in chunks of
 * plan.chunk (hiar_ipc_hier_fused_chunk), each shard reduce-scattered in
 * the group, its parts reduce-scattered among the counterparts, and both
 * all-gathered back.
 */
hiar_result_t hiar_ipc_hier(hiar_ipc_t *group, hiar_ipc_t *const *between, int nbetween, const hiar_ipc_caps_t *caps,
                           const hiar_call_t *call);

/* HIAR_TIMEOUT if a kernel of an earlier call gave up waiting for a peer. */
hiar_result_t hiar_ipc_status(const hiar_ipc_t *ipc);

/* Makes running and future kernels give up at once (any thread). */
void hiar_ipc_abort(hiar_ipc_t *ipc);

/* After hiar_cuda_device_sync on the group's device, peers can unmap and the owner free. */
void hiar_ipc_unmap_peers(hiar_ipc_t *ipc);
void hiar_ipc_destroy(hiar_ipc_t *ipc);

/* ---- the step between hosts: the GPU's half (cuda/hosts.cu) ---- */

/* Positions of a job's ring: HIAR_PROGRESS_MAX_RING (net/progress.h; core/hosts.c checks). */
#define HIAR_HOSTS_RING_MAX 16
/* The words of a position's hiar_piece_flags_t, as uint32_t indices. */
#define HIAR_HOSTS_READY_WORD 0
#define HIAR_HOSTS_ARRIVED_WORD 32

/*
 * One kernel's job: the pieces of one shard (base/pieces.h) through a ring
 * of positions (net/progress.h), `blocks` blocks, which divide `ring`:
 * block b takes the pieces b, b + blocks, ..., so a position's pieces are
 * all one block's, in order.  Eager jobs share one ring's memory and take
 * turns: turn t > 0 starts once the kernel of turn t - 1 has ended, on
 * whatever stream; 0 (a captured job, with memory of its own) takes none.
 */
typedef struct {
    hiar_pieces_t pieces;
    char *data;       /* the call's output: the results at the pieces' offsets */
    const char *src;  /* the rank's own pieces at their offsets: data, or the call's input (core/hosts.h) */
    char *send;       /* position q at q * stride, where the thread sends it from */
    const char *recv; /* position q at q * (n - 1) * stride: the other ranks' pieces in rank order, stride apart */
    uint32_t *flags;  /* the positions' flags as kernels see them */
    size_t stride;
    int ring, blocks, n, me; /* one link: n ranks, this one's place in it */
    unsigned turn;
} hiar_hosts_job_t;

/* The eager turn after `turn`: counts on, past 0, which is a captured job's (takes no turn). */
HIAR_HD static inline unsigned hiar_hosts_next_turn(unsigned turn)
{
    return turn + 1 ? turn + 1 : 1;
}

/* Bytes of a piece's flags (hiar_piece_flags_t). */
#define HIAR_HOSTS_FLAGS_BYTES 256

typedef struct hiar_hosts_gpu hiar_hosts_gpu_t;

/*
 * On the current device, with nslots slots; sharers: ranks of the comm on
 * this GPU (the kernel takes its share of the SMs); on_device: the slots'
 * send and receive areas in device memory (an MPI that takes device
 * pointers), else in pinned host memory.
 */
hiar_result_t hiar_hosts_gpu_create(int timeout_ms, unsigned sharers, int nslots, int on_device,
                                    hiar_hosts_gpu_t **out);

/* A slot's memory, as the host and as kernels see it. */
typedef struct {
    uint32_t *flags_host, *flags_dev; /* HIAR_HOSTS_RING_MAX positions' flags, HIAR_HOSTS_FLAGS_BYTES apart */
    /* pinned host memory, or on_device device memory (then host and dev are both the device address) */
    char *send_host, *send_dev;
    char *recv_host, *recv_dev;
} hiar_hosts_area_t;

/*
 * Slot `slot`'s memory with at least send_bytes and recv_bytes (0: none
 * needed); allocated at first use (also while the stream is captured),
 * grown when too small (the old areas are freed with g: a kernel of the
 * slot's last job may still read them).
 */
hiar_result_t hiar_hosts_gpu_slot(hiar_hosts_gpu_t *g, int slot, size_t send_bytes, size_t recv_bytes,
                                  hiar_hosts_area_t *out);
void hiar_hosts_gpu_destroy(hiar_hosts_gpu_t *g);
/* The word that makes running and future kernels give up (host address; the engine's kernel_abort). */
int *hiar_hosts_gpu_abort_word(hiar_hosts_gpu_t *g);
/* The comm's control words instead of its own (hiar_ipc_share_control), before the engine takes the abort word. */
void hiar_hosts_gpu_share_control(hiar_hosts_gpu_t *g, const hiar_cuda_control_t *comm);
/* HIAR_TIMEOUT once a kernel gave up waiting for the thread. */
hiar_result_t hiar_hosts_gpu_status(const hiar_hosts_gpu_t *g);
void hiar_hosts_gpu_abort(hiar_hosts_gpu_t *g);
/* The most blocks a job's kernel may take (its share of the GPU). */
unsigned hiar_hosts_gpu_blocks(const hiar_hosts_gpu_t *g);
/* The job's kernel on c->stream (c: dtype, op, divisor), asynchronous and capturable. */
hiar_result_t hiar_hosts_reduce(hiar_hosts_gpu_t *g, const hiar_hosts_job_t *job, const hiar_call_t *c);

#ifdef HIAR_KERNEL_MARKS
/*
 * In builds with phase marks: the us per kernel block 0 of the hosts
 * kernels spent waiting for its turn, copying pieces out, waiting for the
 * wire, reducing, and in all (hiar_kernel_marks_text's line, named
 * "hosts"), into text, once the device is idle; 1 where it wrote them, 0
 * where no kernel ran or CUDA failed (text "").  Call it only for a comm
 * whose GPU side is well (hiar_hosts_gpu_status).
 */
int hiar_hosts_gpu_marks(const hiar_hosts_gpu_t *g, char *text, size_t size);
#endif

#ifdef __cplusplus
}
#endif

#endif
