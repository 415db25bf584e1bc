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

void bench_print_header(const bench_t *b);
void bench_print_row(const bench_t *b, size_t count, const result_t *res);
void bench_print_csv_rows(const bench_t *b, size_t count, const result_t *res);
/* The same as JSON lines: {"size_bytes":..,"impl":"hiar","time_us":..,...}; null where n/a. */
void bench_print_json_rows(const bench_t *b, size_t count, const result_t *res);
void bench_print_footer(const bench_t *b, const totals_t *totals);

#endif
