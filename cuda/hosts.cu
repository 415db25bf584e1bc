/*
 * The GPU's half of the step between hosts (the progress engine's ring and
 * flags: net/progress.h).  One kernel per job, the job a call's pieces of
 * one shard.  Block b takes pieces b, b + gridDim.x, ...: it hands each to
 * the thread (copied into its ring position's send area, pinned host
 * memory or, for an MPI that reads the GPU, device memory; then `ready`),
 * and a ring later, before
 * the position takes its next piece, waits for `arrived` and reduces the
 * rank's own piece (at `src`: the output, or the input of a rank alone
 * in its group) with the others' in the link's rank order, so every rank
 * gets the same bits, into the output.  With ring / gridDim.x
 * positions per block, a block copies a piece out while its earlier ones
 * are on the wire.
 *
 * A block waits only for the thread, never for another block of its
 * kernel: the kernel needs no room beyond its own blocks.  Its blocks count
 * in the GPU's share like the group's kernels (ranks of the comm on one GPU
 * each get theirs).  An eager kernel first waits for its turn (take_turn),
 * which on one stream is already its own; on another stream its blocks wait
 * for the earlier call's kernel to end.
 */
#include <cuda_runtime.h>

#include "cuda/api.h"
#include "cuda/check.h"
#include "cuda/device.cuh"

/*
 * Blocks of one kernel, at most: 16 copy 50 GB/s into host memory, more
 * than a PCIe link takes.  Measured on the H200 machine (2 simulated hosts,
 * bf16, --split, time over the link column's): a cap of 4 blocks gave 1.61
 * at 16 MB, 0.95 at 64 MB and 1.31 at 256 MB; 16 gave 1.34, 0.91, 0.76.
 */
#define HOSTS_BLOCKS 16u

/*
 * A slot's memory: flags in mapped host memory, send and recv areas there
 * or on the GPU.  An area that grows leaves its old allocation on a list freed
 * with the rest: a kernel of the slot's previous job may still read it, and
 * freeing (cudaFreeHost, cudaFree) would wait for the whole device, here
 * behind whatever the caller queued ahead of the call.
 */
typedef struct retired {
    struct retired *next;
    char *ptr;
} retired_t;

typedef struct {
    hiar_hosts_area_t area;
    size_t send_cap, recv_cap;
} hosts_slot_t;

/*
 * Phase marks (builds with HIAR_KERNEL_MARKS, as the LL kernels'): block
 * 0's time in each phase, summed over its kernels: waiting for its turn,
 * copying pieces out (hand_over), waiting for the wire (await_piece),
 * reducing what arrived; and each kernel's whole time.  On one H100
 * (2026-12-06, 2 simulated hosts of 2, --split, us per call, the ranks'
 * range) block 0 spent at 16 MB 278-291 copying out, 1534-2670 waiting for
 * the wire and 441-487 reducing of a 2265-3417 kernel; at 64 MB 740-841,
 * 3178-3679 and 3165-3306 of 7338-7616: the wire first, then (at 64 MB)
 * reading what arrived from pinned memory.
 */
/* Index 0 of the sums: the kernels (hiar_kernel_marks_text's layout). */
enum { HOSTS_MARK_TURN = 1, HOSTS_MARK_OUT, HOSTS_MARK_WIRE, HOSTS_MARK_REDUCE, HOSTS_MARK_ALL, HOSTS_MARKS };

/* Device memory: whose turn it is among eager jobs, and the blocks of that turn's kernel that are done. */
typedef struct {
    unsigned turn, done;
#ifdef HIAR_KERNEL_MARKS
    uint64_t marks[HOSTS_MARKS];
#endif
} hosts_turns_t;

struct hiar_hosts_gpu {
    hiar_cuda_control_t own;     /* its own control words */
    hiar_cuda_control_t ctl;     /* the engine's abort, the kernels' status: own, or the comm's */
    hosts_turns_t *turns;
    uint64_t timeout_ns;
    unsigned blocks;
    int nslots, on_device; /* the areas' kind, for the comm's life */
    hosts_slot_t *slots;
    retired_t *retired;
};

