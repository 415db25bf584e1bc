/*
 * The CUDA IPC transport of a group of GPUs: buffers exported and mapped in
 * the group (peers.c), the P2P check, launch caps, and its runs (kernels in
 * cuda/).  Set up: create -> exchange and map -> probe -> caps, every step
 * agreed in the group.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "net/coll.h"
#include "transport/kernels.h"
#include "transport/peers.h"

/* What the P2P probe writes; the allocation starts zeroed, so it cannot be stale. */
#define PROBE_TOKEN 0x6869617270327000ull

int hiar_kernels_usable(const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why, size_t len)
{
    if (cfg->all_gpu && t->local_size >= 2 && t->local_size <= HIAR_IPC_MAX_GROUP)
        return 1;
    snprintf(why, len, "staged through host memory: %s",
             t->local_size < 2 ? "the group has one rank"
             : !cfg->all_gpu   ? "not every rank of the group has a GPU"
                               : "GPU groups have at most 8 ranks");
    return 0;
}

/* Every rank stores a token into every peer; after a barrier each reads back what its peers stored. */
hiar_result_t hiar_kernels_probe(hiar_ipc_t *ipc, MPI_Comm group)
{
    int pass = 0;
    hiar_result_t rc = hiar_ipc_probe_write(ipc, PROBE_TOKEN), brc = hiar_net_barrier(group);

    rc = rc == HIAR_SUCCESS ? brc : rc;
    if (rc == HIAR_SUCCESS && (rc = hiar_ipc_probe_check(ipc, PROBE_TOKEN, &pass)) == HIAR_SUCCESS && !pass)
        rc = hiar_error_set(HIAR_CUDA_ERROR, "wrong data read back");
    return hiar_net_agree(group, rc, "the CUDA IPC P2P check");
}

/*
 * Launch caps for the group: each GPU's share for the most ranks on one GPU
 * of the group, the smallest over its ranks (the same grids everywhere);
 * two-shot within HIAR_MAX_BLOCKS (0: the default).
 *
 * Where other kernels of the comm run beside ours on a shared GPU (several
 * groups: other groups' kernels, the step between groups), kernels of
 * different kinds mix, and shares of each kind's blocks per SM no longer
 * add up: on one H200, 4 ranks as 0|1,2,3, two-shot blocks spread one per
 * SM left no whole SM for a push kernel between groups, whose peers waited
 * until the timeout.  Then every kernel takes at most half an SM (push is
 * not used: core/plan.c), gets two blocks per SM of its share, and no
 * programmatic dependent launch (whose next kernel would hold SMs too):
 * with at most one kernel per rank and two blocks per SM in all, a block
 * that waits for room always finds an SM with half of it free.
 */
void hiar_kernels_set_launch(hiar_ipc_t *ipc, const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why,
                             size_t len)
{
    int want = cfg->max_blocks, sharers = cfg->on_gpu, caps[4], launch;
    unsigned max = want <= 0 ? HIAR_IPC_BLOCKS_DEFAULT : want > HIAR_IPC_BLOCKS_MAX ? HIAR_IPC_BLOCKS_MAX : (unsigned)want;
    hiar_ipc_caps_t fit;
    size_t used = strlen(why);
    unsigned share; /* sharers, at least 1 */
    int mixed;

    hiar_net_max(t->group_comm, &sharers, 1);
    mixed = cfg->mixed && sharers > 1;
    share = sharers > 0 ? (unsigned)sharers : 1;
    hiar_ipc_fit_caps(ipc, share, mixed, &fit);
    caps[0] = (int)fit.ll;
    caps[1] = (int)fit.push;
    caps[2] = (int)(fit.twoshot < max ? fit.twoshot : max);
    /* Clusters on every rank of the group or none: they decide the order of the fused norm's sums. */
    caps[3] = cfg->clusters && hiar_ipc_clusters_usable(ipc, share);
    hiar_net_min(t->group_comm, caps, 4);
    fit = (hiar_ipc_caps_t){(unsigned)caps[0], (unsigned)caps[1], (unsigned)caps[2]};
    launch = hiar_ipc_set_launch(ipc, &fit, cfg->pdl && !mixed, caps[3]);
    snprintf(why + used, len - used, "; kernels of at most %u (LL), %u (push), %u (two-shot) blocks for %d rank%s on "
             "one GPU%s, %s%s", fit.ll, fit.push, fit.twoshot, sharers, sharers == 1 ? "" : "s",
             mixed ? " beside other kernels" : "",
             launch & HIAR_IPC_LAUNCH_PDL ? "programmatic dependent launch" : "plain launches",
             launch & HIAR_IPC_LAUNCH_CLUSTERS ? ", thread-block clusters"
             : cfg->clusters                   ? ", no thread-block clusters (not on this GPU, or no room for them)"
                                               : "");
}

