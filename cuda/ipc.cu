/* CUDA IPC transport: buffers, handle exchange, P2P probe, lifetime, launch. */
#include <stdlib.h>
#include <string.h>

#include "cuda/api.h"
#include "cuda/check.h"
#include "ipc.h"

struct hiar_ipc {
    hiar_ipc_args_t args;         /* what the kernels get; base[me] is own */
    int device;
    size_t bytes;                 /* one rank's allocation */
    void *segment;                /* pinned: the caller's segment, kept for its teardown */
    size_t segment_bytes;
    hiar_cuda_control_t own;      /* its own control words */
    hiar_ipc_control_t *ctl;      /* the words args.ctl points to: own.host, or the comm's (hiar_ipc_share_control) */
};

size_t hiar_ipc_oneshot_max(void)
{
    return HIAR_IPC_LL_MAX_BYTES;
}

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Where signals, LL packets and slots lie in one rank's buffers. */
static void lay_out(hiar_ipc_t *ipc, size_t slot_bytes)
{
    hiar_ipc_args_t *a = &ipc->args;

    a->slot_bytes = align_up(slot_bytes, 4096);
    a->ll_offset = align_up(HIAR_IPC_SIGNAL_BYTES, 4096);
    a->data_offset = a->ll_offset + 2 * (size_t)a->n * HIAR_IPC_LL_AREA_BYTES;
    ipc->bytes = a->data_offset + 4 * a->slot_bytes;
}

extern "C" size_t hiar_ipc_region_bytes(int n, size_t slot_bytes)
{
    hiar_ipc_t layout = {};

    layout.args.n = n;
    lay_out(&layout, slot_bytes);
    return layout.bytes;
}

/*
 * Own buffers at base[me] (cudaMalloc'd, or pinned host memory whose host
 * address is `host`), and the per-rank state.  Flags start at 0, below
 * every call's (epochs start at 1); LL packets start as the sentinel,
 * "nothing pending" (oneshot.cu).
 */
static hiar_result_t allocate(hiar_ipc_t *ipc, int timeout_ms, char *host)
{
    hiar_ipc_args_t *a = &ipc->args;

    a->timeout_ns = (uint64_t)timeout_ms * 1000000u;
    a->max_blocks = a->push_blocks = a->ll_blocks = HIAR_IPC_BLOCKS_DEFAULT;
    HIAR_CUDA_CHECK(cudaGetDevice(&ipc->device));
    if (host) {
        memset(host, 0, a->ll_offset);
        memset(host + a->ll_offset, 0xff, a->data_offset - a->ll_offset);
    } else {
        HIAR_CUDA_CHECK(cudaMalloc((void **)&a->base[a->me], ipc->bytes));
        HIAR_CUDA_CHECK(cudaMemset(a->base[a->me], 0, a->ll_offset));
        HIAR_CUDA_CHECK(cudaMemset(a->base[a->me] + a->ll_offset, 0xff, a->data_offset - a->ll_offset));
    }
    HIAR_CUDA_CHECK(cudaMalloc((void **)&a->state, sizeof(hiar_ipc_state_t)));
    HIAR_CUDA_CHECK(cudaMemset(a->state, 0, sizeof(hiar_ipc_state_t)));
    HIAR_CHECK(hiar_cuda_control_create(&ipc->own));
    ipc->ctl = ipc->own.host;
    a->ctl = ipc->own.dev;
    a->failed = ipc->own.failed;
    HIAR_CUDA_CHECK(cudaDeviceSynchronize());
    return HIAR_SUCCESS;
}

