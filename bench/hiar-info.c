/*
 * hiar-info: what this build of hiar is and how it is configured, like
 * ompi_info: version, build options, and every parameter with its value and
 * where that value came from.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif

#include "hiar.h"
#include "param.h"

#ifndef HIAR_CUDA_ARCHS
#define HIAR_CUDA_ARCHS ""
#endif

static const char *mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() ? "yes" : "built with CUDA, not at run time";
#else
    return "no";
#endif
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
    printf("  MPI CUDA-aware:  %s\n", mpi_cuda_aware());
}

static int print_params(void)
{
    hiar_params_t p;

    if (hiar_params_load(&p, NULL) != HIAR_SUCCESS) {
        fprintf(stderr, "hiar-info: %s\n", hiar_last_error());
        return 1;
    }
    printf("%-18s %-8s %-10s %-11s %s\n", "parameter", "type", "value", "source", "meaning");
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        const hiar_param_info_t *info = &hiar_param_table[i];
        printf("%-18s %-8s %-10s %-11s %s%s%s\n", info->name, hiar_param_type_name(info->type),
               *p.v[i].text ? p.v[i].text : "\"\"", hiar_param_source_name(p.v[i].src), info->doc,
               *info->choices ? "; one of " : "", info->choices);
    }
    hiar_params_free(&p);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: hiar-info [--build] [--params]\n"
                 "  --build   version and build options\n"
                 "  --params  every HIAR_* parameter: type, value, where it came from, meaning\n"
                 "With no option both are printed.\n");
}

int main(int argc, char **argv)
{
    int build = 0, params = 0, rc = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--build") == 0) {
            build = 1;
        } else if (strcmp(argv[i], "--params") == 0) {
            params = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "hiar-info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!build && !params)
        build = params = 1;
    MPI_Init(&argc, &argv);
    if (build)
        print_build();
    if (build && params)
        printf("\n");
    if (params)
        rc = print_params();
    MPI_Finalize();
    return rc;
}
