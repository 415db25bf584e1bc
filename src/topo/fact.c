/* What one rank knows about itself: host, GPU and PCI path, NVLink peers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topo/topo.h"

int hiar_topo_same_host(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b)
{
    return strncmp(a->host_id, b->host_id, HIAR_HOST_ID_MAX) == 0;
}

void hiar_topo_fact_init(hiar_topo_fact_t *fact, const char *host_id)
{
    memset(fact, 0, sizeof(*fact));
    snprintf(fact->host_id, sizeof(fact->host_id), "%s", host_id ? host_id : "");
    fact->pci.numa_node = -1;
    fact->nvlink_group = -1;
}

hiar_result_t hiar_topo_fact_set_gpu(hiar_topo_fact_t *fact, const char *sysfs_root,
                                     const char *bus_id)
{
    return hiar_pci_locate(sysfs_root, bus_id, &fact->pci);
}

int hiar_topo_lists_nvlink_peer(const hiar_topo_fact_t *fact, const char *bus_id)
{
    for (int i = 0; i < fact->nvlink_npeers; i++)
        if (strcmp(fact->nvlink_peer[i], bus_id) == 0)
            return 1;
    return 0;
}

hiar_result_t hiar_topo_fact_add_nvlink_peer(hiar_topo_fact_t *fact, const char *bus_id)
{
    char norm[HIAR_BUSID_MAX];

    HIAR_CHECK(hiar_pci_busid_normalize(bus_id, norm));
    /* NVML reports one remote per link; two links to one peer are one peer. */
    if (hiar_topo_lists_nvlink_peer(fact, norm))
        return HIAR_SUCCESS;
    HIAR_ARG_CHECK(fact->nvlink_npeers < HIAR_NVLINK_PEERS_MAX,
                   "GPU %s: NVLink peer %s is one too many: at most %d peers are kept",
                   fact->pci.bus_id, norm, HIAR_NVLINK_PEERS_MAX);
    memcpy(fact->nvlink_peer[fact->nvlink_npeers++], norm, sizeof(norm));
    return HIAR_SUCCESS;
}

/* The facts of the GPU named by entry (len characters of list, its index-th). */
static hiar_result_t fact_of_entry(const char *root, const char *list, const char *entry, size_t len,
                                   int index, const char *host_id, hiar_topo_fact_t *fact)
{
    char one[HIAR_BUSID_MAX + 8];

    HIAR_ARG_CHECK(len > 0 && len < sizeof(one),
                   "GPU list \"%s\": entry %d is %s: expected PCI bus ids separated by commas, "
                   "e.g. 0000:3b:00.0,0000:5e:00.0",
                   list, index, len ? "too long" : "empty");
    memcpy(one, entry, len);
    one[len] = '\0';
    hiar_topo_fact_init(fact, host_id);
    return hiar_topo_fact_set_gpu(fact, root, one);
}

hiar_result_t hiar_topo_facts_for_gpus(const char *sysfs_root, const char *bus_ids,
                                       const char *host_id, hiar_topo_fact_t **facts, int *nranks)
{
    hiar_topo_fact_t *all;
    const char *p = bus_ids;
    int n = 1;

    HIAR_ARG_CHECK(bus_ids && *bus_ids, "the GPU list is empty: expected PCI bus ids separated "
                                        "by commas, e.g. 0000:3b:00.0,0000:5e:00.0");
    for (const char *c = bus_ids; *c; c++)
        n += *c == ',';
    all = calloc((size_t)n, sizeof(*all));
    if (!all)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the facts of %d GPUs", n);
    for (int r = 0; r < n; r++) {
        size_t len = strcspn(p, ",");
        hiar_result_t rc = fact_of_entry(sysfs_root, bus_ids, p, len, r, host_id, &all[r]);
        if (rc != HIAR_SUCCESS) {
            free(all);
            return rc;
        }
        p += len + 1;
    }
    *facts = all;
    *nranks = n;
    return HIAR_SUCCESS;
}
