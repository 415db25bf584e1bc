/*
 * The plan of one call (base/call.h's hiar_plan_t) and every threshold and
 * default it depends on: a pure function of values every rank shares, so
 * every rank picks alike.  hiar_comm_describe prints the same resolved
 * limits (hiar_plan_limits).
 */
#ifndef HIAR_PLAN_H
#define HIAR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/call.h"

/* Largest one-shot message on the shm transport when HIAR_ONESHOT_MAX is 0
 * and nothing is tuned: this over the group's ranks (hiar_shm_oneshot_default),
 * since in one-shot a rank reads n - 1 whole messages and reduces all of them,
 * in two-shot it reads 2 (n-1)/n of one and reduces 1/n (on 2 ranks the same
 * reads, half the reduction), for a second barrier.  Timed by tuning (one-shot
 * / two-shot us, 2026-12-05): the 2-core CI VM, 2 ranks, three runs, 4 KB
 * 2.3-6.2 / 2.2-2.5, 16 KB 6.5-8.9 / 5.0-6.7, 64 KB 18.8-24.1 / 11.6-15.0, and
 * forced (HIAR_ALGO) 2 KB 1.8 / 1.5-1.9, 8 KB 3.9-4.4 / 3.3; the GPU machine's
 * 16 cores, 2 ranks 4 KB 2.2 / 2.6, 16 KB 7.3 / 6.2, 64 KB 19.0 / 13.7, and 3
 * ranks 1 KB 1.2 / 1.6, 4 KB 3.2 / 3.1, 16 KB 9.1 / 7.5.  The old 64 KB left
 * 16-64 KB calls 1.2-1.6x slower than two-shot. */
#define HIAR_SHM_ONESHOT_BUDGET (8 * 1024)
/* ... but not below this, where more than 8 ranks share a group (not measured):
 * two-shot's shards are whole 64-byte units (base/range.h), so a message of a
 * few of them leaves ranks empty-handed for two n-way barriers, and one-shot
 * keeps the inline messages of up to 120 bytes (transport/shm.c) one barrier. */
#define HIAR_SHM_ONESHOT_FLOOR (1024)
/* The same over several groups: hier-oneshot sends the whole message over
 * MPI, which must stay within Open MPI's eager limit (vader: 4 KB) to beat
 * reduce-scatter + all-gather (measured: 42 against 33 us at 4 KB). */
#define HIAR_HIER_ONESHOT_MAX_DEFAULT (2 * 1024)
/* Device messages over several groups up to this size take the host paths
 * (one copy each way) rather than two kernels around MPI.  Measured on 2
 * H200 under MPS, 4 ranks as 2 groups, bf16, each path waiting for the GPU
 * once: host paths 23 against 42 us at 4 KB and 43 against 49 at 16 KB;
 * the kernels' path took 55 us at 32 KB and 69 at 64 KB. */
#define HIAR_DEVICE_HIER_MIN (16 * 1024)
/* Device messages between hosts on the progress engine, every group of as
 * many ranks: up to this over the group's ranks (and within the group's LL
 * limit) they take the latency path, the group's LL kernel and the whole
 * message to the counterparts (core/hier.c hiar_hier_device_hosts_ll): two
 * launches instead of three, no all-gather, but g ranks of a group put g
 * times the three steps' bytes on the wire between hosts, at most this
 * much more per call (ranks alone in rounds: over the extra sends of one
 * exchange with every rank, core/hosts.h hiar_hosts_alone_extra).  On one
 * H100, 2 simulated hosts of 2 ranks, bf16 (2026-12-06), the latency path
 * against the three steps: eager 28.9 against 49.5 us at 1 KB, 38.8 / 54.9
 * at 16 KB, 46.7 / 60.6 at 32 KB, 66.7 / 71.5 at 64 KB (staged MPI 28.3,
 * 69.8, 112, 188); in CUDA graphs 18.3 / 34.5 at 1 KB, 52.9 / 55.2 at 64
 * KB.  HIAR_ONESHOT_MAX sets the limit itself, HIAR_ALGO=hier or twoshot
 * turns it off. */
