/*
 * Registered memory of one group (CUDA builds): the ranges hiar_mem_alloc
 * and hiar_mem_register made, each mapped by every rank of the group, so that
 * kernels can write a call's result straight into the peers' outputs.
 * Entries are numbered in registration order, which is the same on every
 * rank (the calls are collective).
 */
#ifndef HIAR_CORE_REG_H
#define HIAR_CORE_REG_H

#include <mpi.h>

#include "cuda/api.h"
#include "hiar.h"

typedef struct hiar_reg_entry hiar_reg_entry_t;

typedef struct {
    hiar_reg_entry_t *e; /* [n]; entries with base NULL are free */
    int n;
} hiar_reg_t;

/* Where ranges are mapped: the group, this rank's index in it, whether it has CUDA IPC, the GPU. */
typedef struct {
    MPI_Comm comm;
    int local, size, ipc, device;
} hiar_reg_group_t;

/*
 * Collective over the group: registers [ptr, ptr + bytes) (owned: hiar_mem_alloc's, freed with it) and,
 * with IPC, maps every rank's range.  Fails on every rank of the group if it fails on one.
 */
hiar_result_t hiar_reg_add(hiar_reg_t *r, const hiar_reg_group_t *g, void *ptr, size_t bytes, int owned);

/* Index of the entry registered at exactly ptr, -1 if none; *owned as registered. */
int hiar_reg_find(const hiar_reg_t *r, const void *ptr, int *owned);

/*
 * Collective over the group (unless !collective): entry i is unmapped
 * everywhere, then freed if owned (not when !collective: peers of a failed
 * comm may still write into it).  Waits for the device first.
 */
void hiar_reg_remove(hiar_reg_t *r, const hiar_reg_group_t *g, int i, int collective);
void hiar_reg_clear(hiar_reg_t *r, const hiar_reg_group_t *g, int collective);

/* 1 if [p, p + bytes) lies in a range registered on this rank: device memory (hiar_mem_register checks it). */
int hiar_reg_holds(const hiar_reg_t *r, const void *p, size_t bytes);

/* 1 and d filled if [out, out + bytes) lies in a range mapped on every rank of the group. */
int hiar_reg_direct(const hiar_reg_t *r, const void *out, size_t bytes, hiar_ipc_direct_t *d);

#endif
