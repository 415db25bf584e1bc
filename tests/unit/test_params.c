/*
 * Parameters (src/base/param.c): defaults, HIAR_* environment, config settings
 * and their precedence (settings > environment > default), the scopes
 * (PROCESS parameters refused in settings), value parsing, and the ENUM
 * constants of param.h against the CHOICES of params.def.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/settings.h"

extern char **environ;

/* Every test starts and ends without HIAR_* variables. */
static void clear_env(void)
{
    for (int again = 1; again;) {
        char name[256];
        again = 0;
        for (char **e = environ; e && *e; e++)
            if (strncmp(*e, "HIAR_", 5) == 0) {
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
}

TestSuite(params, .init = clear_env, .fini = clear_env);

/* Sends hiar's log to a fresh file (HIAR_DEBUG_FILE is read at the first log call). */
static void log_to_file(char *path, size_t len)
{
    snprintf(path, len, "/tmp/hiar-test-params-%ld.log", (long)getpid());
    unlink(path);
    setenv("HIAR_DEBUG_FILE", path, 1);
}

/* The whole log file ("" when there is none); the caller frees it. */
static char *read_log(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 65536);
    size_t n = 0;

    cr_assert(text);
    if (f) {
        n = fread(text, 1, 65535, f);
        fclose(f);
    }
    text[n] = '\0';
    unlink(path);
    return text;
}

static long long parsed_default(hiar_param_id_t id)
{
    long long num = -1;
    cr_assert_eq(hiar_param_parse(id, hiar_param_table[id].def, &num), HIAR_SUCCESS,
                 "the default \"%s\" of %s does not parse: %s", hiar_param_table[id].def,
                 hiar_param_table[id].name, hiar_last_error());
    return num;
}

Test(params, defaults)
{
    hiar_params_t p;

    cr_assert_eq(hiar_params_load(&p, NULL), HIAR_SUCCESS, "%s", hiar_last_error());
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        cr_expect_eq(p.v[i].src, HIAR_SRC_DEFAULT, "%s", hiar_param_table[i].name);
        cr_expect_str_eq(p.v[i].text, hiar_param_table[i].def, "%s", hiar_param_table[i].name);
        cr_expect_eq(p.v[i].num, parsed_default((hiar_param_id_t)i), "%s", hiar_param_table[i].name);
    }
    cr_expect_eq(p.v[HIAR_P_ALGO].num, HIAR_ALGO_AUTO);
    cr_expect_eq(p.v[HIAR_P_CHECK].num, HIAR_ARGCHECK_LOCAL);
    cr_expect_eq(p.v[HIAR_P_DEBUG].num, HIAR_LOG_WARN);
    cr_expect_eq(p.v[HIAR_P_GROUP_LEVEL].num, HIAR_LEVEL_AUTO);
    cr_expect_str_eq(p.v[HIAR_P_GROUPS].text, "");
    hiar_params_free(&p);
}

Test(params, table_is_consistent)
{
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        const hiar_param_info_t *info = &hiar_param_table[i];
        cr_expect(strncmp(info->name, "HIAR_", 5) == 0, "%s", info->name);
        cr_expect_eq(hiar_param_find(info->name), i, "%s", info->name);
        cr_expect(info->doc && info->doc[0], "%s has no doc", info->name);
        if (info->type == HIAR_PTYPE_ENUM)
            cr_expect(info->choices[0], "ENUM %s has no choices", info->name);
        else
            cr_expect_str_eq(info->choices, "", "%s is not an ENUM but has choices", info->name);
    }
    cr_expect_eq(hiar_param_find("ALGO"), -1);
    cr_expect_eq(hiar_param_find(""), -1);
    cr_expect_eq(hiar_param_find("HIAR_ALGO_"), -1);
    cr_expect_str_eq(hiar_param_source_name(HIAR_SRC_DEFAULT), "default");
    cr_expect_str_eq(hiar_param_source_name(HIAR_SRC_ENV), "environment");
    cr_expect_str_eq(hiar_param_source_name(HIAR_SRC_CONFIG), "config");
    cr_expect_str_eq(hiar_param_type_name(HIAR_PTYPE_STR), "string");
    cr_expect_str_eq(hiar_param_type_name(HIAR_PTYPE_ENUM), "enum");
    cr_expect_str_eq(hiar_param_type_name(HIAR_PTYPE_SIZE), "size");
    cr_expect_str_eq(hiar_param_type_name(HIAR_PTYPE_INT), "int");
    cr_expect_str_eq(hiar_param_type_name(HIAR_PTYPE_BOOL), "bool");
    cr_expect_str_eq(hiar_param_scope_name(HIAR_PSCOPE_PROCESS), "process");
    cr_expect_str_eq(hiar_param_scope_name(HIAR_PSCOPE_COMM), "comm");
}

