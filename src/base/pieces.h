/*
 * The pieces of one shard of a call cut in chunks: in every chunk the shard
 * is part s of nshards (hiar_range_scaled on `unit`s), and it is cut in
 * pieces of at most `piece` bytes.  Piece i means the same bytes to the
 * kernels that hand it over (cuda/hosts.cu), the thread that sends it
 * (net/progress.c) and the code that plans it (core/hosts.c).  Host and
 * device code (HIAR_HD); a few integers, so a kernel takes it by value.
 *
 * Example: 10 MB in chunks of 4 MB, 2 shards, shard 1, pieces of 512 KB:
 * chunks [0,4M) [4M,8M) [8M,10M); the shard is [2M,4M) of the full chunks
 * (4 pieces each) and [1M,2M) of the last (2 pieces): 10 pieces.
 * hiar_pieces_ramp then cuts the first and last pieces smaller (the same
 * bytes in the same order), which every consumer sees through
 * hiar_pieces_count and hiar_pieces_at.
 */
#ifndef HIAR_PIECES_H
#define HIAR_PIECES_H

#include "base/range.h"

typedef struct {
    size_t chunk;           /* bytes from one chunk's start to the next */
    size_t piece;           /* a piece's most bytes */
    size_t lo, n;           /* in a full chunk, the shard's bytes [lo, lo + n) */
    size_t last_lo, last_n; /* in the last chunk (which may be full too) */
    int nfull;              /* chunks before the last */
    int per_full, per_last; /* pieces of the shard in them */
    int ends, cut;          /* the job's first and last `ends` pieces each cut in `cut` (hiar_pieces_ramp) */
    size_t least;           /* ... where each part gets this many bytes (before the cut points' align) */
} hiar_pieces_t;

/*
 * A piece at the ends is cut on multiples of HIAR_PIECES_CUT_ALIGN bytes
 * from its start (of every element's size and of the kernels' units; a
 * piece starts on a 16-byte unit).
 */
#define HIAR_PIECES_CUT_ALIGN 64

/* The shard's bytes [*lo, *lo + *n) of a chunk of `bytes`. */
HIAR_HD static inline void hiar_pieces_shard(size_t bytes, size_t unit, int nshards, int s, size_t *lo, size_t *n)
{
    size_t hi;

    hiar_range_scaled((bytes + unit - 1) / unit, unit, nshards, s, lo, &hi);
    hi = hi < bytes ? hi : bytes;
    *n = hi > *lo ? hi - *lo : 0;
}

/* Shard s of nshards (on `unit`s) of every chunk of `chunk` bytes of `bytes`; bytes > 0. */
static inline hiar_pieces_t hiar_pieces_make(size_t bytes, size_t chunk, size_t unit, int nshards, int s,
                                             size_t piece)
{
    hiar_pieces_t g;

    g.chunk = chunk;
    g.piece = piece;
    g.nfull = (int)((bytes - 1) / chunk);
    hiar_pieces_shard(chunk, unit, nshards, s, &g.lo, &g.n);
    hiar_pieces_shard(bytes - (size_t)g.nfull * chunk, unit, nshards, s, &g.last_lo, &g.last_n);
    g.per_full = (int)((g.n + piece - 1) / piece);
    g.per_last = (int)((g.last_n + piece - 1) / piece);
    g.ends = g.cut = 0;
    g.least = 0;
    return g;
}

/*
 * g with its first and last `ends` pieces each cut in `cut`, where it has
 * more than 2 x ends pieces and such a piece has at least `cut` x `least`
 * bytes (else it stays whole): the same bytes in the same order, in
 * smaller pieces at both ends.  ends >= 0; a cut below 2 cuts nothing;
 * least >= HIAR_PIECES_CUT_ALIGN, so that no part is empty.
 */
static inline hiar_pieces_t hiar_pieces_ramp(hiar_pieces_t g, int ends, int cut, size_t least)
{
    g.ends = ends;
    g.cut = cut;
    g.least = least;
    return g;
}

/*
 * g narrowed to part p of nparts (on units) of the shard of each chunk, the
 * shard cut once (as a reduce-scatter among nparts ranks over a shard that
 * fits one of its chunks cuts it).
 */
static inline hiar_pieces_t hiar_pieces_part(hiar_pieces_t g, size_t unit, int nparts, int p)
{
    size_t lo, n;

    hiar_pieces_shard(g.n, unit, nparts, p, &lo, &n);
    g.lo += lo;
    g.n = n;
    hiar_pieces_shard(g.last_n, unit, nparts, p, &lo, &n);
    g.last_lo += lo;
    g.last_n = n;
    g.per_full = (int)((g.n + g.piece - 1) / g.piece);
    g.per_last = (int)((g.last_n + g.piece - 1) / g.piece);
    return g;
}

