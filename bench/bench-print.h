/*
 * hiar-bench's output, written by rank 0 (print_header: by all ranks, a
 * collective): '#' lines on b->info, then a table in nccl-tests' columns or
 * CSV rows on stdout, and per implementation a summary of the sizes measured.
 */
#ifndef BENCH_PRINT_H
#define BENCH_PRINT_H

#include <stddef.h>

#include "bench.h"

/* One implementation's sums over the sizes, for print_footer's lines. */
typedef struct {
    long long wrong;
    int failed;
    double busbw_sum;
    int rows; /* sizes measured */
} totals_t;

void account(totals_t *t, const bench_t *b, int impl, size_t count, const result_t *r);

void print_header(const bench_t *b);
void print_row(const bench_t *b, size_t count, const result_t *res);
void print_csv_rows(const bench_t *b, size_t count, const result_t *res);
void print_footer(const bench_t *b, const totals_t *totals);

#endif
