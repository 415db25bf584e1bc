/*
 * hiar-bench's result check (nccl-tests' trick): every rank's input is a
 * small integer chosen so that the exact allreduce over all ranks is
 * representable in the dtype, and the expected result is computed here from
 * the same formula, in double or 64-bit integers, never from a library's
 * output.  Also the float16/bfloat16 conversions the benchmark needs.
 */
#ifndef BENCH_CHECK_H
#define BENCH_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "hiar.h"

/* IEEE binary16 and bfloat16 <-> float; to half: round to nearest, ties to even. */
float bench_half_to_float(uint16_t h);
uint16_t bench_float_to_half(float f);
float bench_bf16_to_float(uint16_t b);
uint16_t bench_float_to_bf16(float f);

/* One element of a float dtype as a double (exact), and v rounded to a float dtype as one element. */
double bench_load_real(const void *src, hiar_dtype_t dtype);
void bench_store_real(void *dst, hiar_dtype_t dtype, double v);

/*
 * Writes rank's input for elements 0..count-1 of an allreduce of `dtype` with
 * `op` over nranks ranks.  Values depend on the element index and the rank,
 * so data moved to the wrong offset or taken from the wrong rank shows.
 */
void bench_check_fill(void *buf, size_t count, hiar_dtype_t dtype, hiar_op_t op, int rank,
                      int nranks);

/*
 * Number of elements of `result` that differ from the allreduce of the
 * inputs bench_check_fill gives every rank.  Integers must match exactly;
 * floats within max_ulps units in the last place of the inputs' magnitude
 * (0: exactly).  A NaN never matches.
 */
size_t bench_check_count(const void *result, size_t count, hiar_dtype_t dtype, hiar_op_t op,
                         int nranks, int max_ulps);

#endif