#define HIAR_HOSTS_LL_BUDGET (128 * 1024)
/* Largest LL one-shot message on the IPC transport when HIAR_ONESHOT_MAX is
 * 0: this over the group's ranks.  On 2 H200 LL beat push up to 512 KB (256 KB:
 * 6.4 against 8.0 us); a rank writes 2 (n-1) x the message in flagged
 * packets, so more ranks get less.  Data-only packets (float types from
 * LL_DATA_ONLY_MIN, cuda/ll.cuh) write (n-1) x, as push does, and there the
 * rule may be too strict: on one H200 under MPS, 4 ranks, bf16, in graphs,
 * LL took 7.0 us at 512 KB against push's 21.1 (tuning's timing; hiar-bench
 * 7.08 against 15.55).  Not changed on one GPU's
 * evidence; tuning's 512 KB rung finds it (core/tune_cache.c). */
#define HIAR_IPC_ONESHOT_BUDGET (1024 * 1024)
/* Largest LL message through pinned host memory when HIAR_ONESHOT_MAX is 0:
 * every packet is polled over PCIe.  In flagged packets, on one H200, 2
 * ranks, bf16, eager LL / push: 16 KB 7.1 / 7.2 us, 64 KB 16.0 / 10.3, 256
 * KB 28.7 / 25.6; in CUDA graphs 64 KB 15.0 / 9.9.  A group's own kernel
 * takes data-only packets from 8 KB there (cuda/ll.cuh
 * LL_DATA_ONLY_MIN_HOST), half the bytes: on one H100, 2 ranks under MPS,
 * two rounds, LL / push eager 32 KB 7.12-7.18 / 8.52-8.56, 64 KB 9.34-9.56 /
 * 10.52-10.54, 128 KB 15.7-16.0 / 15.5; in graphs 64 KB 8.54-8.73 /
 * 10.03-10.11, 128 KB 15.0 / 14.8-15.0.  So 64 KB for one group's plain
 * kernel of 2 ranks on float types (integer types have no data-only
 * packets; more ranks, the fused norm and the counterparts' step
 * unmeasured: 16 KB, sets of 2 counterparts in data-only packets from 8 KB
 * as a group of 2); the kernel over groups keeps one format for the group
 * and the counterparts (device memory's). */
#define HIAR_PINNED_LL_MAX (16 * 1024)
#define HIAR_PINNED_GROUP_LL_MAX (64 * 1024)
/* Largest push one-shot message for more than 2 ranks: one-shot moves
 * (n-1) x the message per rank, two-shot 2 (n-1)/n x. */
#define HIAR_IPC_PUSH_MAX (1024 * 1024)
/* On 2 ranks both move the message once; push needs one exchange instead of
 * two, two-shot reduces half each: on 2 H200 push led at 4 MB (23 against
 * 46 us), two-shot from 16 MB (69 against 76 us; 346 against 287 GB/s at 1 GB). */
#define HIAR_IPC_PUSH2_MAX (8 * 1024 * 1024)
/* ... but through pinned host memory push at every size: the link, not the
 * reduction, is what two-shot's second exchange waits for.  On one H100, 2
 * ranks under MPS (HIAR_PINNED=1, bf16, one run each), bus bandwidth of
 * two-shot / push: 16 MB 12.27 / 13.53 GB/s, 32 MB 12.67 / 14.03, 64 MB
 * 13.04 / 14.08, 128 MB 13.25 / 14.06, 256 MB 13.34 / 14.43, against 18.4
 * and 17.7 GB/s a rank and direction of concurrent pinned copies measured
 * in the same runs (67-72% against 76-82%); on a later machine start push
 * (the new default) 19.03-19.64 GB/s, two-shot 15.62-17.94, against 23.6
 * (81-83% against 66-76%); at the default slot (below; core/plan.c
 * pinned_push2_max). */
#define HIAR_PINNED_PUSH2_MAX SIZE_MAX
/* Slot of the pinned-host transport when HIAR_BUFFER_SIZE is 0: its 4 slots
 * per rank, LL packets and signals (21 MB a rank in a group of 2) live in
 * /dev/shm, which containers often give 64 MB. */
#define HIAR_PINNED_SLOT_DEFAULT ((size_t)4 << 20)
/*
 * ... and at most half the least free /dev/shm of the comm's ranks at
 * creation with the regions of every rank of a machine (the host slots take
 * at most a quarter), halved as far as this; where even this does not fit,
 * the segment cannot be reserved, and device buffers are staged, with a
 * WARN naming /dev/shm.  In a
 * container's 64 MB, 2 ranks took 41 MB at the default (plus 16 MB of host
 * slots and MPI's own segments: no room), and take 25 MB at 2 MB slots.
 */
