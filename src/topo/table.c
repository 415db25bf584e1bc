/* The grouping for people: HIAR_GROUPS text and the topology table. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "topo/topo.h"

/* snprintf at offset *n of buf[len], counting on past the end as snprintf does. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t len, size_t *n,
                                                          const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    *n += (size_t)vsnprintf(buf + (*n < len ? *n : len), *n < len ? len - *n : 0, fmt, ap);
    va_end(ap);
}

/* Appends group i's ranks "0,1,2" to buf at *n. */
static void append_members(const hiar_grouping_t *g, int group, char *buf, size_t len, size_t *n)
{
    for (int m = g->start[group]; m < g->start[group + 1]; m++)
        append(buf, len, n, "%s%d", m > g->start[group] ? "," : "", g->members[m]);
}

void hiar_grouping_members(const hiar_grouping_t *g, int group, char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    append_members(g, group, buf, len, &n);
}

static void append_groups(const hiar_grouping_t *g, char *buf, size_t len, size_t *n)
{
    for (int i = 0; i < g->ngroups; i++) {
        append(buf, len, n, "%s", i ? "|" : "");
        append_members(g, i, buf, len, n);
    }
}

hiar_result_t hiar_grouping_format(const hiar_grouping_t *g, char *buf, size_t len)
{
    size_t need = 0, n = 0;
    char none;

    HIAR_ARG_CHECK(g && buf, "hiar_grouping_format: expected a grouping and a buffer");
    /* Measure first, so that buf is written only when it is large enough. */
    append_groups(g, &none, 0, &need);
    HIAR_ARG_CHECK(need < len, "hiar_grouping_format: the groups of %d ranks need %zu bytes, the "
                               "buffer has %zu",
                   g->nranks, need + 1, len);
    append_groups(g, buf, len, &n);
    return HIAR_SUCCESS;
}

/* The host name part of a host id ("node01/<boot id>"), for a narrow column. */
static void short_host(const char *host_id, char out[17])
{
    snprintf(out, 17, "%.*s", (int)strcspn(host_id, "/"), host_id);
}

/* The host column is shown only when the ranks span several hosts. */
static int several_hosts(const hiar_topo_fact_t *facts, int nranks)
{
    for (int r = 1; r < nranks; r++)
        if (strncmp(facts[r].host_id, facts[0].host_id, HIAR_HOST_ID_MAX) != 0)
            return 1;
    return 0;
}

static void emit_rank(const hiar_topo_fact_t *f, const hiar_grouping_t *g, int r, int hosts,
                      void (*emit)(void *, const char *), void *arg)
{
    const char *sw = hiar_pci_switch(&f->pci);
    const hiar_group_info_t *info = &g->info[g->group_of[r]];
    char line[256], host[17] = "", numa[12] = "-";

    if (hosts)
        short_host(f->host_id, host);
    if (*f->pci.bus_id && f->pci.numa_node >= 0)
        snprintf(numa, sizeof(numa), "%d", (int)f->pci.numa_node);
    snprintf(line, sizeof(line), "%-5d %-*s%-13s %-5s %-13s %-6d %s", r, hosts ? 17 : 0, host,
             *f->pci.bus_id ? f->pci.bus_id : "-", numa, sw ? sw : "-", g->group_of[r],
             hiar_transport_name(info->transport));
    emit(arg, line);
}

static void emit_group(const hiar_grouping_t *g, int i, void (*emit)(void *, const char *), void *arg)
{
    const hiar_group_info_t *info = &g->info[i];
    char members[96] = "", line[512];
    size_t n = 0;

    append_members(g, i, members, sizeof(members), &n);
    if (n >= sizeof(members))
        strcpy(members + sizeof(members) - 4, "...");
    snprintf(line, sizeof(line), "group %d (rank%s %s): level %s, transport %s; %s", i,
             hiar_group_size(g, i) > 1 ? "s" : "", members, hiar_path_name(info->level),
             hiar_transport_name(info->transport), info->why);
    emit(arg, line);
}

void hiar_topo_table(const hiar_topo_fact_t *facts, const hiar_grouping_t *g,
                     void (*emit)(void *arg, const char *line), void *arg)
{
    int hosts = several_hosts(facts, g->nranks);
    char line[256];

    if (!g->info) {
        emit(arg, "(no topology for this grouping: it was not annotated with hiar_topo_annotate)");
        return;
    }
    snprintf(line, sizeof(line), "%d ranks in %d groups: %s", g->nranks, g->ngroups, g->why);
    emit(arg, line);
    snprintf(line, sizeof(line), "%-5s %-*s%-13s %-5s %-13s %-6s %s", "rank", hosts ? 17 : 0,
             hosts ? "host" : "", "bus id", "NUMA", "switch", "group", "transport");
    emit(arg, line);
    for (int r = 0; r < g->nranks; r++)
        emit_rank(&facts[r], g, r, hosts, emit, arg);
    for (int i = 0; i < g->ngroups; i++)
        emit_group(g, i, emit, arg);
}

static void emit_to_file(void *arg, const char *line)
{
    fprintf(arg, "%s\n", line);
}

hiar_result_t hiar_topo_print(FILE *out, const hiar_topo_fact_t *facts, const hiar_grouping_t *g)
{
    HIAR_ARG_CHECK(out && facts && g && g->info,
                   "hiar_topo_print: expected a file, the facts and an annotated grouping");
    hiar_topo_table(facts, g, emit_to_file, out);
    if (fflush(out) != 0 || ferror(out))
        return hiar_error_set(HIAR_SYSTEM_ERROR, "hiar_topo_print: writing the topology table failed");
    return HIAR_SUCCESS;
}
