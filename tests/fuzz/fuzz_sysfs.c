/*
 * libFuzzer target: the sysfs PCI reader (hiar_pci_locate, src/topo/pci.c).
 *
 * The input describes a small sysfs tree, which is written into a fresh
 * temporary directory, and the GPUs to look up in it.  One entry per line:
 *
 *   line 1               one or two bus ids, comma-separated: the GPUs to locate
 *   L name<TAB>target    the link <root>/bus/pci/devices/<name> -> target
 *   C rel<TAB>text       <root>/devices/<rel>/class holds text and a newline
 *   c rel<TAB>text       ... the same without the newline
 *   N rel<TAB>text       <root>/devices/<rel>/numa_node holds text and a newline
 *   n rel<TAB>text       ... the same without the newline
 *   D rel                the directory <root>/devices/<rel>
 *
 * e.g. (tests/fuzz/corpus/sysfs/ holds the fixtures of tests/fixtures/sysfs
 * in this form):
 *
 *   0000:3b:00.0
 *   L 0000:3b:00.0<TAB>../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0
 *   C pci0000:3a/0000:3a:00.0<TAB>0x060400
 *   C pci0000:3a/0000:3a:00.0/0000:3b:00.0<TAB>0x030200
 *   N pci0000:3a/0000:3a:00.0/0000:3b:00.0<TAB>0
 *
 * Link targets are anything (the reader only resolves them); names and rel
 * paths that could leave the temporary root ("..", a leading "/", a "/" in
 * a link name) are skipped.  Besides memory errors, it checks that a located
 * GPU has a well-formed path (host bridge first, the GPU last, every entry a
 * terminated string), and feeds two located GPUs to hiar_pci_path and
 * hiar_pci_switch.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "topo/pci.h"

/* Entries written per input, and the longest rel path: enough for the deepest fixture. */
#define MAX_ENTRIES 64
#define MAX_REL 512

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where each input's tree is made: a directory of our own under TMPDIR. */
static char base[PATH_MAX];

static void remove_base(void);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_make_dir("fuzz-sysfs", base, sizeof(base));
    atexit(remove_base);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_base(void)
{
    remove_tree(base);
}

/* Whether rel stays below the directory it is relative to. */
static int safe_rel(const char *rel)
{
    const char *p = rel;

    if (!*rel || *rel == '/' || strlen(rel) >= MAX_REL)
        return 0;
    while (*p) {
        size_t n = strcspn(p, "/");
        if ((n == 2 && p[0] == '.' && p[1] == '.') || n == 0)
            return 0;
        p += n + (p[n] == '/');
    }
    return 1;
}

/* mkdir -p root/rel. */
static int make_dirs(const char *root, const char *rel)
{
    char path[PATH_MAX];
    size_t len = (size_t)snprintf(path, sizeof(path), "%s/%s", root, rel);

    if (len >= sizeof(path))
        return -1;
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

static void write_file(const char *root, const char *rel, const char *name, const char *text, int newline)
{
    char path[PATH_MAX];
    FILE *f;

    if (make_dirs(root, rel) != 0 || (size_t)snprintf(path, sizeof(path), "%s/%s/%s", root, rel, name) >= sizeof(path))
        return;
    f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        if (newline)
            fputc('\n', f);
        fclose(f);
    }
}

