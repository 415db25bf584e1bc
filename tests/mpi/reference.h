/*
 * Independent reference for tests/mpi/test_allreduce.c.
 *
 * Inputs follow nccl-tests' trick: every rank holds small integers (halves of
 * them for floats, powers of two for prod), so the exact result of any op over
 * up to 8 ranks is representable in every dtype and the check can be exact.
 * The expected value is computed here in double / int64 from the same input
 * formula, never from hiar's output; float16/bfloat16 are encoded and decoded
 * by this file's own integer code (no libm, nothing shared with src/).
 *
 * Example, float32 sum over 4 ranks at element 5: the inputs are
 * ((5*7 + r*13 + 3) % 31 - 15) / 2 for r = 0..3, that is -4, 2.5, -6.5 and 0,
 * and the expected result is -8.
 */
#ifndef TEST_REFERENCE_H
#define TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "hiar.h"

/* Element i of rank's input: exact in dtype; NaN at a few places for float min/max. */
double ref_input(hiar_dtype_t dtype, hiar_op_t op, int rank, size_t i);

/* Inputs (and so results) repeat with this period in i: element i equals element i % period. */
size_t ref_period(hiar_op_t op);

/*
 * Element i of the result over ranks 0..nranks-1, rounded to dtype (integers
 * wrap like two's complement; avg truncates toward zero for integers and is
 * the exact sum divided in double, then rounded, for floats).
 */
double ref_expected(hiar_dtype_t dtype, hiar_op_t op, int nranks, size_t i);

/* Writes v, rounded to nearest even (floats) or wrapped (integers), as element i. */
void ref_store(hiar_dtype_t dtype, void *buf, size_t i, double v);

/* Element i of buf, exactly, as a double. */
double ref_load(hiar_dtype_t dtype, const void *buf, size_t i);

/* v rounded to dtype, as a double. */
double ref_round(hiar_dtype_t dtype, double v);

/* Whether the result matches: equal, or both NaN; float avg may be 1 ulp off. */
int ref_matches(hiar_dtype_t dtype, hiar_op_t op, double got, double want);

/* 1 for float16, bfloat16, float32 and float64. */
int ref_is_float(hiar_dtype_t dtype);

#endif
