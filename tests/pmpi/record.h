/*
 * Bookkeeping of the plain MPI test programs (pmpi_host, pmpi_nb), with no
 * MPI_Allreduce of its own (MPI_Reduce, MPI_Gather), so that an interposer
 * of MPI_Allreduce sees only the calls under test.
 */
#ifndef HIAR_TEST_PMPI_RECORD_H
#define HIAR_TEST_PMPI_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* MPI_Init (after it): reads --out FILE, where rank 0 writes a line per case. */
void record_open(int argc, char **argv);

/* FNV-1a of a result: what --out compares between runs. */
uint64_t record_hash(const void *p, size_t n);

/* One case: passed if it passed on every rank; rank 0 writes every rank's hash to --out. */
void record_case(const char *name, int ok, uint64_t hash);

/*
 * Rank 0 prints "expect: N intercepted, M forwarded" (sums over ranks of
 * this rank's counts) and "np=N: P passed, F failed"; returns 1 on every
 * rank when a case failed or none passed.
 */
int record_finish(long long intercepted, long long forwarded);

#endif
