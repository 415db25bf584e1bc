/* Path choice per call, and the limits it is made from. */
#include "config.h"

#include "base/param.h"
#include "core/plan.h"
#include "core/tune_cache.h"
#include "cuda/api.h"

const char *hiar_plan_name(hiar_plan_t p)
{
    static const char *const algs[][5] = {
        {"oneshot", "twoshot", "hier", "hier-oneshot", "mpi"},
        {"ipc-oneshot", "ipc-twoshot", "hier (GPU)", "hier-oneshot (GPU)", "mpi (GPU)"},
        {"staged oneshot", "staged twoshot", "staged hier", "staged hier-oneshot", "staged mpi"}};
    static const char *const kernels[][5] = {{"", "ipc-ll", "ipc-push", "ipc-twoshot", "ipc-pull"},
                                             {"", "flat-ll", "flat-push", "flat-twoshot", "flat-pull"},
                                             {"", "pinned-ll", "pinned-push", "pinned-twoshot", "pinned-pull"}};
    int side = p.via == HIAR_VIA_FLAT ? 1 : p.via == HIAR_VIA_PINNED ? 2 : 0; /* a second side of the device's */

    if (p.via == HIAR_VIA_DEVICE && p.alg == HIAR_ALG_HIER_ONESHOT && p.between == HIAR_KERNEL_NONE)
        return "ipc-hosts-ll";
    if (p.via == HIAR_VIA_DEVICE && p.alg == HIAR_ALG_ONESHOT && p.kernel == HIAR_KERNEL_NONE)
        return "self";
    if (p.via == HIAR_VIA_DEVICE && p.between != HIAR_KERNEL_NONE)
        return p.alg == HIAR_ALG_HIER_ONESHOT         ? "ipc-hier-ll"
               : p.kernel != HIAR_KERNEL_TWOSHOT      ? "ipc-hier"
               : p.blocks_log2 == 0                   ? "ipc-hier-twoshot"
               : p.blocks_log2 < 0                    ? "ipc-hier-twoshot-half"
                                                      : "ipc-hier-twoshot-double";
    if (p.blocks_log2) /* tuning's block counts: the name is the candidate's */
        return hiar_tune_dev_name(hiar_plan_tune_candidate(p));
    if ((p.via == HIAR_VIA_DEVICE || side) && p.kernel != HIAR_KERNEL_NONE)
        return kernels[side][p.kernel];
    return algs[side ? HIAR_VIA_DEVICE : p.via][p.alg];
}

int hiar_plan_equal(hiar_plan_t a, hiar_plan_t b)
{
    return a.alg == b.alg && a.via == b.via && a.kernel == b.kernel && a.chunk == b.chunk && a.between == b.between &&
           a.blocks_log2 == b.blocks_log2;
}

/*
 * The LL kernel's limit for n ranks (a group, the counterparts, the group
 * over the host): HIAR_ONESHOT_MAX, else pinned_max over pinned host memory,
 * else the budget over n, or where an RMSNorm fuses (one group's kernel,
 * the group over the host: norm) the whole packet area; never past it.
 * The norm's alternative to LL is the rows kernel (cuda/norm.cu), slower
 * than push where the budget ends: on one H200, 4 ranks under MPS, bf16, 32 tokens x 8192 (512 KB) in a CUDA graph, 33.1 us
 * fused by rows against 29.4 for push + a norm kernel, while LL took 8.5 us
 * at 16 tokens (256 KB), and plain LL 8.1 against push's 23.8 at 512 KB.
 */
static size_t ll_limit(const hiar_plan_input_t *in, int n, int norm, size_t pinned_max)
{
    size_t ll = in->oneshot_max ? in->oneshot_max
                : in->pinned    ? pinned_max
                : norm          ? in->ipc_ll_max
                                : HIAR_IPC_ONESHOT_BUDGET / (size_t)n;
    return ll < in->ipc_ll_max ? ll : in->ipc_ll_max;
}

