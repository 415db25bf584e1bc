/* Choice of the path of one call; a pure function of values every rank shares. */
#ifndef HIAR_PLAN_H
#define HIAR_PLAN_H

#include <stddef.h>

typedef enum {
    HIAR_PLAN_ONESHOT, /* inside the one group: everyone reduces everything */
    HIAR_PLAN_TWOSHOT, /* inside the one group: reduce-scatter + all-gather */
    HIAR_PLAN_HIER,    /* reduce-scatter in groups, MPI between, all-gather */
    HIAR_PLAN_HIER_ONESHOT, /* small: one-shot in groups, every rank MPI between */
    HIAR_PLAN_MPI,     /* MPI_Allreduce over all ranks */
    HIAR_PLAN_IPC_LL,      /* device buffers, one group: LL one-shot kernel */
    HIAR_PLAN_IPC_PUSH,    /* device buffers, one group: push one-shot kernel */
    HIAR_PLAN_IPC_TWOSHOT  /* device buffers, one group: two-shot kernel */
} hiar_plan_t;

/* Largest one-shot message on the shm transport when HIAR_ONESHOT_MAX is 0. */
#define HIAR_SHM_ONESHOT_MAX_DEFAULT (64 * 1024)
/* The same over several groups: hier-oneshot sends the whole message over
 * MPI, which must stay within Open MPI's eager limit (vader: 4 KB) to beat
 * reduce-scatter + all-gather (measured: 42 against 33 us at 4 KB). */
#define HIAR_HIER_ONESHOT_MAX_DEFAULT (2 * 1024)
/* Device messages over several groups up to this size take the host paths
 * (one copy each way) rather than two kernels around MPI.  Measured on 2
 * H200 under MPS, 4 ranks as 2 groups, bf16, each path waiting for the GPU
 * once: host paths 23 against 42 us at 4 KB and 43 against 49 at 16 KB;
 * the kernels' path took 55 us at 32 KB and 69 at 64 KB. */
#define HIAR_DEVICE_HIER_MIN (16 * 1024)
/* Largest LL one-shot message on the IPC transport when HIAR_ONESHOT_MAX is
 * 0: this over the group's ranks.  On 2 H200 LL beat push up to 512 KB (256 KB:
 * 6.4 against 8.0 us); a rank writes 2 (n-1) x the message, so more ranks
 * get less. */
#define HIAR_IPC_ONESHOT_BUDGET (1024 * 1024)
/* Largest push one-shot message for more than 2 ranks: one-shot moves
 * (n-1) x the message per rank, two-shot 2 (n-1)/n x. */
#define HIAR_IPC_PUSH_MAX (1024 * 1024)
/* On 2 ranks both move the message once; push needs one exchange instead of
 * two, two-shot reduces half each: on 2 H200 push led at 4 MB (23 against
 * 46 us), two-shot from 16 MB (69 against 76 us; 346 against 287 GB/s at 1 GB). */
#define HIAR_IPC_PUSH2_MAX (8 * 1024 * 1024)

typedef struct {
    int nranks, ngroups;
    size_t bytes;       /* message size */
    int algo;           /* HIAR_ALGO */
    size_t oneshot_max; /* HIAR_ONESHOT_MAX, 0 = default */
    int ipc;            /* device buffers and the group has the IPC transport */
    size_t hier_oneshot_max; /* over groups: largest one-shot hier message, 0 = none */
    size_t ipc_ll_max;  /* largest message the IPC one-shot kernel takes */
} hiar_plan_input_t;

/* Device buffers on a path of the host (not IPC) are staged through host memory. */

hiar_plan_t hiar_plan_choose(const hiar_plan_input_t *in);
const char *hiar_plan_name(hiar_plan_t path);

#endif
