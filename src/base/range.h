/*
 * How a message is cut into shards: the same on every rank, so shard s means
 * the same elements everywhere.  Boundaries fall on 64-byte multiples so two
 * ranks never write one cache line.  Example: 100 float32 (400 B) in 3 shards
 * -> 7 units of 16 elements -> shards of 3, 2 and 2 units: [0,48) [48,80) [80,100).
 */
#ifndef HIAR_SHARD_H
#define HIAR_SHARD_H

#include <stddef.h>

#define HIAR_SHARD_ALIGN 64

static inline void hiar_shard_range(size_t count, size_t esize, int nshards, int shard,
                                    size_t *first, size_t *n)
{
    size_t unit = esize < HIAR_SHARD_ALIGN ? HIAR_SHARD_ALIGN / esize : 1;
    size_t units = (count + unit - 1) / unit;
    size_t base = units / (size_t)nshards, extra = units % (size_t)nshards;
    size_t s = (size_t)shard;
    size_t begin = (s * base + (s < extra ? s : extra)) * unit;
    size_t end = begin + (base + (s < extra)) * unit;

    begin = begin < count ? begin : count;
    end = end < count ? end : count;
    *first = begin;
    *n = end - begin;
}

#endif
