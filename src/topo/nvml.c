/* NVLink discovery through libnvidia-ml, opened with dlopen. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "topo/nvml.h"

/* The few NVML declarations used, as nvml.h defines them (its ABI is stable). */
#define NVML_NVLINK_MAX_LINKS 18
typedef struct nvml_device *nvml_device_t;
typedef struct {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t;

typedef struct {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_bus_id)(const char *, nvml_device_t *);
    int (*link_state)(nvml_device_t, unsigned, int *);
    int (*remote_pci)(nvml_device_t, unsigned, nvml_pci_info_t *);
} nvml_api_t;

static int nvml_open(nvml_api_t *api)
{
    api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api->lib)
        return 0;
    *(void **)&api->init = dlsym(api->lib, "nvmlInit_v2");
    *(void **)&api->shutdown = dlsym(api->lib, "nvmlShutdown");
    *(void **)&api->by_bus_id = dlsym(api->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&api->link_state = dlsym(api->lib, "nvmlDeviceGetNvLinkState");
    *(void **)&api->remote_pci = dlsym(api->lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (api->init && api->shutdown && api->by_bus_id && api->link_state && api->remote_pci &&
        api->init() == 0)
        return 1;
    dlclose(api->lib);
    return 0;
}

hiar_result_t hiar_nvml_add_nvlink(hiar_topo_fact_t *fact)
{
    nvml_api_t api;
    nvml_device_t dev, remote;

    if (!fact->pci.bus_id[0] || !nvml_open(&api))
        return HIAR_SUCCESS;
    if (api.by_bus_id(fact->pci.bus_id, &dev) == 0) {
        for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
            nvml_pci_info_t pci;
            int active = 0;
            if (api.link_state(dev, link, &active) != 0 || !active || api.remote_pci(dev, link, &pci) != 0)
                continue;
            if (api.by_bus_id(pci.bus_id, &remote) == 0)
                hiar_topo_fact_add_nvlink_peer(fact, pci.bus_id);
            else
                fact->nvlink_group = 0; /* a switch: every GPU behind switches is reachable */
        }
        HIAR_INFO(TOPO, "GPU %s: %d NVLink peers%s (NVML)", fact->pci.bus_id, fact->nvlink_npeers,
                  fact->nvlink_group >= 0 ? ", NVSwitch" : "");
    }
    api.shutdown();
    dlclose(api.lib);
    return HIAR_SUCCESS;
}
