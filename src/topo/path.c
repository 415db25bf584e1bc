/* How two ranks reach each other: the path between their devices, and P2P. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topo/topo.h"

hiar_result_t hiar_topo_p2p_none(const hiar_topo_fact_t *facts, int nranks, unsigned char **p2p)
{
    unsigned char *m = malloc((size_t)nranks * (size_t)nranks);

    if (!m)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the P2P matrix of %d ranks", nranks);
    for (int a = 0; a < nranks; a++)
        for (int b = 0; b < nranks; b++)
            m[(size_t)a * (size_t)nranks + (size_t)b] =
                hiar_topo_same_host(&facts[a], &facts[b]) && *facts[a].pci.bus_id &&
                strcmp(facts[a].pci.bus_id, facts[b].pci.bus_id) == 0;
    *p2p = m;
    return HIAR_SUCCESS;
}

static int nvlinked(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b)
{
    return (a->nvlink_group >= 0 && a->nvlink_group == b->nvlink_group) ||
           hiar_topo_lists_nvlink_peer(a, b->pci.bus_id) ||
           hiar_topo_lists_nvlink_peer(b, a->pci.bus_id);
}

hiar_path_t hiar_topo_path(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b, char *why,
                           size_t len)
{
    if (!hiar_topo_same_host(a, b)) {
        snprintf(why, len, "different hosts");
        return HIAR_PATH_NET;
    }
    if (!*a->pci.bus_id || !*b->pci.bus_id) {
        snprintf(why, len, "same host, %s without GPU", *a->pci.bus_id || *b->pci.bus_id ? "one" : "both");
        return HIAR_PATH_HOST;
    }
    if (strcmp(a->pci.bus_id, b->pci.bus_id) != 0 && nvlinked(a, b)) {
        snprintf(why, len, "NVLink between %s and %s", a->pci.bus_id, b->pci.bus_id);
        return HIAR_PATH_NVL;
    }
    return hiar_pci_path(&a->pci, &b->pci, why, len);
}
