/* PCI topology from sysfs: a GPU's path from its host bridge, and path types. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topo/pci.h"

/* PCI class codes (class, subclass, interface) as sysfs prints them: 0x060400. */
#define PCI_CLASS_BRIDGE_PCI 0x0604 /* class >> 8: PCI-to-PCI bridge (root and switch ports) */
#define PCI_CLASS_DISPLAY 0x03      /* class >> 16: VGA, 3D and other display controllers */

const char *hiar_path_name(hiar_path_t path)
{
    static const char *const names[HIAR_PATH_COUNT] = {"none", "LOC", "NVL",  "PIX", "PXB",
                                                       "PHB",  "NODE", "SYS", "HOST", "NET"};
    return (unsigned)path < HIAR_PATH_COUNT ? names[path] : "?";
}

/* Reads 1..max hex digits at *p into *v; advances *p.  0 on success. */
static int hex_field(const char **p, int max, unsigned long *v)
{
    int n = 0;

    *v = 0;
    while (n < max && isxdigit((unsigned char)(*p)[n])) {
        char c = (char)tolower((unsigned char)(*p)[n]);
        *v = *v * 16 + (unsigned long)(isdigit((unsigned char)c) ? c - '0' : c - 'a' + 10);
        n++;
    }
    *p += n;
    return n > 0 ? 0 : -1;
}

hiar_result_t hiar_pci_busid_normalize(const char *text, char out[HIAR_BUSID_MAX])
{
    unsigned long first, second, dom = 0, bus, dev, fn;
    const char *p = text;
    int bad;

    HIAR_ARG_CHECK(text, "PCI bus id is NULL");
    /* "dom:bus:dev.fn" or "bus:dev.fn": which one shows after the second field. */
    bad = hex_field(&p, 8, &first) || *p++ != ':' || hex_field(&p, 2, &second);
    if (!bad && *p == ':') {
        p++;
        dom = first, bus = second;
        bad = hex_field(&p, 2, &dev);
    } else {
        bus = first, dev = second;
    }
    bad = bad || *p++ != '.' || hex_field(&p, 1, &fn) || *p != '\0' || bus > 0xff || dev > 0x1f ||
          fn > 7;
    if (bad)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "PCI bus id \"%s\" is invalid: expected [domain:]bus:device.function "
                              "in hex, e.g. 0000:3b:00.0",
                              text);
    snprintf(out, HIAR_BUSID_MAX, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, fn);
    return HIAR_SUCCESS;
}

/* Reads the number in file dir/name; -1 with errno set when it cannot. */
static int read_number(const char *dir, const char *name, int base, long *value)
{
    char path[PATH_MAX], text[32], *end;
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    if (!f)
        return -1;
    ok = fgets(text, sizeof(text), f) != NULL;
    fclose(f);
    errno = EINVAL;
    if (!ok)
        return -1;
    *value = strtol(text, &end, base);
    return end != text && (*end == '\n' || *end == '\0') ? 0 : -1;
}

/*
 * Checks the class of the device in dir: a bridge above the GPU, the GPU at
 * the end.  A device of another class there means the tree is not what the
 * reader understands, and guessing would group ranks wrongly.
 */
static hiar_result_t check_class(const char *dir, const char *bdf, int is_gpu, const char *gpu)
{
    long cls;

    if (read_number(dir, "class", 16, &cls) != 0)
        return hiar_error_set(HIAR_INVALID_ARGUMENT, "cannot read %s/class (%s): expected the PCI "
                              "class of %s as in sysfs, e.g. 0x030200",
                              dir, strerror(errno), bdf);
    if (is_gpu && (cls >> 16) != PCI_CLASS_DISPLAY)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "PCI device %s has class 0x%06lx (%s): expected a GPU (display "
                              "controller, class 0x03xxxx)",
                              bdf, cls, (cls >> 8) == PCI_CLASS_BRIDGE_PCI ? "a PCI bridge" : "not a GPU");
    if (!is_gpu && (cls >> 8) != PCI_CLASS_BRIDGE_PCI)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "PCI device %s above GPU %s has class 0x%06lx: expected a PCI bridge "
                              "(class 0x0604xx) between the host bridge and the GPU",
                              bdf, gpu, cls);
    return HIAR_SUCCESS;
}

/*
 * Splits rel ("pci0000:00/0000:00:01.0/0000:01:00.0", below <root>/devices)
 * into out->path.  Every entry below the host bridge must look like a bus id.
 */
static hiar_result_t split_path(const char *rel, const char *link, hiar_pci_loc_t *out)
{
    char norm[HIAR_BUSID_MAX];
    const char *p = rel;

    out->depth = 0;
    while (*p) {
        size_t n = strcspn(p, "/");
        int host_bridge = out->depth == 0;
        if (out->depth == HIAR_PCI_DEPTH_MAX || n >= HIAR_BUSID_MAX)
            return hiar_error_set(HIAR_INVALID_ARGUMENT,
                                  "%s leads to devices/%s: expected at most %d PCI devices of at "
                                  "most %d characters below the host bridge",
                                  link, rel, HIAR_PCI_DEPTH_MAX - 1, HIAR_BUSID_MAX - 1);
        memcpy(out->path[out->depth], p, n);
        out->path[out->depth][n] = '\0';
        if (host_bridge ? strncmp(p, "pci", 3) != 0
                        : hiar_pci_busid_normalize(out->path[out->depth], norm) != HIAR_SUCCESS)
            return hiar_error_set(HIAR_INVALID_ARGUMENT,
                                  "%s leads to devices/%s, where \"%s\" is not %s", link, rel,
                                  out->path[out->depth],
                                  host_bridge ? "a host bridge (pciDDDD:BB)" : "a PCI bus id");
        out->depth++;
        p += n + (p[n] == '/');
    }
    return HIAR_SUCCESS;
}

