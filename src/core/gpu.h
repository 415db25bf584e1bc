/*
 * The device side of a communicator (CUDA builds): every rank's topology
 * facts, the device grouping and the transport of this rank's group (CUDA
 * IPC, or self alone), the staged transport for what those cannot serve,
 * and registered memory.
 */
#ifndef HIAR_CORE_GPU_H
#define HIAR_CORE_GPU_H

#include <stdatomic.h>
#include <stdio.h>

#include "core/between.h"
#include "cuda/api.h"
#include "core/hosts.h"
#include "core/groups.h"
#include "core/reg.h"

typedef struct hiar_gpu {
    int device;
    char bus_id[32];
    hiar_cuda_control_t control; /* every kernel's of the comm: one gives up, all do (cuda/api.h) */
    hiar_topo_fact_t *facts; /* [comm size] every rank's topology facts */
    hiar_side_t side;        /* grouping of device buffers, annotated; ipc or self */
    void *staged;            /* the staged transport's state (hiar_transport_staged) */
    int shared_gpu; /* another rank of the comm uses the same GPU */
    int hier_ok;    /* every group has IPC or one rank: the hierarchical device path, agreed by all */
    int mixed;      /* kernels of several kinds mix on a GPU: several groups sharing one, or HIAR_GPU_SHARERS (agreed) */
    long long hier_slot; /* the smallest slot of any group's kernels (agreed; LLONG_MAX: none), for the chunks */
    int pinned;          /* some group or set of counterparts uses pinned host memory (agreed): LL limits */
    hiar_between_t between; /* the step between groups of hierarchical device calls */
    /* One CUDA IPC group over every rank of a one-host comm with several groups (HIAR_FLAT), for small
     * messages; tp NULL where there is none, its why saying why. */
    hiar_side_t flat;
    /* One group on CUDA IPC: the pinned-host transport over its ranks beside it, where tuning times it or
     * chose it at some size (tp NULL elsewhere; its why says why where it was tried and failed). */
    hiar_side_t alt;
    hiar_transport_config_t cfg; /* this rank's group's transport configuration, for alt */
    hiar_hosts_t *hosts;    /* that step over MPI on the progress engine; NULL: blocking (hosts_why) */
    int hosts_whole;        /* ... and it can take the latency path's step (core/hosts.h hiar_hosts_whole_ok) */
    int hosts_alone_extra;  /* ... every rank alone in rounds: the latency path's extra sends (hiar_hosts_alone_extra) */
    char hosts_why[320];
    hiar_reg_t reg; /* registered memory (hiar_mem_register) */
} hiar_gpu_t;

/* What the device side is made from: the comm's MPI, rank, size and parameters, and its host path. */
typedef struct {
    MPI_Comm mpi;
    int rank, size;
    const hiar_params_t *params;
    size_t slot_bytes;        /* the IPC slot, resolved by the plan (hiar_plan_limits) */
    size_t pinned_slot_bytes; /* the pinned-host transport's */
    hiar_host_run_t host_run; /* where staged calls go */
    void *host_arg;
    const atomic_int *abort;  /* the comm's: the progress thread stops */
    int mpi_device;           /* the MPI takes device memory point-to-point (HIAR_MPI_DEVICE, agreed) */
} hiar_gpu_env_t;

/*
 * Collective over the comm.  Gathers every rank's facts (GPU, PCI path,
 * NVLink), groups the ranks for device buffers, and sets up IPC in every
 * group whose ranks all have a GPU (2 to 8 ranks) and pass the P2P probe;
 * *out is NULL when this rank has no GPU.  Failures of IPC are agreed in the
 * group and fall back to staging, with one warning.
 */
hiar_result_t hiar_gpu_create(const hiar_gpu_env_t *env, hiar_gpu_t **out);

/* HIAR_TEARDOWN_* flags: collective or not; KEEP for a failed comm. */
void hiar_gpu_destroy(hiar_gpu_t *gpu, int flags);

/* Where registered memory is mapped: this rank's device group. */
hiar_reg_group_t hiar_gpu_reg_group(const hiar_gpu_t *gpu);

/* Whether this rank's group of GPUs has the CUDA IPC transport (memory mapped between its GPUs). */
int hiar_gpu_has_ipc(const hiar_gpu_t *gpu);

/* Whether its calls run as kernels: CUDA IPC or pinned host memory. */
int hiar_gpu_has_kernels(const hiar_gpu_t *gpu);

/* Whether this rank is alone in its group, on its GPU (the self transport: a copy on the stream). */
int hiar_gpu_has_self(const hiar_gpu_t *gpu);

/*
 * The pinned-host transport beside CUDA IPC (alt): whether this comm can
 * have it (one group of several ranks on CUDA IPC; a value every rank
 * shares), and its setup, collective over mpi (the comm's): a failure
 * (locked-memory limit, a full /dev/shm) only leaves alt without a
 * transport, logged at INFO.  alt_free: collective, it goes.
 */
int hiar_gpu_alt_applies(const hiar_gpu_t *gpu);
hiar_result_t hiar_gpu_alt_setup(hiar_gpu_t *gpu, MPI_Comm mpi, int rank, int size);
void hiar_gpu_alt_free(hiar_gpu_t *gpu);

/* HIAR_TIMEOUT once a kernel gave up waiting; HIAR_SUCCESS otherwise (gpu may be NULL). */
hiar_result_t hiar_gpu_status(const hiar_gpu_t *gpu);
void hiar_gpu_abort(hiar_gpu_t *gpu);

/* One line for hiar_comm_describe: GPU, transport and why; and the topology table. */
void hiar_gpu_summary(const hiar_gpu_t *gpu, char *buf, size_t size);
hiar_result_t hiar_gpu_print_topology(const hiar_gpu_t *gpu, FILE *out);

#endif
