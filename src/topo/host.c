/* This host's identity, which tells ranks on one machine from ranks on others. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

void hiar_topo_host_id(const char *override, char out[HIAR_HOST_ID_MAX])
{
    char host[64] = "", boot[40] = "";
    FILE *f;

    memset(out, 0, HIAR_HOST_ID_MAX);
    if (override && *override) {
        snprintf(out, HIAR_HOST_ID_MAX, "%s", override);
        return;
    }
    gethostname(host, sizeof(host) - 1);
    /* Containers on one machine share the boot id but not always the host name;
     * the pair tells hosts apart where either alone might not. */
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    snprintf(out, HIAR_HOST_ID_MAX, "%s/%s", host, boot);
}
