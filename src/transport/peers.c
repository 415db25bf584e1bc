/* Exchange of CUDA IPC handles in a group and mapping of the peers' memory. */
#include <string.h>

#include "base/error.h"
#include "net/coll.h"
#include "transport/peers.h"

void hiar_peers_unmap(int device, char **mapped, int size)
{
    for (int p = 0; p < size; p++)
        if (mapped[p]) {
            hiar_cuda_unmap(device, mapped[p]);
            mapped[p] = NULL;
        }
}

static hiar_result_t map_peers(int local, int size, int device, const hiar_ipc_offer_t *all, char **mapped,
                               const char *what)
{
    for (int p = 0; p < size; p++)
        if (p != local)
            HIAR_CHECK(hiar_cuda_map(device, all[p].handle, &mapped[p], what));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_peers_exchange(MPI_Comm group, int local, int size, int device, hiar_result_t rc,
                                  const hiar_ipc_offer_t *mine, hiar_ipc_offer_t *all, char **mapped,
                                  const char *what)
{
    hiar_ipc_offer_t none;

    memset(mapped, 0, sizeof(*mapped) * (size_t)size);
    HIAR_CHECK(hiar_net_agree(group, rc, what));
    memset(&none, 0, sizeof(none));
    HIAR_CHECK(hiar_net_allgather(group, mine ? mine : &none, sizeof(none), all, what));
    rc = hiar_net_agree(group, map_peers(local, size, device, all, mapped, what), what);
    if (rc != HIAR_SUCCESS)
        hiar_peers_unmap(device, mapped, size);
    return rc;
}
