/* hiar-bench's output: '#' lines, table or CSV rows, the summary. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-print.h"

/* Row layout: 4 leading columns, a 33-character group per implementation, ratios. */
#define LEAD_W 42
#define GROUP_W 33

static double algbw(size_t bytes, double time_us)
{
    return (double)bytes / time_us / 1e3; /* GB/s */
}

/*
 * What one call moves, for its bandwidth: `bytes`, and `bus`, the factor from
 * algbw to busbw.  An allreduce over n ranks reduces the message with bus
 * 2(n-1)/n (nccl-tests); --split's intra reduces it over the largest group,
 * its inter one shard over the groups: shard 0, the largest
 * (hiar_shard_range gives the first shards the extra unit); its link sends
 * shard 0 to each other group, so bus is groups - 1.
 */
static void reduced_size(const bench_t *b, int impl, size_t count, size_t *bytes, double *bus)
{
    int n = impl == IMPL_HIAR_INTRA ? b->split.nshards : impl == IMPL_MPI_SHARD ? b->split.ngroups : b->nranks;
    size_t first;

    if (impl == IMPL_MPI_SHARD || impl == IMPL_MPI_LINK)
        bench_split_shard(&b->split, count, b->esize, 0, &first, &count);
    *bytes = count * b->esize;
    *bus = impl == IMPL_MPI_LINK ? b->split.ngroups - 1 : 2.0 * (n - 1) / n;
}

/* Implementations compared with hiar in the ratio columns. */
static int has_ratio(const bench_t *b, int impl)
{
    return impl != IMPL_HIAR && impl < IMPL_MAIN_COUNT && has(b, IMPL_HIAR) && has(b, impl);
}

/* Width of impl's ratio column: its name "hiar/NAME", at least 10. */
static int ratio_w(int impl)
{
    int w = 5 + (int)strlen(bench_impls[impl].name);
    return w > 10 ? w : 10;
}

/* Characters of the ratio columns, each with the blank before it. */
static int ratios_width(const bench_t *b)
{
    int n = 0;

    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        n += has_ratio(b, i) ? 1 + ratio_w(i) : 0;
    return n;
}

/* The last implementation with columns of its own in the table. */
static int last_impl(const bench_t *b)
{
    int last = IMPL_MAIN_COUNT - 1;

    while (last > 0 && !has(b, last))
        last--;
    return last;
}

/*
 * Three lines: implementation names centred over their columns, names, units
 * (--split: its time columns and ratio follow the ratios).
 */
static void print_table_header(const bench_t *b)
{
    int last = last_impl(b);

    printf("#%*s", LEAD_W - 1, "");
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i)) {
            int len = (int)strlen(bench_impls[i].name), pad = (GROUP_W - len) / 2;
            printf("%*s%s%*s", pad, "", bench_impls[i].name, i == last ? 0 : GROUP_W - pad - len, "");
        }
    printf("\n#%11s %12s %9s %6s", "size", "count", "type", "redop");
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i))
            printf(" %9s %7s %7s %6s", "time", b->opt.overlap ? "median" : "algbw", b->opt.overlap ? "max" : "busbw",
                   "#wrong");
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has_ratio(b, i)) {
            char name[16];
            snprintf(name, sizeof name, "hiar/%s", bench_impls[i].name);
            printf(" %*s", ratio_w(i), name);
        }
    if (b->opt.split)
        bench_split_print_names();
    /* Units stop at busbw: the blanks below type, redop and #wrong are skipped over. */
    printf("\n#%11s %12s%17s", "(B)", "(elements)", "");
    for (int i = 0, first = 1; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i)) {
            const char *unit = b->opt.overlap ? "(us)" : "(GB/s)";
            printf("%*s %9s %7s %7s", first ? 0 : 7, "", "(us)", unit, unit);
            first = 0;
        }
    if (b->opt.split) {
        printf("%*s", 7 + ratios_width(b), ""); /* the last #wrong, the ratios */
        bench_split_print_units();
    }
    printf("\n");
}

/* A result as a --split cell: its time, or the word the table shows instead. */
static bench_split_cell_t split_cell(const result_t *r)
{
    if (r->status == RUN_OK)
        return (bench_split_cell_t){r->time_us, NULL};
    return (bench_split_cell_t){0.0, r->status == RUN_NA ? "n/a" : "failed"};
}

