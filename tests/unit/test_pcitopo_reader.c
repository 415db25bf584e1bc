/*
 * The sysfs reader: the path between two GPUs, bus ids, and clear errors for
 * bad input and for trees it must refuse.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "pcitopo_fixture.h"

Test(pcitopo, path_names_the_switches)
{
    hiar_topo_fact_t *facts;
    char why[128];

    load("tree-2level", machines[TREE].gpus, "host", &facts);
    cr_expect_eq(hiar_pci_path(&facts[0].pci, &facts[2].pci, why, sizeof(why)), HIAR_PATH_PXB);
    cr_expect_str_eq(why, "3 PCIe switches below 0000:01:00.0, no host bridge");
    cr_expect_str_eq(hiar_pci_switch(&facts[0].pci), "0000:03:00.0");
    cr_expect_eq(facts[0].pci.depth, 7);
    cr_expect_str_eq(facts[0].pci.path[0], "pci0000:00");
    free(facts);
    load("vm-2gpu", machines[VM].gpus, "host", &facts);
    cr_expect_null(hiar_pci_switch(&facts[0].pci));
    cr_expect_eq(facts[0].pci.numa_node, -1);
    free(facts);
}

/* ---- bus ids */

typedef struct {
    char text[24], expect[24]; /* expect "" when text is invalid */
} busid_case_t;

static busid_case_t busid_cases[] = {
    {"0000:3b:00.0", "0000:3b:00.0"},  {"0000:3B:00.0", "0000:3b:00.0"},
    {"00000000:3B:00.0", "0000:3b:00.0"}, {"3b:00.0", "0000:3b:00.0"},
    {"10000:e1:1f.7", "10000:e1:1f.7"}, {"3b:00", ""},
    {"0000:3b:20.0", ""},              {"0000:3b:00.8", ""},
    {"zz:00.0", ""},                   {"0000:3b:00.0x", ""},
    {"", ""},                          {"0000::00.0", ""},
};

ParameterizedTestParameters(pcitopo, busid)
{
    return cr_make_param_array(busid_case_t, busid_cases, sizeof(busid_cases) / sizeof(busid_cases[0]));
}

ParameterizedTest(busid_case_t *c, pcitopo, busid)
{
    char out[HIAR_BUSID_MAX];
    hiar_result_t rc = hiar_pci_busid_normalize(c->text, out);

    if (*c->expect) {
        cr_assert_eq(rc, HIAR_SUCCESS, "%s: %s", c->text, hiar_last_error());
        cr_expect_str_eq(out, c->expect);
    } else {
        cr_assert_eq(rc, HIAR_INVALID_ARGUMENT, "\"%s\" accepted", c->text);
        cr_expect(strstr(hiar_last_error(), "expected [domain:]bus:device.function"), "%s",
                  hiar_last_error());
    }
}

/* ---- bad input */

typedef struct {
    char machine[24];
    char gpus[64];
    char message[96]; /* a part of the expected error message */
} bad_case_t;

static bad_case_t bad_cases[] = {
    {"seed-4gpu", "0000:01:00.0,0000:09:00.0", "no PCI device 0000:09:00.0"},
    {"seed-4gpu", "0000:01:00.1", "class 0x040300 (not a GPU): expected a GPU"},
    {"seed-4gpu", "0000:00:01.0", "class 0x060400 (a PCI bridge): expected a GPU"},
    {"vm-2gpu", "0000:00:00.0", "class 0x060000 (not a GPU): expected a GPU"},
    {"server-8gpu", "0000:07:00.0", "class 0x020000 (not a GPU)"},
    {"seed-4gpu", "0000:01:00", "PCI bus id \"0000:01:00\" is invalid"},
    {"seed-4gpu", "0000:01:00.0,,0000:02:00.0", "entry 1 is empty"},
    {"seed-4gpu", "", "the GPU list is empty"},
    {"no-such-machine", "0000:01:00.0", "cannot be resolved"},
};

ParameterizedTestParameters(pcitopo, bad_input)
{
    return cr_make_param_array(bad_case_t, bad_cases, sizeof(bad_cases) / sizeof(bad_cases[0]));
}

