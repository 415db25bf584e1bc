/*
 * Whether MPI takes device pointers (src/net/mpidev.c): /proc/self/maps
 * texts as Open MPI 4.1 leaves them after MPI_Init (the ob1 and ucx lines
 * are copied from this machine's Open MPI 4.1.4; the CUDA UCX ones name
 * libucx-cu13 where shared/tools/cuda-mpi/run.sh unpacks it), and the answer
 * with its reason for each MPI, setting, environment and what UCX reports.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/param.h"
#include "net/mpidev.h"

/* One mapping of file PATH, as /proc/PID/maps writes it. */
#define MAP(PATH) "7f42d5d02000-7f42d5d06000 r--p 00000000 fe:00 14884976                   " PATH "\n"
#define SYS "/usr/lib/x86_64-linux-gnu"
#define OMPI SYS "/openmpi/lib/openmpi3"
#define CU "/tmp/cudampi-gpu/ucx-cu13/libucx/lib"

/* Mapped whatever the PML: the program, the heap, libmpi, an anonymous mapping. */
#define COMMON                                                                                   \
    MAP("/work/build/bench/.libs/hiar-info")                                                      \
    "561cc116e000-561cc131e000 rw-p 00000000 00:00 0                          [heap]\n"            \
    MAP(SYS "/libmpi.so.40.30.4")                                                                 \
    "7f42d5d06000-7f42d5d08000 rw-p 00000000 00:00 0 \n"

/* Debian's default (pml ^ucx): ob1, no UCX at all. */
static const char maps_ob1[] = COMMON MAP(OMPI "/mca_pml_ob1.so");
/* --mca pml ob1,ucx where ob1 won: mca_pml_ucx.so is gone, UCX's libraries and modules stay. */
static const char maps_ob1_ucx_left[] = COMMON MAP(SYS "/ucx/libuct_rdmacm.so.0.0.0") MAP(SYS "/libucm.so.0.0.0")
    MAP(SYS "/libuct.so.0.0.0") MAP(SYS "/libucs.so.0.0.0") MAP(SYS "/ucx/libuct_cma.so.0.0.0")
        MAP(OMPI "/mca_pml_ob1.so");
/* --mca pml ucx over Debian's UCX 1.13 (no CUDA). */
static const char maps_ucx_nocuda[] = COMMON MAP(SYS "/libucp.so.0.0.0") MAP(SYS "/libucs.so.0.0.0")
    MAP(SYS "/ucx/libuct_cma.so.0.0.0") MAP(OMPI "/mca_pml_ucx.so");
/* --mca pml ucx with LD_LIBRARY_PATH to libucx-cu13, on a machine with the driver (libuct_cuda loads). */
static const char maps_ucx_cuda[] = COMMON MAP(CU "/ucx/libuct_cuda.so.0") MAP(CU "/libucp.so.0") MAP(CU "/libucs.so.0")
    MAP(CU "/libuct.so.0") MAP(CU "/ucx/libuct_cma.so.0") MAP(OMPI "/mca_pml_ucx.so");

static void ob1_alone(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(maps_ob1, &m);
    cr_expect_str_eq(m.pml, "ob1");
    cr_expect_eq(m.ucs_dirs, 0);
    cr_expect_eq(m.cuda_dirs, 0);
}

static void ucx_libraries_left_by_ob1(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(maps_ob1_ucx_left, &m);
    cr_expect_str_eq(m.pml, "ob1");
    cr_expect_eq(m.ucs_dirs, 1);
    cr_expect_str_eq(m.ucs_dir, SYS);
    cr_expect_eq(m.cuda_dirs, 0);
}

static void cuda_ucx(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(maps_ucx_cuda, &m);
    cr_expect_str_eq(m.pml, "ucx");
    cr_expect_str_eq(m.ucs_dir, CU);
    cr_expect_str_eq(m.cuda_dir, CU "/ucx");
    cr_expect_eq(m.ucs_dirs, 1);
    cr_expect_eq(m.cuda_dirs, 1);
}