static bench_split_row_t split_row(const result_t *res)
{
    return (bench_split_row_t){split_cell(&res[IMPL_HIAR_INTRA]), split_cell(&res[IMPL_MPI_SHARD]),
                               split_cell(&res[IMPL_MPI_LINK]), split_cell(&res[IMPL_HIAR_FLAT]),
                               split_cell(&res[IMPL_HIAR])};
}

/* Decimals that keep microseconds within a 7-wide column (staged MPI's calls under --overlap take milliseconds). */
static int us_decimals(double us)
{
    return us < 1000.0 ? 2 : us < 10000.0 ? 1 : 0;
}

static void print_row(const bench_t *b, size_t count, const result_t *res)
{
    printf("%12zu %12zu %9s %6s", count * b->esize, count, hiar_dtype_name(b->opt.dtype), hiar_op_name(b->opt.op));
    for (int i = 0; i < IMPL_MAIN_COUNT; i++) {
        const result_t *r = &res[i];
        char wrong[24] = "n/a";
        size_t bytes;
        double bus;
        if (!has(b, i))
            continue;
        reduced_size(b, i, count, &bytes, &bus);
        if (r->status != RUN_OK) {
            const char *what = r->status == RUN_NA ? "n/a" : "failed";
            printf(" %9s %7s %7s %6s", what, what, what, what);
            continue;
        }
        if (r->wrong >= 0)
            snprintf(wrong, sizeof wrong, "%lld", r->wrong);
        if (b->opt.overlap) /* the bandwidths mean nothing there: the median and the most of a call instead */
            printf(" %9.2f %7.*f %7.*f %6s", r->time_us, us_decimals(r->median_us), r->median_us,
                   us_decimals(r->max_us), r->max_us, wrong);
        else
            printf(" %9.2f %7.2f %7.2f %6s", r->time_us, algbw(bytes, r->time_us), bus * algbw(bytes, r->time_us),
                   wrong);
    }
    for (int i = 0; i < IMPL_MAIN_COUNT; i++) {
        if (!has_ratio(b, i))
            continue;
        if (res[IMPL_HIAR].status == RUN_OK && res[i].status == RUN_OK)
            printf(" %*.2f", ratio_w(i), res[IMPL_HIAR].time_us / res[i].time_us);
        else
            printf(" %*s", ratio_w(i), "n/a");
    }
    if (b->opt.split) {
        bench_split_row_t split = split_row(res);
        bench_split_print_row(&split);
    }
    printf("\n");
}

/*
 * One implementation's result in a machine-readable row.  size_bytes and
 * count: the message; algbw and busbw: what the implementation moved;
 * time 0 where n/a, wrong -1 where not known; ratios: --split's, on hiar's
 * row (NULL elsewhere; 0 where n/a), and --overlap's median and most (the
 * bandwidths mean nothing there: CSV prints these in their place, JSON
 * null beside them).
 */
typedef struct {
    size_t bytes, count;
    const char *impl;
    int ok;
    double time_us, algbw, busbw;
    long long wrong;
    const double *ratios;
    double median_us, max_us;
} row_t;

static void csv_row(const bench_t *b, FILE *out, const row_t *r)
{
    fprintf(out, "%zu,%zu,%s,%s,%s,", r->bytes, r->count, hiar_dtype_name(b->opt.dtype), hiar_op_name(b->opt.op),
            r->impl);
    if (!r->ok)
        fprintf(out, "n/a,n/a,n/a,");
    else if (b->opt.overlap)
        fprintf(out, "%.3f,%.3f,%.3f,", r->time_us, r->median_us, r->max_us);
    else
        fprintf(out, "%.3f,%.4f,%.4f,", r->time_us, r->algbw, r->busbw);
    if (r->wrong >= 0)
        fprintf(out, "%lld\n", r->wrong);
    else
        fprintf(out, "n/a\n");
}

