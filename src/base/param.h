/* HIAR_* parameters: defaults, environment and hiar_config_t settings. */
#ifndef HIAR_PARAM_H
#define HIAR_PARAM_H

#include "hiar.h"

typedef enum {
#define HIAR_PARAM(name, type, def, choices, doc) HIAR_P_##name,
#include "params.def"
#undef HIAR_PARAM
    HIAR_PARAM_COUNT
} hiar_param_id_t;

typedef enum { HIAR_PTYPE_STR, HIAR_PTYPE_ENUM, HIAR_PTYPE_SIZE, HIAR_PTYPE_INT, HIAR_PTYPE_BOOL } hiar_param_type_t;

typedef enum { HIAR_SRC_DEFAULT, HIAR_SRC_ENV, HIAR_SRC_CONFIG } hiar_param_source_t;

/* Values of the ENUM parameters, in the order of their CHOICES in params.def. */
enum { HIAR_LOG_NONE, HIAR_LOG_WARN, HIAR_LOG_INFO, HIAR_LOG_TRACE };
enum {
    HIAR_LEVEL_AUTO, HIAR_LEVEL_NVL, HIAR_LEVEL_PIX, HIAR_LEVEL_PXB, HIAR_LEVEL_PHB,
    HIAR_LEVEL_NODE, HIAR_LEVEL_SYS, HIAR_LEVEL_HOST, HIAR_LEVEL_RANK
};
enum { HIAR_ALGO_AUTO, HIAR_ALGO_ONESHOT, HIAR_ALGO_TWOSHOT, HIAR_ALGO_HIER, HIAR_ALGO_MPI };
enum { HIAR_ARGCHECK_NONE, HIAR_ARGCHECK_LOCAL, HIAR_ARGCHECK_GLOBAL };

typedef struct {
    const char *name; /* "HIAR_DEBUG" */
    hiar_param_type_t type;
    const char *def;
    const char *choices; /* "A|B|C" for ENUM, "" otherwise */
    const char *doc;
} hiar_param_info_t;

extern const hiar_param_info_t hiar_param_table[HIAR_PARAM_COUNT];

typedef struct {
    char *text;    /* the value as given (owned) */
    long long num; /* parsed: enum index, bytes, integer or 0/1 */
    hiar_param_source_t src;
} hiar_param_value_t;

typedef struct {
    hiar_param_value_t v[HIAR_PARAM_COUNT];
} hiar_params_t;

/*
 * Fill p: defaults, then HIAR_* environment variables (an invalid value is
 * ignored with a warning naming the variable), then `settings`
 * ("NAME=value;NAME=value", may be NULL; an invalid one fails the call).
 */
hiar_result_t hiar_params_load(hiar_params_t *p, const char *settings);
void hiar_params_free(hiar_params_t *p);

/* Parse one value of parameter id; on failure the last error says why. */
hiar_result_t hiar_param_parse(hiar_param_id_t id, const char *text, long long *num);

/* Parameter id by name ("HIAR_ALGO"); -1 when there is none. */
int hiar_param_find(const char *name);

const char *hiar_param_source_name(hiar_param_source_t src);
const char *hiar_param_type_name(hiar_param_type_t type);

#endif
