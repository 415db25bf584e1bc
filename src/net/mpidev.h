/*
 * Whether the MPI library takes device pointers in point-to-point calls
 * (MPI_Isend / MPI_Irecv, all that src/net/ uses between hosts), so the step
 * between hosts can hand MPI device buffers instead of staging them through
 * pinned host memory.  A wrong yes is a segfault inside MPI (Open MPI 4.1.6
 * as installed on the GPU machine), a wrong no only costs speed (64 MB one
 * way: 15.6 ms staged, 191 us on device pointers with a CUDA UCX;
 * ../shared/research/cuda-aware-mpi.md), so auto says yes only on evidence,
 * gathered without touching device memory or anything that could fault.
 *
 * auto (HIAR_MPI_DEVICE=auto) says yes, in this order, when
 *  1. MPIX_Query_cuda_support() = 1 (Open MPI built with CUDA: HPC-X and
 *     site builds; MPICH; Intel MPI), asked at run time even where mpi-ext.h
 *     says MPIX_CUDA_AWARE_SUPPORT 0: a binary built against the distribution's
 *     Open MPI runs as well against a CUDA build of the same ABI;
 *  2. MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) = 1 (MPICH 4, Intel MPI);
 *  3. Intel MPI with I_MPI_OFFLOAD >= 1 and I_MPI_OFFLOAD_MODE unset, auto
 *     or cuda;
 *  4. Open MPI whose PML is ucx over a UCX that loaded its CUDA transport:
 *     point-to-point works on device pointers there, its collectives still
 *     segfault (measured: Open MPI 4.1.6 and 5.0.11 with libucx-cu13 1.22),
 *     and MPIX_Query_cuda_support() says 0.  The evidence, all from
 *     /proc/self/maps after MPI_Init and the environment:
 *     - the PML is ucx: mca_pml_ucx.so is the only mca_pml_*.so mapped
 *       (Open MPI unloads the PMLs it does not select: with --mca pml
 *       ob1,ucx on Open MPI 4.1.4 and libucx-cu13, where ob1 won,
 *       mca_pml_ucx.so was gone while libucs, libuct and UCX's modules,
 *       libuct_cuda too, stayed mapped, so UCX's files alone prove
 *       nothing), or Open MPI's control variable
 *       "pml" (MPI_T) is exactly "ucx", which MPI_Init accepts only by
 *       selecting it (for PMLs built into libmpi, which have no file);
 *     - that UCX has CUDA: libuct_cuda.so is mapped from the ucx/ folder
 *       beside the one libucs.so mapped, where UCX loads its modules from
 *       (it loads it where libcuda.so.1 and libnvidia-ml.so.1 load);
 *     - UCX_TLS, where set, keeps cuda_copy ("cuda_copy", "cuda" or "all";
 *       or a "^" list that does not name them);
 *     - and that UCX reports the cuda memory type: a UCP context of our own
 *       on cuda_copy, through the libucp already loaded (mpidev.c says why:
 *       the module loads also where cuda_copy finds no device).
 *     Yes that can still be wrong: a PML ucx file that Open MPI keeps mapped
 *     without selecting it (4.1 does not), and transports left out by a
 *     UCX configuration file (ucx.conf) rather than UCX_TLS.  A UCX
 *     with CUDA that loaded its modules from elsewhere (UCX_MODULE_DIR), two
 *     UCX copies in one process, or PMLs built into libmpi without
 *     "pml" = "ucx" give no, which only costs speed; HIAR_MPI_DEVICE=1 then
 *     says yes.
 * Otherwise device buffers are staged through pinned host memory.
 */
#ifndef HIAR_NET_MPIDEV_H
#define HIAR_NET_MPIDEV_H

#include <limits.h>
#include <mpi.h>

#include "hiar.h"

typedef struct {
    int yes;       /* 1: MPI point-to-point takes device pointers */
    char why[256]; /* one line: which test decided, e.g. "Open MPI v4.1.6 with pml ucx and ..." */
} hiar_mpi_device_t;

/* What /proc/self/maps says about Open MPI's PML and UCX. */
typedef struct {
    char pml[64];            /* the mca_pml_<name>.so mapped, '+'-joined: "ob1", "ucx", "" for none */
    char ucs_dir[PATH_MAX];  /* the folder of the mapped libucs.so; "" for none */
    char cuda_dir[PATH_MAX]; /* the folder of the mapped libuct_cuda.so; "" for none */
    int ucs_dirs, cuda_dirs; /* how many different folders each came from (2 UCX copies: 2) */
} hiar_mpi_maps_t;

/* What decides, gathered after MPI_Init (tests write it by hand). */
typedef struct {
    char library[64];          /* MPI_Get_library_version's first line, up to a comma */
    int cuda_query;            /* MPIX_Query_cuda_support(): 0 or 1; -1 where the MPI has none */
    int gpu_query;             /* MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA): 0 or 1; -1 none */
    char pml_cvar[64];         /* Open MPI's MPI_T variable "pml" (the PMLs asked for), read where no
                                  mca_pml_*.so is mapped; "" unknown */
    hiar_mpi_maps_t maps;      /* from /proc/self/maps */
    int ucx_cuda;              /* a UCP context on cuda_copy reports the cuda memory type: 0 or 1; -1 not asked */
    const char *ucx_tls;       /* UCX_TLS, NULL where unset */
    const char *impi_offload;  /* I_MPI_OFFLOAD, NULL where unset */
    const char *impi_mode;     /* I_MPI_OFFLOAD_MODE, NULL where unset */
} hiar_mpi_facts_t;

/*
 * Collective over comm, after MPI_Init; setting is HIAR_MPI_DEVICE
 * (HIAR_MPIDEV_AUTO, _NO, _YES).  Every rank gets the same answer: yes only
 * where every rank says yes, so a rank never hands MPI a device buffer that
 * its peer's MPI would stage differently.  Never calls MPI on device memory.
 */
hiar_result_t hiar_net_mpi_device(MPI_Comm comm, int setting, hiar_mpi_device_t *out);

/* This rank's answer alone, from what it gathers now (not collective, infallible). */
void hiar_net_mpi_device_local(int setting, hiar_mpi_device_t *out);

/* Pure: the answer from the facts. */
void hiar_net_mpi_device_decide(int setting, const hiar_mpi_facts_t *f, hiar_mpi_device_t *out);

/* Pure: the text of a /proc/PID/maps file into m. */
void hiar_net_mpi_maps_scan(const char *text, hiar_mpi_maps_t *m);

#endif