static void json_row(const bench_t *b, FILE *out, const row_t *r)
{
    fprintf(out, "{\"size_bytes\":%zu,\"count\":%zu,\"dtype\":\"%s\",\"op\":\"%s\",\"impl\":\"%s\",\"nranks\":%d,"
                 "\"mode\":\"%s\",", r->bytes, r->count, hiar_dtype_name(b->opt.dtype), hiar_op_name(b->opt.op),
            r->impl, b->nranks, b->opt.graph ? "graph" : b->opt.overlap ? "overlap" : "eager");
    if (!r->ok)
        fprintf(out, "\"time_us\":null,\"algbw_GBps\":null,\"busbw_GBps\":null,");
    else if (b->opt.overlap) /* null bandwidths: hiar-plot draws no line of them */
        fprintf(out, "\"time_us\":%.3f,\"algbw_GBps\":null,\"busbw_GBps\":null,\"median_us\":%.3f,\"max_us\":%.3f,",
                r->time_us, r->median_us, r->max_us);
    else
        fprintf(out, "\"time_us\":%.3f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f,", r->time_us, r->algbw, r->busbw);
    if (r->wrong >= 0)
        fprintf(out, "\"wrong\":%lld", r->wrong);
    else
        fprintf(out, "\"wrong\":null");
    for (int k = 0; r->ratios && k < SPLIT_RATIOS; k++)
        if (r->ratios[k] > 0.0)
            fprintf(out, ",\"%s\":%.4f", bench_split_ratio_names[k].key, r->ratios[k]);
        else
            fprintf(out, ",\"%s\":null", bench_split_ratio_names[k].key);
    fprintf(out, "}\n");
}

static void print_rows(const bench_t *b, FILE *out, size_t count, const result_t *res,
                       void (*print)(const bench_t *b, FILE *out, const row_t *r))
{
    double ratios[SPLIT_RATIOS] = {0};

    if (b->opt.split) {
        bench_split_row_t split = split_row(res);
        bench_split_ratios(&split, ratios);
    }
    for (int i = 0; i < IMPL_COUNT; i++) {
        const result_t *r = &res[i];
        row_t row = {count * b->esize, count, bench_impls[i].name, r->status == RUN_OK, 0.0, 0.0, 0.0, -1,
                     b->opt.split && i == IMPL_HIAR ? ratios : NULL, 0.0, 0.0};
        size_t bytes;
        double bus;
        if (!has(b, i))
            continue;
        reduced_size(b, i, count, &bytes, &bus);
        if (row.ok) {
            row.time_us = r->time_us;
            row.algbw = algbw(bytes, r->time_us);
            row.busbw = bus * row.algbw;
            row.wrong = r->wrong;
            row.median_us = r->median_us;
            row.max_us = r->max_us;
        }
        print(b, out, &row);
    }
}

void bench_print_rows(const bench_t *b, size_t count, const result_t *res)
{
    if (b->opt.csv)
        print_rows(b, stdout, count, res, csv_row);
    else if (b->opt.json)
        print_rows(b, stdout, count, res, json_row);
    else
        print_row(b, count, res);
    fflush(stdout);
    if (b->json_out) {
        print_rows(b, b->json_out, count, res, json_row);
        fflush(b->json_out);
    }
}

