/*
 * The sysfs fixtures (tests/fixtures/sysfs) and the helpers the pcitopo unit
 * tests share: read a machine's GPUs, group them at a level, and write the
 * outcome as text ("0,1|2,3", "PHB,PHB", "ipc,ipc") to compare.
 */
#ifndef HIAR_TESTS_UNIT_PCITOPO_FIXTURE_H
#define HIAR_TESTS_UNIT_PCITOPO_FIXTURE_H

#include <stddef.h>

#include "topo/pci.h"
#include "topo/topo.h"

/* The fixture tree of a machine; srcdir comes from the automake test harness. */
void fixture_root(const char *machine, char *root, size_t len);

/* The facts of the ranks on `gpus` of a machine, all on host `host`; returns their number. */
int load(const char *machine, const char *gpus, const char *host, hiar_topo_fact_t **facts);

/* "PHB,PHB" and "ipc,ipc": the per-group levels and transports. */
void describe(const hiar_grouping_t *g, char *levels, char *transports, size_t len);

typedef struct {
    char groups[64], levels[96], transports[96];
} outcome_t;

/* Groups the ranks at `level` (p2p: NULL, or which pairs reach each other) into *out. */
void group(const hiar_topo_fact_t *facts, int n, int level, const unsigned char *p2p, outcome_t *out);

typedef struct {
    char machine[24];
    char gpus[128];
} machine_t;

/* The fixture machines, by name: machines[SEED] and so on. */
enum { SEED, SERVER, BOX, VM, TREE, NODE4, NMACHINES };

/* The GPUs of each fixture, in bus-id order. */
extern const machine_t machines[NMACHINES];

#endif
