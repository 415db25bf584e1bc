/*
 * Cutting a message into parts: the one rule every layer uses (host shards,
 * IPC shards, ring segments between groups, kernel blocks, the bench's shard
 * column), so that part i means the same range everywhere.  The first
 * units % parts parts get one unit more.  Host and device code (HIAR_HD).
 *
 * Host shards fall on 64-byte multiples, so two ranks never write one cache
 * line.  Example: 100 float32 (400 B) in 3 shards -> 7 units of 16 elements
 * -> shards of 3, 2 and 2 units: [0,48) [48,80) [80,100).
 */
#ifndef HIAR_RANGE_H
#define HIAR_RANGE_H

#include <stddef.h>

#ifdef __CUDACC__
#define HIAR_HD __host__ __device__
#else
#define HIAR_HD
#endif

/* Part i of `parts` of [0, units): units [*first, *first + *n). */
HIAR_HD static inline void hiar_range_part(size_t units, int parts, int i, size_t *first, size_t *n)
{
    size_t base = units / (size_t)parts, extra = units % (size_t)parts, k = (size_t)i;

    *first = k * base + (k < extra ? k : extra);
    *n = base + (k < extra);
}

/* Part i of `parts` of [0, units), scaled by `unit` (bytes or elements per unit): [*lo, *hi), not clipped. */
HIAR_HD static inline void hiar_range_scaled(size_t units, size_t unit, int parts, int i, size_t *lo, size_t *hi)
{
    size_t first, n;

    hiar_range_part(units, parts, i, &first, &n);
    *lo = first * unit;
    *hi = *lo + n * unit;
}

#define HIAR_SHARD_ALIGN 64

/* Shard s of nshards of count elements of esize bytes: elements [*first, *first + *n). */
static inline void hiar_shard_range(size_t count, size_t esize, int nshards, int shard, size_t *first,
                                    size_t *n)
{
    size_t unit = esize < HIAR_SHARD_ALIGN ? HIAR_SHARD_ALIGN / esize : 1;
    size_t begin, end;

    hiar_range_scaled((count + unit - 1) / unit, unit, nshards, shard, &begin, &end);
    begin = begin < count ? begin : count;
    end = end < count ? end : count;
    *first = begin;
    *n = end - begin;
}

#endif
