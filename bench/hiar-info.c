/*
 * hiar-info: what this build of hiar is and how it is configured, like
 * ompi_info: version, build options, every parameter with its value and
 * where that value came from, and the GPU topology with the grouping hiar
 * would choose (--topo), for this machine or one modelled by a sysfs tree,
 * and the crossovers tuned and cached on this machine (--tune).
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#ifdef HIAR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "base/error.h"
#include "hiar.h"
#ifdef HIAR_HAVE_CUDA
#include "topo/nvml.h"
#endif
#include "base/settings.h"
#include "core/tune_cache.h"
#include "net/mpidev.h"
#include "topo/topo.h"

#ifndef HIAR_CUDA_ARCHS
#define HIAR_CUDA_ARCHS ""
#endif

/* Collective over MPI_COMM_WORLD: the answer every comm of these ranks gets (HIAR_MPI_DEVICE). */
static void print_mpi_device(void)
{
    hiar_mpi_device_t d;
    hiar_params_t p;
    hiar_result_t rc = hiar_params_load(&p, NULL);

    if (rc == HIAR_SUCCESS) {
        rc = hiar_net_mpi_device(MPI_COMM_WORLD, (int)p.v[HIAR_P_MPI_DEVICE].num, &d);
        hiar_params_free(&p);
    }
    if (rc == HIAR_SUCCESS)
        printf("  MPI device pointers: %s (%s)\n", d.yes ? "yes" : "no", d.why);
    else
        printf("  MPI device pointers: not known (%s)\n", hiar_last_error());
}

static void print_build(void)
{
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;

    MPI_Get_library_version(mpi_version, &len);
    mpi_version[strcspn(mpi_version, "\n,")] = '\0';
    printf("hiar %s\n", hiar_version());
#ifdef HIAR_HAVE_CUDA
    printf("  CUDA:            yes, SM %s\n", HIAR_CUDA_ARCHS);
#else
    printf("  CUDA:            no (host buffers only)\n");
#endif
#ifdef HIAR_HAVE_NCCL
    printf("  NCCL:            yes (hiar-bench compares with it)\n");
#else
    printf("  NCCL:            no\n");
#endif
    printf("  MPI:             %s\n", mpi_version);
    print_mpi_device();
}

static int print_params(void)
{
    hiar_params_t p;

    if (hiar_params_load(&p, NULL) != HIAR_SUCCESS) {
        fprintf(stderr, "hiar-info: %s\n", hiar_last_error());
        return 1;
    }
    printf("%-18s %-8s %-8s %-10s %-11s %s\n", "parameter", "type", "scope", "value", "source", "meaning");
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        const hiar_param_info_t *info = &hiar_param_table[i];
        printf("%-18s %-8s %-8s %-10s %-11s %s%s%s\n", info->name, hiar_param_type_name(info->type),
               hiar_param_scope_name(info->scope), *p.v[i].text ? p.v[i].text : "\"\"",
               hiar_param_source_name(p.v[i].src), info->doc, *info->choices ? "; one of " : "",
               info->choices);
    }
    hiar_params_free(&p);
    return 0;
}

/* One tuning cache file: its signature and choices, or why hiar_comm_create would ignore it. */
static void print_cache_file(const char *path)
{
    hiar_tune_limits_t l;
    char why[3400], sig[1600] = "";
    hiar_tune_cache_t st = hiar_tune_cache_read(path, NULL, &l, why, sizeof(why), sig, sizeof(sig));

    printf("%s\n", path);
    if (st == HIAR_TUNE_CACHE_ABSENT) {
        printf("  absent (HIAR_TUNE=1 or hiar-bench --tune writes it)\n");
        return;
    }
    printf("  signature: %s\n", sig[0] ? sig : "(none)");
    if (st == HIAR_TUNE_CACHE_LOADED) {
        printf("  host buffers: oneshot up to %zu bytes in one group, hier-oneshot up to %zu bytes over groups\n",
               l.shm_oneshot_max, l.hier_oneshot_max);
        if (!l.device_n)
            printf("  device buffers: built-in paths (not tuned)\n");
        for (int m = 0; l.device_n && m < HIAR_TUNE_DEV_NMODES; m++) {
            printf("  device buffers, %s calls:", hiar_tune_dev_mode_name(m));
            for (int i = 0; i < l.device_n; i++)
                printf(" %zu:%s", hiar_tune_dev_size(i), hiar_tune_dev_name(l.device[m][i]));
            printf("\n");
        }
    } else
        printf("  ignored: %s\n", why);
}

