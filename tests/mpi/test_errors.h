/*
 * The tests of the test_errors program, by file, and the check they share.
 * main() (test_errors.c) calls them in a fixed order: harness_verdict() is
 * collective, so every rank must run the same tests in the same order.
 */
#ifndef HIAR_TESTS_MPI_TEST_ERRORS_H
#define HIAR_TESTS_MPI_TEST_ERRORS_H

#include "hiar.h"

/* A correct sum over all ranks on comm; 1 when every rank got n(n+1)/2 (test_errors.c). */
int sum_works(hiar_comm_t *comm);

/* test_errors_calls.c: invalid arguments to calls on a valid comm. */
void test_api_basics(void);
void test_bad_buffers(hiar_comm_t *comm);
void test_bad_types(hiar_comm_t *comm);
void test_count_zero(hiar_comm_t *comm);
void test_mem_without_gpu(hiar_comm_t *comm);
void test_async_error(hiar_comm_t *comm);
void test_still_usable(hiar_comm_t *comm);
void test_null_comm(void);
void test_check_global(void);

/* test_errors_create.c: hiar_comm_create's arguments and settings. */
void test_create_args(void);
void test_create_f(void);
void test_create_settings(void);
void test_create_groups(void);
void test_create_one_rank_differs(void);
void test_caller_frees_mpi_comm(void);
void test_config_precedence(void);

/* test_errors_state.c: a comm in the wrong state for the call. */
void test_destroyed_comm(void);
void test_aborted_comm(void);
void test_two_threads(void);

/* test_errors_stall.c: a stalled peer (test_timeout_check_global runs last: a hang ends the job). */
void test_timeout(const char *path, const char *name);
void test_timeout_check_global(void);

#endif
