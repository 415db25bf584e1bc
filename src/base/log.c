/* HIAR_DEBUG logging: level and subsystem filter, prefix, optional file or handler. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/param.h"

/* hiar.h's levels are the values of HIAR_DEBUG, which the filter compares. */
_Static_assert(HIAR_LOG_LEVEL_WARN == HIAR_LOG_WARN && HIAR_LOG_LEVEL_INFO == HIAR_LOG_INFO &&
                   HIAR_LOG_LEVEL_TRACE == HIAR_LOG_TRACE,
               "hiar.h's HIAR_LOG_LEVEL_* differ from param.h's HIAR_LOG_*");

static const char *const subsys_names[HIAR_SUB_COUNT] = {"INIT", "TOPO", "PLAN", "IPC",
                                                         "SHM",  "MPI",  "CALL"};
static const char *const level_names[] = {"NONE", "WARN", "INFO", "TRACE"};

static struct {
    pthread_once_t once;
    int level;
    unsigned subsys_mask;
    FILE *file;
    int rank;
    char host[64];
} log_state = {PTHREAD_ONCE_INIT, HIAR_LOG_WARN, ~0u, NULL, -1, ""};

/*
 * hiar_log_set_handler's handler.  Every line is written under the lock, so
 * lines do not interleave, handler calls come one at a time, and once
 * hiar_log_set_handler returns the old handler is not running and is not
 * called again: its arg may be freed.
 */
static struct {
    pthread_mutex_t lock;
    hiar_log_handler_t fn;
    void *arg;
} log_sink = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};

/* Set while this thread runs the handler: its own hiar calls log to the file
 * instead of taking the lock it holds. */
static _Thread_local int in_handler;

static void log_write(int level, hiar_log_subsys_t sub, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

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

atomic_int hiar_log_ceiling = HIAR_LOG_TRACE;

/* hiar_log_enabled once log_state is set (in log_init too). */
static int enabled_now(int level, hiar_log_subsys_t sub)
{
    return level <= log_state.level && (log_state.subsys_mask >> sub & 1u);
}

static void log_init(void)
{
    const char *subsys = getenv("HIAR_DEBUG_SUBSYS");
    const char *file = getenv("HIAR_DEBUG_FILE");
    long long level;

    gethostname(log_state.host, sizeof(log_state.host) - 1);
    hiar_param_env(HIAR_P_DEBUG, &level); /* an invalid value: hiar_comm_create warns of it */
    log_state.level = (int)level;
    atomic_store_explicit(&hiar_log_ceiling, log_state.level, memory_order_relaxed);
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
        } else if (enabled_now(HIAR_LOG_WARN, HIAR_SUB_INIT)) {
            log_write(HIAR_LOG_WARN, HIAR_SUB_INIT, __FILE__, __LINE__,
                      "cannot open HIAR_DEBUG_FILE=%s; logging to stderr", path);
        }
    }
}

int hiar_log_enabled(int level, hiar_log_subsys_t sub)
{
    pthread_once(&log_state.once, log_init);
    return enabled_now(level, sub);
}

void hiar_log_set_rank(int rank)
{
    log_state.rank = rank;
}

hiar_result_t hiar_log_set_handler(hiar_log_handler_t handler, void *arg)
{
    if (in_handler)
        return hiar_error_set(HIAR_INVALID_USAGE, "hiar_log_set_handler called from the log handler");
    pthread_mutex_lock(&log_sink.lock);
    log_sink.fn = handler;
    log_sink.arg = arg;
    pthread_mutex_unlock(&log_sink.lock);
    return HIAR_SUCCESS;
}

/* "/work/main/src/transport/shm.c" -> "shm.c" */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/*
 * One line without its newline: the prefix, the message, and at WARN where it
 * was logged.  A message too long for out is cut; the location is kept.
 */
static void format_line(char *out, size_t size, int level, hiar_log_subsys_t sub, const char *file,
                        int line, const char *fmt, va_list ap)
{
    char where[128] = "";
    size_t room;
    int n;

    if (level == HIAR_LOG_WARN)
        snprintf(where, sizeof(where), " (%s:%d)", base_name(file), line);
    room = size - strlen(where);
    n = snprintf(out, room, "%s:%ld:%d hiar %s %s ", log_state.host, (long)getpid(), log_state.rank,
                 level_names[level], subsys_names[sub]);
    if (n >= 0 && (size_t)n < room)
        vsnprintf(out + n, room - (size_t)n, fmt, ap);
    strcat(out, where);
}

/* One fputs per line so lines of concurrent ranks do not interleave. */
static void write_file(char *text)
{
    strcat(text, "\n");
    fputs(text, log_state.file);
}

static void log_vwrite(int level, hiar_log_subsys_t sub, const char *file, int line, const char *fmt,
                       va_list ap)
{
    char text[1024];

    /* One byte left for write_file's newline. */
    format_line(text, sizeof(text) - 1, level, sub, file, line, fmt, ap);
    if (in_handler) {
        write_file(text);
        return;
    }
    pthread_mutex_lock(&log_sink.lock);
    if (log_sink.fn) {
        in_handler = 1;
        log_sink.fn(log_sink.arg, level, subsys_names[sub], text);
        in_handler = 0;
    } else {
        write_file(text);
    }
    pthread_mutex_unlock(&log_sink.lock);
}

static void log_write(int level, hiar_log_subsys_t sub, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vwrite(level, sub, file, line, fmt, ap);
    va_end(ap);
}

void hiar_log(int level, hiar_log_subsys_t sub, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    pthread_once(&log_state.once, log_init);
    va_start(ap, fmt);
    log_vwrite(level, sub, file, line, fmt, ap);
    va_end(ap);
}

void hiar_log_assert_fail(const char *cond, const char *func, const char *file, int line)
{
    pthread_once(&log_state.once, log_init);
    log_write(HIAR_LOG_WARN, HIAR_SUB_INIT, file, line, "assertion failed: %s in %s", cond, func);
    abort();
}
