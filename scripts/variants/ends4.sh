# Issue 17 (2026-12-06): a job's first and last 4 pieces between hosts cut in 4 instead of 2, to time beside
# the tree: the ring's first pieces all reach the wire sooner, and the tail of reductions is shorter.
sed -i 's/^#define HOSTS_RAMP_ENDS 2$/#define HOSTS_RAMP_ENDS 4/' src/core/hosts.c
grep -q '^#define HOSTS_RAMP_ENDS 4$' src/core/hosts.c