/* Fresh reads of what the thread (or the MPI on its behalf) wrote: never an old line from a cache. */
__device__ __forceinline__ uint4 load_fresh(const char *base, size_t off, size_t bytes)
{
    uint4 u = {};
    if (off + HIAR_UNIT <= bytes)
        return __ldcv(reinterpret_cast<const uint4 *>(base + off));
    volatile const char *v = base + off;
    for (size_t i = 0; i < bytes - off; i++)
        reinterpret_cast<char *>(&u)[i] = v[i];
    return u;
}

/* Piece i of the job: where the rank's own bytes are, where its result goes, and its ring position's. */
struct piece_t {
    const char *src;
    char *data, *send;
    const char *recv;
    uint32_t *flags;
    size_t bytes;
};

__device__ __forceinline__ piece_t piece_of(const hiar_hosts_job_t &j, int i)
{
    size_t off, bytes, q = (size_t)(i % j.ring);

    hiar_pieces_at(&j.pieces, i, &off, &bytes);
    return {j.src + off, j.data + off, j.send + q * j.stride, j.recv + q * (size_t)(j.n - 1) * j.stride,
            j.flags + q * HIAR_HOSTS_FLAGS_BYTES / sizeof(uint32_t), bytes};
}

/*
 * 4 units in flight a thread, though the kernel spills at its 64-register
 * cap (192/128 bytes of spill stores/loads for bf16): 2 in flight, which
 * spill less, took as long or longer (one H100, 4 ranks as 2 simulated
 * hosts of 2, `--split`, bf16, 2026-12-06, two rounds, hiar's us at 16 /
 * 64 / 256 MB: 4 in flight 2087, 7112, 30119 and 2202, 7483, 26205; 2 in
 * flight 2479, 7493, 29798 and 2159, 7397, 28337).
 */
template <typename T>
__device__ __forceinline__ void reduce_piece(const hiar_hosts_job_t &j, const piece_t &p, int op, int divisor)
{
    const int es = sizeof(T);

    move_units<4>(0, p.bytes, [&](size_t off) {
        return fold_units<T>(j.n, op, divisor, [&](int k) {
            return k == j.me ? load_unit<HIAR_UNIT>(p.src, off, p.bytes, es)
                             : load_fresh(p.recv + (size_t)(k < j.me ? k : k - 1) * j.stride, off, p.bytes);
        });
    }, [&](size_t off, const uint4 &u) { store_unit<HIAR_UNIT>(p.data, off, p.bytes, es, u); });
}

/* Block-wide: copies the piece to its position's send area and raises `ready`. */
template <typename T>
__device__ __forceinline__ void hand_over(const piece_t &p)
{
    move_units<4>(0, p.bytes, [&](size_t off) { return load_unit<HIAR_UNIT>(p.src, off, p.bytes, sizeof(T)); },
                  [&](size_t off, const uint4 &u) { store_unit<HIAR_UNIT>(p.send, off, p.bytes, sizeof(T), u); });
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        *(volatile uint32_t *)(p.flags + HIAR_HOSTS_READY_WORD) = 1;
    }
}

/* Block-wide: thread 0 waits (bounded) until *word is want; whether it came, for every thread. */
__device__ __forceinline__ bool block_await(volatile const uint32_t *word, uint32_t want, hiar_waiter &w)
{
    bool ok = true;

    if (threadIdx.x == 0) {
        while (*word != want && (ok = waiter_poll(w)))
            ;
        __threadfence_system();
    }
    return __syncthreads_and(ok);
}

/*
 * Block-wide: waits for the thread's arrival mark of piece p and lowers it
 * (before the position's next `ready`, which hand_over fences after it).
 */
__device__ __forceinline__ bool await_piece(const piece_t &p, hiar_waiter &w)
{
    volatile uint32_t *arrived = p.flags + HIAR_HOSTS_ARRIVED_WORD;
    bool ok = block_await(arrived, 1, w);

    if (ok && threadIdx.x == 0)
        *arrived = 0;
    return ok;
}

/* Block-wide: waits until the eager jobs' turn is this kernel's (turn 0: a captured job's, takes none). */
__device__ __forceinline__ bool take_turn(const hosts_turns_t *turns, unsigned turn, hiar_waiter &w)
{
    return !turn || block_await(&turns->turn, turn, w);
}

