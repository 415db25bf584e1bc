/*
 * The harness shared by the MPI test programs (test_errors, test_badinput,
 * test_faults, test_numerics, test_shm): start-up and the rank-count skip, a
 * verdict per test agreed by every rank, checks of a hiar_result_t and its
 * message, a comm made from settings, and the summary line.
 *
 * A test passes only if it passed on every rank: each one ends with
 * harness_verdict(), which every rank calls in the same order.  Rank 0 ends
 * with "np=N: X passed, Y failed" (scripts grep it; harness_summary()).
 */
#ifndef HIAR_TESTS_MPI_HARNESS_H
#define HIAR_TESTS_MPI_HARNESS_H

#include "hiar.h"

/* The exit status that tells automake the test was skipped. */
#define HARNESS_SKIP 77

/* This rank and the number of ranks in MPI_COMM_WORLD; set by harness_init(). */
extern int world_rank, world_size;
/* Tests recorded so far (by harness_verdict(), or directly by a test that runs on one rank alone). */
extern int harness_passed, harness_failed;

/*
 * MPI_Init, then world_rank and world_size.  Returns 1 to go on; with fewer
 * than min_ranks ranks, rank 0 prints "SKIP: <prog> needs at least <min_ranks>
 * ranks", MPI is finalized, and it returns 0: the caller exits HARNESS_SKIP.
 */
int harness_init(int *argc, char ***argv, const char *prog, int min_ranks);

/* Records one test: it passed only if ok on every rank; rank 0 prints "FAIL name" if not.  Collective. */
void harness_verdict(const char *name, int ok);

/* Whether rc is `want` and the last error names `needle` (case-insensitive); says why not. */
int harness_expect(const char *what, hiar_result_t rc, hiar_result_t want, const char *needle);

/* A hiar comm over MPI_COMM_WORLD with these settings (NULL: none), or NULL, saying why.  Collective. */
hiar_comm_t *harness_create(const char *settings);

/* Rank 0 prints "np=N: X passed, Y failed"; returns the exit status: 0 only when all passed. */
int harness_summary(void);

#endif