/* The parameters read before any communicator exists (HIAR_LIBRARY: by the Python package), written out here. */
static const hiar_param_id_t process_params[] = {HIAR_P_DEBUG, HIAR_P_DEBUG_SUBSYS, HIAR_P_DEBUG_FILE,
                                                 HIAR_P_PMPI, HIAR_P_PMPI_STATS, HIAR_P_PMPI_STAGE_BYTES, HIAR_P_LIBRARY};
enum { NPROCESS_PARAMS = sizeof(process_params) / sizeof(process_params[0]) };

Test(params, scopes)
{
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        int process = 0;
        for (int j = 0; j < NPROCESS_PARAMS; j++)
            process |= process_params[j] == (hiar_param_id_t)i;
        cr_expect_eq(hiar_param_table[i].scope, process ? HIAR_PSCOPE_PROCESS : HIAR_PSCOPE_COMM,
                     "%s should be %s-scope", hiar_param_table[i].name, process ? "PROCESS" : "COMM");
    }
}

/* A PROCESS parameter in settings would be silently ignored: the call fails instead. */
Test(params, process_settings_fail)
{
    hiar_params_t p;

    for (int i = 0; i < NPROCESS_PARAMS; i++) {
        const hiar_param_info_t *info = &hiar_param_table[process_params[i]];
        char settings[128];
        snprintf(settings, sizeof(settings), "HIAR_ALGO=mpi;%s=%s", info->name, info->def);
        hiar_error_clear();
        cr_expect_eq(hiar_params_load(&p, settings), HIAR_INVALID_ARGUMENT, "\"%s\" should fail", settings);
        cr_expect(strstr(hiar_last_error(), info->name) && strstr(hiar_last_error(), "process-wide") &&
                      strstr(hiar_last_error(), "environment"),
                  "\"%s\": the message should say %s is process-wide: %s", settings, info->name,
                  hiar_last_error());
    }
    cr_expect_eq(hiar_params_load(&p, "HIAR_DEBUG=INFO"), HIAR_INVALID_ARGUMENT);
    cr_expect_str_eq(hiar_last_error(),
                     "config setting HIAR_DEBUG is process-wide: set it in the environment before the "
                     "first hiar call, not in hiar_config_t settings");

    /* From the environment they load as before, and COMM settings beside them still apply. */
    setenv("HIAR_DEBUG", "NONE", 1);
    setenv("HIAR_PMPI", "0", 1);
    cr_assert_eq(hiar_params_load(&p, "HIAR_ALGO=mpi"), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(p.v[HIAR_P_DEBUG].num, HIAR_LOG_NONE);
    cr_expect_eq(p.v[HIAR_P_DEBUG].src, HIAR_SRC_ENV);
    cr_expect_eq(p.v[HIAR_P_PMPI].num, 0);
    cr_expect_eq(p.v[HIAR_P_ALGO].src, HIAR_SRC_CONFIG);
    hiar_params_free(&p);
}

Test(params, environment)
{
    hiar_params_t p;

    setenv("HIAR_ALGO", "twoshot", 1);
    setenv("HIAR_TIMEOUT_MS", "250", 1);
    setenv("HIAR_BUFFER_SIZE", "64K", 1);
    setenv("HIAR_GROUPS", "0,1|2,3", 1);
    cr_assert_eq(hiar_params_load(&p, NULL), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(p.v[HIAR_P_ALGO].num, HIAR_ALGO_TWOSHOT);
    cr_expect_eq(p.v[HIAR_P_ALGO].src, HIAR_SRC_ENV);
    cr_expect_eq(p.v[HIAR_P_TIMEOUT_MS].num, 250);
    cr_expect_eq(p.v[HIAR_P_BUFFER_SIZE].num, 65536);
    cr_expect_str_eq(p.v[HIAR_P_BUFFER_SIZE].text, "64K");
    cr_expect_str_eq(p.v[HIAR_P_GROUPS].text, "0,1|2,3");
    cr_expect_eq(p.v[HIAR_P_GROUPS].src, HIAR_SRC_ENV);
    cr_expect_eq(p.v[HIAR_P_CHECK].src, HIAR_SRC_DEFAULT);
    hiar_params_free(&p);
}

Test(params, settings_over_environment_over_default)
{
    hiar_params_t p;

    setenv("HIAR_ALGO", "twoshot", 1);
    setenv("HIAR_TIMEOUT_MS", "250", 1);
    cr_assert_eq(hiar_params_load(&p, "HIAR_ALGO=mpi"), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(p.v[HIAR_P_ALGO].num, HIAR_ALGO_MPI, "settings must win over the environment");
    cr_expect_eq(p.v[HIAR_P_ALGO].src, HIAR_SRC_CONFIG);
    cr_expect_eq(p.v[HIAR_P_TIMEOUT_MS].num, 250, "the environment must win over the default");
    cr_expect_eq(p.v[HIAR_P_TIMEOUT_MS].src, HIAR_SRC_ENV);
    cr_expect_eq(p.v[HIAR_P_CHECK].num, HIAR_ARGCHECK_LOCAL);
    cr_expect_eq(p.v[HIAR_P_CHECK].src, HIAR_SRC_DEFAULT);
    hiar_params_free(&p);
}

Test(params, settings_syntax)
{
    hiar_params_t p;

    cr_assert_eq(hiar_params_load(&p, "HIAR_ALGO=mpi; HIAR_TIMEOUT_MS=5\n  HIAR_CHECK=global;"),
                 HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(p.v[HIAR_P_ALGO].num, HIAR_ALGO_MPI);
    cr_expect_eq(p.v[HIAR_P_TIMEOUT_MS].num, 5);
    cr_expect_eq(p.v[HIAR_P_CHECK].num, HIAR_ARGCHECK_GLOBAL);
    hiar_params_free(&p);

    cr_assert_eq(hiar_params_load(&p, ""), HIAR_SUCCESS, "%s", hiar_last_error());
    cr_expect_eq(p.v[HIAR_P_ALGO].src, HIAR_SRC_DEFAULT);
    hiar_params_free(&p);

    cr_assert_eq(hiar_params_load(&p, "HIAR_ALGO=mpi;HIAR_ALGO=oneshot"), HIAR_SUCCESS);
    cr_expect_eq(p.v[HIAR_P_ALGO].num, HIAR_ALGO_ONESHOT, "the last setting of a name wins");
    hiar_params_free(&p);

    /* A value may hold '=' and ',' (HIAR_GROUPS holds '|' and '-'). */
    cr_assert_eq(hiar_params_load(&p, "HIAR_GROUPS=0-3|4,5;HIAR_HOST_ID=a=b"), HIAR_SUCCESS, "%s",
                 hiar_last_error());
    cr_expect_str_eq(p.v[HIAR_P_GROUPS].text, "0-3|4,5");
    cr_expect_str_eq(p.v[HIAR_P_HOST_ID].text, "a=b");
    hiar_params_free(&p);
}

typedef struct {
    char text[32];
    long long bytes; /* -1: invalid */
} size_case_t;

ParameterizedTestParameters(params, sizes)
{
    static size_case_t cases[] = {
        {"0", 0},
        {"1", 1},
        {"65536", 65536},
        {"64K", 65536},
        {"64k", 65536},
        {"4M", 4 << 20},
        {"4m", 4 << 20},
        {"1G", 1 << 30},
        {"3g", 3LL << 30},
        {"4KB", 4096},
        {"4KiB", 4096},
        {"1MB", 1 << 20},
        {"9223372036854775807", 9223372036854775807LL},
        {"", -1},
        {"K", -1},
        {"-1", -1},
        {"+1", -1},
        {"4T", -1},
        {"4 K", -1},
        {" 4", -1},
        {"4 ", -1},
        {"4K5", -1},
        {"1.5M", -1},
        {"0x10", -1},
        {"abc", -1},
        {"4KK", -1},
        {"99999999999999999999", -1},
        {"9223372036854775807K", -1},
        {"8589934592G", -1},
    };
    return cr_make_param_array(size_case_t, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(size_case_t *c, params, sizes)
{
    long long num = -7;
    hiar_result_t rc = hiar_param_parse(HIAR_P_BUFFER_SIZE, c->text, &num);

    if (c->bytes < 0) {
        cr_expect_eq(rc, HIAR_INVALID_ARGUMENT, "\"%s\" should be rejected, parsed as %lld", c->text, num);
        cr_expect_eq(num, -7, "a rejected value must not be written");
        cr_expect(strstr(hiar_last_error(), "HIAR_BUFFER_SIZE"), "message: %s", hiar_last_error());
    } else {
        cr_expect_eq(rc, HIAR_SUCCESS, "\"%s\": %s", c->text, hiar_last_error());
        cr_expect_eq(num, c->bytes, "\"%s\"", c->text);
    }
}

Test(params, integers)
{
    static const struct {
        const char *text;
        long long num; /* -1: invalid */
    } cases[] = {{"0", 0},          {"300", 300}, {"2147483647", 2147483647LL}, {"2147483648", -1},
                 {"-5", -1},        {"5ms", -1},  {"1K", -1},                   {"", -1},
                 {"1e3", -1},       {" 1", -1}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long long num = -7;
        hiar_result_t rc = hiar_param_parse(HIAR_P_TIMEOUT_MS, cases[i].text, &num);
        if (cases[i].num < 0) {
            cr_expect_eq(rc, HIAR_INVALID_ARGUMENT, "HIAR_TIMEOUT_MS=\"%s\" should be rejected",
                         cases[i].text);
            cr_expect(strstr(hiar_last_error(), "HIAR_TIMEOUT_MS"), "message: %s", hiar_last_error());
        } else {
            cr_expect_eq(rc, HIAR_SUCCESS, "\"%s\": %s", cases[i].text, hiar_last_error());
            cr_expect_eq(num, cases[i].num, "\"%s\"", cases[i].text);
        }
    }
}

Test(params, booleans)
{
    int id = -1;
    long long num = -7;

    for (int i = 0; i < HIAR_PARAM_COUNT && id < 0; i++)
        if (hiar_param_table[i].type == HIAR_PTYPE_BOOL)
            id = i;
    if (id < 0)
        cr_skip_test("params.def has no BOOL parameter");
    cr_expect_eq(hiar_param_parse((hiar_param_id_t)id, "0", &num), HIAR_SUCCESS);
    cr_expect_eq(num, 0);
    cr_expect_eq(hiar_param_parse((hiar_param_id_t)id, "1", &num), HIAR_SUCCESS);
    cr_expect_eq(num, 1);
    cr_expect_eq(hiar_param_parse((hiar_param_id_t)id, "2", &num), HIAR_INVALID_ARGUMENT);
    cr_expect_eq(hiar_param_parse((hiar_param_id_t)id, "yes", &num), HIAR_INVALID_ARGUMENT);
    cr_expect_eq(hiar_param_parse((hiar_param_id_t)id, "", &num), HIAR_INVALID_ARGUMENT);
}

Test(params, enum_choices_ignore_case)
{
    static const struct {
        hiar_param_id_t id;
        const char *text;
        long long num; /* -1: invalid */
    } cases[] = {
        {HIAR_P_ALGO, "oneshot", HIAR_ALGO_ONESHOT},  {HIAR_P_ALGO, "ONESHOT", HIAR_ALGO_ONESHOT},
        {HIAR_P_ALGO, "OneShot", HIAR_ALGO_ONESHOT},  {HIAR_P_ALGO, "MPI", HIAR_ALGO_MPI},
        {HIAR_P_GROUP_LEVEL, "rank", HIAR_LEVEL_RANK}, {HIAR_P_GROUP_LEVEL, "Nvl", HIAR_LEVEL_NVL},
        {HIAR_P_GROUP_LEVEL, "AUTO", HIAR_LEVEL_AUTO}, {HIAR_P_DEBUG, "info", HIAR_LOG_INFO},
        {HIAR_P_CHECK, "Global", HIAR_ARGCHECK_GLOBAL}, {HIAR_P_ALGO, "one shot", -1},
        {HIAR_P_ALGO, "", -1},                         {HIAR_P_ALGO, "oneshot2", -1},
        {HIAR_P_ALGO, "auto|mpi", -1},                 {HIAR_P_ALGO, "one", -1},
        {HIAR_P_ALGO, "1", -1},                        {HIAR_P_DEBUG, "WARN ", -1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long long num = -7;
        const char *name = hiar_param_table[cases[i].id].name;
        hiar_result_t rc = hiar_param_parse(cases[i].id, cases[i].text, &num);
        if (cases[i].num < 0) {
            cr_expect_eq(rc, HIAR_INVALID_ARGUMENT, "%s=\"%s\" should be rejected", name, cases[i].text);
            cr_expect(strstr(hiar_last_error(), name), "message: %s", hiar_last_error());
        } else {
            cr_expect_eq(rc, HIAR_SUCCESS, "%s=\"%s\": %s", name, cases[i].text, hiar_last_error());
            cr_expect_eq(num, cases[i].num, "%s=\"%s\"", name, cases[i].text);
        }
    }
}

/* The ENUM constants of param.h, each with the choice of params.def it stands for. */
static const struct {
    hiar_param_id_t id;
    const char *choice;
    int value;
} enum_constants[] = {
    {HIAR_P_DEBUG, "NONE", HIAR_LOG_NONE},
    {HIAR_P_DEBUG, "WARN", HIAR_LOG_WARN},
    {HIAR_P_DEBUG, "INFO", HIAR_LOG_INFO},
    {HIAR_P_DEBUG, "TRACE", HIAR_LOG_TRACE},
    {HIAR_P_GROUP_LEVEL, "auto", HIAR_LEVEL_AUTO},
    {HIAR_P_GROUP_LEVEL, "NVL", HIAR_LEVEL_NVL},
    {HIAR_P_GROUP_LEVEL, "PIX", HIAR_LEVEL_PIX},
    {HIAR_P_GROUP_LEVEL, "PXB", HIAR_LEVEL_PXB},
    {HIAR_P_GROUP_LEVEL, "PHB", HIAR_LEVEL_PHB},
    {HIAR_P_GROUP_LEVEL, "NODE", HIAR_LEVEL_NODE},
    {HIAR_P_GROUP_LEVEL, "SYS", HIAR_LEVEL_SYS},
    {HIAR_P_GROUP_LEVEL, "HOST", HIAR_LEVEL_HOST},
    {HIAR_P_GROUP_LEVEL, "RANK", HIAR_LEVEL_RANK},
    {HIAR_P_ALGO, "auto", HIAR_ALGO_AUTO},
    {HIAR_P_ALGO, "oneshot", HIAR_ALGO_ONESHOT},
    {HIAR_P_ALGO, "twoshot", HIAR_ALGO_TWOSHOT},
    {HIAR_P_ALGO, "hier", HIAR_ALGO_HIER},
    {HIAR_P_ALGO, "mpi", HIAR_ALGO_MPI},
    {HIAR_P_ALGO, "pull", HIAR_ALGO_PULL},
    {HIAR_P_BETWEEN, "auto", HIAR_BETWEEN_AUTO},
    {HIAR_P_BETWEEN, "mpi", HIAR_BETWEEN_MPI},
    {HIAR_P_CHECK, "none", HIAR_ARGCHECK_NONE},
    {HIAR_P_CHECK, "local", HIAR_ARGCHECK_LOCAL},
    {HIAR_P_CHECK, "global", HIAR_ARGCHECK_GLOBAL},
    {HIAR_P_PROGRESS, "0", HIAR_PROGRESS_OFF},
    {HIAR_P_PROGRESS, "auto", HIAR_PROGRESS_AUTO},
    {HIAR_P_FLAT, "0", HIAR_FLAT_OFF},
    {HIAR_P_FLAT, "auto", HIAR_FLAT_AUTO},
    {HIAR_P_MPI_DEVICE, "auto", HIAR_MPIDEV_AUTO},
    {HIAR_P_MPI_DEVICE, "0", HIAR_MPIDEV_NO},
    {HIAR_P_MPI_DEVICE, "1", HIAR_MPIDEV_YES},
    {HIAR_P_TUNE, "0", HIAR_TUNE_OFF},
    {HIAR_P_TUNE, "1", HIAR_TUNE_ON},
    {HIAR_P_TUNE, "auto", HIAR_TUNE_AUTO},
    {HIAR_P_YIELD, "auto", HIAR_YIELD_AUTO},
    {HIAR_P_YIELD, "0", HIAR_YIELD_SPIN},
    {HIAR_P_YIELD, "1", HIAR_YIELD_SOON},
};
enum { NENUM_CONSTANTS = sizeof(enum_constants) / sizeof(enum_constants[0]) };

Test(params, enum_constants_match_choices)
{
    for (int i = 0; i < NENUM_CONSTANTS; i++) {
        long long num = -1;
        cr_expect_eq(hiar_param_parse(enum_constants[i].id, enum_constants[i].choice, &num), HIAR_SUCCESS,
                     "%s has no choice %s", hiar_param_table[enum_constants[i].id].name,
                     enum_constants[i].choice);
        cr_expect_eq(num, enum_constants[i].value, "%s=%s parses to %lld but param.h says %d",
                     hiar_param_table[enum_constants[i].id].name, enum_constants[i].choice, num,
                     enum_constants[i].value);
    }
    /* Every choice of every ENUM parameter has a constant above, and no more. */
    for (int id = 0; id < HIAR_PARAM_COUNT; id++) {
        int nchoices = 1, nconstants = 0;
        if (hiar_param_table[id].type != HIAR_PTYPE_ENUM)
            continue;
        for (const char *c = hiar_param_table[id].choices; *c; c++)
            nchoices += *c == '|';
        for (int i = 0; i < NENUM_CONSTANTS; i++)
            nconstants += enum_constants[i].id == (hiar_param_id_t)id;
        cr_expect_eq(nchoices, nconstants, "%s has %d choices (%s) but this test knows %d constants",
                     hiar_param_table[id].name, nchoices, hiar_param_table[id].choices, nconstants);
    }
}

Test(params, invalid_environment_warns_and_keeps_default)
{
    char path[128];
    hiar_params_t p;
    char *log;

    log_to_file(path, sizeof(path));
    setenv("HIAR_ALGO", "bogus", 1);
    setenv("HIAR_BUFFER_SIZE", "12Q", 1);
    setenv("HIAR_TIMEOUT_MS", "250", 1);
    cr_assert_eq(hiar_params_load(&p, NULL), HIAR_SUCCESS, "an invalid environment must not fail: %s",
                 hiar_last_error());
    cr_expect_eq(p.v[HIAR_P_ALGO].num, HIAR_ALGO_AUTO);
    cr_expect_eq(p.v[HIAR_P_ALGO].src, HIAR_SRC_DEFAULT);
    cr_expect_eq(p.v[HIAR_P_BUFFER_SIZE].num, parsed_default(HIAR_P_BUFFER_SIZE));
    cr_expect_eq(p.v[HIAR_P_BUFFER_SIZE].src, HIAR_SRC_DEFAULT);
    cr_expect_eq(p.v[HIAR_P_TIMEOUT_MS].num, 250, "a valid variable beside invalid ones still counts");
    hiar_params_free(&p);
    log = read_log(path);
    cr_expect(strstr(log, "HIAR_ALGO") && strstr(log, "bogus"), "no warning naming HIAR_ALGO=bogus:\n%s",
              log);
    cr_expect(strstr(log, "HIAR_BUFFER_SIZE") && strstr(log, "12Q"),
              "no warning naming HIAR_BUFFER_SIZE=12Q:\n%s", log);
    free(log);
}

Test(params, invalid_settings_fail)
{
    static const char *const bad[][2] = {
        {"HIAR_ALGO=bogus", "HIAR_ALGO"},
        {"HIAR_TIMEOUT_MS=abc", "HIAR_TIMEOUT_MS"},
        {"HIAR_BUFFER_SIZE=4X", "HIAR_BUFFER_SIZE"},
        {"HIAR_CHECK=global;HIAR_ALGO=", "HIAR_ALGO"},
    };
    hiar_params_t p;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hiar_error_clear();
        cr_expect_eq(hiar_params_load(&p, bad[i][0]), HIAR_INVALID_ARGUMENT, "\"%s\" should fail", bad[i][0]);
        cr_expect(strstr(hiar_last_error(), bad[i][1]), "\"%s\": the message should name %s: %s",
                  bad[i][0], bad[i][1], hiar_last_error());
    }
    hiar_error_clear();
    cr_expect_eq(hiar_params_load(&p, "HIAR_ALGO=bogus"), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), "bogus") && strstr(hiar_last_error(), "oneshot"),
              "the message should give the value and the choices: %s", hiar_last_error());
}

Test(params, unknown_names)
{
    char path[128];
    hiar_params_t p;
    char *log;

    cr_expect_eq(hiar_params_load(&p, "NOT_A_PARAM=1"), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), "NOT_A_PARAM"), "%s", hiar_last_error());
    cr_expect_eq(hiar_params_load(&p, "HIAR_ALGO=mpi;HIAR_NOPE=1"), HIAR_INVALID_ARGUMENT);
    cr_expect(strstr(hiar_last_error(), "HIAR_NOPE"), "%s", hiar_last_error());
    cr_expect_eq(hiar_params_load(&p, "HIAR_ALGO"), HIAR_INVALID_ARGUMENT, "a setting without '='");
    cr_expect(strstr(hiar_last_error(), "HIAR_ALGO"), "%s", hiar_last_error());

    /* Unknown HIAR_* variables: a warning (usually a typo), not a failure; HIAR_TEST* is for tests. */
    log_to_file(path, sizeof(path));
    setenv("HIAR_ALOG", "mpi", 1);
    setenv("HIAR_TEST_SOMETHING", "1", 1);
    cr_assert_eq(hiar_params_load(&p, NULL), HIAR_SUCCESS, "%s", hiar_last_error());
    hiar_params_free(&p);
    log = read_log(path);
    cr_expect(strstr(log, "HIAR_ALOG"), "no warning naming HIAR_ALOG:\n%s", log);
    cr_expect(!strstr(log, "HIAR_TEST_SOMETHING"), "HIAR_TEST* should not be reported:\n%s", log);
    free(log);
}
