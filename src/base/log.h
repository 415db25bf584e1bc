/*
 * HIAR_DEBUG logging.  Lines look like
 *     node01:4242:3 hiar INFO TOPO 2 groups of 2 ranks (HIAR_GROUPS)
 * (host:pid:rank, level, subsystem).  Configured once per process from
 * HIAR_DEBUG, HIAR_DEBUG_SUBSYS and HIAR_DEBUG_FILE.
 */
#ifndef HIAR_LOG_H
#define HIAR_LOG_H

#include "base/param.h"

typedef enum {
    HIAR_SUB_INIT, HIAR_SUB_TOPO, HIAR_SUB_PLAN, HIAR_SUB_IPC, HIAR_SUB_SHM,
    HIAR_SUB_MPI, HIAR_SUB_TUNE, HIAR_SUB_CALL, HIAR_SUB_COUNT
} hiar_log_subsys_t;

/* Whether a message of this level and subsystem would be written. */
int hiar_log_enabled(int level, hiar_log_subsys_t sub);

void hiar_log(int level, hiar_log_subsys_t sub, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The rank shown in the prefix (the MPI_COMM_WORLD rank). */
void hiar_log_set_rank(int rank);

#define HIAR_LOG_AT(level, sub, ...)                                                       \
    do {                                                                                   \
        if (hiar_log_enabled(level, HIAR_SUB_##sub))                                       \
            hiar_log(level, HIAR_SUB_##sub, __VA_ARGS__);                                  \
    } while (0)
#define HIAR_WARN(sub, ...) HIAR_LOG_AT(HIAR_LOG_WARN, sub, __VA_ARGS__)
#define HIAR_INFO(sub, ...) HIAR_LOG_AT(HIAR_LOG_INFO, sub, __VA_ARGS__)
#define HIAR_TRACE(sub, ...) HIAR_LOG_AT(HIAR_LOG_TRACE, sub, __VA_ARGS__)

#endif
