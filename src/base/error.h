/* Result codes, the per-thread last-error message, and the check macros. */
#ifndef HIAR_ERROR_H
#define HIAR_ERROR_H

#include "hiar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records rc and a printf-style message for hiar_last_error(); returns rc. */
hiar_result_t hiar_error_set(hiar_result_t rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Forgets the calling thread's last error. */
void hiar_error_clear(void);

#define HIAR_CHECK(call)                                                                   \
    do {                                                                                   \
        hiar_result_t hiar_rc_ = (call);                                                   \
        if (hiar_rc_ != HIAR_SUCCESS)                                                      \
            return hiar_rc_;                                                               \
    } while (0)

#define HIAR_CHECK_GOTO(call, rc, label)                                                   \
    do {                                                                                   \
        (rc) = (call);                                                                     \
        if ((rc) != HIAR_SUCCESS)                                                          \
            goto label;                                                                    \
    } while (0)

/* Argument check: the call fails with HIAR_INVALID_ARGUMENT and the message. */
#define HIAR_ARG_CHECK(cond, ...)                                                          \
    do {                                                                                   \
        if (!(cond))                                                                       \
            return hiar_error_set(HIAR_INVALID_ARGUMENT, __VA_ARGS__);                     \
    } while (0)

/* MPI call whose failure becomes HIAR_MPI_ERROR with MPI's own text. */
hiar_result_t hiar_error_mpi(int mpi_rc, const char *what);

#ifdef __cplusplus
}
#endif

#define HIAR_MPI_CHECK(call)                                                               \
    do {                                                                                   \
        int hiar_mpi_rc_ = (call);                                                         \
        if (hiar_mpi_rc_ != MPI_SUCCESS)                                                   \
            return hiar_error_mpi(hiar_mpi_rc_, #call);                                    \
    } while (0)

#endif