/*
 * Over groups on the progress engine, with a link per rank: the latency
 * path (the group's LL, the whole message between hosts) up to
 * HIAR_ONESHOT_MAX (HIAR_ALGO=oneshot or pull: the group's LL limit, as
 * choose_between takes LL), else HIAR_HOSTS_LL_BUDGET over the group's
 * ranks, or for ranks alone in rounds over the extra sends of one job over
 * every rank (its group's step a copy, then one exchange instead of a
 * round per factor); never past the group's LL limit; 0 for other comms,
 * under other forced algorithms, and for other groups of one rank (whose
 * three steps are already a copy and the hosts kernel).
 */
static size_t hosts_ll_max(const hiar_plan_input_t *in)
{
    int g = in->device_nshards > 1 ? in->device_nshards : 1;
    int forced = in->algo == HIAR_ALGO_ONESHOT || in->algo == HIAR_ALGO_PULL;
    int shares = g > 1 ? g : in->hosts_alone_extra;
    size_t group, budget;

    if (!in->hosts_async || !in->hosts_whole || shares < 1 || (in->algo != HIAR_ALGO_AUTO && !forced))
        return 0;
    group = ll_limit(in, g, 0, HIAR_PINNED_LL_MAX);
    budget = HIAR_HOSTS_LL_BUDGET / (size_t)shares;
    return in->oneshot_max || forced || group < budget ? group : budget;
}

/* The most ranks whose segments share one machine's /dev/shm (at least 1). */
static int ranks_sharing_shm(const hiar_plan_input_t *in)
{
    int most = in->machine_ranks > in->host_nshards ? in->machine_ranks : in->host_nshards;

    return most > 1 ? most : 1;
}

/* The host slot without HIAR_BUFFER_SIZE: by the largest group's ranks, within the /dev/shm budget. */
static size_t shm_default_slot(const hiar_plan_input_t *in)
{
    size_t slot = in->host_nshards <= 2 ? HIAR_SHM_SLOT_MAX
                  : in->host_nshards <= 4 ? HIAR_SHM_SLOT_MAX / 2
                                          : HIAR_SHM_SLOT_MIN;
    size_t ranks = (size_t)ranks_sharing_shm(in);

    /* A group's segment holds two slots per rank (shm.c); the groups of a machine share its /dev/shm. */
    while (in->shm_free && slot > HIAR_SHM_SLOT_FLOOR && 2 * ranks * slot > in->shm_free / 4)
        slot /= 2;
    return slot;
}

/* The pinned-host transport's slot without HIAR_BUFFER_SIZE: within half of /dev/shm with every rank's region. */
static size_t pinned_default_slot(const hiar_plan_input_t *in)
{
    size_t slot = HIAR_PINNED_SLOT_DEFAULT;
#ifdef HIAR_HAVE_CUDA
    int most = ranks_sharing_shm(in);
    size_t ranks = (size_t)most;
    /* A group's regions grow with its ranks (LL packets per sender); a machine's groups have at most `most`. */
    int group = most < 2 ? 2 : most < HIAR_IPC_MAX_GROUP ? most : HIAR_IPC_MAX_GROUP;

    while (in->shm_free && slot > HIAR_PINNED_SLOT_FLOOR && ranks * hiar_ipc_region_bytes(group, slot) > in->shm_free / 2)
        slot /= 2;
#else
    (void)in;
#endif
    return slot;
}

/*
 * Push's limit on 2 ranks over pinned host memory: every size where the
 * slot is the default's or larger (as measured, plan.h); push's pieces
 * shrink with the slot, a flag each over PCIe, so a smaller one keeps
 * two-shot past the limit CUDA IPC has.
 */
static size_t pinned_push2_max(const hiar_plan_input_t *in)
{
    size_t slot = in->slot_bytes ? in->slot_bytes : pinned_default_slot(in);

    return slot >= HIAR_PINNED_SLOT_DEFAULT ? HIAR_PINNED_PUSH2_MAX : HIAR_IPC_PUSH2_MAX;
}

