/* Which CPUs the ranks of a machine may run on (for HIAR_YIELD=auto: core/yield.c). */
#include "config.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

void hiar_topo_cpus_mine(hiar_topo_cpus_t *out)
{
    cpu_set_t set;

    memset(out, 0, sizeof(*out));
    hiar_topo_host_id(NULL, out->host);
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

hiar_topo_machine_cpus_t hiar_topo_cpus_of_host(const hiar_topo_cpus_t *all, int n, int me)
{
    hiar_topo_machine_cpus_t m = {0, 0, 0};
    uint64_t any[HIAR_CPU_WORDS] = {0};

    for (int r = 0; r < n; r++) {
        if (strncmp(all[r].host, all[me].host, HIAR_HOST_ID_MAX) != 0)
            continue;
        m.ranks++;
        for (int w = 0; w < HIAR_CPU_WORDS; w++) {
            m.shared |= (any[w] & all[r].cpus[w]) != 0;
            any[w] |= all[r].cpus[w];
        }
    }
    for (int w = 0; w < HIAR_CPU_WORDS; w++)
        m.cpus += __builtin_popcountll(any[w]);
    return m;
}