/* The pieces before the ramp's cut (hiar_pieces_ramp). */
HIAR_HD static inline int hiar_pieces_uncut(const hiar_pieces_t *g)
{
    return g->nfull * g->per_full + g->per_last;
}

/* The bytes of the largest piece (before the ramp's cut: at least those of any piece). */
HIAR_HD static inline size_t hiar_pieces_largest(const hiar_pieces_t *g)
{
    size_t most = g->nfull && g->n > g->last_n ? g->n : g->last_n;

    return most < g->piece ? most : g->piece;
}

/* Uncut piece k (< hiar_pieces_uncut): bytes [*off, *off + *bytes) of the call. */
HIAR_HD static inline void hiar_pieces_uncut_at(const hiar_pieces_t *g, int k, size_t *off, size_t *bytes)
{
    int full = g->nfull * g->per_full, c = k < full ? k / g->per_full : g->nfull;
    size_t j = (size_t)(k < full ? k % g->per_full : k - full) * g->piece;
    size_t n = k < full ? g->n : g->last_n;

    *off = (size_t)c * g->chunk + (k < full ? g->lo : g->last_lo) + j;
    *bytes = n - j < g->piece ? n - j : g->piece;
}

/* The uncut pieces cut at each end: g->ends where there are more than twice as many, else none. */
HIAR_HD static inline int hiar_pieces_ends(const hiar_pieces_t *g, int uncut)
{
    return uncut > 2 * g->ends ? g->ends : 0;
}

/* The pieces uncut piece k, at an end, is cut in: g->cut where it has g->cut x g->least bytes, else 1. */
HIAR_HD static inline int hiar_pieces_parts(const hiar_pieces_t *g, int k)
{
    size_t off, bytes;

    hiar_pieces_uncut_at(g, k, &off, &bytes);
    return g->cut > 1 && bytes >= (size_t)g->cut * g->least ? g->cut : 1;
}

/*
 * Where part j of `parts` of a piece of `bytes` starts, from the piece's
 * start: j x bytes / parts rounded down to HIAR_PIECES_CUT_ALIGN, and
 * bytes for j = parts.  Where bytes / parts is at least `least`
 * (hiar_pieces_parts), every part has at least `least` rounded down to
 * HIAR_PIECES_CUT_ALIGN bytes (`least` itself where it is a multiple).
 */
HIAR_HD static inline size_t hiar_pieces_cut_point(size_t bytes, int j, int parts)
{
    return j == parts ? bytes : bytes * (size_t)j / (size_t)parts / HIAR_PIECES_CUT_ALIGN * HIAR_PIECES_CUT_ALIGN;
}

HIAR_HD static inline int hiar_pieces_count(const hiar_pieces_t *g)
{
    int uncut = hiar_pieces_uncut(g), e = hiar_pieces_ends(g, uncut), n = uncut;

    for (int k = 0; k < e; k++)
        n += hiar_pieces_parts(g, k) + hiar_pieces_parts(g, uncut - 1 - k) - 2;
    return n;
}

/*
 * Piece i (< hiar_pieces_count): bytes [*off, *off + *bytes) of the call
 * (none past the last).  In order: the parts of the first e uncut pieces,
 * the uncut pieces between, whole, and the parts of the last e.
 */
HIAR_HD static inline void hiar_pieces_at(const hiar_pieces_t *g, int i, size_t *off, size_t *bytes)
{
    int uncut = hiar_pieces_uncut(g), e = hiar_pieces_ends(g, uncut), middle = uncut - 2 * e;

    *off = *bytes = 0;
    for (int j = 0; j <= 2 * e; j++) {
        int k = j < e ? j : middle + j - 1, parts; /* j > e: the last e, uncut - e on */
        size_t lo, hi;
        if (j == e) {
            if (i < middle) {
                hiar_pieces_uncut_at(g, e + i, off, bytes);
                return;
            }
            i -= middle;
            continue;
        }
        if (i >= (parts = hiar_pieces_parts(g, k))) {
            i -= parts;
            continue;
        }
        hiar_pieces_uncut_at(g, k, off, bytes);
        lo = hiar_pieces_cut_point(*bytes, i, parts);
        hi = hiar_pieces_cut_point(*bytes, i + 1, parts);
        *off += lo;
        *bytes = hi - lo;
        return;
    }
}

/*
 * The pieces of a link of `peers` peers through a ring laid out for
 * ring_peers peers' pieces of `piece` bytes (positions of peers x piece
 * each, the same count): `piece` where the link has no more peers, else as
 * much less, a multiple of `align`, as keeps peers x pieces within it; 0
 * where not even `align` fits.
 */
static inline size_t hiar_pieces_fitted(size_t piece, size_t align, int ring_peers, int peers)
{
    if (peers <= ring_peers)
        return piece;
    return piece * (size_t)ring_peers / (size_t)peers / align * align;
}

#endif