/* The last block of the kernel to finish passes the turn on. */
__device__ __forceinline__ void pass_turn(hosts_turns_t *turns, unsigned turn)
{
    __syncthreads();
    if (threadIdx.x == 0 && turn) {
        __threadfence();
        if (atomicAdd(&turns->done, 1u) == gridDim.x - 1) {
            turns->done = 0;
            __threadfence();
            atomicExch(&turns->turn, hiar_hosts_next_turn(turn));
        }
    }
}

/*
 * Block 0's clock for the marks (thread 0's): each tick, block-wide, adds
 * the time since the last to a phase once every thread is done with it (a
 * barrier only marked builds have), so the phases add up to the kernel but
 * for the turn's hand-off at its end.
 */
struct hosts_clock {
#ifdef HIAR_KERNEL_MARKS
    hosts_turns_t *turns;
    uint64_t start, last;

    __device__ explicit hosts_clock(hosts_turns_t *t) : turns(t), start(globaltimer_ns()), last(start) {}
    __device__ void tick(int phase)
    {
        uint64_t now;
        __syncthreads();
        if (threadIdx.x || blockIdx.x)
            return;
        now = globaltimer_ns();
        turns->marks[phase] += now - last;
        last = now;
    }
    __device__ void end()
    {
        if (threadIdx.x || blockIdx.x)
            return;
        turns->marks[HOSTS_MARK_ALL] += globaltimer_ns() - start;
        turns->marks[0]++;
    }
#else
    __device__ explicit hosts_clock(hosts_turns_t *) {}
    __device__ void tick(int) {}
    __device__ void end() {}
#endif
};

/*
 * Piece i is handed over once piece i - ring, the same block's on the same
 * position, is reduced.  Handing it over as soon as piece i - ring arrived,
 * reducing that one after (its receive area double-buffered), gained nothing:
 * the wire has a piece in flight all the time either way (one H100, 2026-12-06,
 * 2 simulated hosts of 2, --split, two rounds, hiar's us at 16 / 64 MB: 2455,
 * 2532 / 7851, 8061 against 2499, 2302 / 8020, 7203; the progress thread's
 * account, doc/guide.md).  At most half an SM a block (64 registers, as the
 * two-shot kernel): with 82 (bf16) a block needed an SM to itself, and under
 * CUDA MPS, with the other ranks' half-SM blocks spread over every SM, it could
 * not start while the kernels it served spun waiting for it (8 ranks as 2
 * simulated hosts of 2 groups: hiar-bench hung at 16 MB).
 */
template <typename T>
__global__ void __launch_bounds__(HIAR_THREADS, 2) hosts_kernel(hiar_hosts_job_t j, const hiar_ipc_control_t *ctl,
                                                             int *failed, hosts_turns_t *turns, uint64_t timeout_ns,
                                                             int op, int divisor)
{
    hiar_waiter w = {timeout_ns, 0, 0, ctl, failed};
    int npieces = hiar_pieces_count(&j.pieces);
    hosts_clock clock(turns);

    if (comm_failed(failed) || !take_turn(turns, j.turn, w))
        return;
    clock.tick(HOSTS_MARK_TURN);
    for (int i = blockIdx.x; i - j.ring < npieces; i += gridDim.x) {
        if (i >= j.ring) {
            piece_t old = piece_of(j, i - j.ring);
            if (!await_piece(old, w))
                return;
            clock.tick(HOSTS_MARK_WIRE);
            reduce_piece<T>(j, old, op, divisor);
            clock.tick(HOSTS_MARK_REDUCE);
        }
        if (i < npieces)
            hand_over<T>(piece_of(j, i));
        clock.tick(HOSTS_MARK_OUT);
    }
    pass_turn(turns, j.turn);
    clock.end();
}

static void free_area(char *host, int on_device)
{
    if (host && on_device)
        cudaFree(host);
    else if (host)
        cudaFreeHost(host);
}

