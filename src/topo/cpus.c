/* A rank's host record and what the ranks of a machine may run on (for HIAR_YIELD: core/yield.c). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

void hiar_topo_rank_host(const char *override, hiar_topo_rank_host_t *out)
{
    cpu_set_t set;

    memset(out, 0, sizeof(*out));
    hiar_topo_host_id(override, out->host);
    hiar_topo_host_id(NULL, out->machine);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        CPU_ZERO(&set);
        for (long c = 0; c < (online > 0 ? online : 1) && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &set);
    }
    for (int c = 0; c < CPU_SETSIZE && c < 64 * HIAR_CPU_WORDS; c++)
        if (CPU_ISSET(c, &set))
            out->cpus[c / 64] |= (uint64_t)1 << (c % 64);
}

static int count_cpus(const uint64_t *mask)
{
    int n = 0;

    for (int w = 0; w < HIAR_CPU_WORDS; w++)
        n += __builtin_popcountll(mask[w]);
    return n;
}

hiar_topo_machine_cpus_t hiar_topo_machine_cpus(const hiar_topo_rank_host_t *all, int n, int me)
{
    hiar_topo_machine_cpus_t m = {0, 0, 1};
    uint64_t any[HIAR_CPU_WORDS] = {0};

    for (int r = 0; r < n; r++) {
        if (strncmp(all[r].machine, all[me].machine, HIAR_HOST_ID_MAX) != 0)
            continue;
        m.ranks++;
        m.pinned &= count_cpus(all[r].cpus) == 1;
        for (int w = 0; w < HIAR_CPU_WORDS; w++) {
            m.pinned &= (any[w] & all[r].cpus[w]) == 0;
            any[w] |= all[r].cpus[w];
        }
    }
    m.cpus = count_cpus(any);
    return m;
}

int hiar_topo_launcher_local_ranks(void)
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

int hiar_topo_cpus_outnumbered(const hiar_topo_machine_cpus_t *m, int launched, int threads)
{
    int ranks = launched > m->ranks ? launched : m->ranks;

    return m->pinned ? threads > 1 : ranks * threads > m->cpus;
}
