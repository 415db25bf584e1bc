/*
 * Device buffers the GPU transports cannot serve go through pinned host
 * memory: chunk by chunk, copied in, handed to the host path (which the
 * core gives at setup), and copied back.  The same two pinned buffers carry
 * the step between groups of a hierarchical device call (core/hier.c).
 * Blocks the calling thread; cannot be captured in a CUDA graph.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "cuda/api.h"
#include "transport/staged.h"
#include "transport/transport.h"

typedef struct {
    char *buf; /* 2 x HIAR_STAGE_BYTES, pinned, at first use */
    int device;
    hiar_host_run_t host_run;
    void *host_arg;
} staged_t;

hiar_result_t hiar_staged_buffer(void *state, char **buf)
{
    staged_t *s = state;

    if (!s->buf && hiar_cuda_host_alloc(2 * HIAR_STAGE_BYTES, (void **)&s->buf) != HIAR_SUCCESS) {
        s->buf = NULL;
        return hiar_error_set(HIAR_NO_MEMORY, "hiar_allreduce: cannot allocate %zu bytes of pinned host memory to "
                                              "stage device buffers (%s)", 2 * HIAR_STAGE_BYTES, hiar_last_error());
    }
    *buf = s->buf;
    return HIAR_SUCCESS;
}

static int staged_usable(const hiar_tier_t *t, const hiar_transport_config_t *cfg, char *why, size_t len)
{
    (void)t;
    if (cfg->device >= 0)
        return 1;
    snprintf(why, len, "no GPU on this rank");
    return 0;
}

static hiar_result_t staged_setup(const hiar_tier_t *t, const hiar_transport_config_t *cfg, void **state,
                                  char *why, size_t len)
{
    staged_t *s = calloc(1, sizeof(*s));

    (void)t;
    if (!s)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the staging state");
    s->device = cfg->device;
    s->host_run = cfg->host_run;
    s->host_arg = cfg->host_arg;
    snprintf(why, len, "staged through host memory");
    *state = s;
    return HIAR_SUCCESS;
}

/*
 * Every rank cuts the same chunks.  The copy back is left on the stream:
 * the next copy in, on the same stream, waits for it, and so does the host
 * before it touches the buffer again.
 */
static hiar_result_t staged_run(void *state, const hiar_tier_t *t, const hiar_call_t *c, hiar_step_t step)
{
    size_t chunk = HIAR_STAGE_BYTES / c->esize;
    staged_t *s = state;
    char *buf = NULL;

    (void)t, (void)step;
    HIAR_CHECK(hiar_staged_buffer(state, &buf));
    for (size_t off = 0; off < c->count; off += chunk) {
        hiar_call_t piece = hiar_call_slice(c, off, c->count - off < chunk ? c->count - off : chunk);
        HIAR_CHECK(hiar_cuda_copy(buf, piece.sendbuf, hiar_call_bytes(&piece), c->stream));
        piece.sendbuf = piece.recvbuf = buf;
        piece.device = 0;
        HIAR_CHECK(s->host_run(s->host_arg, &piece));
        HIAR_CHECK(hiar_cuda_copy_async((char *)c->recvbuf + off * c->esize, buf, hiar_call_bytes(&piece), c->stream));
    }
    return HIAR_SUCCESS;
}

/* A failed comm's buffers may be the target of a pending MPI request, and copies left on the caller's stream may still read them. */
static void staged_teardown(void *state, const hiar_tier_t *t, int flags)
{
    staged_t *s = state;

    (void)t;
    if (!s)
        return;
    if (s->buf && !(flags & HIAR_TEARDOWN_KEEP)) {
        hiar_cuda_device_sync(s->device);
        hiar_cuda_host_free(s->buf);
    }
    free(s);
}

const hiar_transport_t hiar_transport_staged = {
    .name = "staged",
    .usable = staged_usable,
    .setup = staged_setup,
    .run = staged_run,
    .max_bytes = hiar_transport_unbounded,
    .status = hiar_transport_no_status,
    .abort = hiar_transport_no_abort,
    .teardown = staged_teardown,
};