#ifdef HIAR_KERNEL_MARKS
extern "C" int hiar_hosts_gpu_marks(const hiar_hosts_gpu_t *g, char *text, size_t size)
{
    static const char *const phases[HOSTS_MARKS] = {"", "turn", "copy out", "wire", "reduce", "kernel"};
    hosts_turns_t t;

    text[0] = '\0';
    /* The sums once every kernel is done; a failed comm's are not read (its error stays the one reported). */
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(&t, g->turns, sizeof(t), cudaMemcpyDeviceToHost) != cudaSuccess)
        return 0;
    return hiar_kernel_marks_text("hosts", phases, t.marks, HOSTS_MARKS, text, size);
}
#endif

extern "C" void hiar_hosts_gpu_destroy(hiar_hosts_gpu_t *g)
{
    if (!g)
        return;
    for (int s = 0; g->slots && s < g->nslots; s++) {
        hosts_slot_t *sl = &g->slots[s];
        if (sl->area.flags_host)
            cudaFreeHost(sl->area.flags_host);
        free_area(sl->area.send_host, g->on_device);
        free_area(sl->area.recv_host, g->on_device);
    }
    while (g->retired) {
        retired_t *r = g->retired;
        g->retired = r->next;
        free_area(r->ptr, g->on_device);
        free(r);
    }
    free(g->slots);
    cudaFree(g->turns);
    hiar_cuda_control_destroy(&g->own);
    free(g);
}

/*
 * Allocations may come while the caller's stream is being captured (a
 * captured call's slot is made then): CUDA refuses them in the default
 * (global) capture mode unless this thread says relaxed.
 */
static cudaError_t alloc_relaxed(void **p, size_t bytes, int on_device)
{
    int mode = hiar_cuda_capture_mode_relax();
    cudaError_t err = on_device ? cudaMalloc(p, bytes) : cudaHostAlloc(p, bytes, cudaHostAllocMapped);

    hiar_cuda_capture_mode_restore(mode);
    return err;
}

