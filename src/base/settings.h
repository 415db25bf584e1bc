/* A communicator's parameters: defaults, then HIAR_* environment, then hiar_config_t settings. */
#ifndef HIAR_SETTINGS_H
#define HIAR_SETTINGS_H

#include "base/param.h"

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
 * ("NAME=value;NAME=value", may be NULL; an invalid one, or one naming a
 * PROCESS parameter, fails the call).
 */
hiar_result_t hiar_params_load(hiar_params_t *p, const char *settings);
void hiar_params_free(hiar_params_t *p);

#endif
