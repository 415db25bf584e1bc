/* Result names and the per-thread detail message (SQLite's errmsg idea). */
#include <stdarg.h>
#include <stdio.h>

#include "base/error.h"

/* Long enough for a message naming a parameter, its value and what is expected. */
#define HIAR_ERROR_MSG_MAX 512

static _Thread_local char last_error[HIAR_ERROR_MSG_MAX];

static const char *const result_names[] = {
#define HIAR_RESULT_NAME(name, text) "HIAR_" #name ": " text,
    HIAR_RESULT_MAP(HIAR_RESULT_NAME)
#undef HIAR_RESULT_NAME
};

const char *hiar_strerror(hiar_result_t rc)
{
    if ((unsigned)rc >= HIAR_RESULT_COUNT)
        return "HIAR_?: unknown result code";
    return result_names[rc];
}

const char *hiar_last_error(void)
{
    return last_error;
}

void hiar_error_clear(void)
{
    last_error[0] = '\0';
}

hiar_result_t hiar_error_set(hiar_result_t rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return rc;
}

hiar_result_t hiar_error_mpi(int mpi_rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(mpi_rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", mpi_rc);
    return hiar_error_set(HIAR_MPI_ERROR, "%s failed: %s", what, text);
}