void hiar_plan_slots(const hiar_plan_input_t *in, hiar_plan_slots_t *out)
{
    out->shm = in->slot_bytes ? in->slot_bytes : shm_default_slot(in);
    out->pinned = in->slot_bytes ? in->slot_bytes : pinned_default_slot(in);
}

size_t hiar_shm_oneshot_default(int nranks)
{
    size_t limit = HIAR_SHM_ONESHOT_BUDGET / (size_t)(nranks > 1 ? nranks : 1);

    return limit > HIAR_SHM_ONESHOT_FLOOR ? limit : HIAR_SHM_ONESHOT_FLOOR;
}

void hiar_plan_limits(const hiar_plan_input_t *in, hiar_plan_limits_t *out)
{
    size_t fits = HIAR_MPI_SCRATCH_BYTES / ((size_t)in->host_nshards + 1);
    /* HIAR_ONESHOT_MAX wins over tuning, tuning over the built-in thresholds. */
    size_t hier = in->oneshot_max ? in->oneshot_max
                  : in->tuned     ? in->tuned_hier_oneshot_max
                                  : HIAR_HIER_ONESHOT_MAX_DEFAULT;

    out->ipc_slot = in->device_slot ? in->device_slot : in->slot_bytes ? in->slot_bytes : HIAR_IPC_SLOT_DEFAULT;
    out->shm_oneshot_max = in->oneshot_max ? in->oneshot_max
                           : in->tuned     ? in->tuned_shm_oneshot_max
                                           : hiar_shm_oneshot_default(in->nranks);
    /* The copies for the shards a rank owns (several in a smaller group) must fit the scratch. */
    out->hier_oneshot_max = hier < fits ? hier : fits;
    /* Over pinned host memory one group's plain kernel of 2 ranks takes float types in data-only packets, to
     * 64 KB (plan.h). */
    out->ipc_ll_max = ll_limit(in, in->nranks, in->norm,
                               in->nranks == 2 && in->ngroups == 1 && in->floating && !in->norm
                                   ? HIAR_PINNED_GROUP_LL_MAX
                                   : HIAR_PINNED_LL_MAX);
    out->ipc_push_max = in->nranks != 2 ? HIAR_IPC_PUSH_MAX : in->pinned ? pinned_push2_max(in) : HIAR_IPC_PUSH2_MAX;
    /* Device messages over groups exchanging on the GPU (core/between.h): the
     * latency path (LL in the group, LL between groups) while LL suits both the
     * largest group and the counterparts; then reduce-scatter, the shards
     * between groups, all-gather (three kernels). */
    out->device_hier_ll_max = ll_limit(in, in->device_nshards > in->ngroups ? in->device_nshards : in->ngroups, 0,
                                       HIAR_PINNED_LL_MAX);
    out->device_hosts_ll_max = hosts_ll_max(in);
    /* The one group over the host: by default while its LL kernel takes the
     * message (one launch and one hop instead of the group's kernel and the
     * step between groups); above, the hierarchical paths send each byte
     * between the groups (between PCIe switches) once instead of n - 1 times. */
    out->device_flat_max = !in->flat_nranks ? 0
                           : in->flat_max   ? in->flat_max
                                            : ll_limit(in, in->flat_nranks, in->norm, HIAR_PINNED_LL_MAX);
}

static hiar_plan_t plan_of(hiar_alg_t alg, hiar_via_t via, hiar_kernel_t kernel)
{
    hiar_plan_t p = {alg, via, kernel, 0, HIAR_KERNEL_NONE, 0};
    return p;
}

