# Issue 17 probe (2026-12-06, not yet run): a job's first and last RAMP_H pieces each cut in RAMP_D, so the
# first piece reaches the wire after a quarter of a piece's copy out and the last reduction is a quarter of
# one (the 16 MB call's time around the wire: doc/guide.md, "MPI between hosts").  Every consumer of the
# pieces (thread, kernel, plan) goes through hiar_pieces_count/hiar_pieces_at, so they agree.  Time it with
# `--split -b 16M -e 64M -f 4` beside base, 2 simulated hosts of 2, and run test_gpu --quick as hosts on it.
python3 - <<'PY'
p = 'src/base/pieces.h'
s = open(p).read()
s = s.replace('HIAR_HD static inline int hiar_pieces_count(const hiar_pieces_t *g)', 'HIAR_HD static inline int flat_count(const hiar_pieces_t *g)', 1)
s = s.replace('HIAR_HD static inline void hiar_pieces_at(const hiar_pieces_t *g, int i, size_t *off, size_t *bytes)', 'HIAR_HD static inline void flat_at(const hiar_pieces_t *g, int i, size_t *off, size_t *bytes)', 1)
ramp = '''
#define RAMP_H 2
#define RAMP_D 4
HIAR_HD static inline int hiar_pieces_count(const hiar_pieces_t *g)
{
    int n = flat_count(g);
    return n > 2 * RAMP_H ? n + 2 * RAMP_H * (RAMP_D - 1) : n;
}

HIAR_HD static inline void hiar_pieces_at(const hiar_pieces_t *g, int i, size_t *off, size_t *bytes)
{
    int n = flat_count(g), head = RAMP_H * RAMP_D, tail = head + n - 2 * RAMP_H, base, sub;
    size_t o, b, part, lo, hi;

    if (n <= 2 * RAMP_H || (i >= head && i < tail)) {
        flat_at(g, n <= 2 * RAMP_H ? i : i - head + RAMP_H, off, bytes);
        return;
    }
    base = i < head ? i / RAMP_D : n - RAMP_H + (i - tail) / RAMP_D;
    sub = i < head ? i % RAMP_D : (i - tail) % RAMP_D;
    flat_at(g, base, &o, &b);
    part = ((b + RAMP_D - 1) / RAMP_D + 63) / 64 * 64;
    lo = (size_t)sub * part < b ? (size_t)sub * part : b;
    hi = lo + part < b ? lo + part : b;
    *off = o + lo;
    *bytes = hi - lo;
}
'''
i = s.index('/*\n * The pieces of a link of')
s = s[:i] + ramp.lstrip('\n') + '\n' + s[i:]
open(p, 'w').write(s)
PY