/* Files replaced on disk after they were mapped end " (deleted)"; libucs_signal is not libucs. */
static void deleted_files_and_lookalikes(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(MAP(CU "/libucs.so.0 (deleted)") MAP("/opt/other/libucs_signal.so.0")
                               MAP("/opt/x/libuct_cuda_gdrcopy.so.0") MAP(OMPI "/mca_pml_ucx.so (deleted)")
                                   MAP(OMPI "/mca_pml_ucx.so.bak") MAP(OMPI "/mca_pml_.so"),
                           &m);
    cr_expect_str_eq(m.pml, "ucx");
    cr_expect_str_eq(m.ucs_dir, CU);
    cr_expect_eq(m.ucs_dirs, 1);
    cr_expect_eq(m.cuda_dirs, 0);
}

static void several_pmls_and_ucx_copies(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(MAP(OMPI "/mca_pml_ucx.so") MAP(OMPI "/mca_pml_monitoring.so") MAP(OMPI "/mca_pml_ucx.so")
                               MAP(SYS "/libucs.so.0") MAP(CU "/libucs.so.0") MAP(SYS "/libucs.so.0"),
                           &m);
    cr_expect_str_eq(m.pml, "ucx+monitoring");
    cr_expect_eq(m.ucs_dirs, 2);
    cr_expect_str_eq(m.ucs_dir, SYS);
}

/* A list longer than the field is never cut down to something that reads "ucx". */
static void too_many_pmls(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(MAP(OMPI "/mca_pml_ucx.so") MAP(OMPI "/mca_pml_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.so")
                               MAP(OMPI "/mca_pml_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.so"),
                           &m);
    cr_expect_str_eq(m.pml, "(several)");
}

static void empty_or_unreadable(void)
{
    hiar_mpi_maps_t m;

    hiar_net_mpi_maps_scan(NULL, &m);
    cr_expect_str_eq(m.pml, "");
    hiar_net_mpi_maps_scan("", &m);
    cr_expect_eq(m.ucs_dirs, 0);
    hiar_net_mpi_maps_scan("garbage\n\n\n7f42d5d02000-7f42d5d06000 r--p\n", &m);
    cr_expect_str_eq(m.pml, "");
}

/* ---- the answer */

/* Open MPI 4.1.6 as on the GPU machine: MPIX_Query_cuda_support() = 0, no MPIX_GPU_query_support. */
static hiar_mpi_facts_t ompi(const char *maps)
{
    hiar_mpi_facts_t f;

    memset(&f, 0, sizeof(f));
    strcpy(f.library, "Open MPI v4.1.6");
    f.cuda_query = 0;
    f.gpu_query = -1;
    hiar_net_mpi_maps_scan(maps, &f.maps);
    f.ucx_cuda = f.maps.cuda_dirs ? 1 : -1; /* as gathered: asked where libuct_cuda is mapped, found */
    return f;
}

static void expect(int setting, const hiar_mpi_facts_t *f, int yes, const char *why)
{
    hiar_mpi_device_t d;

    memset(&d, 0x55, sizeof(d));
    hiar_net_mpi_device_decide(setting, f, &d);
    cr_expect_eq(d.yes, yes, "yes = %d, expected %d (%s)", d.yes, yes, d.why);
    cr_expect(strlen(d.why) < sizeof(d.why));
    cr_expect(strstr(d.why, why), "why \"%s\" does not say \"%s\"", d.why, why);
    cr_expect(!strchr(d.why, '\n'), "why is one line: %s", d.why);
}

static void forced(void)
{
    hiar_mpi_facts_t f = ompi(maps_ob1);

    expect(HIAR_MPIDEV_YES, &f, 1, "forced by HIAR_MPI_DEVICE=1");
    f = ompi(maps_ucx_cuda);
    expect(HIAR_MPIDEV_NO, &f, 0, "forced by HIAR_MPI_DEVICE=0: device buffers are staged through pinned host memory");
}