/* Writes one entry line ("C rel<TAB>text", ...) below root. */
static void make_entry(const char *root, char *line)
{
    char devices[PATH_MAX], links[PATH_MAX], path[PATH_MAX];
    char kind = line[0], *arg = line + 2, *tab;

    if (strlen(line) < 3 || line[1] != ' ')
        return;
    tab = strchr(arg, '\t');
    if (tab)
        *tab++ = '\0';
    snprintf(devices, sizeof(devices), "%s/devices", root);
    snprintf(links, sizeof(links), "%s/bus/pci/devices", root);
    switch (kind) {
    case 'L':
        if (tab && *arg && !strchr(arg, '/') && strcmp(arg, "..") != 0 && strcmp(arg, ".") != 0 &&
            (size_t)snprintf(path, sizeof(path), "%s/%s", links, arg) < sizeof(path))
            if (symlink(tab, path) != 0)
                return; /* e.g. a second link of that name */
        break;
    case 'C':
    case 'c':
    case 'N':
    case 'n':
        if (tab && safe_rel(arg))
            write_file(devices, arg, kind == 'C' || kind == 'c' ? "class" : "numa_node", tab,
                       kind == 'C' || kind == 'N');
        break;
    case 'D':
        if (safe_rel(arg))
            make_dirs(devices, arg);
        break;
    default: break;
    }
}

/* A located GPU is well formed. */
static void check_loc(const hiar_pci_loc_t *loc, const char *bus_id)
{
    FUZZ_CHECK(loc->depth >= 2 && loc->depth <= HIAR_PCI_DEPTH_MAX, "%s: depth %d", bus_id, (int)loc->depth);
    FUZZ_CHECK(memchr(loc->bus_id, '\0', HIAR_BUSID_MAX) != NULL, "%s: bus id not terminated", bus_id);
    for (int i = 0; i < loc->depth; i++)
        FUZZ_CHECK(memchr(loc->path[i], '\0', HIAR_BUSID_MAX) != NULL, "%s: path[%d] not terminated", bus_id, i);
    FUZZ_CHECK(strncmp(loc->path[0], "pci", 3) == 0, "%s: path starts at %s, not a host bridge", bus_id,
               loc->path[0]);
    FUZZ_CHECK(strcmp(loc->path[loc->depth - 1], loc->bus_id) == 0, "%s: path ends at %s, not the GPU %s", bus_id,
               loc->path[loc->depth - 1], loc->bus_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char root[PATH_MAX], *text = malloc(size + 1), *save = NULL, *first, *line, norm[HIAR_BUSID_MAX];
    hiar_pci_loc_t loc[2];
    int located = 0, entries = 0;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    snprintf(root, sizeof(root), "%s/t", base);
    remove_tree(root);
    if (mkdir(root, 0700) != 0 || make_dirs(root, "devices") != 0 || make_dirs(root, "bus/pci/devices") != 0) {
        free(text);
        return 0;
    }
    first = strtok_r(text, "\n", &save);
    while ((line = strtok_r(NULL, "\n", &save)) && entries++ < MAX_ENTRIES)
        make_entry(root, line);
    for (char *id = first ? strtok_r(first, ",", &save) : NULL; id && located < 2; id = strtok_r(NULL, ",", &save)) {
        if (hiar_pci_busid_normalize(id, norm) == HIAR_SUCCESS)
            FUZZ_CHECK(strlen(norm) >= 12 && strlen(norm) <= 16, "\"%s\" normalised to \"%s\"", id, norm);
        if (hiar_pci_locate(root, id, &loc[located]) == HIAR_SUCCESS) {
            check_loc(&loc[located], id);
            located++;
        } else {
            FUZZ_CHECK(hiar_last_error()[0] != '\0', "locating \"%s\" failed without a message", id);
        }
    }
    if (located == 2) {
        char why[256];
        hiar_path_t path = hiar_pci_path(&loc[0], &loc[1], why, sizeof(why));
        const char *sw = hiar_pci_switch(&loc[0]);
        FUZZ_CHECK(path > HIAR_PATH_NONE && path <= HIAR_PATH_SYS && memchr(why, '\0', sizeof(why)),
                   "path %d between %s and %s", (int)path, loc[0].bus_id, loc[1].bus_id);
        FUZZ_CHECK(!sw || (sw >= loc[0].path[0] && sw < loc[0].path[HIAR_PCI_DEPTH_MAX - 1] + HIAR_BUSID_MAX),
                   "the switch of %s is not on its path", loc[0].bus_id);
    }
    remove_tree(root);
    free(text);
    return 0;
}
