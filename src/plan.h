/* Choice of the path of one call; a pure function of values every rank shares. */
#ifndef HIAR_PLAN_H
#define HIAR_PLAN_H

#include <stddef.h>

typedef enum {
    HIAR_PATH_ONESHOT, /* inside the one group: everyone reduces everything */
    HIAR_PATH_TWOSHOT, /* inside the one group: reduce-scatter + all-gather */
    HIAR_PATH_HIER,    /* reduce-scatter in groups, MPI between, all-gather */
    HIAR_PATH_MPI      /* MPI_Allreduce over all ranks */
} hiar_path_t;

/* Largest one-shot message on the shm transport when HIAR_ONESHOT_MAX is 0. */
#define HIAR_SHM_ONESHOT_MAX_DEFAULT (64 * 1024)

typedef struct {
    int nranks, ngroups;
    size_t bytes;       /* message size */
    int algo;           /* HIAR_ALGO */
    size_t oneshot_max; /* HIAR_ONESHOT_MAX, 0 = default */
} hiar_plan_input_t;

hiar_path_t hiar_plan_choose(const hiar_plan_input_t *in);
const char *hiar_path_name(hiar_path_t path);

#endif
