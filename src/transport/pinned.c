/*
 * The pinned-host-memory transport, for GPUs that cannot reach each other by
 * P2P (consumer cards, P2P disabled by the driver or a VM, CUDA IPC refused
 * in a container), as NCCL's SHM transport: the group's buffers lie in one
 * shared segment (segment.c), which every rank registers with CUDA, and the
 * kernels of the IPC transport (cuda/) read and write it through its device
 * address.  Kernels only: asynchronous and capturable, unlike staged copies.
 * Set up: map the segment -> register -> initialise own buffers -> barrier
 * -> probe -> caps, every step agreed in the group.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "base/log.h"
#include "net/coll.h"
#include "transport/kernels.h"
#include "transport/segment.h"

static void release_segment(void *seg, size_t bytes)
{
    hiar_cuda_host_unregister(seg);
    munmap(seg, bytes);
}

/* What the group does instead when the transport fails (setup_may_fail: another serves it; its failures log at
 * INFO, not WARN). */
static const char *instead(const hiar_transport_config_t *cfg)
{
    return cfg->setup_may_fail ? "not set up" : "staged through host memory";
}

/* The segment, pinned for CUDA on every rank of the group, or nothing (agreed). */
static hiar_result_t pin_segment(const hiar_tier_t *t, const hiar_transport_config_t *cfg, size_t bytes, void **seg,
                                 char **dev, char *why, size_t len)
{
    hiar_result_t rc = hiar_segment_map(t->group_comm, t->local, bytes, "the pinned-host transport",
                                        cfg->setup_may_fail, seg);

    if (rc != HIAR_SUCCESS) {
        snprintf(why, len, "%s: no shared segment for the pinned-host transport (%s)", instead(cfg),
                 hiar_last_error());
        return rc;
    }
    rc = hiar_net_agree(t->group_comm, hiar_cuda_host_register(*seg, bytes, dev),
                        "registering the pinned-host transport's segment with CUDA");
    if (rc == HIAR_SUCCESS)
        return HIAR_SUCCESS;
    snprintf(why, len, "%s: the pinned-host transport could not pin %zu bytes (%s); raise the locked-memory limit "
             "(ulimit -l unlimited; docker: --ulimit memlock=-1) or lower HIAR_BUFFER_SIZE",
             instead(cfg), bytes, hiar_last_error());
    release_segment(*seg, bytes);
    return rc;
}

static hiar_result_t pinned_setup(const hiar_tier_t *t, const hiar_transport_config_t *cfg, void **state, char *why,
                                  size_t len)
{
    int n = t->local_size;
    size_t region = hiar_ipc_region_bytes(n, cfg->pinned_slot_bytes), bytes = region * (size_t)n;
    char *dev = NULL, *bases[HIAR_IPC_MAX_GROUP];
    hiar_ipc_t *ipc = NULL;
    void *seg = NULL;
    hiar_result_t rc;

    *state = NULL;
    if ((rc = pin_segment(t, cfg, bytes, &seg, &dev, why, len)) != HIAR_SUCCESS) {
        HIAR_LOG_AT(cfg->setup_may_fail ? HIAR_LOG_INFO : HIAR_LOG_WARN, IPC, "%s", why);
        return rc;
    }
    for (int p = 0; p < n; p++)
        bases[p] = dev + (size_t)p * region;
    rc = hiar_ipc_create_pinned(t->local, n, cfg->pinned_slot_bytes, cfg->timeout_ms, seg, bytes, bases, &ipc);
    rc = hiar_net_agree(t->group_comm, rc, "the pinned-host transport's buffers");
    /* Every rank has cleared its own buffers before any peer writes a probe token there. */
    if (rc == HIAR_SUCCESS && (rc = hiar_net_barrier(t->group_comm)) == HIAR_SUCCESS)
        rc = hiar_kernels_probe(ipc, t->group_comm);
    if (rc != HIAR_SUCCESS) {
        snprintf(why, len, "%s: the pinned-host transport failed (%s)", instead(cfg), hiar_last_error());
        HIAR_LOG_AT(cfg->setup_may_fail ? HIAR_LOG_INFO : HIAR_LOG_WARN, IPC, "%s", why);
        /* Not collective: a peer whose buffers failed has no state to tear down.  No kernel ran yet. */
        if (ipc)
            hiar_transport_pinned.teardown(ipc, t, 0);
        else
            release_segment(seg, bytes);
        return rc;
    }
    snprintf(why, len, "pinned host memory (%d x %zu bytes of /dev/shm registered with CUDA, read and written by "
             "kernels)", n, region);
    hiar_kernels_set_launch(ipc, t, cfg, why, len);
    if (cfg->control)
        hiar_ipc_share_control(ipc, cfg->control);
    *state = ipc;
    return HIAR_SUCCESS;
}

/* The segment goes after every kernel that could touch it has ended. */
static void pinned_teardown(void *state, const hiar_tier_t *t, int flags)
{
    size_t bytes;
    void *seg;

    if (!state)
        return;
    seg = hiar_ipc_segment(state, &bytes);
    hiar_kernels_quiesce(state, t, flags);
    hiar_ipc_destroy(state);
    release_segment(seg, bytes);
}

const hiar_transport_t hiar_transport_pinned = {
    .name = "pinned",
    .usable = hiar_kernels_usable,
    .setup = pinned_setup,
    .run = hiar_kernels_run,
    .max_bytes = hiar_transport_unbounded,
    .status = hiar_kernels_status,
    .abort = hiar_kernels_abort,
    .teardown = pinned_teardown,
};