/* The transport's state over buffers of slot_bytes slots; host: pinned host memory (else cudaMalloc). */
static hiar_result_t create(int me, int n, size_t slot_bytes, int timeout_ms, char *host, hiar_ipc_t **out)
{
    hiar_ipc_t *ipc;
    hiar_result_t rc;

    if (n < 2 || n > HIAR_IPC_MAX_RANKS)
        return hiar_error_set(HIAR_UNSUPPORTED, "GPU groups have 2 to %d ranks, not %d", HIAR_IPC_MAX_RANKS, n);
    ipc = (hiar_ipc_t *)calloc(1, sizeof(*ipc));
    if (!ipc)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the IPC transport");
    ipc->args.n = n;
    ipc->args.me = me;
    ipc->args.host_memory = host != NULL;
    lay_out(ipc, slot_bytes);
    rc = allocate(ipc, timeout_ms, host);
    if (rc != HIAR_SUCCESS) {
        hiar_ipc_destroy(ipc);
        return rc;
    }
    *out = ipc;
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_ipc_create(int me, int n, size_t slot_bytes, int timeout_ms, hiar_ipc_t **out,
                                         unsigned char handle[HIAR_IPC_HANDLE_BYTES])
{
    size_t offset = 0;
    hiar_result_t rc;

    HIAR_CHECK(create(me, n, slot_bytes, timeout_ms, NULL, out));
    rc = hiar_cuda_export((*out)->args.base[me], (*out)->bytes, handle, &offset, "the CUDA IPC transport");
    if (rc != HIAR_SUCCESS) {
        hiar_ipc_destroy(*out);
        *out = NULL;
    }
    return rc;
}

extern "C" hiar_result_t hiar_ipc_create_pinned(int me, int n, size_t slot_bytes, int timeout_ms, void *segment,
                                                size_t segment_bytes, char *const *bases, hiar_ipc_t **out)
{
    size_t region = hiar_ipc_region_bytes(n, slot_bytes);

    HIAR_CHECK(create(me, n, slot_bytes, timeout_ms, (char *)segment + (size_t)me * region, out));
    for (int p = 0; p < n; p++)
        (*out)->args.base[p] = bases[p];
    (*out)->segment = segment;
    (*out)->segment_bytes = segment_bytes;
    return HIAR_SUCCESS;
}

extern "C" void *hiar_ipc_segment(const hiar_ipc_t *ipc, size_t *bytes)
{
    *bytes = ipc->segment_bytes;
    return ipc->segment;
}

/*
 * On 2 H200 (132 SMs) with 2 ranks per GPU under MPS, 128-block push
 * kernels (one block per SM) left the second rank 4 SMs: 1 MB took 62 us
 * against 29 for two-shot; at 64 blocks each, 30 us.
 */
extern "C" void hiar_ipc_fit_caps(const hiar_ipc_t *ipc, unsigned sharers, int mixed, hiar_ipc_caps_t *caps)
{
    int sms = 0;

    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ipc->device) != cudaSuccess || sms < 1) {
        cudaGetLastError();
        sms = HIAR_IPC_BLOCKS_DEFAULT; /* what the defaults were measured with, near enough */
    }

    unsigned ll = (unsigned)hiar_ipc_oneshot_per_sm(1), push = (unsigned)hiar_ipc_oneshot_per_sm(0);
    unsigned ll_norm = (unsigned)hiar_ipc_norm_per_sm(1), rows_norm = (unsigned)hiar_ipc_norm_per_sm(0);
    unsigned twoshot = (unsigned)hiar_ipc_twoshot_per_sm();

    ll = ll_norm < ll ? ll_norm : ll;
    twoshot = rows_norm < twoshot ? rows_norm : twoshot;
    /* Mixed: every kernel in half an SM (push, which takes a whole one, is not used then: core/plan.c). */
    if (mixed) {
        ll = ll < 2 ? ll : 2;
        twoshot = twoshot < 2 ? twoshot : 2;
        push = 1;
    }
    caps->ll = hiar_ipc_blocks_cap((unsigned)sms, ll, sharers, HIAR_IPC_ONESHOT_BLOCKS);
    caps->push = hiar_ipc_blocks_cap((unsigned)sms, push, sharers, HIAR_IPC_ONESHOT_BLOCKS);
    caps->twoshot = hiar_ipc_blocks_cap((unsigned)sms, twoshot, sharers, HIAR_IPC_BLOCKS_MAX);
}

static unsigned within(unsigned blocks, unsigned max)
{
    return blocks < 1 ? 1 : blocks > max ? max : blocks;
}

extern "C" int hiar_ipc_clusters_usable(const hiar_ipc_t *ipc, unsigned sharers)
{
    int cluster_launch = 0;

    /* Kernels built from PTX older than sm_90 have no cluster barrier nor shared memory of other blocks. */
    if (cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, ipc->device) != cudaSuccess)
        cudaGetLastError();
    return cluster_launch && hiar_ipc_ptx_version() >= 90 && hiar_ipc_norm_clusters_fit(sharers);
}