/* --tune: HIAR_TUNE_CACHE, else every tune-*.txt of the cache folder. */
static int print_tune(void)
{
    hiar_params_t p;
    char path[1024], *slash;
    int n = 0;
    DIR *d;
    struct dirent *e;

    if (hiar_params_load(&p, NULL) != HIAR_SUCCESS) {
        fprintf(stderr, "hiar-info: %s\n", hiar_last_error());
        return 1;
    }
    snprintf(path, sizeof(path), "%s", p.v[HIAR_P_TUNE_CACHE].text);
    hiar_params_free(&p);
    printf("tuning (HIAR_TUNE): host-buffer crossovers and device paths per size (builtin: the plan's own)\n");
    if (path[0]) {
        print_cache_file(path);
        return 0;
    }
    if (hiar_tune_default_path("", path, sizeof(path)) != HIAR_SUCCESS) {
        printf("  no cache folder: %s\n", hiar_last_error());
        return 0;
    }
    slash = strrchr(path, '/');
    *slash = '\0';
    printf("cache folder: %s\n", path);
    if ((d = opendir(path)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            size_t len = strlen(e->d_name);
            char file[1300];
            if (strncmp(e->d_name, "tune-", 5) != 0 || len < 9 || strcmp(e->d_name + len - 4, ".txt") != 0)
                continue;
            snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
            print_cache_file(file);
            n++;
        }
        closedir(d);
    }
    if (n == 0)
        printf("  no cached choices (HIAR_TUNE=1 or hiar-bench --tune writes them)\n");
    return 0;
}

/* What --topo was asked for. */
typedef struct {
    const char *sysfs_root; /* NULL: HIAR_SYSFS_ROOT */
    const char *gpus;       /* NULL: the GPUs of this machine */
    const char *level;      /* NULL: HIAR_GROUP_LEVEL */
    int no_p2p, json;
} topo_options_t;

#ifdef HIAR_HAVE_CUDA
/*
 * The GPUs this process sees, as a bus-id list, and P2P as the driver claims
 * it (hiar_comm_create verifies it with a real copy; this tool does not).
 * No GPU: *list stays NULL and *none says why.
 */
static hiar_result_t local_gpus(char **list, unsigned char **p2p, const char **none)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);

    if (err != cudaSuccess || n == 0) {
        *none = err != cudaSuccess ? cudaGetErrorString(err) : "the CUDA runtime found none";
        return HIAR_SUCCESS;
    }
    *list = calloc((size_t)n, HIAR_BUSID_MAX + 1);
    *p2p = calloc((size_t)n * (size_t)n, 1);
    if (!*list || !*p2p)
        return hiar_error_set(HIAR_NO_MEMORY, "cannot allocate the list of %d GPUs", n);
    for (int d = 0; d < n; d++) {
        char bus[HIAR_BUSID_MAX];
        err = cudaDeviceGetPCIBusId(bus, sizeof(bus), d);
        if (err != cudaSuccess)
            return hiar_error_set(HIAR_CUDA_ERROR, "cudaDeviceGetPCIBusId(device %d): %s", d,
                                  cudaGetErrorString(err));
        strcat(strcat(*list, d ? "," : ""), bus);
        for (int e = 0; e < n; e++) {
            int can = d == e;
            if (d != e && cudaDeviceCanAccessPeer(&can, d, e) != cudaSuccess)
                can = 0;
            (*p2p)[d * n + e] = (unsigned char)can;
        }
    }
    return HIAR_SUCCESS;
}
#else
static hiar_result_t local_gpus(char **list, unsigned char **p2p, const char **none)
{
    (void)list, (void)p2p;
    *none = "this build of hiar has no CUDA";
    return HIAR_SUCCESS;
}
#endif

