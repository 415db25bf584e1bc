/*
 * HIAR_YIELD: how the comm's waits use their core (base/wait.h), chosen at
 * creation from the host records every rank sends (core/groups.c).  Where
 * the ranks of a machine outnumber the CPUs they may run on, the peer a
 * rank waits for may need its core, so waits yield it early; else each rank
 * has a core of its own, and a yield would hand it to any other runnable
 * process for a scheduler slice, so waits spin first (HIAR_WAIT_SPIN_NS).
 * Nothing a call does depends on it: ranks may choose apart.
 */
#include "config.h"

#include <stdio.h>

#include "base/log.h"
#include "core/allreduce.h"
#include "core/comm.h"
#include "topo/topo.h"

/* 2 where the comm runs a progress thread (it may need the CPU its rank's waits spin on), else 1. */
static int threads_per_rank(const hiar_comm_t *comm)
{
#ifdef HIAR_HAVE_CUDA
    return comm->gpu && comm->gpu->hosts ? 2 : 1;
#else
    (void)comm;
    return 1;
#endif
}

void hiar_comm_set_yield(hiar_comm_t *comm, const hiar_topo_machine_cpus_t *m)
{
    int mode = (int)hiar_comm_param(comm, HIAR_P_YIELD), launched = hiar_topo_launcher_local_ranks();
    int threads = threads_per_rank(comm), ranks = launched > m->ranks ? launched : m->ranks;
    int soon = mode == HIAR_YIELD_AUTO ? hiar_topo_cpus_outnumbered(m, launched, threads) : mode == HIAR_YIELD_SOON;
    char who[128];

    comm->spin_ns = soon ? 0 : HIAR_WAIT_SPIN_NS;
#ifdef HIAR_HAVE_CUDA
    if (comm->gpu && comm->gpu->hosts)
        hiar_hosts_set_spin(comm->gpu->hosts, comm->spin_ns); /* the progress thread waits alike */
#endif
    if (m->pinned)
        snprintf(who, sizeof(who), "%d rank%s of this machine here, each pinned to a CPU of its own", m->ranks,
                 m->ranks == 1 ? "" : "s");
    else
        snprintf(who, sizeof(who), "%d rank%s of this machine (%d here) on %d CPUs", ranks, ranks == 1 ? "" : "s",
                 m->ranks, m->cpus);
    snprintf(comm->yield_why, sizeof(comm->yield_why), "%s (%s%s%s)",
             soon ? "spin 256 polls, then yield the core at every poll" : "spin 1 ms, then yield the core too",
             mode == HIAR_YIELD_AUTO ? "" : "HIAR_YIELD; ", who,
             threads > 1 ? "; and a progress thread each, whose waits do the same" : "");
    HIAR_INFO(INIT, "waits: %s", comm->yield_why);
}

unsigned long long hiar_comm_spin_ns(const hiar_comm_t *comm)
{
    return comm->spin_ns;
}