static void openmpi_as_installed(void)
{
    hiar_mpi_facts_t f = ompi(maps_ob1);

    expect(HIAR_MPIDEV_AUTO, &f, 0,
           "Open MPI v4.1.6 without CUDA support, MPIX_Query_cuda_support() = 0, pml ob1: device buffers are "
           "staged through pinned host memory");
    f = ompi(maps_ob1_ucx_left);
    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ob1: ");
}

static void openmpi_pml_ucx_without_cuda(void)
{
    hiar_mpi_facts_t f = ompi(maps_ucx_nocuda);

    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ucx over a UCX without its cuda transport (libuct_cuda not loaded)");
}

static void openmpi_pml_ucx_over_cuda_ucx(void)
{
    hiar_mpi_facts_t f = ompi(maps_ucx_cuda);

    expect(HIAR_MPIDEV_AUTO, &f, 1,
           "Open MPI v4.1.6 with pml ucx and UCX's cuda transport loaded (point-to-point only");
}

/* libuct_cuda loads wherever libcuda.so.1 does (the CUDA stubs here); UCX's own answer decides. */
static void openmpi_cuda_transport_without_gpu(void)
{
    hiar_mpi_facts_t f = ompi(maps_ucx_cuda);

    f.ucx_cuda = 0;
    expect(HIAR_MPIDEV_AUTO, &f, 0,
           "pml ucx, but UCX's cuda_copy finds no GPU (none, or a driver older than UCX's CUDA)");
    f.ucx_cuda = -1;
    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ucx, but its libucp could not be asked for the cuda memory type");
}

/* PMLs built into libmpi (no mca_pml_*.so): only "pml" = "ucx" proves the PML. */
static void openmpi_pml_built_in(void)
{
    hiar_mpi_facts_t f = ompi(MAP(CU "/libucs.so.0") MAP(CU "/ucx/libuct_cuda.so.0"));

    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml not known (no mca_pml_*.so mapped)");
    strcpy(f.pml_cvar, "ucx,ob1");
    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml not known");
    strcpy(f.pml_cvar, "ucx");
    expect(HIAR_MPIDEV_AUTO, &f, 1, "with pml ucx and UCX's cuda transport loaded");
}

static void openmpi_ucx_not_one_copy(void)
{
    hiar_mpi_facts_t f = ompi(MAP(OMPI "/mca_pml_ucx.so") MAP(SYS "/libucs.so.0") MAP(CU "/libucs.so.0")
                                  MAP(CU "/ucx/libuct_cuda.so.0"));

    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ucx, but UCX is mapped from two folders");
    /* The CUDA transport of another UCX than the PML's (UCX_MODULE_DIR, or a second copy). */
    f = ompi(MAP(OMPI "/mca_pml_ucx.so") MAP(SYS "/libucs.so.0") MAP(CU "/ucx/libuct_cuda.so.0"));
    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ucx, but libuct_cuda is mapped from outside that UCX's ucx/ folder");
    f = ompi(MAP(OMPI "/mca_pml_ucx.so") MAP(CU "/libucs.so.0") MAP(CU "/ucxx/libuct_cuda.so.0"));
    expect(HIAR_MPIDEV_AUTO, &f, 0, "outside that UCX's ucx/ folder");
    f = ompi(MAP(OMPI "/mca_pml_ucx.so") MAP(CU "/ucx/libuct_cuda.so.0"));
    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ucx, but no libucs.so is mapped");
    f = ompi(MAP(OMPI "/mca_pml_ucx.so") MAP(OMPI "/mca_pml_monitoring.so") MAP(CU "/libucs.so.0")
                 MAP(CU "/ucx/libuct_cuda.so.0"));
    expect(HIAR_MPIDEV_AUTO, &f, 0, "pml ucx+monitoring");
}

