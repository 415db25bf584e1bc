/* hiar-bench --split: communicators for the parts of hiar's multi-group allreduce. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/range.h"
#include "bench-split.h"

/*
 * "HIAR_GROUPS=0-<size-1>": the ranks of the communicator in one group;
 * with sharers > 0, HIAR_GPU_SHARERS too: the ranks whose kernels spin on
 * this GPU at the same time, the other groups' comms' included.
 */
static hiar_result_t one_group_comm(MPI_Comm mpi, int size, int sharers, hiar_comm_t **out)
{
    char settings[96];
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    int used;

    if (size > 1)
        used = snprintf(settings, sizeof settings, "HIAR_GROUPS=0-%d", size - 1);
    else
        used = snprintf(settings, sizeof settings, "HIAR_GROUPS=0");
    if (sharers > 0)
        snprintf(settings + used, sizeof settings - (size_t)used, ";HIAR_GPU_SHARERS=%d", sharers);
    cfg.settings = settings;
    return hiar_comm_create(mpi, &cfg, out);
}

static int make_intra(bench_split_t *s, int group, int sharers, char *err, size_t len)
{
    MPI_Comm mpi;
    hiar_result_t rc;
    int rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, group, rank, &mpi);
    rc = one_group_comm(mpi, s->local_size, sharers, &s->intra); /* hiar keeps a duplicate */
    MPI_Comm_free(&mpi);
    if (rc == HIAR_SUCCESS)
        return 0;
    snprintf(err, len, "--split: hiar_comm_create over this rank's group: %s: %s", hiar_strerror(rc),
             hiar_last_error());
    return 1;
}

/* Shard s: the rank with local rank s % (group size) in every group, ordered by group (as hiar). */
static int make_shards(bench_split_t *s, int group, char *err, size_t len)
{
    s->shard_comm = malloc(sizeof(MPI_Comm) * (size_t)s->nshards);
    if (!s->shard_comm) {
        snprintf(err, len, "--split: cannot allocate %d shard communicators", s->nshards);
        return 1;
    }
    for (int sh = 0; sh < s->nshards; sh++) {
        int mine = sh % s->local_size == s->local_rank;
        MPI_Comm_split(MPI_COMM_WORLD, mine ? 0 : MPI_UNDEFINED, group, &s->shard_comm[sh]);
    }
    return 0;
}

/* All ranks in one group, or NULL and the reason on every rank. */
static void make_flat(bench_split_t *s)
{
    hiar_result_t rc;
    int nranks, failed;

    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    rc = one_group_comm(MPI_COMM_WORLD, nranks, 0, &s->flat);
    failed = rc != HIAR_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!failed)
        return;
    if (rc == HIAR_SUCCESS) {
        hiar_comm_abort(s->flat); /* peers that failed cannot take part in a destroy */
        s->flat = NULL;
        snprintf(s->flat_na, sizeof s->flat_na, "hiar_comm_create with all ranks in one group "
                 "failed on another rank");
    } else {
        snprintf(s->flat_na, sizeof s->flat_na, "hiar_comm_create with all ranks in one group: %s: %s",
                 hiar_strerror(rc), hiar_last_error());
    }
}

int bench_split_setup(bench_split_t *s, hiar_comm_t *comm, int device, int on_gpu, int flat_only, char *err,
                      size_t len)
{
    hiar_result_t rc;
    int group;

    *s = (bench_split_t){0};
    s->flat_only = flat_only;
    rc = hiar_comm_group(comm, device, &s->ngroups, &group, &s->local_rank, &s->local_size);
    if (rc != HIAR_SUCCESS) {
        snprintf(err, len, "--split: hiar_comm_group: %s: %s", hiar_strerror(rc), hiar_last_error());
        return 1;
    }
    if (s->ngroups < 2) {
        snprintf(err, len, "--split needs hiar's ranks in several groups, but its %s-buffer grouping "
                 "has one (set HIAR_GROUPS, HIAR_HOST_ID or HIAR_GROUP_LEVEL: doc/params.md)",
                 device ? "device" : "host");
        return 2;
    }
    MPI_Allreduce(&s->local_size, &s->nshards, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!flat_only && (make_intra(s, group, on_gpu, err, len) || make_shards(s, group, err, len)))
        return 1;
    make_flat(s);
    return 0;
}

static void close_comm(hiar_comm_t *comm, int failed)
{
    if (comm && failed)
        hiar_comm_abort(comm);
    else if (comm)
        hiar_comm_destroy(comm);
}

void bench_split_teardown(bench_split_t *s, int intra_failed, int flat_failed)
{
    close_comm(s->intra, intra_failed);
    close_comm(s->flat, flat_failed);
    for (int sh = 0; s->shard_comm && sh < s->nshards; sh++)
        if (s->shard_comm[sh] != MPI_COMM_NULL)
            MPI_Comm_free(&s->shard_comm[sh]);
    free(s->shard_comm);
    *s = (bench_split_t){0};
}