/* An area of at least bytes, of the slots' kind (its old content is not kept). */
static hiar_result_t grow(hiar_hosts_gpu_t *g, char **host, char **dev, size_t *cap, size_t bytes, const char *what)
{
    void *p = NULL;

    if (bytes <= *cap)
        return HIAR_SUCCESS;
    if (*host) {
        retired_t *r = (retired_t *)malloc(sizeof(*r));
        if (!r)
            return hiar_error_set(HIAR_NO_MEMORY, "cannot keep a retired area between hosts");
        *r = retired_t{g->retired, *host};
        g->retired = r;
    }
    *host = *dev = NULL;
    *cap = 0;
    if (alloc_relaxed(&p, bytes, g->on_device) != cudaSuccess)
        return hiar_cuda_error(cudaGetLastError(), what);
    *host = (char *)p;
    *dev = (char *)p;
    if (!g->on_device)
        HIAR_CUDA_CHECK(cudaHostGetDevicePointer((void **)dev, p, 0));
    *cap = bytes;
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_hosts_gpu_slot(hiar_hosts_gpu_t *g, int slot, size_t send_bytes, size_t recv_bytes,
                                             hiar_hosts_area_t *out)
{
    hosts_slot_t *sl = &g->slots[slot];
    size_t flag_bytes = HIAR_HOSTS_RING_MAX * HIAR_HOSTS_FLAGS_BYTES;

    if (!sl->area.flags_host) {
        void *p = NULL;
        if (alloc_relaxed(&p, flag_bytes, 0) != cudaSuccess)
            return hiar_cuda_error(cudaGetLastError(), "cudaHostAlloc of a slot's flags between hosts");
        memset(p, 0, flag_bytes);
        sl->area.flags_host = (uint32_t *)p;
        HIAR_CUDA_CHECK(cudaHostGetDevicePointer((void **)&sl->area.flags_dev, p, 0));
    }
    HIAR_CHECK(grow(g, &sl->area.send_host, &sl->area.send_dev, &sl->send_cap, send_bytes,
                    g->on_device ? "cudaMalloc of a send area between hosts"
                                 : "cudaHostAlloc of a send area between hosts"));
    HIAR_CHECK(grow(g, &sl->area.recv_host, &sl->area.recv_dev, &sl->recv_cap, recv_bytes,
                    g->on_device ? "cudaMalloc of a receive area between hosts"
                                 : "cudaHostAlloc of a receive area between hosts"));
    *out = sl->area;
    return HIAR_SUCCESS;
}

/* A failed step of create: frees what was made, says which. */
static hiar_result_t create_failed(hiar_hosts_gpu_t *g, const char *what)
{
    hiar_result_t rc = hiar_cuda_error(cudaGetLastError(), what);

    hiar_hosts_gpu_destroy(g);
    return rc;
}

extern "C" hiar_result_t hiar_hosts_gpu_create(int timeout_ms, unsigned sharers, int nslots, int on_device,
                                               hiar_hosts_gpu_t **out)
{
    hiar_hosts_gpu_t *g = (hiar_hosts_gpu_t *)calloc(1, sizeof(*g));
    int device = 0, sms = 0;
    int per_sm = fewest_per_sm([](auto tag) { return hosts_kernel<decltype(tag)>; });
    hosts_turns_t first = {}; /* nothing done yet; marked builds' sums from 0 */
    hiar_result_t rc;

    *out = NULL;
    if (!g)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the GPU side of the step between hosts");
    if ((rc = hiar_cuda_control_create(&g->own)) != HIAR_SUCCESS) {
        free(g);
        return rc;
    }
    g->ctl = g->own;
    first.turn = 1; /* the eager kernels' first (0 is a captured job's) */
    if (cudaMalloc((void **)&g->turns, sizeof(*g->turns)) != cudaSuccess ||
        cudaMemcpy(g->turns, &first, sizeof(first), cudaMemcpyHostToDevice) != cudaSuccess)
        return create_failed(g, "the step between hosts' turns in device memory");
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    g->timeout_ns = (uint64_t)timeout_ms * 1000000u;
    g->blocks = hiar_ipc_blocks_cap((unsigned)sms, (unsigned)per_sm, sharers, HOSTS_BLOCKS);
    g->nslots = nslots;
    g->on_device = on_device;
    if (!(g->slots = (hosts_slot_t *)calloc((size_t)nslots, sizeof(*g->slots)))) {
        hiar_hosts_gpu_destroy(g);
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate %d slots between hosts", nslots);
    }
    *out = g;
    return HIAR_SUCCESS;
}

extern "C" int *hiar_hosts_gpu_abort_word(hiar_hosts_gpu_t *g)
{
    return &g->ctl.host->abort;
}

extern "C" void hiar_hosts_gpu_share_control(hiar_hosts_gpu_t *g, const hiar_cuda_control_t *comm)
{
    g->ctl = *comm;
}

extern "C" hiar_result_t hiar_hosts_gpu_status(const hiar_hosts_gpu_t *g)
{
    volatile const int *status = &g->ctl.host->status;

    if (*status == HIAR_TIMEOUT)
        return hiar_error_set(HIAR_TIMEOUT, "a kernel of the comm gave up waiting for its peers, the MPI step "
                                            "between hosts, or an earlier call's kernel on another stream "
                                            "(HIAR_TIMEOUT_MS=%llu ms)", (unsigned long long)(g->timeout_ns / 1000000u));
    return HIAR_SUCCESS;
}

extern "C" void hiar_hosts_gpu_abort(hiar_hosts_gpu_t *g)
{
    __atomic_store_n(&g->ctl.host->abort, 1, __ATOMIC_RELEASE);
}

extern "C" unsigned hiar_hosts_gpu_blocks(const hiar_hosts_gpu_t *g)
{
    return g->blocks;
}

extern "C" hiar_result_t hiar_hosts_reduce(hiar_hosts_gpu_t *g, const hiar_hosts_job_t *job, const hiar_call_t *c)
{
    cudaStream_t stream = (cudaStream_t)c->stream;
    cudaError_t err;

    if (job->blocks < 1 || (unsigned)job->blocks > g->blocks || job->ring % job->blocks)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "the kernel between hosts takes 1 to %u blocks that divide its "
                              "ring, not %d blocks for %d positions", g->blocks, job->blocks, job->ring);
    err = hiar_dispatch_dtype(c->dtype, [&](auto tag) {
        hosts_kernel<decltype(tag)><<<(unsigned)job->blocks, HIAR_THREADS, 0, stream>>>(
            *job, g->ctl.dev, g->ctl.failed, g->turns, g->timeout_ns, (int)c->op, c->divisor);
        return cudaGetLastError();
    });

    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "launch of the kernel of the step between hosts");
}
