/*
 * hiar_mem_*: registered device memory.  Every call is collective over the
 * comm and agreed: it succeeds or fails on every rank together, so that the
 * ranks' tables of registrations stay the same.  Builds without CUDA check the
 * arguments and agree alike, then report that there is no GPU memory.
 */
#include "config.h"

#include "base/error.h"
#include "core/comm.h"
#include "net/coll.h"

/* The entry registered at exactly ptr, -1 if none; *owned: from hiar_mem_alloc. */
static int registered(const hiar_comm_t *comm, const void *ptr, int *owned)
{
#ifdef HIAR_HAVE_CUDA
    if (comm->gpu)
        return hiar_reg_find(&comm->gpu->reg, ptr, owned);
#else
    (void)comm;
    (void)ptr;
    (void)owned;
#endif
    return -1;
}

/* HIAR_UNSUPPORTED unless this rank has a GPU for comm. */
static hiar_result_t need_gpu(const hiar_comm_t *comm, const char *call)
{
#ifdef HIAR_HAVE_CUDA
    if (comm->gpu)
        return HIAR_SUCCESS;
    return hiar_error_set(HIAR_UNSUPPORTED, "%s: this rank has no GPU", call);
#else
    (void)comm;
    return hiar_error_set(HIAR_UNSUPPORTED, "%s: no GPU memory: hiar was built without CUDA", call);
#endif
}

/* Local checks of a range to register; the comm is entered. */
static hiar_result_t check_range(const hiar_comm_t *comm, const void *ptr, size_t bytes)
{
    int owned;

    HIAR_ARG_CHECK(ptr && bytes, "hiar_mem_register: %s is %s; expected device memory and a size above 0",
                   ptr ? "bytes" : "ptr", ptr ? "0" : "NULL");
    HIAR_CHECK(need_gpu(comm, "hiar_mem_register"));
#ifdef HIAR_HAVE_CUDA
    int on_device = 0;
    HIAR_CHECK(hiar_cuda_is_device_pointer(ptr, &on_device));
    HIAR_ARG_CHECK(on_device, "hiar_mem_register: %p is host memory; expected device memory", ptr);
#endif
    HIAR_ARG_CHECK(registered(comm, ptr, &owned) < 0, "hiar_mem_register: %p is registered already", ptr);
    return HIAR_SUCCESS;
}

#ifdef HIAR_HAVE_CUDA
/* Registers on every rank or on none; owned memory is freed with it, or here if that fails. */
static hiar_result_t add(hiar_comm_t *comm, void *ptr, size_t bytes, int owned, const char *call)
{
    hiar_reg_group_t g = hiar_gpu_reg_group(comm->gpu);
    hiar_result_t rc = hiar_reg_add(&comm->gpu->reg, &g, ptr, bytes, owned), all;
    int entry;

    all = hiar_net_agree(comm->mpi, rc, call);
    if (rc == HIAR_SUCCESS && all != HIAR_SUCCESS && (entry = registered(comm, ptr, &owned)) >= 0)
        hiar_reg_remove(&comm->gpu->reg, &g, entry, 1); /* the whole group registered: it undoes it together */
    else if (rc != HIAR_SUCCESS && owned)
        hiar_cuda_mem_free(ptr);
    return all;
}
#endif

hiar_result_t hiar_mem_register(hiar_comm_t *comm, void *ptr, size_t bytes)
{
    hiar_result_t rc;

    HIAR_CHECK(hiar_comm_enter(comm, "hiar_mem_register"));
    rc = hiar_net_agree(comm->mpi, check_range(comm, ptr, bytes), "hiar_mem_register");
#ifdef HIAR_HAVE_CUDA
    if (rc == HIAR_SUCCESS)
        rc = add(comm, ptr, bytes, 0, "hiar_mem_register");
#endif
    hiar_comm_leave(comm);
    return rc;
}

