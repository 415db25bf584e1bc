/*
 * hiar-bench's output, written by rank 0 (bench_print_header: by all ranks, a
 * collective): '#' lines on b->info, then a table in nccl-tests' columns or
 * CSV rows on stdout, and per implementation a summary of the sizes measured.
 */
#ifndef BENCH_PRINT_H
#define BENCH_PRINT_H

#include <stddef.h>

#include "bench.h"

/* One implementation's sums over the sizes, for bench_print_footer's lines. */
typedef struct {
    long long wrong;
    int failed;
    double busbw_sum;
    int rows; /* sizes measured */
} totals_t;

void bench_account(totals_t *t, const bench_t *b, int impl, size_t count, const result_t *r);

/* Collective: --json-file's file opened on rank 0; 2 (bad usage, err set) where it cannot be. */
int bench_print_open(bench_t *b, char *err);
void bench_print_header(const bench_t *b);
/*
 * One size's results on stdout: a table row, or CSV rows, or JSON lines
 * ({"size_bytes":..,"impl":"hiar","time_us":..,...}; null where n/a; with
 * --split hiar's also carries the split ratios); and JSON lines into
 * --json-file's file.
 */
void bench_print_rows(const bench_t *b, size_t count, const result_t *res);
void bench_print_footer(const bench_t *b, const totals_t *totals);
/* --json-file's file closed; 1 (and a line on stderr) where writing it failed. */
int bench_print_close(bench_t *b);

#endif
