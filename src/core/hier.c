/* The hierarchical drivers: host buffers (shm in the group) and device buffers (CUDA IPC in the group). */
#include "config.h"

#include <string.h>

#include "base/log.h"
#include "base/marks.h"
#include "base/pieces.h"
#include "base/reduce.h"
#include "core/hier.h"
#include "net/inter.h"
#include "transport/shm.h"
#include "transport/staged.h"

/* Inter-group step on the shards this rank owns, in the shm slots; AVG divides them there, once. */
static hiar_result_t host_between(hiar_comm_t *comm, const hiar_call_t *c)
{
    const hiar_tier_t *t = &comm->host.tier;

    for (int s = t->local; s < t->nshards; s += t->local_size) {
        size_t n;
        void *shard = hiar_shm_shard(comm->host.state, c->count, c->dtype, t->nshards, s, &n);
        if (n == 0)
            continue;
        HIAR_CHECK(hiar_inter_allreduce(shard, n, c->dtype, c->op, t->shard_comm[s], c->wait));
        hiar_reduce_divide(shard, n, c->dtype, c->divisor);
    }
    return HIAR_SUCCESS;
}

hiar_result_t hiar_hier_host(hiar_comm_t *comm, const hiar_call_t *c)
{
    hiar_side_t *h = &comm->host;
    hiar_result_t rc;

    HIAR_CHECK(h->tp->run(h->state, &h->tier, c, HIAR_STEP_REDUCE_SCATTER));
    HIAR_MARK(c, "reduce-scatter");
    HIAR_CHECK(host_between(comm, c));
    HIAR_MARK(c, "between groups");
    rc = h->tp->run(h->state, &h->tier, c, HIAR_STEP_ALLGATHER);
    HIAR_MARK(c, "all-gather");
    return rc;
}

/* MPI works in the scratch: see run_mpi (run.c). */
hiar_result_t hiar_hier_oneshot(hiar_comm_t *comm, const hiar_call_t *c)
{
    hiar_side_t *h = &comm->host;
    hiar_call_t sum = *c;
    char *scratch, *result;

    HIAR_CHECK(hiar_comm_scratch(comm, &scratch));
    sum.recvbuf = scratch;
    sum.divisor = 0;
    sum.plan.alg = HIAR_ALG_ONESHOT;
    HIAR_CHECK(h->tp->run(h->state, &h->tier, &sum, HIAR_STEP_ALLREDUCE));
    HIAR_CHECK(hiar_inter_oneshot(scratch, c->count, c->dtype, c->op, h->tier.shard_comm, h->tier.local,
                                  h->tier.local_size, h->tier.nshards, comm->size, c->wait, &result));
    memcpy(c->recvbuf, result, hiar_call_bytes(c));
    return HIAR_SUCCESS;
}

#ifdef HIAR_HAVE_CUDA
/*
 * MPI allreduce of `bytes` of device memory among the owners of one shard,
 * through the two pinned buffers:
 *
 *   piece i: wait for its copy to the host | start copying piece i+1 |
 *            MPI on piece i (AVG: divide) | start copying piece i back
 *
 * Copies and kernels share the caller's stream, so they stay in order: the
 * first wait also covers the reduce-scatter kernel before it, and nothing
 * waits for the last copy back (the next call's first wait does, before the
 * host touches the buffers again).  Each wait is followed by a look at the
 * kernels' status: a group that timed out must not go on to MPI with stale
 * shards.
 */
static hiar_result_t device_between(hiar_comm_t *comm, const hiar_call_t *c, char *data, size_t bytes,
                                    MPI_Comm shard_comm)
{
    size_t piece = HIAR_STAGE_BYTES / c->esize * c->esize;
    char *stage = NULL;

    HIAR_CHECK(hiar_staged_buffer(comm->gpu->staged, &stage));
    HIAR_CHECK(hiar_cuda_copy_async(stage, data, bytes < piece ? bytes : piece, c->stream));
    for (size_t off = 0, i = 0; off < bytes; off += piece, i++) {
        char *buf = stage + (i % 2) * HIAR_STAGE_BYTES;
        size_t n = bytes - off < piece ? bytes - off : piece, next = off + n;
        HIAR_CHECK(hiar_cuda_sync(c->stream));
        HIAR_CHECK(hiar_gpu_status(comm->gpu));
        if (next < bytes)
            HIAR_CHECK(hiar_cuda_copy_async(stage + ((i + 1) % 2) * HIAR_STAGE_BYTES, data + next,
                                            bytes - next < piece ? bytes - next : piece, c->stream));
        HIAR_CHECK(hiar_inter_allreduce(buf, n / c->esize, c->dtype, c->op, shard_comm, c->wait));
        hiar_reduce_divide(buf, n / c->esize, c->dtype, c->divisor);
        HIAR_CHECK(hiar_cuda_copy_async(data + off, buf, n, c->stream));
    }
    return HIAR_SUCCESS;
}

/*
 * The same bytes on the GPU: an allreduce among shard s's counterparts, in
 * place in the output, with the plan's kernel between groups (AVG divides
 * there, once).  Kernels only: the stream orders it after the reduce-scatter.
 */