Test(mpidev, ucx_tls)
{
    static const struct {
        char tls[32];
        int yes;
    } cases[] = {
        {"", 1},           {"all", 1},         {"cuda", 1},       {"sm,cuda_copy", 1}, {"tcp,cuda_copy:aux", 1},
        {"^cuda_ipc", 1},  {"^tcp,gdr_copy", 1}, {"tcp,sm", 0},    {"cuda_ipc,tcp", 0}, {"^cuda", 0},
        {"^cuda_copy", 0}, {"^all", 0},         {"cuda_copyx", 0}, {"xcuda", 0},
    };
    hiar_mpi_facts_t f = ompi(maps_ucx_cuda);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        f.ucx_tls = cases[i].tls;
        expect(HIAR_MPIDEV_AUTO, &f, cases[i].yes, cases[i].yes ? "with pml ucx" : "leaves out cuda_copy");
    }
    f.ucx_tls = NULL;
    expect(HIAR_MPIDEV_AUTO, &f, 1, "with pml ucx");
}

/* Open MPI built with CUDA (HPC-X), MPICH, Intel MPI: the MPI's own answer. */
static void the_mpis_own_answer(void)
{
    hiar_mpi_facts_t f = ompi(maps_ob1);

    f.cuda_query = 1;
    expect(HIAR_MPIDEV_AUTO, &f, 1, "Open MPI v4.1.6: MPIX_Query_cuda_support() = 1");
    memset(&f, 0, sizeof(f));
    strcpy(f.library, "MPICH Version: 4.2.0");
    f.cuda_query = 0;
    f.gpu_query = 1;
    expect(HIAR_MPIDEV_AUTO, &f, 1, "MPICH Version: 4.2.0: MPIX_GPU_query_support(CUDA) = 1");
    f.gpu_query = 0;
    expect(HIAR_MPIDEV_AUTO, &f, 0, "MPICH Version: 4.2.0 without CUDA support, MPIX_Query_cuda_support() = 0: device");
    f.cuda_query = f.gpu_query = -1;
    expect(HIAR_MPIDEV_AUTO, &f, 0, "without CUDA support, no MPIX_Query_cuda_support: device");
    f.library[0] = '\0';
    expect(HIAR_MPIDEV_AUTO, &f, 0, "this MPI without CUDA support");
}

static void intel_mpi(void)
{
    hiar_mpi_facts_t f;

    memset(&f, 0, sizeof(f));
    strcpy(f.library, "Intel(R) MPI Library 2021.19 for Linux* OS");
    expect(HIAR_MPIDEV_AUTO, &f, 0, "I_MPI_OFFLOAD=unset (1 turns GPU buffers on)");
    f.impi_offload = "0";
    expect(HIAR_MPIDEV_AUTO, &f, 0, "I_MPI_OFFLOAD=0 (1 turns GPU buffers on)");
    f.impi_offload = "1";
    expect(HIAR_MPIDEV_AUTO, &f, 1, "Intel(R) MPI Library 2021.19 for Linux* OS with I_MPI_OFFLOAD=1");
    f.impi_mode = "CUDA";
    expect(HIAR_MPIDEV_AUTO, &f, 1, "with I_MPI_OFFLOAD=1");
    f.impi_mode = "level_zero";
    expect(HIAR_MPIDEV_AUTO, &f, 0, "I_MPI_OFFLOAD_MODE=level_zero, not cuda");
}

/* One process per group of cases: valgrind (tests/sanitize.sh) starts each in about 3.5 s. */

Test(mpidev_maps, open_mpi_41_as_measured)
{
    ob1_alone();
    ucx_libraries_left_by_ob1();
    cuda_ucx();
}

Test(mpidev_maps, odd_lines)
{
    deleted_files_and_lookalikes();
    several_pmls_and_ucx_copies();
    too_many_pmls();
    empty_or_unreadable();
}

Test(mpidev, open_mpi)
{
    openmpi_as_installed();
    openmpi_pml_ucx_without_cuda();
    openmpi_pml_ucx_over_cuda_ucx();
    openmpi_cuda_transport_without_gpu();
    openmpi_pml_built_in();
    openmpi_ucx_not_one_copy();
}

Test(mpidev, forced_and_other_mpis)
{
    forced();
    the_mpis_own_answer();
    intel_mpi();
}