hiar_result_t hiar_mem_alloc(hiar_comm_t *comm, size_t bytes, void **ptr)
{
    hiar_result_t rc;
    void *p = NULL;

    if (ptr)
        *ptr = NULL;
    HIAR_CHECK(hiar_comm_enter(comm, "hiar_mem_alloc"));
    if (!ptr)
        rc = hiar_error_set(HIAR_INVALID_ARGUMENT, "hiar_mem_alloc: ptr is NULL; expected where to put the address");
    else if (!bytes)
        rc = hiar_error_set(HIAR_INVALID_ARGUMENT, "hiar_mem_alloc: bytes is 0; expected a size above 0");
    else
        rc = need_gpu(comm, "hiar_mem_alloc");
#ifdef HIAR_HAVE_CUDA
    if (rc == HIAR_SUCCESS)
        rc = hiar_cuda_mem_alloc(comm->gpu->device, bytes, &p);
#endif
    rc = hiar_net_agree(comm->mpi, rc, "hiar_mem_alloc");
#ifdef HIAR_HAVE_CUDA
    if (rc == HIAR_SUCCESS)
        rc = add(comm, p, bytes, 1, "hiar_mem_alloc");
    else if (p)
        hiar_cuda_mem_free(p);
#endif
    if (rc == HIAR_SUCCESS)
        *ptr = p;
    hiar_comm_leave(comm);
    return rc;
}

/*
 * Agreed outcome of a release of entry (-1: none here): also fails where
 * ranks name different registrations (their tables would part, and memory a peer
 * maps could be freed).
 */
static hiar_result_t agree_release(hiar_comm_t *comm, hiar_result_t rc, int entry, const char *call)
{
    long long mine = entry, lo, hi;
    hiar_result_t mrc = hiar_net_bounds(comm->mpi, &mine, &lo, &hi, 1);

    if (mrc != HIAR_SUCCESS && rc == HIAR_SUCCESS)
        rc = mrc;
    else if (rc == HIAR_SUCCESS && lo != hi)
        rc = hiar_error_set(HIAR_INVALID_USAGE,
                            "%s: the ranks release different registrations (the %d-th here, from the %d-th to "
                            "the %d-th over the ranks): release in one order on every rank",
                            call, entry + 1, (int)lo + 1, (int)hi + 1);
    return hiar_net_agree(comm->mpi, rc, call);
}

/* hiar_mem_free (owned) and hiar_mem_deregister: ptr leaves every rank's table. */
static hiar_result_t release(hiar_comm_t *comm, void *ptr, int want_owned, const char *call)
{
    hiar_result_t rc = HIAR_SUCCESS;
    int owned = 0, entry;

    HIAR_CHECK(hiar_comm_enter(comm, call));
    entry = registered(comm, ptr, &owned);
    if (entry < 0)
        rc = hiar_error_set(HIAR_INVALID_ARGUMENT, "%s: %p is not %s with this comm", call, ptr,
                            want_owned ? "memory from hiar_mem_alloc" : "registered");
    else if (owned != want_owned)
        rc = hiar_error_set(HIAR_INVALID_ARGUMENT, "%s: %p comes from %s; release it with %s", call, ptr,
                            owned ? "hiar_mem_alloc" : "hiar_mem_register",
                            owned ? "hiar_mem_free" : "hiar_mem_deregister");
    rc = agree_release(comm, rc, entry, call);
#ifdef HIAR_HAVE_CUDA
    if (rc == HIAR_SUCCESS) {
        hiar_reg_group_t g = hiar_gpu_reg_group(comm->gpu);
        hiar_reg_remove(&comm->gpu->reg, &g, entry, 1);
    }
#endif
    hiar_comm_leave(comm);
    return rc;
}

hiar_result_t hiar_mem_free(hiar_comm_t *comm, void *ptr)
{
    return release(comm, ptr, 1, "hiar_mem_free");
}

hiar_result_t hiar_mem_deregister(hiar_comm_t *comm, void *ptr)
{
    return release(comm, ptr, 0, "hiar_mem_deregister");
}