/* hiar's own rule (as src/transport/shm.c), not a copy: the column times the shards hiar sends. */
void bench_split_shard(const bench_split_t *s, size_t count, size_t esize, int shard, size_t *first,
                       size_t *n)
{
    hiar_shard_range(count, esize, s->nshards, shard, first, n);
}

void bench_split_describe(const bench_split_t *s, FILE *out, int nranks, const char *inter_how,
                          const char *link_how)
{
    fprintf(out, "# split: %d groups, the largest of %d ranks; each column timed like the others "
                 "(same buffers, warm-up, barrier, ITERS calls, max over ranks of the per-rank mean)\n",
            s->ngroups, s->nshards);
    if (s->flat_only) {
        fprintf(out, "# split: intra, inter and link not timed (--flat)\n");
    } else {
        fprintf(out, "# split: intra = hiar_allreduce of the full message on a hiar comm over this "
                     "rank's group only; checked against the reduction over the group (hiar-intra)\n");
        fprintf(out, "# split: inter = MPI_Allreduce of this rank's shards: %d shards cut as hiar's host "
                     "shards (%d-byte units, the first shards one unit more; empty ones skipped), shard s "
                     "over the ranks with local rank s %% (group size) in every group (as hiar: a smaller "
                     "group's ranks reduce several, one after the other); %s; not checked (mpi-shard)\n",
                s->nshards, HIAR_SHARD_ALIGN, inter_how);
        fprintf(out, "# split: link = MPI point-to-point of the same shards between the same ranks: per "
                     "shard, MPI_Isend and MPI_Irecv with each rank that owns it in another group, all at "
                     "once, then MPI_Waitall; nothing reduced; %s; busbw = the bytes a rank sends per "
                     "shard, (%d groups - 1) x algbw; not checked (mpi-link)\n",
                link_how, s->ngroups);
    }
    if (s->flat)
        fprintf(out, "# split: flat = hiar_allreduce on a hiar comm with HIAR_GROUPS=0-%d (one group "
                     "over all ranks); checked (hiar-flat)\n", nranks - 1);
    else
        fprintf(out, "# split: flat = n/a: %s\n", s->flat_na);
    fprintf(out, "# split: hiar/(intra+inter) = the hiar column's time over intra + inter: what "
                 "composing the two steps costs beyond the steps (goal: <= 1.1)\n");
    fprintf(out, "# split: hiar/max(intra,link) = the hiar column's time over the larger of intra and "
                 "link: against a hiar that ran its step between groups alongside the one in the group "
                 "at the link's speed (goal: <= 1.15 at 16 MB-256 MB)\n");
    fprintf(out, "# split: hiar/flat = the hiar column's time over flat's\n");
}

const bench_split_ratio_name_t bench_split_ratio_names[SPLIT_RATIOS] = {
    [SPLIT_RATIO_INTER] = {"hiar/(intra+inter)", "hiar_over_intra_plus_inter"},
    [SPLIT_RATIO_LINK] = {"hiar/max(intra,link)", "hiar_over_max_intra_link"},
    [SPLIT_RATIO_FLAT] = {"hiar/flat", "hiar_over_flat"},
};

/* The ratios' widths: their headings'. */
static int ratio_width(int k)
{
    return (int)strlen(bench_split_ratio_names[k].heading);
}

void bench_split_print_names(void)
{
    printf(" %10s %10s %10s %10s", "intra", "inter", "link", "flat");
    for (int k = 0; k < SPLIT_RATIOS; k++)
        printf(" %s", bench_split_ratio_names[k].heading);
}

void bench_split_print_units(void)
{
    printf(" %10s %10s %10s %10s", "(us)", "(us)", "(us)", "(us)");
}

static void print_cell(bench_split_cell_t c)
{
    if (c.word)
        printf(" %10s", c.word);
    else
        printf(" %10.2f", c.us);
}

void bench_split_ratios(const bench_split_row_t *r, double ratio[SPLIT_RATIOS])
{
    double slower = r->intra.us > r->link.us ? r->intra.us : r->link.us;
    int total = !r->total.word;

    ratio[SPLIT_RATIO_INTER] = total && !r->intra.word && !r->inter.word ? r->total.us / (r->intra.us + r->inter.us)
                                                                          : 0.0;
    ratio[SPLIT_RATIO_LINK] = total && !r->intra.word && !r->link.word ? r->total.us / slower : 0.0;
    ratio[SPLIT_RATIO_FLAT] = total && !r->flat.word ? r->total.us / r->flat.us : 0.0;
}

void bench_split_print_row(const bench_split_row_t *r)
{
    double ratio[SPLIT_RATIOS];

    print_cell(r->intra);
    print_cell(r->inter);
    print_cell(r->link);
    print_cell(r->flat);
    bench_split_ratios(r, ratio);
    for (int k = 0; k < SPLIT_RATIOS; k++)
        if (ratio[k] > 0.0)
            printf(" %*.2f", ratio_width(k), ratio[k]);
        else
            printf(" %*s", ratio_width(k), "n/a");
}