#define HIAR_PINNED_SLOT_FLOOR ((size_t)256 << 10)
/* shm slot bytes when HIAR_BUFFER_SIZE is 0: 4 MB for groups of 2, 2 MB up
 * to 4, 1 MB above, so the segment (2 slots a rank) stays at 16 MB, as 8
 * ranks had with 1 MB (containers often give /dev/shm 64 MB).  On a 2-core
 * VM, 2 ranks, float32, 3 runs each, hiar / MPI_Allreduce: 4 MB slots
 * 0.78-0.83 at 4 MB, 0.75-1.08 at 16 MB, 0.44-0.53 at 64 MB; 1 MB slots
 * 0.91-1.06, 1.02-1.39 (after the copy in was halved: transport/shm.c). */
#define HIAR_SHM_SLOT_MAX ((size_t)4 << 20)
#define HIAR_SHM_SLOT_MIN ((size_t)1 << 20)
/*
 * Default host slots take at most a quarter of the least free /dev/shm of
 * the comm's ranks at creation (the slots of all its groups on a machine:
 * two per rank), halved as far as this: a container's 64 MB (Docker's
 * default) held three comms of 2 ranks and 16 MB, and the fourth failed;
 * now each takes at most a quarter of what is left.  Large host messages
 * then go in smaller chunks.
 */
#define HIAR_SHM_SLOT_FLOOR ((size_t)64 << 10)
/* Bytes of one IPC data slot when HIAR_BUFFER_SIZE is 0: a chunk is half
 * a slot (2 ranks): bigger pieces per block mean fewer signals (measured on
 * 2 H200: 255 GB/s at 1 GB with 32 MB slots, 305 GB/s with 128 MB). */
#define HIAR_IPC_SLOT_DEFAULT ((size_t)64 << 20)
/* Slot of the one group over the host (HIAR_FLAT), whose default limit is
 * the LL kernel's (its packets have their own area): the slots serve only a
 * HIAR_FLAT_MAX set above it. */
#define HIAR_FLAT_SLOT ((size_t)1 << 20)
/* Chunk of the MPI path, reduced in the comm's own buffer; hier-oneshot's
 * copies of the group sum must fit it too. */
#define HIAR_MPI_SCRATCH_BYTES ((size_t)4 << 20)

typedef struct {
    int nranks;
    int ngroups;        /* groups of the call's buffers' side */
    size_t bytes;       /* message size */
    int algo;           /* HIAR_ALGO */
    size_t oneshot_max; /* HIAR_ONESHOT_MAX, 0 = default */
    size_t slot_bytes;  /* HIAR_BUFFER_SIZE, 0 = default */
    size_t shm_free;    /* the least free bytes of /dev/shm over the comm's ranks at creation; 0: not known */
    int machine_ranks;  /* the most of the comm's ranks on one machine (whose segments share its /dev/shm) */
    int host_ngroups, host_nshards; /* the host side's grouping */
    int device;         /* device buffers */
    int ipc;            /* device buffers: this rank's group runs kernels (CUDA IPC or pinned host memory) */
    int self;           /* device buffers: the group is this rank alone, on its GPU (the self transport) */
    int pinned;         /* some group or set of counterparts of the comm uses pinned host memory (agreed) */
    int hier_ready;     /* device buffers: every group has IPC or one rank (agreed) */
    int between_gpu;    /* device buffers: the step between groups runs on the GPU (agreed) */
    size_t between_slot; /* ... then the smallest data slot of any set of counterparts (agreed) */
    int device_spread;   /* ... and the most shards a rank of any group receives per sender, times the group's
                          * ranks (the same on every rank; hiar_ipc_hier_fused_chunk); 0: device_nshards */
    int hosts_async;    /* device buffers: that step runs over MPI on the progress engine (agreed; core/hosts.h) */
    int hosts_whole;    /* ... and every rank can take the whole message to its counterparts (core/hosts.h
                         * hiar_hosts_whole_ok: every group of device_nshards ranks; agreed) */
    int hosts_alone_extra; /* ... every rank alone in rounds: the whole message's extra sends over the rounds'
                            * (core/hosts.h hiar_hosts_alone_extra; the same on every rank); 0: none */
    int mixed;          /* device buffers: kernels of several kinds share a GPU: no push kernel (agreed) */
    int device_nshards; /* the device side's shards between groups */
    int flat_nranks;    /* device buffers: ranks of the one CUDA IPC group over the host (agreed); 0: none */
    size_t flat_max;    /* HIAR_FLAT_MAX, 0 = default */
    size_t ipc_ll_max;  /* largest message the IPC one-shot (LL) kernel takes */
    int norm;           /* the call fuses an RMSNorm (hiar_allreduce_rmsnorm): core/plan.c ll_limit */
    int floating;       /* the call's dtype is a float type: data-only LL packets (cuda/ll.cuh ll_large) */
    size_t device_slot; /* device buffers: the smallest slot of any group's kernels (agreed); 0: the default */
    int pinned_alt;     /* device buffers, one group: its pinned-host transport beside CUDA IPC (agreed), for tuning's
                         * "pinned"; 0: none, and such a choice is not taken */
    int tuned;          /* the next two hold tuning's crossovers (core/tune.h: the same on every rank) */
    size_t tuned_shm_oneshot_max, tuned_hier_oneshot_max; /* host buffers; 0: never one-shot */
    /* Device buffers: tuning's path per size of its ladder (core/tune_cache.h hiar_tune_dev_t), for the
     * automatic choice only; tuned_device_n 0: none.  A path this comm cannot take at a size is not taken. */
    const unsigned char *tuned_device;
    int tuned_device_n;
} hiar_plan_input_t;