/* The kernel of one group with IPC (of in->nranks), by size and HIAR_ALGO. */
static hiar_plan_t choose_ipc(const hiar_plan_input_t *in, const hiar_plan_limits_t *l)
{
    hiar_kernel_t k;

    if (in->algo == HIAR_ALGO_ONESHOT)
        k = in->bytes <= in->ipc_ll_max ? HIAR_KERNEL_LL : HIAR_KERNEL_PUSH;
    else if (in->algo == HIAR_ALGO_PULL)
        k = HIAR_KERNEL_PULL;
    else if (in->algo != HIAR_ALGO_AUTO)
        k = HIAR_KERNEL_TWOSHOT;
    else
        k = in->bytes <= l->ipc_ll_max ? HIAR_KERNEL_LL
            : in->bytes <= l->ipc_push_max ? HIAR_KERNEL_PUSH
                                          : HIAR_KERNEL_TWOSHOT;
    if (in->mixed && k == HIAR_KERNEL_PUSH) /* beside other groups' kernels it takes a whole SM: transport/ipc.c */
        k = HIAR_KERNEL_TWOSHOT;
    return plan_of(k == HIAR_KERNEL_TWOSHOT ? HIAR_ALG_TWOSHOT : HIAR_ALG_ONESHOT, HIAR_VIA_DEVICE, k);
}

/*
 * A comm of one rank: the sum is the input, copied on the stream (the self
 * transport), capturable.  Staged, a 16 MB bf16 call took 4556 us on one
 * H100 (hiar-bench --split's intra at one rank a group, 2026-12-06), waited
 * on the host and refused graph capture.
 */
int hiar_plan_self(const hiar_plan_input_t *in)
{
    return in->self && in->nranks == 1;
}

/*
 * Every rank alone in its group goes over MPI, but for device buffers whose
 * step between groups has somewhere to run: the kernels over groups on the
 * GPU, or the progress engine.  There the group's steps are a copy and
 * nothing, and the call goes as over any groups (np 2 as two hosts of one
 * rank on one H100, 8 buckets of 25 MB behind 2 ms kernels: the training
 * step 165.8 ms staged and blocking, 60.4 ms on the progress engine).
 */
int hiar_plan_alone_over_mpi(const hiar_plan_input_t *in)
{
    return in->ngroups == in->nranks && in->nranks > 1 &&
           !(in->device && in->hier_ready && (in->between_gpu || in->hosts_async));
}

/* The algorithm over ngroups of the side, by size and HIAR_ALGO, through the host side's transport; alone_mpi:
 * whether groups of one rank each go over MPI. */
static hiar_alg_t choose_alg(const hiar_plan_input_t *in, const hiar_plan_limits_t *l, int ngroups, int alone_mpi)
{
    if (in->algo == HIAR_ALGO_MPI || (alone_mpi && ngroups == in->nranks && in->nranks > 1))
        return HIAR_ALG_MPI;
    if (ngroups > 1)
        return in->algo == HIAR_ALGO_AUTO && in->bytes <= l->hier_oneshot_max ? HIAR_ALG_HIER_ONESHOT
                                                                               : HIAR_ALG_HIER;
    switch (in->algo) {
    case HIAR_ALGO_ONESHOT:
    case HIAR_ALGO_PULL: return HIAR_ALG_ONESHOT;
    case HIAR_ALGO_TWOSHOT:
    case HIAR_ALGO_HIER: return HIAR_ALG_TWOSHOT;
    default: return in->bytes <= l->shm_oneshot_max ? HIAR_ALG_ONESHOT : HIAR_ALG_TWOSHOT;
    }
}

/*
 * Several groups exchanging on the GPU: small messages one-shot twice, LL
 * in the group and LL between groups; larger ones three kernels over
 * chunks, the shards between groups by the kernel one group of ngroups
 * ranks would take for a shard (as if the counterparts were a group: they
 * are); where that is two-shot, one kernel instead (ipc-hier-twoshot:
 * reduce-scatter in the group and between groups, all-gather back), in
 * its own chunks.  On one H200, 4 ranks as 0,1|2,3, bf16, eager, the one
 * kernel against three: 4 MB 82.0 against 84.9 us, 16 MB 181 against 206,
 * 256 MB 2327 against 2963; 0|1,2,3 at 64 MB 736 against 1080; in CUDA
 * graphs 4 MB 76.0 both, 64 MB 596 against 778.  With LL between (512 KB
 * shards) three kernels led: 1 MB 41.7 against 43.4 eager, 33.7 against
 * 38.2 in graphs (the one kernel then exchanged four times a chunk).  Where
 * ranks of several groups share a GPU (mixed) there is no push, so the one
 * kernel takes every message past LL between groups.
 */
