/*
 * Grouping of ranks.  Every rank computes the same grouping from the same
 * gathered table, so these functions are pure: no MPI, no globals.
 */
#ifndef HIAR_TOPO_H
#define HIAR_TOPO_H

#include <stdint.h>
#include <stdio.h>

#include "hiar.h"
#include "topo/pci.h"

/* Longest host identity kept (hostname + boot id, or HIAR_HOST_ID). */
#define HIAR_HOST_ID_MAX 128

/* NVLink peers kept per GPU: an H100/H200 has 18 links. */
#define HIAR_NVLINK_PEERS_MAX 18

/*
 * What one rank knows about itself.  Fixed size, no pointers: comm creation
 * MPI_Allgathers it as bytes, and every rank groups from the same table.
 */
typedef struct {
    char host_id[HIAR_HOST_ID_MAX]; /* hiar_topo_host_id() */
    hiar_pci_loc_t pci;             /* pci.bus_id is "" for a rank without GPU */
    unsigned char gpu_uuid[16];     /* CUDA's UUID of the GPU (or MIG instance); zero if unknown */
    /* GPUs of one host with the same nvlink_group >= 0 are all NVLink-connected
     * (an NVSwitch fabric); -1 when NVML says nothing of the kind. */
    int32_t nvlink_group;
    int32_t nvlink_npeers;                               /* entries of nvlink_peer */
    char nvlink_peer[HIAR_NVLINK_PEERS_MAX][HIAR_BUSID_MAX]; /* bus ids of direct NVLink peers */
} hiar_topo_fact_t;

/* The facts of a rank without GPU on host_id (hiar_topo_host_id's form). */
void hiar_topo_fact_init(hiar_topo_fact_t *fact, const char *host_id);

/*
 * Adds the rank's GPU bus_id (any form hiar_pci_busid_normalize takes) and
 * its PCI path, read under sysfs_root (HIAR_SYSFS_ROOT).  On failure the
 * fact is unchanged; a caller that goes on without the path may store the
 * normalised bus id with pci.depth 0: the path to other GPUs is then SYS.
 */
hiar_result_t hiar_topo_fact_set_gpu(hiar_topo_fact_t *fact, const char *sysfs_root,
                                     const char *bus_id);

/* Records a direct NVLink peer (NVML's remote PCI bus id, any of its forms). */
hiar_result_t hiar_topo_fact_add_nvlink_peer(hiar_topo_fact_t *fact, const char *bus_id);

/* Whether a and b are on one host: their host identities are equal. */
int hiar_topo_same_host(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b);

/* Whether bus_id (normalised) is among fact's direct NVLink peers. */
int hiar_topo_lists_nvlink_peer(const hiar_topo_fact_t *fact, const char *bus_id);

/*
 * One rank per GPU of bus_ids ("0000:3b:00.0,0000:5e:00.0", in that order) on
 * host_id, read under sysfs_root: a hypothetical machine for hiar-info and
 * tests.  *facts is malloc'ed; the caller frees it.
 */
hiar_result_t hiar_topo_facts_for_gpus(const char *sysfs_root, const char *bus_ids,
                                       const char *host_id, hiar_topo_fact_t **facts, int *nranks);

/*
 * The P2P matrix of GPUs that have none (consumer GPUs, hiar-info --no-p2p):
 * only ranks on one GPU reach each other.  *p2p is malloc'ed, nranks x nranks.
 */
hiar_result_t hiar_topo_p2p_none(const hiar_topo_fact_t *facts, int nranks, unsigned char **p2p);

/* The path between two ranks' devices; a few words saying why go to why[len]. */
hiar_path_t hiar_topo_path(const hiar_topo_fact_t *a, const hiar_topo_fact_t *b, char *why,
                           size_t len);

/* What the topology says a group can use (a label: the transports themselves are src/transport). */
typedef enum { HIAR_TRANSPORT_NONE, HIAR_TRANSPORT_IPC, HIAR_TRANSPORT_SHM } hiar_transport_kind_t;