extern "C" int hiar_ipc_set_launch(hiar_ipc_t *ipc, const hiar_ipc_caps_t *caps, int pdl, int clusters)
{
    hiar_ipc_args_t *a = &ipc->args;

    /* The push ring and the flags are laid out for at most these many. */
    a->ll_blocks = within(caps->ll, HIAR_IPC_ONESHOT_BLOCKS);
    a->push_blocks = within(caps->push, HIAR_IPC_ONESHOT_BLOCKS);
    a->max_blocks = within(caps->twoshot, HIAR_IPC_BLOCKS_MAX);
    /* Kernels built from PTX older than sm_90 have no griddepcontrol.wait
     * (begin_call), and must not start before the kernel ahead of them ends. */
    a->pdl = pdl && hiar_ipc_ptx_version() >= 90;
    a->clusters = clusters; /* agreed over the group, each rank's hiar_ipc_clusters_usable in it (transport/ipc.c) */
    return (a->pdl ? HIAR_IPC_LAUNCH_PDL : 0) | (a->clusters ? HIAR_IPC_LAUNCH_CLUSTERS : 0);
}

extern "C" void hiar_ipc_get_caps(const hiar_ipc_t *ipc, hiar_ipc_caps_t *caps)
{
    caps->ll = ipc->args.ll_blocks;
    caps->push = ipc->args.push_blocks;
    caps->twoshot = ipc->args.max_blocks;
}

#ifdef HIAR_KERNEL_MARKS
extern "C" hiar_result_t hiar_ipc_marks_lines(const hiar_ipc_t *ipc, void (*line)(void *arg, const char *text),
                                              void *arg)
{
    static const char *const kinds[HIAR_MARK_KINDS] = {"ll", "ll-norm"};
    static const char *const phases[HIAR_MARKS] = {"", "begin (waits for the kernel before)", "push",
                                                   "gather (waits for the peers)", "norm sum", "stores", "finish"};
    uint64_t sum[HIAR_MARK_KINDS][HIAR_MARKS];

    HIAR_CUDA_CHECK(cudaMemcpy(sum, ipc->args.state->mark_sum, sizeof(sum), cudaMemcpyDeviceToHost));
    for (int k = 0; k < HIAR_MARK_KINDS; k++) {
        char text[512];
        if (hiar_kernel_marks_text(kinds[k], phases, sum[k], HIAR_MARKS, text, sizeof(text)))
            line(arg, text);
    }
    return HIAR_SUCCESS;
}
#endif

extern "C" void hiar_ipc_set_peers(hiar_ipc_t *ipc, char *const *bases)
{
    for (int p = 0; p < ipc->args.n; p++)
        if (p != ipc->args.me)
            ipc->args.base[p] = bases[p];
}

extern "C" int hiar_ipc_device(const hiar_ipc_t *ipc)
{
    return ipc->device;
}

extern "C" hiar_result_t hiar_ipc_probe_write(hiar_ipc_t *ipc, uint64_t token)
{
    const hiar_ipc_args_t *a = &ipc->args;

    for (int p = 0; p < a->n; p++) {
        uint64_t v = token + (uint64_t)a->me;
        HIAR_CUDA_CHECK(cudaMemcpy(a->base[p] + hiar_ipc_probe_offset(a->me), &v, sizeof(v), cudaMemcpyDefault));
    }
    HIAR_CUDA_CHECK(cudaDeviceSynchronize());
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_ipc_probe_check(hiar_ipc_t *ipc, uint64_t token, int *ok)
{
    const hiar_ipc_args_t *a = &ipc->args;

    *ok = 1;
    for (int p = 0; p < a->n; p++) {
        uint64_t v = 0;
        HIAR_CUDA_CHECK(cudaMemcpy(&v, a->base[a->me] + hiar_ipc_probe_offset(p), sizeof(v), cudaMemcpyDefault));
        if (v != token + (uint64_t)p)
            *ok = 0;
    }
    return HIAR_SUCCESS;
}

extern "C" hiar_result_t hiar_ipc_allreduce(hiar_ipc_t *ipc, const hiar_call_t *call)
{
    const hiar_ipc_args_t *a = &ipc->args;
    cudaError_t err = call->norm ? hiar_ipc_launch_norm(a, call)
                      : call->plan.kernel == HIAR_KERNEL_TWOSHOT
                          ? hiar_ipc_launch_twoshot(a, call, HIAR_STEP_ALLREDUCE,
                                                    hiar_ipc_chunk_bytes(a->slot_bytes, a->n, a->n))
                          : hiar_ipc_launch_oneshot(a, call, call->plan.kernel);
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "allreduce kernel launch");
}

