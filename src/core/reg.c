/* Registered ranges of a group: export and mapping (transport/peers.c), lookup, release. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/reg.h"
#include "net/coll.h"
#include "transport/peers.h"

struct hiar_reg_entry {
    char *base;   /* this rank's range; NULL: a free entry */
    size_t bytes; /* the smallest range over the group: what every rank may use */
    int owned;    /* hiar_mem_alloc's: freed with the entry */
    int size;     /* ranks mapped (0: none, the group has no IPC) */
    char *peer[HIAR_IPC_MAX_GROUP];  /* every rank's range as mapped here (own: base) */
    char *alloc[HIAR_IPC_MAX_GROUP]; /* peers' allocations, to unmap */
};

static int free_entry(hiar_reg_t *r)
{
    hiar_reg_entry_t *e;

    for (int i = 0; i < r->n; i++)
        if (!r->e[i].base)
            return i;
    if (!(e = realloc(r->e, sizeof(*e) * (size_t)(r->n + 1))))
        return -1;
    memset(&e[r->n], 0, sizeof(*e));
    r->e = e;
    return r->n++;
}

/* Every rank's range from the offers, gathered in rank order; the group's smallest size. */
static hiar_result_t take_offers(hiar_reg_entry_t *e, const hiar_reg_group_t *g, const hiar_ipc_offer_t *all,
                                 char **mapped, int index)
{
    for (int p = 0; p < g->size; p++)
        if (all[p].index != index)
            return hiar_error_set(HIAR_INVALID_USAGE,
                                  "hiar_mem_register: ranks of a group register in a different order (entry %d "
                                  "here, %d on local rank %d): register and free on every rank in one order",
                                  index, (int)all[p].index, p);
    e->size = g->size;
    for (int p = 0; p < g->size; p++) {
        e->bytes = all[p].bytes < e->bytes ? (size_t)all[p].bytes : e->bytes;
        e->alloc[p] = mapped[p];
        e->peer[p] = p == g->local ? e->base : mapped[p] + all[p].offset;
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_reg_add(hiar_reg_t *r, const hiar_reg_group_t *g, void *ptr, size_t bytes, int owned)
{
    hiar_ipc_offer_t mine, all[HIAR_IPC_MAX_GROUP];
    char *mapped[HIAR_IPC_MAX_GROUP];
    int i = free_entry(r);
    hiar_result_t rc;
    size_t offset = 0;

    memset(&mine, 0, sizeof(mine));
    /* Exported without IPC too: what can be registered must not depend on the grouping. */
    rc = i < 0 ? hiar_error_set(HIAR_NO_MEMORY, "hiar_mem_register: cannot grow the table of registered memory")
               : hiar_cuda_export(ptr, bytes, mine.handle, &offset, "hiar_mem_register");
    mine.offset = offset;
    mine.bytes = bytes;
    mine.index = i;
    if (g->ipc)
        rc = hiar_peers_exchange(g->comm, g->local, g->size, g->device, rc, &mine, all, mapped, "hiar_mem_register");
    if (rc != HIAR_SUCCESS)
        return rc;
    r->e[i] = (hiar_reg_entry_t){.base = ptr, .bytes = bytes, .owned = owned};
    if (g->ipc && (rc = take_offers(&r->e[i], g, all, mapped, i)) != HIAR_SUCCESS) {
        hiar_peers_unmap(g->device, mapped, g->size);
        memset(&r->e[i], 0, sizeof(r->e[i]));
    }
    return rc;
}

int hiar_reg_find(const hiar_reg_t *r, const void *ptr, int *owned)
{
    for (int i = 0; i < r->n; i++)
        if (ptr && r->e[i].base == ptr) {
            *owned = r->e[i].owned;
            return i;
        }
    return -1;
}

void hiar_reg_remove(hiar_reg_t *r, const hiar_reg_group_t *g, int i, int collective)
{
    hiar_reg_entry_t *e = &r->e[i];
    int mapped = e->size > 0;

    /* Kernels that write into the peers' ranges, or they into ours, are done here... */
    hiar_cuda_device_sync(g->device);
    hiar_peers_unmap(g->device, e->alloc, e->size);
    /* ...and everywhere after the barrier: then nobody maps ours, and it can go.  A
     * failed comm's peers may still map it and write into it: it stays (leaks). */
    if (mapped && collective)
        hiar_net_barrier(g->comm);
    if (e->owned && collective)
        hiar_cuda_mem_free(e->base);
    memset(e, 0, sizeof(*e));
}

void hiar_reg_clear(hiar_reg_t *r, const hiar_reg_group_t *g, int collective)
{
    for (int i = 0; i < r->n; i++)
        if (r->e[i].base)
            hiar_reg_remove(r, g, i, collective);
    free(r->e);
    r->e = NULL;
    r->n = 0;
}

/* Whether [p, p + bytes) lies in entry e's range on this rank; *off: where. */
static int entry_holds(const hiar_reg_entry_t *e, const void *p, size_t bytes, size_t *off)
{
    *off = (size_t)((const char *)p - e->base);
    return e->base && (const char *)p >= e->base && *off <= e->bytes && bytes <= e->bytes - *off;
}

int hiar_reg_holds(const hiar_reg_t *r, const void *p, size_t bytes)
{
    size_t off;

    for (int i = 0; i < r->n; i++)
        if (entry_holds(&r->e[i], p, bytes, &off))
            return 1;
    return 0;
}

int hiar_reg_direct(const hiar_reg_t *r, const void *out, size_t bytes, hiar_ipc_direct_t *d)
{
    for (int i = 0; i < r->n; i++) {
        const hiar_reg_entry_t *e = &r->e[i];
        size_t off;
        /* The tag keeps 40 bits of offset. */
        if (!e->size || !entry_holds(e, out, bytes, &off) || off >> 40)
            continue;
        for (int p = 0; p < e->size; p++)
            d->out[p] = e->peer[p] + off;
        d->tag = (uint64_t)(i + 1) << 40 | off;
        return 1;
    }
    return 0;
}