/* "none", "ipc", "shm". */
const char *hiar_transport_name(hiar_transport_kind_t transport);

/* What the topology says about one group (hiar_topo_annotate). */
typedef struct {
    hiar_path_t level;          /* farthest path between two members; NONE for one rank */
    hiar_transport_kind_t transport; /* ipc when every pair passes P2P, shm otherwise, none alone */
    char why[288];              /* one line: the farthest pair and why, and the transport's reason */
} hiar_group_info_t;

/*
 * Groups are numbered by their smallest rank; members of a group are sorted
 * by rank, and a rank's local index is its position there.
 */
typedef struct {
    int nranks;
    int ngroups;
    int *group_of;    /* [nranks] group of each rank */
    int *local_index; /* [nranks] position of each rank in its group */
    int *start;       /* [ngroups + 1] offsets into members */
    int *members;     /* [nranks] ranks, group after group */
    char why[160];    /* one line saying how the grouping was chosen */
    hiar_group_info_t *info; /* [ngroups] from hiar_topo_annotate, or NULL */
} hiar_grouping_t;

/* Why a grouping of HIAR_GROUP_LEVEL=RANK was chosen. */
#define HIAR_GROUPING_RANK_WHY "HIAR_GROUP_LEVEL=RANK: every rank alone, MPI only"

/* Every rank alone (HIAR_GROUP_LEVEL=RANK), with its why. */
hiar_result_t hiar_grouping_singletons(int nranks, hiar_grouping_t *out);

/* Ranks with equal labels form a group. */
hiar_result_t hiar_grouping_from_labels(const int *label, int nranks, hiar_grouping_t *out);

/* Ranks whose host identities (HIAR_HOST_ID_MAX bytes each) are equal. */
hiar_result_t hiar_grouping_by_host(const char *host_ids, int nranks, hiar_grouping_t *out);

/* Parses HIAR_GROUPS: groups separated by '|', ranks by ',', ranges a-b. */
hiar_result_t hiar_grouping_parse(const char *text, int nranks, hiar_grouping_t *out);

void hiar_grouping_free(hiar_grouping_t *g);

static inline int hiar_group_size(const hiar_grouping_t *g, int group)
{
    return g->start[group + 1] - g->start[group];
}

/* Largest group size: the number of shards a message is cut into between groups. */
int hiar_grouping_max_size(const hiar_grouping_t *g);

/* This host's identity: HIAR_HOST_ID if set, else hostname + boot id. */
void hiar_topo_host_id(const char *override, char out[HIAR_HOST_ID_MAX]);

/* The CPUs a process may run on, a bit each (CPU_SETSIZE of them, sched_getaffinity's). */
#define HIAR_CPU_WORDS 16

/* What a rank tells the others of its host at creation. */
typedef struct {
    char host[HIAR_HOST_ID_MAX];    /* as grouping sees it: HIAR_HOST_ID where set */
    char machine[HIAR_HOST_ID_MAX]; /* the real one, whatever HIAR_HOST_ID says */
    uint64_t cpus[HIAR_CPU_WORDS];  /* its affinity mask (every online CPU where it cannot be read) */
} hiar_topo_rank_host_t;

/* This process's record; override: HIAR_HOST_ID (NULL or empty: none). */
void hiar_topo_rank_host(const char *override, hiar_topo_rank_host_t *out);

/* What the ranks of one machine may run on. */
typedef struct {
    int ranks;  /* of the records, on the machine */
    int cpus;   /* CPUs their masks allow together */
    int pinned; /* each on one CPU of its own (masks of one CPU, no two alike) */
} hiar_topo_machine_cpus_t;

/* Of the n ranks' records, those on rank me's real machine. */
hiar_topo_machine_cpus_t hiar_topo_machine_cpus(const hiar_topo_rank_host_t *all, int n, int me);

