/*
 * Where a GPU sits in the PCI tree, read from sysfs, and how far apart two
 * GPUs are in NCCL's path vocabulary (PIX, PXB, PHB, NODE, SYS).
 *
 * The reader uses only what the fixtures model, so tests can fake a
 * machine with a small directory tree under HIAR_SYSFS_ROOT:
 *   <root>/bus/pci/devices/<bdf>  a symlink into <root>/devices/pciDDDD:BB/<bdf>/.../<bdf>
 *   <dir>/class                   0x0604xx for bridges, 0x03xxxx for GPUs
 *   <dir>/numa_node               the GPU's NUMA node, -1 when unknown
 */
#ifndef HIAR_PCITOPO_H
#define HIAR_PCITOPO_H

#include <stddef.h>
#include <stdint.h>

#include "hiar.h"

/* "0000:3b:00.0" or a host bridge "pci0000:3a"; 8-digit domains (VMD) fit too. */
#define HIAR_BUSID_MAX 20

/* Entries of a path: host bridge, root port, up to six switches (two ports each), GPU. */
#define HIAR_PCI_DEPTH_MAX 16

/*
 * How far apart two ranks' GPUs are, nearest first: the order matters, a
 * level allows every path up to it.  NONE is the level of a one-rank group.
 */
typedef enum {
    HIAR_PATH_NONE, /* no pair: a group of one rank */
    HIAR_PATH_LOC,  /* the same GPU */
    HIAR_PATH_NVL,  /* NVLink */
    HIAR_PATH_PIX,  /* one PCIe switch */
    HIAR_PATH_PXB,  /* several PCIe switches, no host bridge */
    HIAR_PATH_PHB,  /* the same host bridge, no common switch */
    HIAR_PATH_NODE, /* different host bridges of one NUMA node */
    HIAR_PATH_SYS,  /* across NUMA nodes (the socket interconnect) */
    HIAR_PATH_HOST, /* one host, but a rank without GPU */
    HIAR_PATH_NET,  /* different hosts */
    HIAR_PATH_COUNT
} hiar_path_t;

/* "PIX", "none", ... */
const char *hiar_path_name(hiar_path_t path);

/* A GPU's place in the PCI tree.  Fixed size, no pointers: it is allgathered as bytes. */
typedef struct {
    char bus_id[HIAR_BUSID_MAX]; /* "0000:3b:00.0"; "" when the rank has no GPU */
    int32_t numa_node;           /* -1 when unknown (VMs, kernels without NUMA) */
    int32_t depth;               /* entries of path; 0 when the path is unknown */
    /* path[0] the host bridge "pci0000:3a", then the root port, switch ports
     * (upstream, downstream, upstream, ...), and path[depth-1] == bus_id. */
    char path[HIAR_PCI_DEPTH_MAX][HIAR_BUSID_MAX];
} hiar_pci_loc_t;

/*
 * Normalises a PCI bus id as CUDA ("0000:3B:00.0"), NVML ("00000000:3B:00.0")
 * or lspci ("3b:00.0") write it to sysfs's form "0000:3b:00.0".
 */
hiar_result_t hiar_pci_busid_normalize(const char *text, char out[HIAR_BUSID_MAX]);

/*
 * Reads the GPU bus_id's path from the host bridge, and its NUMA node, under
 * sysfs_root.  HIAR_INVALID_ARGUMENT when the device does not exist, is not a
 * GPU, or its link does not lead into <root>/devices through bridges.
 */
hiar_result_t hiar_pci_locate(const char *sysfs_root, const char *bus_id, hiar_pci_loc_t *out);

/*
 * The PCI path between two GPUs (LOC when they are the same one; SYS when a
 * path is unknown), with a few words saying why written to why[len].
 */
hiar_path_t hiar_pci_path(const hiar_pci_loc_t *a, const hiar_pci_loc_t *b, char *why, size_t len);

/* Upstream port of the PCIe switch nearest to the GPU, or NULL when there is none. */
const char *hiar_pci_switch(const hiar_pci_loc_t *loc);

#endif
