/*
 * HIAR_YIELD: how the comm's waits use their core (base/wait.h), chosen at
 * creation.  Where the ranks of a machine outnumber the CPUs their affinity
 * masks allow together, the peer a rank waits for may need its core, so
 * waits yield it early; else each rank has a core of its own, and a yield
 * would hand it to any other runnable process for a scheduler slice, so
 * waits spin first (HIAR_WAIT_SPIN_NS).  Nothing a call does depends on it:
 * ranks may choose apart (each machine from its own ranks).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/log.h"
#include "core/allreduce.h"
#include "core/comm.h"
#include "net/coll.h"
#include "topo/topo.h"

/*
 * The ranks the launcher put on this machine, where it says (Open MPI,
 * MPICH's Hydra and Intel MPI do): the comm may hold only some of them, and
 * the others compete for the same CPUs.
 */
static int launcher_local_ranks(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};

    for (int i = 0; i < 2; i++) {
        const char *v = getenv(vars[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 0 && n < 1 << 20)
            return (int)n;
    }
    return 0;
}

hiar_result_t hiar_comm_choose_yield(hiar_comm_t *comm)
{
    hiar_topo_cpus_t mine, *all = malloc(sizeof(*all) * (size_t)comm->size);
    hiar_topo_machine_cpus_t m = {0, 0, 0};
    int mode = (int)hiar_comm_param(comm, HIAR_P_YIELD), launched = launcher_local_ranks(), ranks, soon;
    char who[80];
    hiar_result_t rc = all ? HIAR_SUCCESS
                           : hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the CPU masks of %d ranks", comm->size);

    /* Every rank gathers, whatever its HIAR_YIELD: a rank that skipped the gather would leave the others in it. */
    HIAR_CHECK(hiar_net_agree(comm->mpi, rc, "allocating the CPU masks"));
    hiar_topo_cpus_mine(&mine);
    rc = hiar_net_allgather(comm->mpi, &mine, sizeof(mine), all, "MPI_Allgather of CPU masks");
    if (rc == HIAR_SUCCESS)
        m = hiar_topo_cpus_of_host(all, comm->size, comm->rank);
    free(all);
    HIAR_CHECK(rc);
    /* Ranks bound to CPUs of their own never outnumber them; the others count with the launcher's. */
    ranks = launched > m.ranks ? launched : m.ranks;
    soon = mode == HIAR_YIELD_AUTO ? m.shared && ranks > m.cpus : mode == HIAR_YIELD_SOON;
    comm->spin_ns = soon ? 0 : HIAR_WAIT_SPIN_NS;
    if (m.shared)
        snprintf(who, sizeof(who), "%d ranks on this machine share %d CPUs", ranks, m.cpus);
    else
        snprintf(who, sizeof(who), "%d ranks on this machine, each bound to CPUs of its own", m.ranks);
    snprintf(comm->yield_why, sizeof(comm->yield_why), "%s (%s%s)",
             soon ? "spin 256 polls, then yield the core at every poll" : "spin 1 ms, then yield the core too",
             mode == HIAR_YIELD_AUTO ? "" : "HIAR_YIELD; ", who);
    HIAR_INFO(INIT, "waits: %s", comm->yield_why);
    return HIAR_SUCCESS;
}

unsigned long long hiar_comm_spin_ns(const hiar_comm_t *comm)
{
    return comm->spin_ns;
}
