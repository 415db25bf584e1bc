/*
 * Tuning of device buffers at hiar_comm_create (HIAR_TUNE=1): the path per
 * size of the device ladder (core/tune_cache.h), measured and agreed; the
 * cache and HIAR_TUNE=auto are core/tune.h's.
 */
#ifndef HIAR_CORE_TUNE_DEVICE_H
#define HIAR_CORE_TUNE_DEVICE_H

#include <stdint.h>

#include "core/comm.h"

/* The one agreement of a measurement (the host's and the device's): the max over ranks of n timings and of the
 * seconds since start, so every rank holds the same table. */
hiar_result_t hiar_tune_agree(MPI_Comm mpi, double *us, int n, uint64_t start, double *seconds);

/* The canary every candidate sums first (host and device): count int32 of known sums, HIAR_TUNE_CANARY_COUNT
 * where the candidate is a path at that size. */
#define HIAR_TUNE_CANARY_COUNT 1024
void hiar_tune_canary_fill(const hiar_comm_t *comm, int32_t *values, size_t count);
/* Whether the sums are right on this rank (HIAR_TUNE_TEST_FAIL naming the candidate spoils one on rank 0). */
int hiar_tune_canary_ok(const hiar_comm_t *comm, const char *candidate, int32_t *sums, size_t count);

/* HIAR_TUNE_TEST_SKEW=RANK:FACTOR: this rank's factor on the small-message paths' timings (host: oneshot,
 * hier-oneshot; device: ipc-ll, flat), 1 on the other ranks. */
hiar_result_t hiar_tune_skew(const hiar_comm_t *comm, double *factor);

/* Whether this comm's device buffers have paths to choose between, else why not; from values agreed at setup
 * where every rank has a GPU (the caller agrees it over the comm, for ranks without one). */
int hiar_tune_device_applies(const hiar_comm_t *comm, char *why, size_t len);

/* Collective: measures comm->tune.dev, fills comm->tune.limits.device; *seconds: how long it took. */
hiar_result_t hiar_tune_device_now(hiar_comm_t *comm, double *seconds);

/* Collective, after comm->tune.limits came from a cache: sets up what its device choices need (the pinned-host
 * transport beside CUDA IPC); where that fails, those choices give way to the built-in ones, with a WARN. */
hiar_result_t hiar_tune_device_loaded(hiar_comm_t *comm);

#endif
