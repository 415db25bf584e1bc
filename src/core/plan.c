/* Path choice per call. */
#include "base/param.h"
#include "core/plan.h"

const char *hiar_plan_name(hiar_plan_t path)
{
    static const char *const names[] = {"oneshot", "twoshot", "hier", "hier-oneshot", "mpi", "ipc-ll", "ipc-push", "ipc-twoshot"};
    return names[path];
}

static hiar_plan_t choose_ipc(const hiar_plan_input_t *in)
{
    size_t limit = in->oneshot_max ? in->oneshot_max : HIAR_IPC_ONESHOT_BUDGET / (size_t)in->nranks;

    if (limit > in->ipc_ll_max)
        limit = in->ipc_ll_max;
    if (in->algo == HIAR_ALGO_ONESHOT)
        return in->bytes <= in->ipc_ll_max ? HIAR_PLAN_IPC_LL : HIAR_PLAN_IPC_PUSH;
    if (in->algo != HIAR_ALGO_AUTO)
        return HIAR_PLAN_IPC_TWOSHOT;
    if (in->bytes <= limit)
        return HIAR_PLAN_IPC_LL;
    return in->bytes <= (in->nranks == 2 ? HIAR_IPC_PUSH2_MAX : HIAR_IPC_PUSH_MAX) ? HIAR_PLAN_IPC_PUSH
                                                                                  : HIAR_PLAN_IPC_TWOSHOT;
}

hiar_plan_t hiar_plan_choose(const hiar_plan_input_t *in)
{
    size_t oneshot_max = in->oneshot_max ? in->oneshot_max : HIAR_SHM_ONESHOT_MAX_DEFAULT;

    if (in->algo == HIAR_ALGO_MPI || (in->ngroups == in->nranks && in->nranks > 1))
        return HIAR_PLAN_MPI;
    if (in->ngroups > 1)
        return in->algo == HIAR_ALGO_AUTO && in->bytes <= in->hier_oneshot_max ? HIAR_PLAN_HIER_ONESHOT
                                                                                : HIAR_PLAN_HIER;
    if (in->ipc)
        return choose_ipc(in);
    switch (in->algo) {
    case HIAR_ALGO_ONESHOT: return HIAR_PLAN_ONESHOT;
    case HIAR_ALGO_TWOSHOT:
    case HIAR_ALGO_HIER: return HIAR_PLAN_TWOSHOT;
    default: return in->bytes <= oneshot_max ? HIAR_PLAN_ONESHOT : HIAR_PLAN_TWOSHOT;
    }
}
