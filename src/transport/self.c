/*
 * Device buffers in a group of one rank: nothing to exchange inside the
 * group, so the hierarchical path treats every group alike: reduce-scatter
 * is the copy of the input into the output, all-gather nothing (on the
 * progress engine between hosts not even the copy: the hosts kernel reads
 * the input, core/hier.c).
 */
#include "config.h"

#include <stdio.h>

#include "base/error.h"
#include "cuda/api.h"
#include "transport/transport.h"

static int self_usable(const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why, size_t len)
{
    (void)cfg, (void)why, (void)len;
    return t->local_size == 1;
}

static hiar_result_t self_setup(const hiar_tier_t *t, const hiar_transport_config_t *cfg, void **state, char *why,
                                size_t len)
{
    (void)t, (void)cfg;
    /* A comm of one rank ends there (core/plan.c); with other groups the step between them follows (core/hier.c). */
    snprintf(why, len, "copied on the stream: the group has one rank");
    *state = NULL;
    return HIAR_SUCCESS;
}

static hiar_result_t self_run(void *state, const hiar_tier_t *t, const hiar_call_t *c, hiar_step_t step)
{
    (void)state, (void)t;
    if (step == HIAR_STEP_ALLGATHER || c->sendbuf == c->recvbuf)
        return HIAR_SUCCESS;
    return hiar_cuda_copy_async(c->recvbuf, c->sendbuf, hiar_call_bytes(c), c->stream);
}

static void self_teardown(void *state, const hiar_tier_t *t, int flags)
{
    (void)state, (void)t, (void)flags;
}

const hiar_transport_t hiar_transport_self = {
    .name = "self",
    .usable = self_usable,
    .setup = self_setup,
    .run = self_run,
    .max_bytes = hiar_transport_unbounded,
    .status = hiar_transport_no_status,
    .abort = hiar_transport_no_abort,
    .teardown = self_teardown,
};
