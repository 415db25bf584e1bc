/* Registered windows of a group: exchange and mapping, lookup, release. */
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/error.h"
#include "core/reg.h"

struct hiar_window {
    char *base;   /* this rank's range; NULL: a free entry */
    size_t bytes; /* the smallest range over the group: what every rank may use */
    int owned;    /* hiar_mem_alloc's: freed with the window */
    int size;     /* ranks mapped (0: none, the group has no IPC) */
    char *peer[HIAR_IPC_MAX_GROUP];  /* every rank's range as mapped here (own: base) */
    char *alloc[HIAR_IPC_MAX_GROUP]; /* peers' allocations, to unmap */
};

/* What a rank tells its group about a new window. */
typedef struct {
    unsigned char handle[HIAR_IPC_HANDLE_BYTES];
    uint64_t offset, bytes;
    int32_t index, pad;
} offer_t;

static int free_entry(hiar_windows_t *ws)
{
    hiar_window_t *w;

    for (int i = 0; i < ws->n; i++)
        if (!ws->w[i].base)
            return i;
    if (!(w = realloc(ws->w, sizeof(*w) * (size_t)(ws->n + 1))))
        return -1;
    memset(&w[ws->n], 0, sizeof(*w));
    ws->w = w;
    return ws->n++;
}

static void unmap(hiar_window_t *w, int device)
{
    for (int p = 0; p < w->size; p++)
        if (w->alloc[p])
            hiar_cuda_unmap(device, w->alloc[p]);
    memset(w->alloc, 0, sizeof(w->alloc));
    w->size = 0;
}

/* Maps every rank's range from the offers, gathered in rank order; the group's smallest size. */
static hiar_result_t map_all(hiar_window_t *w, const hiar_window_group_t *g, const offer_t *all, int index)
{
    w->size = g->size;
    for (int p = 0; p < g->size; p++) {
        if (all[p].index != index)
            return hiar_error_set(HIAR_INVALID_USAGE,
                                  "hiar_mem_register: ranks of a group register in a different order (window "
                                  "%d here, %d on local rank %d): register and free on every rank in one order",
                                  index, (int)all[p].index, p);
        w->bytes = all[p].bytes < w->bytes ? (size_t)all[p].bytes : w->bytes;
        if (p == g->local)
            w->peer[p] = w->base;
        else {
            HIAR_CHECK(hiar_cuda_map(g->device, all[p].handle, &w->alloc[p]));
            w->peer[p] = w->alloc[p] + all[p].offset;
        }
    }
    return HIAR_SUCCESS;
}

static hiar_result_t failed_elsewhere(hiar_result_t rc)
{
    return rc != HIAR_SUCCESS ? rc
                              : hiar_error_set(HIAR_INVALID_USAGE, "hiar_mem_register failed on another rank "
                                                                   "of the group (its log says why)");
}

hiar_result_t hiar_windows_add(hiar_windows_t *ws, const hiar_window_group_t *g, void *ptr, size_t bytes,
                               int owned)
{
    offer_t mine = {{0}, 0, bytes, 0, 0}, *all = NULL;
    int i = free_entry(ws);
    hiar_result_t rc = HIAR_SUCCESS;
    hiar_window_t *w;
    size_t offset = 0;

    if (i < 0 || (g->ipc && !(all = calloc((size_t)g->size, sizeof(*all)))))
        rc = hiar_error_set(HIAR_NO_MEMORY, "hiar_mem_register: cannot grow the table of registered memory");
    else /* without IPC too: what can be registered must not depend on the grouping */
        rc = hiar_cuda_export(ptr, bytes, mine.handle, &offset);
    if (g->ipc && !hiar_mpi_all(g->comm, rc == HIAR_SUCCESS)) {
        free(all);
        return failed_elsewhere(rc);
    }
    if (rc != HIAR_SUCCESS)
        return rc;
    w = &ws->w[i];
    w->base = ptr;
    w->bytes = bytes;
    w->owned = owned;
    if (!g->ipc)
        return HIAR_SUCCESS;
    mine.offset = offset;
    mine.index = i;
    if (PMPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, g->comm) != MPI_SUCCESS)
        rc = hiar_error_set(HIAR_MPI_ERROR, "hiar_mem_register: MPI_Allgather of the handles failed");
    else
        rc = map_all(w, g, all, i);
    free(all);
    if (!hiar_mpi_all(g->comm, rc == HIAR_SUCCESS)) {
        unmap(w, g->device);
        memset(w, 0, sizeof(*w));
        return failed_elsewhere(rc);
    }
    return HIAR_SUCCESS;
}

int hiar_windows_find(const hiar_windows_t *ws, const void *ptr, int *owned)
{
    for (int i = 0; i < ws->n; i++)
        if (ptr && ws->w[i].base == ptr) {
            *owned = ws->w[i].owned;
            return i;
        }
    return -1;
}

void hiar_windows_remove(hiar_windows_t *ws, const hiar_window_group_t *g, int i, int collective)
{
    hiar_window_t *w = &ws->w[i];
    int mapped = w->size > 0;

    /* Kernels that write into the peers' windows, or they into ours, are done here... */
    hiar_cuda_device_sync(g->device);
    unmap(w, g->device);
    /* ...and everywhere after the barrier: then nobody maps ours, and it can go.  A
     * failed comm's peers may still map it and write into it: it stays (leaks). */
    if (mapped && collective)
        PMPI_Barrier(g->comm);
    if (w->owned && collective)
        hiar_cuda_mem_free(w->base);
    memset(w, 0, sizeof(*w));
}

void hiar_windows_clear(hiar_windows_t *ws, const hiar_window_group_t *g, int collective)
{
    for (int i = 0; i < ws->n; i++)
        if (ws->w[i].base)
            hiar_windows_remove(ws, g, i, collective);
    free(ws->w);
    ws->w = NULL;
    ws->n = 0;
}

int hiar_windows_direct(const hiar_windows_t *ws, const void *out, size_t bytes, hiar_ipc_direct_t *d)
{
    for (int i = 0; i < ws->n; i++) {
        const hiar_window_t *w = &ws->w[i];
        size_t off = (size_t)((const char *)out - w->base);
        /* The tag keeps 40 bits of offset. */
        if (!w->size || (const char *)out < w->base || off > w->bytes || bytes > w->bytes - off || off >> 40)
            continue;
        for (int p = 0; p < w->size; p++)
            d->out[p] = w->peer[p] + off;
        d->tag = (uint64_t)(i + 1) << 40 | off;
        return 1;
    }
    return 0;
}