int bench_print_open(bench_t *b, char *err)
{
    int failed = 0;

    if (!b->opt.json_file)
        return 0;
    if (b->rank == 0 && !(b->json_out = fopen(b->opt.json_file, "w"))) {
        snprintf(err, ERR_LEN, "--json-file '%s': cannot open it for writing: %s", b->opt.json_file, strerror(errno));
        failed = 1;
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return failed ? 2 : 0;
}

int bench_print_close(bench_t *b)
{
    int failed = 0;

    if (b->json_out && (ferror(b->json_out) | fclose(b->json_out))) {
        fprintf(stderr, "hiar-bench: --json-file '%s': writing failed: %s\n", b->opt.json_file, strerror(errno));
        failed = 1;
    }
    b->json_out = NULL;
    return failed;
}

void bench_print_footer(const bench_t *b, const totals_t *totals)
{
    for (int i = 0; i < IMPL_COUNT; i++) {
        const totals_t *t = &totals[i];
        if (!has(b, i))
            continue;
        if (!checked(b, i))
            fprintf(b->info, "# Out of bounds values : not checked (%s)\n", bench_impls[i].name);
        else if (t->wrong || t->failed || t->rows)
            fprintf(b->info, "# Out of bounds values : %lld %s (%s)\n", t->wrong,
                    t->wrong || t->failed ? "FAILED" : "OK", bench_impls[i].name);
        else
            fprintf(b->info, "# Out of bounds values : n/a (%s)\n", bench_impls[i].name);
        if (t->rows)
            fprintf(b->info, "# Avg bus bandwidth    : %.4f (%s)\n", t->busbw_sum / t->rows,
                    bench_impls[i].name);
        else
            fprintf(b->info, "# Avg bus bandwidth    : n/a (%s)\n", bench_impls[i].name);
        if (b->na_reason[i][0])
            fprintf(b->info, "# %s n/a: %s\n", bench_impls[i].name, b->na_reason[i]);
    }
}

/* A line per rank: pid, host and GPU, as nccl-tests lists them. */
static void print_ranks(const bench_t *b)
{
    char line[256], host[MPI_MAX_PROCESSOR_NAME], *all = NULL;
    int len, n;

    MPI_Get_processor_name(host, &len);
    n = snprintf(line, sizeof line, "#  Rank %3d Pid %7d on %.64s", b->rank, (int)getpid(), host);
#ifdef HIAR_HAVE_CUDA
    if (b->device && n > 0 && (size_t)n < sizeof line) {
        struct cudaDeviceProp prop;
        char bus[32];
        int dev;
        CUDA_DIE(cudaGetDevice(&dev));
        CUDA_DIE(cudaGetDeviceProperties(&prop, dev));
        CUDA_DIE(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
        snprintf(line + n, sizeof line - (size_t)n, " device %d [%.16s] %.64s", dev, bus, prop.name);
    }
#else
    (void)n;
#endif
    if (b->rank == 0 && !(all = malloc(sizeof line * (size_t)b->nranks)))
        bench_die("cannot allocate the rank table");
    MPI_Gather(line, sizeof line, MPI_CHAR, all, sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; b->rank == 0 && r < b->nranks; r++)
        fprintf(b->info, "%s\n", all + r * sizeof line);
    free(all);
}

/* hiar_comm_describe's text, each line behind "# ". */
static void print_describe(const bench_t *b)
{
    char *text = NULL, *save = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    hiar_result_t rc;

    if (!mem)
        bench_die("open_memstream: %s", strerror(errno));
    rc = hiar_comm_describe(b->comm, mem);
    fclose(mem);
    if (rc != HIAR_SUCCESS)
        fprintf(b->info, "# hiar_comm_describe: %s: %s\n", hiar_strerror(rc), hiar_last_error());
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        fprintf(b->info, "# %s\n", line);
    free(text);
}

static void print_info(const bench_t *b)
{
    const options_t *o = &b->opt;
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, mpi = has(b, IMPL_MPI) || has(b, IMPL_MPI_SHARD);

    MPI_Get_library_version(mpi_version, &len);
    mpi_version[strcspn(mpi_version, "\n")] = '\0';
    fprintf(b->info, "# hiar-bench: hiar %s\n# MPI: %s\n", hiar_version(), mpi_version);
#ifdef HIAR_HAVE_NCCL
    if (has(b, IMPL_NCCL) || has(b, IMPL_NCCL_SYM)) {
        int v = 0;
        ncclGetVersion(&v);
        /* NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, *1000 before. */
        fprintf(b->info, "# NCCL: %d.%d.%d\n", v >= 20900 ? v / 10000 : v / 1000,
                v >= 20900 ? v / 100 % 100 : v / 100 % 10, v % 100);
    }
#endif
    fprintf(b->info, "# nranks %d, %s buffers%s, %s, %s %s, %s\n", b->nranks, b->device ? "device" : "host",
            o->reg ? " from hiar_mem_alloc (registered with hiar and NCCL)" : "",
            o->graph ? "CUDA graph of ITERS calls" : "eager", hiar_dtype_name(o->dtype),
            hiar_op_name(o->op), o->inplace ? "in-place" : "out-of-place");
    /* Auto does not apply to --overlap's, --train's and --decode's timings: those take the plain count. */
    if (o->iters_auto && !o->overlap && !o->train && !o->decode) {
        char graphs[80] = "";
        if (o->graph)
            snprintf(graphs, sizeof(graphs), "; graphs of %d replayed for about %.0f ms", o->iters,
                     BENCH_AUTO_SECONDS * 1e3);
        fprintf(b->info, "# iterations auto (eager: as many as take about %.0f ms a size, %d to %d in %d rounds%s), "
                         "warmup %d, check %s\n", BENCH_AUTO_SECONDS * 1e3, o->iters, BENCH_AUTO_MAX_ITERS,
                BENCH_AUTO_ROUNDS, graphs, o->warmup, o->check ? "on" : "off");
    } else
        fprintf(b->info, "# iterations %d, warmup %d, check %s\n", o->iters, o->warmup, o->check ? "on" : "off");
    if (has(b, IMPL_NCCL_SYM))
        fprintf(b->info, "# nccl-sym: buffers of its own from ncclMemAlloc, symmetric windows "
                         "(ncclCommWindowRegister)\n");
    if (mpi && o->op == HIAR_AVG)
        fprintf(b->info, "# mpi: avg is MPI_SUM, then a division by nranks on each rank (timed)\n");
    if (mpi && b->mpi_user_op)
        fprintf(b->info, "# mpi: %s as MPI_UINT16_T with a user op that reduces in float\n",
                hiar_dtype_name(o->dtype));
    if (mpi && b->device)
        fprintf(b->info, "# mpi: %s\n", b->mpi_staged
                ? "device buffers staged through host memory: D2H copy, MPI_Allreduce, H2D copy, all timed"
                : "device buffers passed to MPI_Allreduce as they are");
    if (mpi && o->graph)
        fprintf(b->info, "# mpi: timed eagerly (MPI calls cannot be captured in a CUDA graph)\n");
    if (b->copy_gbps > 0.0)
        fprintf(b->info, "# reference: pinned device-to-host copy of %zu bytes, rank 0 alone: %.1f GB/s; every rank "
                         "at once, copying half as much each way at the same time: %.1f GB/s a rank and direction "
                         "(a round lasts until the slowest rank is done; ranks that share a GPU share its link) "
                         "(best of 5; the bus bandwidth of the pinned-host transport is judged against them)\n",
                b->copy_bytes, b->copy_gbps, b->copy_shared_gbps);
    if (o->overlap)
        fprintf(b->info, "# overlap: time = how soon a call returns to the caller with %d ms of work ahead of it "
                         "on the stream (the stream waits on the GPU for a word a thread sets then), mean over ITERS calls, max "
                         "over ranks; in place of algbw and busbw (which mean nothing here): the median and the most "
                         "of a call, max over ranks\n", OVERLAP_MS);
    if (o->split)
        bench_split_describe(&b->split, b->info, b->nranks,
                             !b->device       ? "host buffers"
                             : b->mpi_staged ? "device buffers staged as the mpi column's"
                                             : "device buffers passed as they are",
                             !b->device        ? "host memory, as hiar's host shards"
                             : b->link_device ? "device memory (MPI takes device pointers)"
                                              : "pinned host memory, where hiar stages device buffers "
                                                "(--mpi-device: device memory)");
}

void bench_print_header(const bench_t *b)
{
    if (b->rank == 0)
        print_info(b);
    print_ranks(b);
    if (b->rank == 0 && b->comm)
        print_describe(b);
    if (b->rank == 0 && b->opt.csv)
        printf("size_bytes,count,dtype,op,impl,time_us,%s,wrong\n",
               b->opt.overlap ? "median_us,max_us" : "algbw_GBps,busbw_GBps");
    else if (b->rank == 0 && !b->opt.json && !b->opt.train) /* --train prints its own table */
        print_table_header(b);
    if (b->rank == 0)
        fflush(NULL);
}

/* One size's result into its implementation's summary (bench_print_footer). */
void bench_account(totals_t *t, const bench_t *b, int impl, size_t count, const result_t *r)
{
    size_t bytes;
    double bus;

    reduced_size(b, impl, count, &bytes, &bus);
    t->failed |= r->status == RUN_FAILED;
    if (r->wrong > 0)
        t->wrong += r->wrong;
    if (r->status == RUN_OK) {
        t->busbw_sum += bus * algbw(bytes, r->time_us);
        t->rows++;
    }
}
