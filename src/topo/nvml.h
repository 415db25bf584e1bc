/* NVLink peers of a GPU through NVML, loaded at run time: never a hard dependency. */
#ifndef HIAR_NVML_H
#define HIAR_NVML_H

#include "topo/topo.h"

/*
 * Adds to fact the NVLink peers of the GPU fact->pci.bus_id: direct peers by
 * bus id; links that end in something NVML does not know as a GPU (an
 * NVSwitch) put the GPU in nvlink_group 0.  Without NVML (no driver library,
 * a machine without GPUs) it adds nothing and succeeds.
 */
hiar_result_t hiar_nvml_add_nvlink(hiar_topo_fact_t *fact);

#endif