static hiar_result_t gpu_between(hiar_comm_t *comm, const hiar_call_t *c, size_t off, size_t bytes, int s)
{
    hiar_call_t b = hiar_call_slice(c, off / c->esize, bytes / c->esize);

    b.sendbuf = b.recvbuf;
    b.plan.kernel = c->plan.between;
    b.out_window = NULL;
    return hiar_between_run(&comm->gpu->between, s, &b);
}

/*
 * Groups on several hosts, as many on each (core/between.h, per_host): shard
 * s's counterparts on this host reduce-scatter it on the GPU, a part each;
 * the owners of this rank's part on every host allreduce it over MPI (on
 * the progress engine, else blocking, chunk by chunk of the counterparts'
 * kernel, which cut the parts alike); the counterparts all-gather the parts.
 * Here for the bytes [off, off + bytes) of the output, shard s of one
 * chunk; step: one half alone (the MPI step then runs once for the call,
 * per_host_call), or HIAR_STEP_ALLREDUCE for all three.
 */
static hiar_result_t per_host(hiar_comm_t *comm, const hiar_call_t *c, size_t off, size_t bytes, int s,
                              hiar_step_t step)
{
    hiar_between_t *b = &comm->gpu->between;
    hiar_call_t part = hiar_call_slice(c, off / c->esize, bytes / c->esize);

    part.sendbuf = part.recvbuf;
    part.out_window = NULL;
    part.nshards = b->hosts.nshards;
    part.plan.chunk = b->part_chunk;
    if (step != HIAR_STEP_ALLREDUCE)
        return hiar_between_part(b, s, &part, step);
    HIAR_CHECK(hiar_between_part(b, s, &part, HIAR_STEP_REDUCE_SCATTER));
    if (comm->gpu->hosts)
        HIAR_CHECK(hiar_hosts_run(comm->gpu->hosts, &part, &b->hosts));
    for (size_t c0 = 0; !comm->gpu->hosts && c0 < bytes; c0 += b->part_chunk) {
        size_t lo, n, cbytes = bytes - c0 < b->part_chunk ? bytes - c0 : b->part_chunk;
        hiar_pieces_shard(cbytes, HIAR_IPC_SHARD_UNIT, b->hosts.nshards, b->hosts.local, &lo, &n);
        if (n)
            HIAR_CHECK(device_between(comm, c, (char *)part.recvbuf + c0 + lo, n, b->hosts.shard_comm[b->hosts.local]));
    }
    return hiar_between_part(b, s, &part, HIAR_STEP_ALLGATHER);
}

/* The step between groups of shard s of one chunk: its bytes [off, off + bytes) of the output. */
static hiar_result_t between_shard(hiar_comm_t *comm, const hiar_call_t *c, size_t off, size_t bytes, int s,
                                   hiar_step_t step)
{
    if (c->plan.between != HIAR_KERNEL_NONE)
        return gpu_between(comm, c, off, bytes, s);
    if (comm->gpu->between.per_host)
        return per_host(comm, c, off, bytes, s, step);
    return device_between(comm, c, (char *)c->recvbuf + off, bytes, comm->gpu->side.tier.shard_comm[s]);
}

typedef hiar_result_t (*shard_fn_t)(hiar_comm_t *comm, const hiar_call_t *c, size_t off, size_t bytes, int s,
                                    hiar_step_t step);

/* fn(comm, c, off, bytes, s, step) for every owned shard s of every chunk of c (the plan's, the same in every
 * group), chunk by chunk. */
static hiar_result_t each_owned_shard(hiar_comm_t *comm, const hiar_call_t *c, hiar_step_t step, shard_fn_t fn)
{
    const hiar_tier_t *t = &comm->gpu->side.tier;
    size_t bytes = hiar_call_bytes(c), chunk = c->plan.chunk;

    for (size_t c0 = 0; c0 < bytes; c0 += chunk) {
        size_t cbytes = bytes - c0 < chunk ? bytes - c0 : chunk;
        for (int s = t->local; s < t->nshards; s += t->local_size) {
            size_t lo, n;
            hiar_pieces_shard(cbytes, HIAR_IPC_SHARD_UNIT, t->nshards, s, &lo, &n);
            if (n)
                HIAR_CHECK(fn(comm, c, c0 + lo, n, s, step));
        }
    }
    return HIAR_SUCCESS;
}

/*
 * per_host over the whole call with one MPI step per owned shard on the
 * progress engine (one job: one kernel, one slot and tags, captured or not),
 * where every chunk's shard fits one chunk of the counterparts' kernel, so
 * that each rank's part of it is one range (base/pieces.h, hiar_pieces_part).
 * Whether it fits follows from agreed sizes only: every rank takes the same
 * way, and the counterparts' kernels come in the same order everywhere.
 */
static int per_host_call_fits(const hiar_comm_t *comm, const hiar_call_t *c)
{
    const hiar_tier_t *t = &comm->gpu->side.tier;
    size_t units = (c->plan.chunk + HIAR_IPC_SHARD_UNIT - 1) / HIAR_IPC_SHARD_UNIT;

    return comm->gpu->hosts && ((units + (size_t)t->nshards - 1) / (size_t)t->nshards) * HIAR_IPC_SHARD_UNIT <=
                                   comm->gpu->between.part_chunk;
}

