/* Host reduction loops for every dtype and op. */
#ifndef HIAR_REDUCE_H
#define HIAR_REDUCE_H

#include "hiar.h"

/*
 * dst = srcs[0] op srcs[1] op ... op srcs[nsrc-1], element-wise, accumulated
 * in this fixed order (so every rank that reduces the same inputs gets the
 * same bits).  Half types accumulate in f32 and round once.  HIAR_AVG
 * reduces as HIAR_SUM; divisor > 1 then divides the result (the last step of
 * an average).  dst may be one of srcs.
 */
void hiar_reduce_host(void *dst, const void *const *srcs, int nsrc, size_t count,
                      hiar_dtype_t dtype, hiar_op_t op, int divisor);

/* Whether dtype has IEEE arithmetic (the float types: some bit patterns are no value a sum makes, e.g. the
 * LL kernel's sentinel NaN, cuda/ll.cuh); 0 for integer types and anything not a dtype. */
int hiar_dtype_floating(hiar_dtype_t dtype);

/* The last step of an average: buf /= divisor (nothing when divisor <= 1). */
void hiar_reduce_divide(void *buf, size_t count, hiar_dtype_t dtype, int divisor);

#endif