/* Resolves <root>/bus/pci/devices/<bdf> and checks it leads into <root>/devices. */
static hiar_result_t resolve_link(const char *root, const char *bdf, hiar_pci_loc_t *out)
{
    char link[PATH_MAX], target[PATH_MAX], top[PATH_MAX];
    size_t n;

    snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", root, bdf);
    if (!realpath(root, top))
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "the sysfs root %s (HIAR_SYSFS_ROOT) cannot be resolved: %s", root,
                              strerror(errno));
    if (!realpath(link, target))
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "no PCI device %s: cannot resolve %s (%s); the sysfs root is %s "
                              "(HIAR_SYSFS_ROOT)",
                              bdf, link, strerror(errno), root);
    n = strlen(top);
    if (strncmp(target, top, n) != 0 || strncmp(target + n, "/devices/", 9) != 0)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "%s resolves to %s: expected a link into %s/devices/pciDDDD:BB/...",
                              link, target, root);
    HIAR_CHECK(split_path(target + n + 9, link, out));
    if (out->depth < 2 || strcmp(out->path[out->depth - 1], bdf) != 0)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "%s resolves to %s: expected a path below a host bridge ending in %s",
                              link, target, bdf);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_pci_locate(const char *sysfs_root, const char *bus_id, hiar_pci_loc_t *out)
{
    hiar_pci_loc_t loc;
    char dir[PATH_MAX];
    size_t len;
    long numa;

    memset(&loc, 0, sizeof(loc));
    HIAR_ARG_CHECK(sysfs_root && *sysfs_root, "the sysfs root (HIAR_SYSFS_ROOT) is empty");
    HIAR_CHECK(hiar_pci_busid_normalize(bus_id, loc.bus_id));
    HIAR_CHECK(resolve_link(sysfs_root, loc.bus_id, &loc));
    len = (size_t)snprintf(dir, sizeof(dir), "%s/devices/%s", sysfs_root, loc.path[0]);
    for (int i = 1; i < loc.depth && len < sizeof(dir); i++) {
        len += (size_t)snprintf(dir + len, sizeof(dir) - len, "/%s", loc.path[i]);
        HIAR_CHECK(check_class(dir, loc.path[i], i == loc.depth - 1, loc.bus_id));
    }
    /* Kernels without NUMA support have no numa_node: the node is unknown. */
    loc.numa_node = read_number(dir, "numa_node", 10, &numa) == 0 ? (int32_t)numa : -1;
    *out = loc;
    return HIAR_SUCCESS;
}

/*
 * Switches are counted from the path's shape, since the reader sees no port
 * types: below the host bridge (0) comes the root port (1), then each switch
 * contributes an upstream and a downstream port.  So entry i >= 2 belongs to
 * switch (i - 2) / 2, counted from the root:
 *
 *   0 pci0000:00  1 0000:00:01.0  2 0000:01:00.0  3 0000:02:08.0  4 0000:03:00.0
 *     host bridge   root port       switch 0 up     switch 0 down   GPU
 */
static int switch_of(int index)
{
    return (index - 2) / 2;
}

/* Switches between the GPU and the switch at level `below` (excluded). */
static int switches_below(const hiar_pci_loc_t *loc, int first, int below)
{
    int last = loc->depth - 2; /* the port the GPU hangs from */
    return last >= first && last >= 2 ? switch_of(last) - below : 0;
}

const char *hiar_pci_switch(const hiar_pci_loc_t *loc)
{
    int last = loc->depth - 2;
    return last >= 2 ? loc->path[2 + 2 * switch_of(last)] : NULL;
}

/* Different host bridges: NUMA decides between NODE and SYS. */
static hiar_path_t path_across_bridges(const hiar_pci_loc_t *a, const hiar_pci_loc_t *b, char *why,
                                       size_t len)
{
    if (a->numa_node == b->numa_node) {
        snprintf(why, len, "host bridges %s and %s, both on NUMA node %d", a->path[0], b->path[0],
                 (int)a->numa_node);
        return HIAR_PATH_NODE;
    }
    snprintf(why, len, "NUMA nodes %d and %d (across sockets)", (int)a->numa_node, (int)b->numa_node);
    return HIAR_PATH_SYS;
}

hiar_path_t hiar_pci_path(const hiar_pci_loc_t *a, const hiar_pci_loc_t *b, char *why, size_t len)
{
    int common = 0, top, nswitch;

    if (strcmp(a->bus_id, b->bus_id) == 0) {
        snprintf(why, len, "same GPU %s", a->bus_id);
        return HIAR_PATH_LOC;
    }
    if (a->depth == 0 || b->depth == 0) {
        snprintf(why, len, "PCI path of %s unknown", a->depth == 0 ? a->bus_id : b->bus_id);
        return HIAR_PATH_SYS;
    }
    while (common < a->depth && common < b->depth && strcmp(a->path[common], b->path[common]) == 0)
        common++;
    if (common == 0)
        return path_across_bridges(a, b, why, len);
    /* The deepest shared entry: a host bridge or root port means no shared switch. */
    if (common - 1 < 2) {
        snprintf(why, len, "same host bridge %s, no common PCIe switch", a->path[0]);
        return HIAR_PATH_PHB;
    }
    top = switch_of(common - 1);
    nswitch = 1 + switches_below(a, common, top) + switches_below(b, common, top);
    if (nswitch == 1) {
        snprintf(why, len, "one PCIe switch (upstream port %s)", a->path[2 + 2 * top]);
        return HIAR_PATH_PIX;
    }
    snprintf(why, len, "%d PCIe switches below %s, no host bridge", nswitch, a->path[2 + 2 * top]);
    return HIAR_PATH_PXB;
}