static hiar_plan_t choose_between(const hiar_plan_input_t *in, const hiar_plan_limits_t *l)
{
    hiar_plan_input_t shard = *in;
    hiar_plan_limits_t sl;
    hiar_plan_t p;
    int oneshot = in->algo == HIAR_ALGO_ONESHOT || in->algo == HIAR_ALGO_PULL;
    int ll = oneshot || (in->algo == HIAR_ALGO_AUTO && in->bytes <= l->device_hier_ll_max);

    if (ll && in->bytes <= in->ipc_ll_max) {
        p = plan_of(HIAR_ALG_HIER_ONESHOT, HIAR_VIA_DEVICE, HIAR_KERNEL_LL);
        p.between = HIAR_KERNEL_LL;
        return p;
    }
    p = plan_of(HIAR_ALG_HIER, HIAR_VIA_DEVICE, HIAR_KERNEL_NONE);
    p.chunk = hiar_ipc_hier_chunk(l->ipc_slot, in->device_nshards);
    shard.nranks = in->ngroups;
    shard.norm = 0; /* no norm fuses into the step between groups (ll_limit) */
    /* The pull kernel serves one group's own call only (the counterparts' exchange pushes). */
    shard.algo = oneshot ? HIAR_ALGO_ONESHOT : in->algo;
    shard.bytes = ((in->bytes < p.chunk ? in->bytes : p.chunk) + (size_t)in->device_nshards - 1) /
                  (size_t)in->device_nshards;
    hiar_plan_limits(&shard, &sl);
    /* Not the 2-rank push limit: between 2 groups (one H200, 4 ranks as
     * 0,1|2,3, bf16) two-shot led at 4 MB (78.6 against 85.8 us, shards of
     * 2 MB) and 16 MB (201 against 227). */
    sl.ipc_push_max = HIAR_IPC_PUSH_MAX;
    p.between = choose_ipc(&shard, &sl).kernel;
    if (p.between == HIAR_KERNEL_TWOSHOT && in->between_slot) {
        p.kernel = HIAR_KERNEL_TWOSHOT;
        p.chunk = hiar_ipc_hier_fused_chunk(l->ipc_slot, in->device_spread ? in->device_spread : in->device_nshards,
                                            in->between_slot, in->device_nshards, in->ngroups);
    }
    return p;
}

/*
 * The kernel one group of nranks takes on a second side of the device's
 * (via): the group over the host, or this group's pinned-host transport
 * beside its CUDA IPC (pinned: its LL limit).  Chosen only under
 * HIAR_ALGO=auto.
 */
static hiar_plan_t choose_on(const hiar_plan_input_t *in, hiar_via_t via, int nranks, int pinned)
{
    hiar_plan_input_t other = *in;
    hiar_plan_limits_t l;
    hiar_plan_t p;

    other.nranks = nranks;
    other.pinned = pinned;
    hiar_plan_limits(&other, &l);
    p = choose_ipc(&other, &l);
    p.via = via;
    return p;
}

/* Tuning's block count of candidate k (hiar_plan_t.blocks_log2): -1 half, 1 twice, 0 the count by size. */
static int blocks_log2_of(int k)
{
    return k == HIAR_TUNE_DEV_TWOSHOT_HALF || k == HIAR_TUNE_DEV_HIER_HALF       ? -1
           : k == HIAR_TUNE_DEV_TWOSHOT_DOUBLE || k == HIAR_TUNE_DEV_HIER_DOUBLE ? 1
                                                                                 : 0;
}

