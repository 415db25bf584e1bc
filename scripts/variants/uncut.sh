# Issue 17 (2026-12-06): the tree without the cut of a job's end pieces between hosts (core/hosts.c,
# HOSTS_RAMP_ENDS), to time beside it in one machine start.
sed -i 's/^#define HOSTS_RAMP_ENDS 2$/#define HOSTS_RAMP_ENDS 0/' src/core/hosts.c
grep -q '^#define HOSTS_RAMP_ENDS 0$' src/core/hosts.c