static hiar_result_t ipc_setup(const hiar_tier_t *t, const hiar_transport_config_t *cfg, void **state, char *why,
                               size_t len)
{
    hiar_ipc_offer_t mine, all[HIAR_IPC_MAX_GROUP];
    char *mapped[HIAR_IPC_MAX_GROUP];
    hiar_ipc_t *ipc = NULL;
    hiar_result_t rc;

    memset(&mine, 0, sizeof(mine));
    rc = hiar_ipc_create(t->local, t->local_size, cfg->slot_bytes, cfg->timeout_ms, &ipc, mine.handle);
    if ((rc = hiar_net_agree(t->group_comm, rc, "CUDA IPC buffers")) != HIAR_SUCCESS) {
        snprintf(why, len, "no CUDA IPC: its buffers could not be allocated (%s)", hiar_last_error());
        hiar_ipc_destroy(ipc);
        return rc;
    }
    rc = hiar_peers_exchange(t->group_comm, t->local, t->local_size, cfg->device, HIAR_SUCCESS, &mine, all, mapped,
                             "the CUDA IPC transport");
    if (rc == HIAR_SUCCESS) {
        hiar_ipc_set_peers(ipc, mapped);
        rc = hiar_kernels_probe(ipc, t->group_comm);
    }
    if (rc != HIAR_SUCCESS) {
        snprintf(why, len, "no CUDA IPC: the P2P check failed (%s)", hiar_last_error());
        if (cfg->setup_may_fail)
            HIAR_INFO(IPC, "%s", why);
        else
            HIAR_WARN(IPC, "%s; trying pinned host memory", why);
        *state = ipc;
        hiar_transport_ipc.teardown(ipc, t, HIAR_TEARDOWN_COLLECTIVE);
        *state = NULL;
        return rc;
    }
    snprintf(why, len, "ipc (P2P verified by a write and read-back between every pair)");
    hiar_kernels_set_launch(ipc, t, cfg, why, len);
    if (cfg->control)
        hiar_ipc_share_control(ipc, cfg->control);
    *state = ipc;
    return HIAR_SUCCESS;
}

/* The all-gather half sends the owned shards from the output, where the step between groups left them. */
hiar_result_t hiar_kernels_run(void *state, const hiar_tier_t *t, const hiar_call_t *c, hiar_step_t step)
{
    hiar_call_t ag = *c;

    (void)t;
    HIAR_CHECK(hiar_ipc_status(state));
    if (step == HIAR_STEP_ALLREDUCE)
        return hiar_ipc_allreduce(state, c);
    ag.sendbuf = c->recvbuf;
    return hiar_ipc_hier_step(state, step == HIAR_STEP_ALLGATHER ? &ag : c, step, c->plan.chunk);
}

hiar_result_t hiar_kernels_status(const void *state)
{
    return hiar_ipc_status(state);
}

void hiar_kernels_abort(void *state)
{
    hiar_ipc_abort(state);
}

#ifdef HIAR_KERNEL_MARKS
static void marks_line(void *arg, const char *text)
{
    const hiar_tier_t *t = arg;

    HIAR_INFO(IPC, "kernel marks, rank %d of a group of %d: %s", t->local, t->local_size, text);
}
#endif

/* Steps that need every peer's memory mapped are separated by group barriers; a build with kernel marks logs
 * them (cuda/api.h) once the kernels are done (other builds read nothing back at teardown). */
void hiar_kernels_quiesce(hiar_ipc_t *ipc, const hiar_tier_t *t, int flags)
{
    if (!(flags & HIAR_TEARDOWN_COLLECTIVE))
        hiar_ipc_abort(ipc);
    hiar_cuda_device_sync(hiar_ipc_device(ipc)); /* then peers can unmap and the owner free */
    if (flags & HIAR_TEARDOWN_COLLECTIVE) {
#ifdef HIAR_KERNEL_MARKS
        (void)hiar_ipc_marks_lines(ipc, marks_line, (void *)t);
#endif
        hiar_net_barrier(t->group_comm);
        hiar_ipc_unmap_peers(ipc);
        hiar_net_barrier(t->group_comm);
    }
}

int hiar_transport_runs_kernels(const hiar_transport_t *tp)
{
    return tp == &hiar_transport_ipc || tp == &hiar_transport_pinned;
}

static void ipc_teardown(void *state, const hiar_tier_t *t, int flags)
{
    if (!state)
        return;
    hiar_kernels_quiesce(state, t, flags);
    hiar_ipc_destroy(state);
}

const hiar_transport_t hiar_transport_ipc = {
    .name = "ipc",
    .usable = hiar_kernels_usable,
    .setup = ipc_setup,
    .run = hiar_kernels_run,
    .max_bytes = hiar_transport_unbounded,
    .status = hiar_kernels_status,
    .abort = hiar_kernels_abort,
    .teardown = ipc_teardown,
};