static hiar_result_t per_host_call(hiar_comm_t *comm, const hiar_call_t *c)
{
    const hiar_tier_t *t = &comm->gpu->side.tier;
    hiar_call_t own = *c;

    HIAR_ASSERT(c->nshards == t->nshards);
    own.sendbuf = own.recvbuf; /* the counterparts' reduce-scatter left the parts in the output (core/hosts.h) */
    HIAR_CHECK(each_owned_shard(comm, c, HIAR_STEP_REDUCE_SCATTER, per_host));
    for (int s = t->local; s < t->nshards; s += t->local_size)
        HIAR_CHECK(hiar_hosts_run_part(comm->gpu->hosts, &own, s, &comm->gpu->between.hosts));
    return each_owned_shard(comm, c, HIAR_STEP_ALLGATHER, per_host);
}

/*
 * c as the step between hosts takes it (core/hosts.h): the rank's own bytes
 * where its group's step left them, in the output; a rank alone in its
 * group (transport/self.c: that step is a copy of the input) leaves them in
 * the input, which the hosts kernel reads, so a call enqueues one copy
 * (a cudaMemcpyAsync of the whole message) fewer.
 */
static hiar_call_t hosts_call(const hiar_side_t *d, const hiar_call_t *c)
{
    hiar_call_t own = *c;

    if (d->tp != &hiar_transport_self)
        own.sendbuf = own.recvbuf;
    return own;
}

/*
 * The reduce-scatter in the group, the owned shards between groups (on the
 * progress engine where the MPI step has one: one job per shard for the
 * whole call), the all-gather in the group.
 */
hiar_result_t hiar_hier_device(hiar_comm_t *comm, const hiar_call_t *c)
{
    hiar_side_t *d = &comm->gpu->side;
    const hiar_tier_t *t = &d->tier;
    int over_mpi = c->plan.between == HIAR_KERNEL_NONE;
    int on_engine = over_mpi && comm->gpu->hosts && !comm->gpu->between.per_host;
    hiar_call_t own = hosts_call(d, c);
    hiar_result_t rc;

    if (!on_engine || own.sendbuf == own.recvbuf) /* else a rank alone: the hosts kernel reads the input */
        HIAR_CHECK(d->tp->run(d->state, t, c, HIAR_STEP_REDUCE_SCATTER));
    HIAR_MARK(c, "reduce-scatter");
    if (on_engine)
        HIAR_CHECK(hiar_hosts_run(comm->gpu->hosts, &own, t));
    else if (over_mpi && comm->gpu->between.per_host && per_host_call_fits(comm, c))
        HIAR_CHECK(per_host_call(comm, c));
    else
        HIAR_CHECK(each_owned_shard(comm, c, HIAR_STEP_ALLREDUCE, between_shard));
    HIAR_MARK(c, "between groups");
    rc = d->tp->run(d->state, t, c, HIAR_STEP_ALLGATHER);
    HIAR_MARK(c, "all-gather");
    return rc;
}

/*
 * Two kernels where the three-step path launches three: the group's LL
 * kernel leaves the group's sum alike on its ranks (summed in rank order;
 * AVG divides once, between hosts), and each rank's job with its
 * counterparts reduces it in link order, so every rank gets the same bits.
 * Every rank sends the whole message, not its shard: the group's ranks put
 * as many times its bytes on the wire between hosts, so only small
 * messages take it (core/plan.c).  The three steps, 2 simulated hosts of 2
 * ranks on one H100 (2026-12-05), spent on the calling thread per 1 KB
 * call 3.9 us launching the reduce-scatter, 4.0 the hosts kernel and 3.6
 * the all-gather, and the call took 51 us against staged MPI's 35.  Ranks
 * alone in rounds (core/hosts.c) take it too: their group's step is none,
 * and one job over every rank replaces the rounds.
 */
hiar_result_t hiar_hier_device_hosts_ll(hiar_comm_t *comm, const hiar_call_t *c)
{
    hiar_side_t *d = &comm->gpu->side;
    hiar_call_t group = *c, own = hosts_call(d, c);

    HIAR_ASSERT(comm->gpu->hosts && comm->gpu->hosts_whole); /* the plan's condition (core/plan.c) */
    group.divisor = 0;
    if (own.sendbuf == own.recvbuf) /* else a rank alone: the hosts kernel reads the input */
        HIAR_CHECK(d->tp->run(d->state, &d->tier, &group, HIAR_STEP_ALLREDUCE));
    HIAR_MARK(c, "in the group");
    HIAR_CHECK(hiar_hosts_run_whole(comm->gpu->hosts, &own, &d->tier));
    HIAR_MARK(c, "between groups");
    return HIAR_SUCCESS;
}

hiar_result_t hiar_hier_device_fused(hiar_comm_t *comm, const hiar_call_t *c)
{
    return hiar_between_fused(&comm->gpu->between, &comm->gpu->side, c);
}
#endif