static void print_json_strings(const char *key, const hiar_grouping_t *g, int transport)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < g->ngroups; i++)
        printf("%s\"%s\"", i ? "," : "",
               transport ? hiar_transport_name(g->info[i].transport) : hiar_path_name(g->info[i].level));
    printf("]");
}

/* {"groups":[[0,1],[2,3]],"level":["PHB","PHB"],"transport":["ipc","ipc"]} */
static void print_json(const hiar_grouping_t *g)
{
    printf("{\"groups\":[");
    for (int i = 0; i < g->ngroups; i++) {
        printf("%s[", i ? "," : "");
        for (int m = g->start[i]; m < g->start[i + 1]; m++)
            printf("%s%d", m > g->start[i] ? "," : "", g->members[m]);
        printf("]");
    }
    printf("]");
    print_json_strings("level", g, 0);
    print_json_strings("transport", g, 1);
    printf("}\n");
}

static void print_line(void *arg, const char *text)
{
    (void)arg;
    printf("%s\n", text);
}

/* Groups the GPUs of list (one rank each) and prints the table and what lies between groups, or the JSON. */
static hiar_result_t group_and_print(const topo_options_t *o, const char *root, const char *list,
                                     int level, const unsigned char *claimed_p2p)
{
    char host[HIAR_HOST_ID_MAX];
    hiar_topo_fact_t *facts = NULL;
    unsigned char *p2p = NULL;
    hiar_grouping_t g;
    hiar_result_t rc;
    int n;

    hiar_topo_host_id(NULL, host);
    HIAR_CHECK(hiar_topo_facts_for_gpus(root, list, host, &facts, &n));
#ifdef HIAR_HAVE_CUDA
    /* This machine's GPUs (not a modelled one): NVLink from NVML, as comms see it. */
    for (int i = 0; claimed_p2p && i < n; i++)
        hiar_nvml_add_nvlink(&facts[i]);
#endif
    rc = o->no_p2p ? hiar_topo_p2p_none(facts, n, &p2p) : HIAR_SUCCESS;
    if (rc == HIAR_SUCCESS)
        rc = hiar_topo_group(facts, n, level, o->no_p2p ? p2p : claimed_p2p, &g);
    if (rc == HIAR_SUCCESS && o->json)
        print_json(&g);
    else if (rc == HIAR_SUCCESS)
        rc = hiar_topo_print(stdout, facts, &g);
    if (rc == HIAR_SUCCESS && !o->json)
        hiar_topo_between(facts, o->no_p2p ? p2p : claimed_p2p, &g, print_line, NULL);
    if (rc == HIAR_SUCCESS)
        hiar_grouping_free(&g);
    free(p2p);
    free(facts);
    return rc;
}

static hiar_result_t topo(const topo_options_t *o, const hiar_params_t *p)
{
    const char *root = o->sysfs_root ? o->sysfs_root : p->v[HIAR_P_SYSFS_ROOT].text;
    long long level = p->v[HIAR_P_GROUP_LEVEL].num;
    unsigned char *claimed = NULL;
    const char *none = NULL;
    char *list = NULL;
    hiar_result_t rc = HIAR_SUCCESS;

    if (o->level)
        HIAR_CHECK(hiar_param_parse(HIAR_P_GROUP_LEVEL, o->level, &level));
    if (!o->gpus)
        rc = local_gpus(&list, &claimed, &none);
    if (rc == HIAR_SUCCESS && (o->gpus || list)) {
        rc = group_and_print(o, root, o->gpus ? o->gpus : list, (int)level, claimed);
    } else if (rc == HIAR_SUCCESS) {
        /* JSON readers get an empty grouping on stdout, people the reason. */
        fprintf(o->json ? stderr : stdout,
                "no GPU: %s; host buffers are grouped by host. --sysfs-root DIR --gpus "
                "BDF,... models a machine\n",
                none);
        if (o->json)
            printf("{\"groups\":[],\"level\":[],\"transport\":[]}\n");
    }
    free(list);
    free(claimed);
    return rc;
}

