/*
 * hiar-bench --split: the parts of a multi-group hiar allreduce, timed apart
 * so that hiar's total can be set against them.
 *
 *   intra  hiar_allreduce of the full message on a hiar comm over this rank's
 *          group alone (one group: HIAR_GROUPS=0-<m-1>)
 *   inter  MPI_Allreduce of this rank's shards over the ranks that own the
 *          same shard in every group, as hiar's inter-group step on host
 *          buffers: the message is cut into as many shards as the largest
 *          group has ranks by hiar's own rule (hiar_shard_range: 64-byte
 *          units, the first shards one unit more; 100 float32 in 3 shards:
 *          [0,48) [48,80) [80,100)), and shard s belongs to the rank whose
 *          local rank is s % (its group's size), so a rank of a smaller group
 *          reduces several shards, one after the other; empty shards are
 *          skipped, as hiar skips them.  The column's time, the max over
 *          ranks, is then normally that of local rank 0 of the smallest
 *          group, which has the most shards and the largest (shard 0 among
 *          them); its bandwidth counts shard 0's bytes.  Where hiar's shards
 *          differ: a message up to hiar's hier-oneshot limit (its 'paths:'
 *          line) goes whole, not in shards; one larger than a slot is cut
 *          chunk by chunk; device buffers on the IPC path are cut per chunk
 *          in 16-byte units (cuda/api.h)
 *   link   MPI point-to-point of the same shards between the same ranks:
 *          per owned shard, an Isend and an Irecv with every other rank of
 *          its shard communicator, all posted at once, then MPI_Waitall;
 *          from the memory hiar's step sends from (host buffers: host memory;
 *          device buffers: pinned host memory, where hiar stages them, or
 *          device memory where MPI takes it) into a buffer of the same kind;
 *          nothing reduced.  With two groups these are the bytes hiar's step
 *          sends and receives (recursive doubling: one exchange of the shard;
 *          ring: two of half of it); with G groups a rank exchanges (G-1)
 *          shards where hiar's ring moves 2(G-1)/G of one
 *   flat   hiar_allreduce on a hiar comm with every rank in one group
 *          (HIAR_GROUPS=0-<n-1>); n/a where hiar cannot make that group
 *
 * Ratios: hiar/(intra+inter), what composing the two steps costs beyond
 * the steps; hiar/max(intra,link), hiar against the larger of its step in
 * the group and the bare transfers between groups: what a hiar that ran
 * the two at once, at the link's speed, would take; hiar/flat.
 *
 * This file sets up the communicators, cuts the shards and prints the split
 * columns; hiar-bench times the calls with its own machinery.
 */
#ifndef BENCH_SPLIT_H
#define BENCH_SPLIT_H

#include <stddef.h>
#include <stdio.h>

#include <mpi.h>

#include "hiar.h"

typedef struct {
    int ngroups;          /* hiar's groups (of host or device buffers) */
    int local_rank;       /* this rank's position in its group */
    int local_size;       /* ranks in this rank's group */
    int nshards;          /* shards between groups: ranks of the largest group */
    hiar_comm_t *intra;   /* over this rank's group */
    hiar_comm_t *flat;    /* over all ranks in one group; NULL: n/a */
    MPI_Comm *shard_comm; /* [nshards]: shard s's ranks; MPI_COMM_NULL where not one */
    char flat_na[256];    /* why flat is NULL */
    int flat_only;        /* --flat: no intra, no inter, no link */
} bench_split_t;

/*
 * Collective over MPI_COMM_WORLD, over whose ranks `comm` was made.
 * on_gpu: the job's ranks on this rank's GPU (0: host buffers), which every
 * group's intra comm counts (HIAR_GPU_SHARERS): the groups call at once.
 * Returns 0; 2 (usage) when comm has one group; 1 when a communicator could
 * not be made.  err (len bytes) says why.
 */
int bench_split_setup(bench_split_t *s, hiar_comm_t *comm, int device, int on_gpu, int flat_only, char *err,
                      size_t len);

/* Collective; a communicator that failed (`*_failed`) is aborted instead. */
void bench_split_teardown(bench_split_t *s, int intra_failed, int flat_failed);

/* Elements [*first, *first + *n) of count elements of esize bytes form shard `shard`, as in hiar. */
void bench_split_shard(const bench_split_t *s, size_t count, size_t esize, int shard, size_t *first,
                       size_t *n);

/* '#' lines: what each split column measures; `inter_how` and `link_how` say what memory MPI sees. */
void bench_split_describe(const bench_split_t *s, FILE *out, int nranks, const char *inter_how,
                          const char *link_how);

/* The table's split columns: names, units, and one row's values. */
void bench_split_print_names(void);
void bench_split_print_units(void);

/* One split cell: a time in microseconds, or the word shown instead (word != NULL). */
typedef struct {
    double us;
    const char *word;
} bench_split_cell_t;

/* One size's split cells, and hiar's total (word != NULL: no ratio). */
typedef struct {
    bench_split_cell_t intra, inter, link, flat, total;
} bench_split_row_t;

/* The ratio columns, in the table's order. */
enum { SPLIT_RATIO_INTER, SPLIT_RATIO_LINK, SPLIT_RATIO_FLAT, SPLIT_RATIOS };

/* Each ratio's heading in the table and its key in --json's hiar rows. */
typedef struct {
    const char *heading, *key;
} bench_split_ratio_name_t;
extern const bench_split_ratio_name_t bench_split_ratio_names[SPLIT_RATIOS];

/* hiar's time over (intra + inter), over max(intra, link), over flat; 0 where a cell has no time. */
void bench_split_ratios(const bench_split_row_t *r, double ratio[SPLIT_RATIOS]);

void bench_split_print_row(const bench_split_row_t *r);

#endif
