# Issue 17 (2026-12-06): a job's end pieces cut only where its uncut pieces outnumber the ring (shards over
# 4 MB), to time beside the tree at 1-8 MB: cut, a job of 5-16 pieces outgrows the ring's 16 positions and
# takes 8 blocks of 2 positions instead of a block per piece.
sed -i 's/hiar_pieces_ramp(pieces, HOSTS_RAMP_ENDS,/hiar_pieces_ramp(pieces, hiar_pieces_uncut(\&pieces) > HOSTS_RING ? HOSTS_RAMP_ENDS : 0,/' src/core/hosts.c
grep -q 'hiar_pieces_uncut(&pieces) > HOSTS_RING ? HOSTS_RAMP_ENDS : 0,' src/core/hosts.c