static int print_topo(const topo_options_t *o)
{
    hiar_params_t p;
    hiar_result_t rc = hiar_params_load(&p, NULL);

    if (rc == HIAR_SUCCESS) {
        rc = topo(o, &p);
        hiar_params_free(&p);
    }
    if (rc != HIAR_SUCCESS)
        fprintf(stderr, "hiar-info: %s\n", hiar_last_error());
    return rc != HIAR_SUCCESS;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: hiar-info [--build] [--params] [--tune] [--topo [--sysfs-root DIR] [--gpus BDF,...]\n"
            "                 [--level LEVEL] [--no-p2p] [--json]]\n"
            "  --build            version and build options\n"
            "  --params           every HIAR_* parameter: type, scope, value, where it came from, meaning\n"
            "  --tune             the tuned choices cached on this machine (HIAR_TUNE_CACHE, else every\n"
            "                     file of the cache folder), each with its signature, or why it is ignored\n"
            "  --topo             the GPUs of this machine, their PCI topology, and the groups\n"
            "                     hiar forms (one rank per GPU)\n"
            "  --sysfs-root DIR   read the PCI topology under DIR instead of HIAR_SYSFS_ROOT (/sys)\n"
            "  --gpus BDF,...     model one rank per listed GPU, in that order, without touching a\n"
            "                     GPU; P2P is assumed where the PCIe path allows it (up to PHB)\n"
            "  --level LEVEL      auto|NVL|PIX|PXB|PHB|NODE|SYS|HOST|RANK (default HIAR_GROUP_LEVEL)\n"
            "  --no-p2p           model GPUs without P2P (consumer GPUs): groups use shm\n"
            "  --json             {\"groups\":[[0,1],...],\"level\":[...],\"transport\":[...]}\n"
            "The --topo options imply --topo.  With no option, --build and --params are printed.\n");
}

/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]; advances *i past it. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);

    if (strncmp(argv[*i], name, n) != 0)
        return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "hiar-info: %s needs a value\n", name);
        exit(2);
    }
    *value = argv[++*i];
    return 1;
}

/* 0: run; 1: help printed, exit 0; 2: bad usage. */
static int parse_args(int argc, char **argv, int *build, int *params, int *topo, int *tune,
                      topo_options_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--build") == 0) {
            *build = 1;
        } else if (strcmp(a, "--params") == 0) {
            *params = 1;
        } else if (strcmp(a, "--tune") == 0) {
            *tune = 1;
        } else if (strcmp(a, "--topo") == 0) {
            *topo = 1;
        } else if (strcmp(a, "--no-p2p") == 0) {
            o->no_p2p = *topo = 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = *topo = 1;
        } else if (option_value(argc, argv, &i, "--sysfs-root", &o->sysfs_root) ||
                   option_value(argc, argv, &i, "--gpus", &o->gpus) ||
                   option_value(argc, argv, &i, "--level", &o->level)) {
            *topo = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "hiar-info: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    topo_options_t topo_opts = {0};
    int build = 0, params = 0, topo = 0, tune = 0, rc;

    rc = parse_args(argc, argv, &build, &params, &topo, &tune, &topo_opts);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (!build && !params && !topo && !tune)
        build = params = 1;
    int mpi_thread_level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
    if (build)
        print_build();
    if (build && params)
        printf("\n");
    if (params)
        rc = print_params();
    if (topo && (build || params))
        printf("\n");
    if (topo && rc == 0)
        rc = print_topo(&topo_opts);
    if (tune && (build || params || topo))
        printf("\n");
    if (tune && rc == 0)
        rc = print_tune();
    MPI_Finalize();
    return rc;
}
