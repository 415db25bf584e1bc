/*
 * Registered memory of one group (CUDA builds): the windows that
 * hiar_mem_alloc and hiar_mem_register made, each mapped by every rank of
 * the group, so that kernels can write a call's result straight into the
 * peers' outputs.  Windows are numbered in registration order, which is the
 * same on every rank (the calls are collective).
 */
#ifndef HIAR_WINDOW_H
#define HIAR_WINDOW_H

#include <mpi.h>

#include "hiar.h"
#include "cuda/api.h"

typedef struct hiar_window hiar_window_t;

typedef struct {
    hiar_window_t *w; /* [n]; entries with base NULL are free */
    int n;
} hiar_windows_t;

/* Where windows are mapped: the group, this rank's index in it, and whether it has CUDA IPC. */
typedef struct {
    MPI_Comm comm;
    int local, size, ipc, device;
} hiar_window_group_t;

/*
 * Collective over the group: registers [ptr, ptr + bytes) (owned: hiar_mem_alloc's, freed with it) and,
 * with IPC, maps every rank's range.  Fails on every rank of the group if it fails on one.
 */
hiar_result_t hiar_windows_add(hiar_windows_t *ws, const hiar_window_group_t *g, void *ptr, size_t bytes,
                               int owned);

/* Index of the window registered at exactly ptr, -1 if none; *owned as registered. */
int hiar_windows_find(const hiar_windows_t *ws, const void *ptr, int *owned);

/*
 * Collective over the group (unless !collective): window i is unmapped
 * everywhere, then freed if owned (not when !collective: peers of a failed
 * comm may still write into it).  Waits for the device first.
 */
void hiar_windows_remove(hiar_windows_t *ws, const hiar_window_group_t *g, int i, int collective);
void hiar_windows_clear(hiar_windows_t *ws, const hiar_window_group_t *g, int collective);

/* 1 and d filled if [out, out + bytes) lies in a window mapped on every rank of the group. */
int hiar_windows_direct(const hiar_windows_t *ws, const void *out, size_t bytes, hiar_ipc_direct_t *d);

#endif
