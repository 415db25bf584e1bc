/* Parsing of the parameters listed in params.def. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/param.h"

const hiar_param_info_t hiar_param_table[HIAR_PARAM_COUNT] = {
#define HIAR_PARAM(name, type, def, choices, scope, doc)                                      \
    {"HIAR_" #name, HIAR_PTYPE_##type, def, choices, HIAR_PSCOPE_##scope, doc},
#include "params.def"
#undef HIAR_PARAM
};

const char *hiar_param_source_name(hiar_param_source_t src)
{
    static const char *const names[] = {"default", "environment", "config"};
    return names[src];
}

const char *hiar_param_type_name(hiar_param_type_t type)
{
    static const char *const names[] = {"string", "enum", "size", "int", "bool"};
    return names[type];
}

const char *hiar_param_scope_name(hiar_param_scope_t scope)
{
    static const char *const names[] = {"process", "comm"};
    return names[scope];
}

int hiar_param_find(const char *name)
{
    for (int i = 0; i < HIAR_PARAM_COUNT; i++)
        if (strcmp(hiar_param_table[i].name, name) == 0)
            return i;
    return -1;
}

/* Index of text among the '|'-separated choices, ignoring case; -1 if absent. */
static int choice_index(const char *choices, const char *text)
{
    size_t len = strlen(text);
    int index = 0;

    for (const char *c = choices; *c; index++) {
        size_t n = strcspn(c, "|");
        if (n == len && strncasecmp(c, text, n) == 0)
            return index;
        c += n + (c[n] == '|');
    }
    return -1;
}

int hiar_parse_number(const char *text, int allow_suffix, long long *num)
{
    char *end;
    unsigned long long value;
    unsigned shift = 0;

    if (!isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -1;
    if (allow_suffix && *end) {
        const char *units = "KMG";
        const char *u = strchr(units, toupper((unsigned char)*end));
        if (!u)
            return -1;
        shift = 10 * (unsigned)(u - units + 1);
        end++;
        if (strcasecmp(end, "B") == 0 || strcasecmp(end, "iB") == 0)
            end += strlen(end);
    }
    if (*end || value > ((unsigned long long)LLONG_MAX >> shift))
        return -1;
    *num = (long long)(value << shift);
    return 0;
}

hiar_result_t hiar_param_parse(hiar_param_id_t id, const char *text, long long *num)
{
    const hiar_param_info_t *info = &hiar_param_table[id];
    long long value = 0;
    int ok = 0;

    switch (info->type) {
    case HIAR_PTYPE_STR:
        ok = 1;
        break;
    case HIAR_PTYPE_ENUM:
        value = choice_index(info->choices, text);
        ok = value >= 0;
        break;
    case HIAR_PTYPE_SIZE:
        ok = hiar_parse_number(text, 1, &value) == 0;
        break;
    case HIAR_PTYPE_INT:
        ok = hiar_parse_number(text, 0, &value) == 0 && value <= INT_MAX;
        break;
    case HIAR_PTYPE_BOOL:
        ok = hiar_parse_number(text, 0, &value) == 0 && value <= 1;
        break;
    }
    if (!ok) {
        static const char *const expected[] = {
            "text", "one of %s", "a size in bytes such as 65536, 64K, 4M or 1G",
            "a non-negative integer", "0 or 1"};
        char what[256];
        snprintf(what, sizeof(what), expected[info->type], info->choices);
        return hiar_error_set(HIAR_INVALID_ARGUMENT, "%s=\"%s\" is invalid: expected %s", info->name,
                              text, what);
    }
    *num = value;
    return HIAR_SUCCESS;
}

hiar_result_t hiar_param_env(hiar_param_id_t id, long long *num)
{
    const char *text = getenv(hiar_param_table[id].name);
    hiar_result_t rc = text ? hiar_param_parse(id, text, num) : HIAR_SUCCESS;

    if (!text || rc != HIAR_SUCCESS)
        hiar_param_parse(id, hiar_param_table[id].def, num);
    return rc;
}
