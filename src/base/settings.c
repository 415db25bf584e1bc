/* A communicator's parameters: defaults, then the environment, then hiar_config_t settings. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/settings.h"

extern char **environ;

static hiar_result_t param_set(hiar_params_t *p, hiar_param_id_t id, const char *text,
                               hiar_param_source_t src)
{
    long long num;
    char *copy;

    HIAR_CHECK(hiar_param_parse(id, text, &num));
    copy = strdup(text);
    if (!copy)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot copy the value of %s", hiar_param_table[id].name);
    free(p->v[id].text);
    p->v[id] = (hiar_param_value_t){copy, num, src};
    return HIAR_SUCCESS;
}

/* Warn about HIAR_* variables that name no parameter: usually a typo. */
static void warn_unknown_env(void)
{
    for (char **e = environ; e && *e; e++) {
        char name[128];
        size_t n = strcspn(*e, "=");
        if (strncmp(*e, "HIAR_", 5) != 0 || n >= sizeof(name))
            continue;
        memcpy(name, *e, n);
        name[n] = '\0';
        if (hiar_param_find(name) < 0 && strncmp(name, "HIAR_TEST", 9) != 0)
            HIAR_WARN(INIT, "%s is not a hiar parameter and is ignored (hiar-info --params lists them)",
                      name);
    }
}

/* One "NAME=value" of the settings, leading blanks skipped. */
static hiar_result_t apply_setting(hiar_params_t *p, char *item)
{
    char *eq = strchr(item, '=');
    int id;

    if (!eq)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "config setting \"%s\" is invalid: expected NAME=value", item);
    *eq = '\0';
    id = hiar_param_find(item);
    if (id < 0)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "config setting names %s, which is not a hiar parameter", item);
    /* The log and libhiar_mpi.so read it once, before any communicator: it would be ignored. */
    if (hiar_param_table[id].scope == HIAR_PSCOPE_PROCESS)
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "config setting %s is process-wide: set it in the environment before "
                              "the first hiar call, not in hiar_config_t settings",
                              item);
    return param_set(p, (hiar_param_id_t)id, eq + 1, HIAR_SRC_CONFIG);
}

static hiar_result_t apply_settings(hiar_params_t *p, const char *settings)
{
    char *copy = strdup(settings), *save = NULL;
    hiar_result_t rc = HIAR_SUCCESS;

    if (!copy)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot copy the config settings");
    for (char *item = strtok_r(copy, ";\n", &save); item; item = strtok_r(NULL, ";\n", &save)) {
        while (isspace((unsigned char)*item))
            item++;
        if (*item && (rc = apply_setting(p, item)) != HIAR_SUCCESS)
            break;
    }
    free(copy);
    return rc;
}

hiar_result_t hiar_params_load(hiar_params_t *p, const char *settings)
{
    hiar_result_t rc;

    memset(p, 0, sizeof(*p));
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        HIAR_CHECK_GOTO(param_set(p, (hiar_param_id_t)i, hiar_param_table[i].def, HIAR_SRC_DEFAULT),
                        rc, err_free);
    }
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        const char *env = getenv(hiar_param_table[i].name);
        if (env && param_set(p, (hiar_param_id_t)i, env, HIAR_SRC_ENV) != HIAR_SUCCESS)
            HIAR_WARN(INIT, "%s; using the default \"%s\"", hiar_last_error(),
                      hiar_param_table[i].def);
    }
    warn_unknown_env();
    if (settings)
        HIAR_CHECK_GOTO(apply_settings(p, settings), rc, err_free);
    return HIAR_SUCCESS;

err_free:
    hiar_params_free(p);
    return rc;
}

void hiar_params_free(hiar_params_t *p)
{
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        free(p->v[i].text);
        p->v[i].text = NULL;
    }
}