ParameterizedTest(bad_case_t *c, pcitopo, bad_input)
{
    hiar_topo_fact_t *facts = NULL;
    char root[4096];
    int n = -1;

    fixture_root(c->machine, root, sizeof(root));
    cr_assert_eq(hiar_topo_facts_for_gpus(root, c->gpus, "host", &facts, &n), HIAR_INVALID_ARGUMENT,
                 "%s accepted on %s", c->gpus, c->machine);
    cr_expect(strstr(hiar_last_error(), c->message), "%s", hiar_last_error());
    cr_expect_null(facts, "outputs are written only on success");
    cr_expect_eq(n, -1);
}

Test(pcitopo, bad_level)
{
    hiar_topo_fact_t fact;
    hiar_grouping_t g;

    hiar_topo_fact_init(&fact, "host");
    cr_expect_eq(hiar_topo_group(&fact, 1, 42, NULL, &g), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), "not a HIAR_GROUP_LEVEL value"), "%s", hiar_last_error());
}

/* ---- trees the reader must refuse: built in a temporary directory */

static char tmp_root[64];

static void make_tree(void)
{
    snprintf(tmp_root, sizeof(tmp_root), "/tmp/hiar-sysfs-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_root));
}

/* Creates tmp_root/rel as a directory, with a class file unless cls is NULL. */
static void add_dir(const char *rel, const char *cls)
{
    char path[256], cmd[512];

    snprintf(path, sizeof(path), "%s/%s", tmp_root, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
    cr_assert_eq(system(cmd), 0);
    if (cls) {
        FILE *f;
        strcat(path, "/class");
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f, "%s\n", cls);
        fclose(f);
    }
}

static void add_link(const char *bdf, const char *target)
{
    char path[256];

    add_dir("bus/pci/devices", NULL);
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", tmp_root, bdf);
    cr_assert_eq(symlink(target, path), 0);
}

static void remove_tree(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
    cr_assert_eq(system(cmd), 0);
}

static void expect_refused(const char *bdf, const char *message)
{
    hiar_pci_loc_t loc;

    cr_expect_eq(hiar_pci_locate(tmp_root, bdf, &loc), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), message), "%s", hiar_last_error());
}

Test(pcitopo, reader_refuses_odd_trees, .init = make_tree, .fini = remove_tree)
{
    hiar_pci_loc_t loc;

    /* A GPU under a device that is not a bridge. */
    add_dir("devices/pci0000:00/0000:00:02.0", "0x010802");
    add_dir("devices/pci0000:00/0000:00:02.0/0000:01:00.0", "0x030200");
    add_link("0000:01:00.0", "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0");
    expect_refused("0000:01:00.0", "expected a PCI bridge (class 0x0604xx)");
    /* A link that leaves the device tree. */
    add_dir("elsewhere/0000:02:00.0", "0x030200");
    add_link("0000:02:00.0", "../../../elsewhere/0000:02:00.0");
    expect_refused("0000:02:00.0", "expected a link into");
    /* A GPU without a class file. */
    add_dir("devices/pci0000:00/0000:00:03.0", "0x060400");
    add_dir("devices/pci0000:00/0000:00:03.0/0000:03:00.0", NULL);
    add_link("0000:03:00.0", "../../../devices/pci0000:00/0000:00:03.0/0000:03:00.0");
    expect_refused("0000:03:00.0", "cannot read");
    /* A link whose target is another device. */
    add_link("0000:04:00.0", "../../../devices/pci0000:00/0000:00:03.0");
    expect_refused("0000:04:00.0", "ending in 0000:04:00.0");
    /* Without numa_node the node is unknown, not an error. */
    add_dir("devices/pci0000:00/0000:00:05.0", "0x030000");
    add_link("0000:00:05.0", "../../../devices/pci0000:00/0000:00:05.0");
    cr_assert_eq(hiar_pci_locate(tmp_root, "0000:00:05.0", &loc), HIAR_SUCCESS, "%s",
                 hiar_last_error());
    cr_expect_eq(loc.numa_node, -1);
    cr_expect_eq(loc.depth, 2);
}