extern "C" int hiar_ipc_norm_fuses(const hiar_ipc_t *ipc, const hiar_call_t *call)
{
    return hiar_ipc_norm_fits(&ipc->args, call);
}

extern "C" hiar_result_t hiar_ipc_hier_step(hiar_ipc_t *ipc, const hiar_call_t *call, hiar_step_t step, size_t chunk)
{
    cudaError_t err = hiar_ipc_launch_twoshot(&ipc->args, call, step, chunk);
    return err == cudaSuccess ? HIAR_SUCCESS : hiar_cuda_error(err, "hierarchical step kernel launch");
}

extern "C" hiar_result_t hiar_ipc_hier(hiar_ipc_t *group, hiar_ipc_t *const *between, int nbetween,
                                       const hiar_ipc_caps_t *caps, const hiar_call_t *call)
{
    hiar_ipc_hier_args_t h = {};
    const bool ll = call->plan.alg == HIAR_ALG_HIER_ONESHOT;
    cudaError_t err;

    if (nbetween < 1 || nbetween > HIAR_IPC_MAX_GROUP)
        return hiar_error_set(HIAR_INTERNAL_ERROR, "a kernel over groups takes 1 to %d sets of counterparts, not %d",
                              HIAR_IPC_MAX_GROUP, nbetween);
    h.group.n = 1;
    if (group)
        h.group = group->args;
    h.nbetween = nbetween;
    h.ll_blocks = caps->ll;
    h.max_blocks = caps->twoshot;
    for (int k = 0; k < nbetween; k++)
        h.between[k] = between[k]->args;
    err = ll ? hiar_ipc_launch_hier_ll(&h, call) : hiar_ipc_launch_hier_twoshot(&h, call);
    return err == cudaSuccess ? HIAR_SUCCESS
                              : hiar_cuda_error(err, ll ? "hierarchical LL kernel launch" : "hierarchical two-shot kernel launch");
}

extern "C" void hiar_ipc_share_control(hiar_ipc_t *ipc, const hiar_cuda_control_t *comm)
{
    ipc->ctl = comm->host;
    ipc->args.ctl = comm->dev;
    ipc->args.failed = comm->failed;
}

extern "C" hiar_result_t hiar_ipc_status(const hiar_ipc_t *ipc)
{
    volatile const int *status = &ipc->ctl->status;
    if (*status == HIAR_TIMEOUT)
        return hiar_error_set(HIAR_TIMEOUT,
                              "a GPU kernel of an earlier hiar_allreduce gave up: a peer did not "
                              "arrive within HIAR_TIMEOUT_MS=%llu ms",
                              (unsigned long long)(ipc->args.timeout_ns / 1000000u));
    return HIAR_SUCCESS;
}

extern "C" void hiar_ipc_abort(hiar_ipc_t *ipc)
{
    volatile int *abort_flag = &ipc->ctl->abort;
    *abort_flag = 1;
}

extern "C" void hiar_ipc_unmap_peers(hiar_ipc_t *ipc)
{
    hiar_ipc_args_t *a = &ipc->args;

    for (int p = 0; p < a->n; p++)
        if (p != a->me && a->base[p]) {
            if (!ipc->args.host_memory)
                hiar_cuda_unmap(ipc->device, a->base[p]);
            a->base[p] = NULL;
        }
}

extern "C" void hiar_ipc_destroy(hiar_ipc_t *ipc)
{
    if (!ipc)
        return;
    hiar_ipc_unmap_peers(ipc);
    if (!ipc->args.host_memory)
        cudaFree(ipc->args.base[ipc->args.me]);
    cudaFree(ipc->args.state);
    hiar_cuda_control_destroy(&ipc->own);
    cudaGetLastError();
    free(ipc);
}