/* The defaults and thresholds of a comm, resolved. */
typedef struct {
    size_t ipc_slot;             /* bytes per slot of the hierarchical device chunks */
    size_t shm_oneshot_max;      /* one group of host buffers: one-shot up to this */
    size_t hier_oneshot_max;     /* host buffers over groups: hier-oneshot up to this */
    size_t ipc_ll_max;           /* one group with IPC: LL up to this, then push */
    size_t ipc_push_max;         /* ... push up to this, then two-shot */
    size_t device_hier_ll_max;   /* device buffers over groups exchanging on the GPU: latency path up to this */
    size_t device_hosts_ll_max;  /* device buffers over groups on the progress engine: latency path up to this */
    size_t device_flat_max;      /* device buffers over groups: the one group over the host up to this (0: none) */
} hiar_plan_limits_t;

void hiar_plan_limits(const hiar_plan_input_t *in, hiar_plan_limits_t *out);

/* The built-in one-shot limit of a group of nranks host-buffer ranks (HIAR_SHM_ONESHOT_BUDGET, _FLOOR). */
size_t hiar_shm_oneshot_default(int nranks);

/* Slot sizes of the transports a comm sets up, resolved once at creation: no call needs them, and their
 * defaults search /dev/shm's budget (HIAR_SHM_SLOT_FLOOR, HIAR_PINNED_SLOT_FLOOR). */
typedef struct {
    size_t shm;    /* the host's shared-memory transport */
    size_t pinned; /* the pinned-host transport */
} hiar_plan_slots_t;

void hiar_plan_slots(const hiar_plan_input_t *in, hiar_plan_slots_t *out);
hiar_plan_t hiar_plan_choose(const hiar_plan_input_t *in);
/* Whether device calls take the self transport's copy: a comm of one rank on its GPU (whatever HIAR_ALGO says). */
int hiar_plan_self(const hiar_plan_input_t *in);
/* Whether device calls of a comm whose every rank is alone in its group go over MPI (no step between groups to take
 * them; host calls always do). */
int hiar_plan_alone_over_mpi(const hiar_plan_input_t *in);

/* The tuning candidate (core/tune_cache.h hiar_tune_dev_t) a device plan is, BUILTIN for none (staged). */
int hiar_plan_tune_candidate(hiar_plan_t plan);

/* The shards between groups of the side that runs a plan (hiar_call_t.nshards). */
int hiar_plan_nshards(const hiar_plan_input_t *in, hiar_plan_t plan);

/* "oneshot", "ipc-ll", "staged twoshot", ...: what the trace and describe say. */
const char *hiar_plan_name(hiar_plan_t plan);
int hiar_plan_equal(hiar_plan_t a, hiar_plan_t b);

#endif