/* The candidate of kernel `plain` (TWOSHOT or HIER) at block count log2: its half and double follow it. */
static int with_blocks(int plain, int log2)
{
    _Static_assert(HIAR_TUNE_DEV_TWOSHOT_HALF == HIAR_TUNE_DEV_TWOSHOT + 1 &&
                       HIAR_TUNE_DEV_TWOSHOT_DOUBLE == HIAR_TUNE_DEV_TWOSHOT + 2 &&
                       HIAR_TUNE_DEV_HIER_HALF == HIAR_TUNE_DEV_HIER + 1 &&
                       HIAR_TUNE_DEV_HIER_DOUBLE == HIAR_TUNE_DEV_HIER + 2,
                   "a block-count candidate follows its kernel's");
    return plain + (log2 < 0 ? 1 : log2 > 0 ? 2 : 0);
}

/* Tuning's path for this message (BUILTIN where none): the automatic choice only, never over a forced limit. */
static int tuned_choice(const hiar_plan_input_t *in)
{
    /* Tuning timed plain calls; a fused norm takes other kernels (ll_limit). */
    int i = in->algo == HIAR_ALGO_AUTO && !in->oneshot_max && !in->norm
                ? hiar_tune_dev_bucket(in->bytes, in->tuned_device_n)
                : -1;
    return i < 0 ? HIAR_TUNE_DEV_BUILTIN : in->tuned_device[i];
}

/* One group's kernel: tuning's where the group can run it at this size (LL within its packet area, pull
 * over CUDA IPC only, pinned where the group has that transport too), else by size. */
static hiar_plan_t choose_ipc_tuned(const hiar_plan_input_t *in, const hiar_plan_limits_t *l)
{
    static const hiar_kernel_t kernel[HIAR_TUNE_DEV_COUNT] = {
        [HIAR_TUNE_DEV_LL] = HIAR_KERNEL_LL,           [HIAR_TUNE_DEV_PUSH] = HIAR_KERNEL_PUSH,
        [HIAR_TUNE_DEV_PULL] = HIAR_KERNEL_PULL,       [HIAR_TUNE_DEV_TWOSHOT] = HIAR_KERNEL_TWOSHOT,
        [HIAR_TUNE_DEV_TWOSHOT_HALF] = HIAR_KERNEL_TWOSHOT, [HIAR_TUNE_DEV_TWOSHOT_DOUBLE] = HIAR_KERNEL_TWOSHOT};
    int tuned = tuned_choice(in);
    hiar_kernel_t k = kernel[tuned];
    hiar_plan_t p;

    if (tuned == HIAR_TUNE_DEV_PINNED && in->pinned_alt)
        return choose_on(in, HIAR_VIA_PINNED, in->nranks, 1);
    if (k == HIAR_KERNEL_NONE || (k == HIAR_KERNEL_LL && in->bytes > in->ipc_ll_max) ||
        (k == HIAR_KERNEL_PULL && in->pinned))
        return choose_ipc(in, l);
    p = plan_of(k == HIAR_KERNEL_TWOSHOT ? HIAR_ALG_TWOSHOT : HIAR_ALG_ONESHOT, HIAR_VIA_DEVICE, k);
    p.blocks_log2 = blocks_log2_of(tuned);
    return p;
}

int hiar_plan_tune_candidate(hiar_plan_t p)
{
    static const int of_kernel[] = {[HIAR_KERNEL_LL] = HIAR_TUNE_DEV_LL, [HIAR_KERNEL_PUSH] = HIAR_TUNE_DEV_PUSH,
                                    [HIAR_KERNEL_PULL] = HIAR_TUNE_DEV_PULL}; /* two-shot: by its blocks */

    if (p.via == HIAR_VIA_FLAT)
        return HIAR_TUNE_DEV_FLAT;
    if (p.via == HIAR_VIA_PINNED)
        return HIAR_TUNE_DEV_PINNED;
    if (p.via != HIAR_VIA_DEVICE)
        return HIAR_TUNE_DEV_BUILTIN;
    if (p.alg == HIAR_ALG_HIER || p.alg == HIAR_ALG_HIER_ONESHOT)
        return with_blocks(HIAR_TUNE_DEV_HIER, p.blocks_log2);
    if (p.kernel == HIAR_KERNEL_TWOSHOT)
        return with_blocks(HIAR_TUNE_DEV_TWOSHOT, p.blocks_log2);
    return of_kernel[p.kernel];
}

