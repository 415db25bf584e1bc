/* The communicator object, its registry of live handles, and its state. */
#ifndef HIAR_COMM_H
#define HIAR_COMM_H

#include <stdatomic.h>

#include "base/marks.h"
#include "base/settings.h"
#include "base/wait.h"
#include "core/gpu.h"
#include "core/groups.h"
#include "core/plan.h"
#include "core/tune_cache.h"
#include "net/mpidev.h"

struct hiar_comm {
    MPI_Comm mpi; /* our duplicate of the user's communicator */
    int rank, size;
    hiar_params_t params;
    hiar_side_t host; /* host buffers: grouped by host, shm in the group */
    hiar_gpu_t *gpu;  /* device buffers; NULL without a GPU (or without CUDA) */
    void *scratch;    /* HIAR_MPI_SCRATCH_BYTES where MPI reduces (the MPI path) */
    hiar_mpi_device_t mpi_device; /* whether MPI point-to-point takes device pointers (HIAR_MPI_DEVICE) */
    hiar_tune_t tune;             /* the crossovers tuned at creation, and where they came from (core/tune.h) */
    int machines;                 /* real machines (host name and boot id, ignoring HIAR_HOST_ID) */
    int machine_ranks;            /* the most ranks on one of them */
    size_t shm_free;              /* the least free bytes of /dev/shm over the ranks at creation; 0: not known */
    uint64_t spin_ns;             /* how long a call's waits spin before they yield (HIAR_YIELD: core/yield.c) */
    char yield_why[256];
    hiar_marks_t marks[2]; /* host and device calls' phase marks (HIAR_CALL_MARKS, base/marks.h), logged at destroy */
    /* The last host-buffer call's plan (core/allreduce.c plan): once the comm is made, a host call's plan
     * depends on its size alone, and programs repeat their sizes.  Anything that changes the plan's inputs
     * after creation must clear it. */
    struct {
        size_t bytes;
        int valid, nshards;
        hiar_plan_t plan;
    } last_host_plan;

    atomic_int busy;      /* a call is running on this comm */
    atomic_int abort;     /* hiar_comm_abort asks running waits to stop */
    hiar_result_t failed; /* first fatal error, HIAR_SUCCESS while usable */
};

/* The registry of live handles: hiar_comm_create adds, destroy and abort remove (HIAR_INVALID_USAGE if not live). */
hiar_result_t hiar_comm_register(hiar_comm_t *comm);
hiar_result_t hiar_comm_unregister(hiar_comm_t *comm, const char *call);

/*
 * Starts a call on comm: fails if comm is not a live handle (never created,
 * destroyed or aborted), has failed, or is in use by another thread.
 */
hiar_result_t hiar_comm_enter(hiar_comm_t *comm, const char *call);
void hiar_comm_leave(hiar_comm_t *comm);

/* HIAR_INVALID_USAGE unless comm is a live handle (for calls that only read it). */
hiar_result_t hiar_comm_check_live(const hiar_comm_t *comm, const char *call);

/* 1 if comm is live and has HIAR_CHECK=global. */
int hiar_comm_checks_globally(const hiar_comm_t *comm);

/* Records a fatal error: later calls fail fast with HIAR_COMM_FAILED. */
void hiar_comm_fail(hiar_comm_t *comm, hiar_result_t rc);

/* The comm's scratch, where MPI reduces (HIAR_MPI_SCRATCH_BYTES, allocated at first use). */
hiar_result_t hiar_comm_scratch(hiar_comm_t *comm, char **scratch);

/* The one deadline of a call that starts now (HIAR_TIMEOUT_MS, the comm's abort flag and spin time). */
hiar_wait_t hiar_comm_wait(hiar_comm_t *comm, const char *what);

/*
 * HIAR_YIELD: sets comm->spin_ns and yield_why from what the ranks of this
 * machine may run on and whether the comm runs a progress thread
 * (core/yield.c), once the device side is set up.
 */
void hiar_comm_set_yield(hiar_comm_t *comm, const hiar_topo_machine_cpus_t *m);

/* The plan's inputs that the comm fixes (all but the call's). */
void hiar_comm_plan_input(const hiar_comm_t *comm, int device, size_t bytes, hiar_plan_input_t *in);
/*
 * A device call's input of hiar_comm_plan_input, for a call on stream:
 * where tuning chose otherwise for captured calls than for eager ones at
 * this size (and only there is the stream asked), a call being captured
 * takes the graph choices.
 */
hiar_result_t hiar_comm_plan_captured(const hiar_comm_t *comm, void *stream, hiar_plan_input_t *in);

static inline long long hiar_comm_param(const hiar_comm_t *comm, hiar_param_id_t id)
{
    return comm->params.v[id].num;
}

#endif
