/* Path choice per call. */
#include "param.h"
#include "plan.h"

const char *hiar_path_name(hiar_path_t path)
{
    static const char *const names[] = {"oneshot", "twoshot", "hier", "mpi"};
    return names[path];
}

hiar_path_t hiar_plan_choose(const hiar_plan_input_t *in)
{
    size_t oneshot_max = in->oneshot_max ? in->oneshot_max : HIAR_SHM_ONESHOT_MAX_DEFAULT;

    if (in->algo == HIAR_ALGO_MPI || (in->ngroups == in->nranks && in->nranks > 1))
        return HIAR_PATH_MPI;
    if (in->ngroups > 1)
        return HIAR_PATH_HIER;
    switch (in->algo) {
    case HIAR_ALGO_ONESHOT: return HIAR_PATH_ONESHOT;
    case HIAR_ALGO_TWOSHOT:
    case HIAR_ALGO_HIER: return HIAR_PATH_TWOSHOT;
    default: return in->bytes <= oneshot_max ? HIAR_PATH_ONESHOT : HIAR_PATH_TWOSHOT;
    }
}