int hiar_plan_nshards(const hiar_plan_input_t *in, hiar_plan_t p)
{
    return p.via == HIAR_VIA_DEVICE || p.via == HIAR_VIA_PINNED ? in->device_nshards
           : p.via == HIAR_VIA_FLAT                              ? in->flat_nranks
                                                                 : in->host_nshards;
}

/*
 * Device buffers: one group with IPC runs a kernel; several groups the
 * kernels around the step between groups, from HIAR_DEVICE_HIER_MIN and
 * where every group can; the rest through host memory along the host
 * grouping (small messages over groups too: MPI needs them on the host
 * anyway, and the host's shared memory is quicker than two kernels and a sync).
 */
hiar_plan_t hiar_plan_choose(const hiar_plan_input_t *in)
{
    hiar_plan_limits_t l;
    hiar_alg_t alg;
    int tuned, hier;

    hiar_plan_limits(in, &l);
    if (!in->device)
        return plan_of(choose_alg(in, &l, in->ngroups, 1), HIAR_VIA_HOST, HIAR_KERNEL_NONE);
    if (hiar_plan_self(in))
        return plan_of(HIAR_ALG_ONESHOT, HIAR_VIA_DEVICE, HIAR_KERNEL_NONE);
    alg = choose_alg(in, &l, in->ngroups, hiar_plan_alone_over_mpi(in));
    if (in->ipc && in->ngroups == 1 && alg != HIAR_ALG_MPI)
        return choose_ipc_tuned(in, &l);
    /* The group over the host: up to its limit, or where tuning says (not over a HIAR_FLAT_MAX set). */
    tuned = in->flat_max ? HIAR_TUNE_DEV_BUILTIN : tuned_choice(in);
    hier = tuned == HIAR_TUNE_DEV_HIER || tuned == HIAR_TUNE_DEV_HIER_HALF || tuned == HIAR_TUNE_DEV_HIER_DOUBLE;
    if (in->ngroups > 1 && in->algo == HIAR_ALGO_AUTO && in->flat_nranks &&
        (tuned == HIAR_TUNE_DEV_FLAT || (!hier && in->bytes <= l.device_flat_max)))
        return choose_on(in, HIAR_VIA_FLAT, in->flat_nranks, in->pinned);
    if (alg != HIAR_ALG_MPI && in->ngroups > 1 && in->hier_ready && in->between_gpu) {
        hiar_plan_t p = choose_between(in, &l);
        if (p.kernel == HIAR_KERNEL_TWOSHOT && hier) /* the one kernel over groups: tuning's block count */
            p.blocks_log2 = blocks_log2_of(tuned);
        return p;
    }
    /* On the progress engine the kernels' path never waits on the host: every size takes it, small messages
     * its latency path where it has one (ipc-hosts-ll: the group's LL, no step between groups' kernel). */
    if (alg != HIAR_ALG_MPI && in->ngroups > 1 && in->hier_ready && in->bytes <= l.device_hosts_ll_max)
        return plan_of(HIAR_ALG_HIER_ONESHOT, HIAR_VIA_DEVICE, HIAR_KERNEL_LL);
    if (alg != HIAR_ALG_MPI && in->ngroups > 1 && in->hier_ready &&
        (in->hosts_async || (alg == HIAR_ALG_HIER && in->bytes > HIAR_DEVICE_HIER_MIN))) {
        hiar_plan_t p = plan_of(HIAR_ALG_HIER, HIAR_VIA_DEVICE, HIAR_KERNEL_NONE);
        p.chunk = hiar_ipc_hier_chunk(l.ipc_slot, in->device_nshards);
        return p;
    }
    return plan_of(choose_alg(in, &l, in->host_ngroups, 1), HIAR_VIA_STAGED, HIAR_KERNEL_NONE);
}
