/* HIAR_* parameters: the table made from params.def, and parsing one value. */
#ifndef HIAR_PARAM_H
#define HIAR_PARAM_H

#include "hiar.h"

typedef enum {
#define HIAR_PARAM(name, type, def, choices, scope, doc) HIAR_P_##name,
#include "params.def"
#undef HIAR_PARAM
    HIAR_PARAM_COUNT
} hiar_param_id_t;

typedef enum { HIAR_PTYPE_STR, HIAR_PTYPE_ENUM, HIAR_PTYPE_SIZE, HIAR_PTYPE_INT, HIAR_PTYPE_BOOL } hiar_param_type_t;

typedef enum { HIAR_SRC_DEFAULT, HIAR_SRC_ENV, HIAR_SRC_CONFIG } hiar_param_source_t;

/*
 * PROCESS: read once per process from the environment (the log, libhiar_mpi.so);
 * hiar_config_t settings may not name it.  COMM: read by every hiar_comm_create.
 */
typedef enum { HIAR_PSCOPE_PROCESS, HIAR_PSCOPE_COMM } hiar_param_scope_t;

/* Values of the ENUM parameters, in the order of their CHOICES in params.def. */
enum {
    HIAR_LEVEL_AUTO, HIAR_LEVEL_NVL, HIAR_LEVEL_PIX, HIAR_LEVEL_PXB, HIAR_LEVEL_PHB,
    HIAR_LEVEL_NODE, HIAR_LEVEL_SYS, HIAR_LEVEL_HOST, HIAR_LEVEL_RANK
};
enum { HIAR_ALGO_AUTO, HIAR_ALGO_ONESHOT, HIAR_ALGO_TWOSHOT, HIAR_ALGO_HIER, HIAR_ALGO_MPI, HIAR_ALGO_PULL };
enum { HIAR_BETWEEN_AUTO, HIAR_BETWEEN_MPI };
enum { HIAR_ARGCHECK_NONE, HIAR_ARGCHECK_LOCAL, HIAR_ARGCHECK_GLOBAL };
enum { HIAR_PROGRESS_OFF, HIAR_PROGRESS_AUTO }; /* HIAR_PROGRESS: 0|auto */
enum { HIAR_FLAT_OFF, HIAR_FLAT_AUTO };         /* HIAR_FLAT: 0|auto */
enum { HIAR_MPIDEV_AUTO, HIAR_MPIDEV_NO, HIAR_MPIDEV_YES }; /* HIAR_MPI_DEVICE: auto|0|1 */
enum { HIAR_TUNE_OFF, HIAR_TUNE_ON, HIAR_TUNE_AUTO };    /* HIAR_TUNE: 0|1|auto */
enum { HIAR_YIELD_AUTO, HIAR_YIELD_SPIN, HIAR_YIELD_SOON }; /* HIAR_YIELD: auto|0|1 */

typedef struct {
    const char *name; /* "HIAR_DEBUG" */
    hiar_param_type_t type;
    const char *def;
    const char *choices; /* "A|B|C" for ENUM, "" otherwise */
    hiar_param_scope_t scope;
    const char *doc;
} hiar_param_info_t;

extern const hiar_param_info_t hiar_param_table[HIAR_PARAM_COUNT];

/* A whole non-negative decimal, with allow_suffix an optional K/M/G (x1024) and B or iB: 0, else -1. */
int hiar_parse_number(const char *text, int allow_suffix, long long *num);

/* Parse one value of parameter id; on failure the last error says why. */
hiar_result_t hiar_param_parse(hiar_param_id_t id, const char *text, long long *num);

/*
 * A PROCESS parameter's value from the environment: *num is the default
 * where it is unset, or invalid (then the result says why).
 */
hiar_result_t hiar_param_env(hiar_param_id_t id, long long *num);

/* Parameter id by name ("HIAR_ALGO"); -1 when there is none. */
int hiar_param_find(const char *name);

const char *hiar_param_source_name(hiar_param_source_t src);
const char *hiar_param_type_name(hiar_param_type_t type);
const char *hiar_param_scope_name(hiar_param_scope_t scope);

#endif
