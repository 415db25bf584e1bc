/*
 * HIAR_DEBUG logging.  Lines look like
 *     node01:4242:3 hiar INFO TOPO 2 groups of 2 ranks (HIAR_GROUPS)
 *     node01:4242:3 hiar WARN SHM cannot reserve 8392704 bytes in /dev/shm ... (shm.c:72)
 * (host:pid:rank, level, subsystem; a WARN ends with where it was logged, so
 * that a user's report leads to the line of code).  Configured once per
 * process from HIAR_DEBUG, HIAR_DEBUG_SUBSYS and HIAR_DEBUG_FILE; lines go
 * there or to hiar_log_set_handler's handler.
 */
#ifndef HIAR_LOG_H
#define HIAR_LOG_H

#include <stdatomic.h>

#include "hiar.h"

/* HIAR_DEBUG's values, in the order of its CHOICES in params.def. */
enum { HIAR_LOG_NONE, HIAR_LOG_WARN, HIAR_LOG_INFO, HIAR_LOG_TRACE };

typedef enum {
    HIAR_SUB_INIT, HIAR_SUB_TOPO, HIAR_SUB_PLAN, HIAR_SUB_IPC, HIAR_SUB_SHM,
    HIAR_SUB_MPI, HIAR_SUB_CALL, HIAR_SUB_COUNT
} hiar_log_subsys_t;

/* Whether a message of this level and subsystem would be written. */
int hiar_log_enabled(int level, hiar_log_subsys_t sub);

/* Writes one line, unfiltered (HIAR_LOG_AT filters); file and line are the caller's. */
void hiar_log(int level, hiar_log_subsys_t sub, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* HIAR_ASSERT's failure: logs at WARN whatever HIAR_DEBUG says, then abort(). */
void hiar_log_assert_fail(const char *cond, const char *func, const char *file, int line)
    __attribute__((noreturn, cold));

/* The rank shown in the prefix (the MPI_COMM_WORLD rank). */
void hiar_log_set_rank(int rank);

/*
 * The most verbose level that any subsystem writes (every level until the
 * configuration is read), so that a line whose level is off costs one load:
 * the TRACE lines of a host call cost two calls of hiar_log_enabled, 42 of
 * its 1123 instructions on one rank (callgrind).
 */
extern atomic_int hiar_log_ceiling;

#define HIAR_LOG_AT(level, sub, ...)                                                       \
    do {                                                                                   \
        if ((level) <= atomic_load_explicit(&hiar_log_ceiling, memory_order_relaxed) &&   \
            hiar_log_enabled(level, HIAR_SUB_##sub))                                       \
            hiar_log(level, HIAR_SUB_##sub, __FILE__, __LINE__, __VA_ARGS__);              \
    } while (0)
#define HIAR_WARN(sub, ...) HIAR_LOG_AT(HIAR_LOG_WARN, sub, __VA_ARGS__)
#define HIAR_INFO(sub, ...) HIAR_LOG_AT(HIAR_LOG_INFO, sub, __VA_ARGS__)
#define HIAR_TRACE(sub, ...) HIAR_LOG_AT(HIAR_LOG_TRACE, sub, __VA_ARGS__)

/*
 * An invariant of hiar's own code (not a check of the caller's arguments:
 * those fail with HIAR_ARG_CHECK).  Costs the test of cond; when it is false,
 * logs "assertion failed: <cond> in <function> (file.c:line)" at WARN under
 * INIT, even with HIAR_DEBUG=NONE, and aborts: going on would give wrong sums.
 */
#define HIAR_ASSERT(cond)                                                                  \
    do {                                                                                   \
        if (__builtin_expect(!(cond), 0))                                                  \
            hiar_log_assert_fail(#cond, __func__, __FILE__, __LINE__);                     \
    } while (0)

#endif
