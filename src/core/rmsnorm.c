/* hiar_allreduce_rmsnorm: an allreduce call with a norm after it (base/call.h), checked here, run by core/run.c. */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "base/error.h"
#include "base/norm.h"
#include "core/run.h"

#define NAME "hiar_allreduce_rmsnorm"

/* Whether [a, a + an) and [b, b + bn) share a byte (NULL: empty). */
static int overlap(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a && b && x < y + bn && y < x + an;
}

static hiar_result_t check_norm(const hiar_call_t *c, size_t tokens, unsigned flags)
{
    const hiar_norm_t *nm = c->norm;
    size_t wsize = hiar_dtype_size(nm->weight_dtype), bytes = hiar_call_bytes(c);

    HIAR_ARG_CHECK(nm->hidden > 0, NAME ": hidden is 0 (expected the elements per token, at least 1)");
    HIAR_ARG_CHECK(tokens <= SIZE_MAX / nm->hidden, NAME ": tokens %zu x hidden %zu overflows size_t", tokens,
                   nm->hidden);
    HIAR_ARG_CHECK(hiar_norm_dtype_ok(c->dtype) && hiar_norm_dtype_ok(nm->weight_dtype),
                   NAME ": %s %s is not supported (expected float32, float16 or bfloat16)",
                   hiar_norm_dtype_ok(c->dtype) ? "weight_dtype" : "dtype",
                   hiar_dtype_name(hiar_norm_dtype_ok(c->dtype) ? nm->weight_dtype : c->dtype));
    HIAR_ARG_CHECK(isfinite(nm->eps) && nm->eps >= 0, NAME ": eps %g is not a finite number >= 0", (double)nm->eps);
    HIAR_ARG_CHECK(!(flags & ~HIAR_RMSNORM_GEMMA), NAME ": flags 0x%x has unknown bits (expected 0 or "
                   "HIAR_RMSNORM_GEMMA)", flags);
    HIAR_CHECK(hiar_call_check(c, NAME));
    if (tokens == 0)
        return HIAR_SUCCESS;
    HIAR_ARG_CHECK(nm->weight, NAME ": weight is NULL (expected hidden = %zu elements)", nm->hidden);
    HIAR_ARG_CHECK((uintptr_t)nm->weight % wsize == 0 && (uintptr_t)nm->residual % c->esize == 0,
                   NAME ": %s %p is not aligned to the %zu-byte size of its dtype",
                   (uintptr_t)nm->weight % wsize ? "weight" : "residual",
                   (uintptr_t)nm->weight % wsize ? nm->weight : (const void *)nm->residual,
                   (uintptr_t)nm->weight % wsize ? wsize : c->esize);
    HIAR_ARG_CHECK(!overlap(nm->residual, bytes, c->sendbuf, bytes) && !overlap(nm->residual, bytes, c->recvbuf, bytes),
                   NAME ": residual %p overlaps input %p or out %p (%zu bytes each; expected a buffer of its own)",
                   nm->residual, c->sendbuf, c->recvbuf, bytes);
    HIAR_ARG_CHECK(!overlap(nm->weight, nm->hidden * wsize, c->recvbuf, bytes) &&
                       !overlap(nm->weight, nm->hidden * wsize, nm->residual, bytes),
                   NAME ": weight %p overlaps out %p or residual %p, which the call writes", nm->weight, c->recvbuf,
                   nm->residual);
    return HIAR_SUCCESS;
}

hiar_result_t hiar_allreduce_rmsnorm(const void *input, void *residual, const void *weight, void *out, size_t tokens,
                                     size_t hidden, hiar_dtype_t dtype, hiar_dtype_t weight_dtype, float eps,
                                     unsigned flags, hiar_comm_t *comm, hiar_stream_t stream)
{
    hiar_norm_t nm = {.residual = residual, .weight = weight, .hidden = hidden, .weight_dtype = weight_dtype,
                      .eps = eps, .weight_offset = flags & HIAR_RMSNORM_GEMMA ? 1.0f : 0.0f};
    hiar_call_t call = {.sendbuf = input, .recvbuf = out, .esize = hiar_dtype_size(dtype), .dtype = dtype,
                        .op = HIAR_SUM, .stream = stream, .norm = &nm};

    call.count = hidden && tokens <= SIZE_MAX / hidden ? tokens * hidden : 0;
    return hiar_call_run(comm, &call, check_norm(&call, tokens, flags), NAME);
}