/* The ranks the launcher put on this machine (Open MPI, MPICH's Hydra, Intel MPI say), 0 where it does not say. */
int hiar_topo_launcher_local_ranks(void);

/*
 * Whether the busy threads of a machine's ranks (`threads` a rank: 2 with a
 * progress thread) outnumber the CPUs they may run on: m from the records
 * of a communicator, launched from the launcher (0: unknown), which counts
 * the machine's ranks outside the communicator too.  Ranks pinned one to a
 * CPU do when a rank has more than one thread (those outside are taken to
 * be pinned too); else all of them count against the CPUs of the masks seen.
 */
int hiar_topo_cpus_outnumbered(const hiar_topo_machine_cpus_t *m, int launched, int threads);

/* Writes group's ranks "0,1,2" into buf (cut at len). */
void hiar_grouping_members(const hiar_grouping_t *g, int group, char *buf, size_t len);

/* Writes the groups as HIAR_GROUPS would take them: "0,1|2,3". */
hiar_result_t hiar_grouping_format(const hiar_grouping_t *g, char *buf, size_t len);

/*
 * Groups ranks by topology, the same on every rank whatever the rank order
 * (GPUs are considered in bus-id order; groups are numbered by smallest rank).
 *   level  HIAR_LEVEL_* (param.h): the farthest path allowed inside a group;
 *          AUTO takes NVLink groups, else PCIe switch trees (PXB), else host
 *          bridges / NUMA nodes (NODE), never across sockets.
 *   p2p    NULL, or nranks x nranks, p2p[a * nranks + b] = 1 when rank a
 *          verified P2P to rank b; NULL assumes P2P up to PHB.
 * Ranks never share a group across hosts; ranks on one GPU always do (but
 * for RANK); ranks without GPU group by host.  Fills out->info too.
 */
hiar_result_t hiar_topo_group(const hiar_topo_fact_t *facts, int nranks, int level,
                              const unsigned char *p2p, hiar_grouping_t *out);

/*
 * Fills g->info (level, transport, why of each group) for a grouping made
 * from facts or otherwise (HIAR_GROUPS); p2p as for hiar_topo_group.
 */
hiar_result_t hiar_topo_annotate(const hiar_topo_fact_t *facts, const unsigned char *p2p,
                                 hiar_grouping_t *g);

/*
 * The topology table (rank, host, bus id, NUMA, switch, group, transport),
 * then one line per group saying why; g must be annotated.  hiar_topo_table
 * hands each line (no newline) to emit, for the log.
 */
void hiar_topo_table(const hiar_topo_fact_t *facts, const hiar_grouping_t *g,
                     void (*emit)(void *arg, const char *line), void *arg);
hiar_result_t hiar_topo_print(FILE *out, const hiar_topo_fact_t *facts, const hiar_grouping_t *g);

/* The first rank on rank r's host: a label every rank computes alike. */
int hiar_topo_host_label(const hiar_topo_fact_t *facts, int r);

/*
 * How groups that span hosts share them: the number of groups on every host
 * where each group lies on one host, every group has the same size and
 * every host the same number of groups; 0 where they do not; -1 without
 * memory to count them (a rank's own outcome: agree on it).  Then each
 * host's owners of a shard can reduce it among themselves before one copy
 * of it crosses between the hosts (core/between.c).
 */
int hiar_topo_groups_per_host(const hiar_topo_fact_t *facts, const hiar_grouping_t *g);

/*
 * Between groups, what the topology says: one line per pair of groups, for
 * every shard the ranks that own it in the two (local index s % group size),
 * the transport between them (ipc where P2P holds, as p2p says or up to PHB
 * when NULL; pinned host memory without P2P; mpi across hosts) and their
 * path.  The comm's own choice, agreed over every shard, is in its describe.
 */
void hiar_topo_between(const hiar_topo_fact_t *facts, const unsigned char *p2p, const hiar_grouping_t *g,
                       void (*line)(void *arg, const char *text), void *arg);

#endif
