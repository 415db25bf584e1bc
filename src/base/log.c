/* HIAR_DEBUG logging: level and subsystem filter, prefix, optional file. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/log.h"

static const char *const subsys_names[HIAR_SUB_COUNT] = {"INIT", "TOPO", "PLAN", "IPC",
                                                         "SHM",  "MPI",  "TUNE", "CALL"};
static const char *const level_names[] = {"NONE", "WARN", "INFO", "TRACE"};

static struct {
    pthread_once_t once;
    int level;
    unsigned subsys_mask;
    FILE *file;
    int rank;
    char host[64];
} log_state = {PTHREAD_ONCE_INIT, HIAR_LOG_WARN, ~0u, NULL, -1, ""};

/* Value of an environment parameter, or its default when unset or invalid. */
static long long env_num(hiar_param_id_t id)
{
    const char *text = getenv(hiar_param_table[id].name);
    long long num;

    if (!text || hiar_param_parse(id, text, &num) != HIAR_SUCCESS)
        hiar_param_parse(id, hiar_param_table[id].def, &num);
    return num;
}

/* "INIT,TOPO" selects those, "^SHM" all but SHM, "ALL" everything. */
static unsigned parse_subsys(const char *text)
{
    int exclude = text[0] == '^';
    unsigned mask = 0;
    char copy[256], *save = NULL;

    snprintf(copy, sizeof(copy), "%s", text + exclude);
    for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        if (strcasecmp(s, "ALL") == 0)
            mask = ~0u;
        for (int i = 0; i < HIAR_SUB_COUNT; i++)
            if (strcasecmp(s, subsys_names[i]) == 0)
                mask |= 1u << i;
    }
    return exclude ? ~mask : mask;
}

/* Expands %h (host) and %p (pid) in a HIAR_DEBUG_FILE pattern. */
static void expand_file_name(const char *pattern, char *out, size_t size)
{
    size_t n = 0;

    for (const char *c = pattern; *c && n + 1 < size; c++) {
        if (c[0] == '%' && (c[1] == 'h' || c[1] == 'p')) {
            int w = c[1] == 'h' ? snprintf(out + n, size - n, "%s", log_state.host)
                                : snprintf(out + n, size - n, "%ld", (long)getpid());
            n += (size_t)w < size - n ? (size_t)w : size - n - 1;
            c++;
        } else {
            out[n++] = *c;
        }
    }
    out[n] = '\0';
}

static void log_init(void)
{
    const char *subsys = getenv("HIAR_DEBUG_SUBSYS");
    const char *file = getenv("HIAR_DEBUG_FILE");

    gethostname(log_state.host, sizeof(log_state.host) - 1);
    log_state.level = (int)env_num(HIAR_P_DEBUG);
    log_state.subsys_mask = parse_subsys(subsys ? subsys : "ALL");
    log_state.file = stderr;
    if (file && *file) {
        char path[1024];
        FILE *f;
        expand_file_name(file, path, sizeof(path));
        f = fopen(path, "a");
        if (f) {
            setvbuf(f, NULL, _IOLBF, 0);
            log_state.file = f;
        } else {
            fprintf(stderr, "hiar WARN INIT cannot open HIAR_DEBUG_FILE=%s; logging to stderr\n", path);
        }
    }
}

int hiar_log_enabled(int level, hiar_log_subsys_t sub)
{
    pthread_once(&log_state.once, log_init);
    return level <= log_state.level && (log_state.subsys_mask >> sub & 1u);
}

void hiar_log_set_rank(int rank)
{
    log_state.rank = rank;
}

void hiar_log(int level, hiar_log_subsys_t sub, const char *fmt, ...)
{
    char line[1024];
    int n;
    va_list ap;

    pthread_once(&log_state.once, log_init);
    n = snprintf(line, sizeof(line), "%s:%ld:%d hiar %s %s ", log_state.host, (long)getpid(),
                 log_state.rank, level_names[level], subsys_names[sub]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line so lines of concurrent ranks do not interleave. */
    strncat(line, "\n", sizeof(line) - strlen(line) - 1);
    fputs(line, log_state.file);
}
