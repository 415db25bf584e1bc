/*
 * The two sides of a communicator: host buffers group by host (shared
 * memory), device buffers by topology (CUDA IPC).  Each side is a grouping
 * tier (net/tier.h) and the transport of this rank's group, built by the
 * same code for both kinds of memory.
 */
#ifndef HIAR_CORE_GROUPS_H
#define HIAR_CORE_GROUPS_H

#include <mpi.h>

#include "base/settings.h"
#include "net/tier.h"
#include "topo/topo.h"
#include "transport/transport.h"

typedef struct {
    hiar_tier_t tier;
    const hiar_transport_t *tp; /* NULL: none (every rank alone, or device buffers staged) */
    void *state;
    char why[320]; /* the transport and why */
} hiar_side_t;

/* What the exchange of host records tells beside the grouping. */
typedef struct {
    hiar_topo_machine_cpus_t cpus; /* what the ranks of this rank's real machine may run on (HIAR_YIELD) */
    int machines;                  /* real machines (host name and boot id) of the ranks */
    int machine_ranks;             /* the most ranks of the comm on one of them */
} hiar_host_facts_t;

/*
 * Collective over mpi: the host-buffer grouping (HIAR_GROUPS, RANK, else by
 * host); no group spans real hosts.  *facts: from the same exchange.
 */
hiar_result_t hiar_groups_host(const hiar_params_t *p, MPI_Comm mpi, int rank, int size, hiar_grouping_t *out,
                               hiar_host_facts_t *facts);

/* The device-buffer grouping from every rank's facts (HIAR_GROUPS, else HIAR_GROUP_LEVEL), annotated. */
hiar_result_t hiar_groups_device(const hiar_params_t *p, const hiar_topo_fact_t *facts, int size,
                                 hiar_grouping_t *out);

/*
 * Sets up the first of the n candidates usable for this rank's group; one
 * whose setup fails (on every rank of the group alike) gives way to the next
 * usable one.  Returns how the last setup went (HIAR_SUCCESS when none is
 * usable: then the first one's why).  When every setup failed the side has
 * no transport, its why saying why the last failed; the caller decides
 * whether that fails the comm.
 */
hiar_result_t hiar_side_connect(hiar_side_t *s, const hiar_transport_t *const *candidates, int n,
                       const hiar_transport_config_t *cfg);

/* HIAR_TEARDOWN_* flags; KEEP also keeps the tier's communicators. */
void hiar_side_free(hiar_side_t *s, int flags);

#endif
