/*
 * What tuning at creation decides, and the parts of it that need no MPI: the
 * size ladder, the choice of a crossover from an agreed timing table (a pure
 * function, so every rank holding the same table picks alike), the
 * signature of what the choice depends on, and the cache file keyed by it.
 * The measurement itself is core/tune.h.
 *
 * Tuned: host buffers' crossovers, one-shot against two-shot in one group
 * (HIAR_SHM_ONESHOT_BUDGET) and hier-oneshot against hier over
 * several groups (HIAR_HIER_ONESHOT_MAX_DEFAULT); device buffers' path per
 * size of their own ladder: one group's kernel (LL, push, pull, two-shot
 * with its blocks by size, half or twice as many, or the pinned-host
 * transport's kernel beside CUDA IPC), or over groups the group over the
 * host against the hierarchical paths (the one kernel over groups also
 * with half and twice its blocks).
 */
#ifndef HIAR_CORE_TUNE_CACHE_H
#define HIAR_CORE_TUNE_CACHE_H

#include <stddef.h>

#include "hiar.h"

/* The ladder: 256 B to 1 MB by x4 (7 sizes). */
#define HIAR_TUNE_NSIZES 7
#define HIAR_TUNE_MIN_BYTES ((size_t)256)
/* The candidates of one crossover: [0] the small-message path (one-shot), [1] the large one. */
#define HIAR_TUNE_NCAND 2
/* The built-in limit stays unless another saves more than this part of its
 * cost: the bound (tuned never > 3% slower), and timings on a busy
 * host move by more (2 ranks on 2 cores: 256 KB one-shot 105 us in one run). */
#define HIAR_TUNE_MARGIN 0.03
/* A cached limit above this is refused: past the ladder's top, by far. */
#define HIAR_TUNE_LIMIT_MAX ((size_t)64 << 20)

typedef enum { HIAR_TUNED_DEFAULTS, HIAR_TUNED_CACHE, HIAR_TUNED_MEASURED } hiar_tune_from_t;

/* Device buffers: a ladder of 1 KB to 256 MB by x4 and 512 KB (11 sizes, tune_cache.c), and the paths timed
 * on it. */
#define HIAR_TUNE_DEV_NSIZES 11
typedef enum {
    HIAR_TUNE_DEV_BUILTIN, /* the plan's built-in choice (core/plan.c) */
    /* one group's kernels */
    HIAR_TUNE_DEV_LL,
    HIAR_TUNE_DEV_PUSH,
    HIAR_TUNE_DEV_PULL,
    HIAR_TUNE_DEV_TWOSHOT,
    /* ... two-shot with half and with twice its blocks by size, right after it (core/plan.c with_blocks): how
     * many blocks keep a link busy differs by fabric (PCIe's latency wants more requests in flight than
     * NVLink's), and fewer leave SMs to compute */
    HIAR_TUNE_DEV_TWOSHOT_HALF,
    HIAR_TUNE_DEV_TWOSHOT_DOUBLE,
    /* several groups on one host: the group over the host (its kernel by size), or the hierarchical paths */
    HIAR_TUNE_DEV_FLAT,
    HIAR_TUNE_DEV_HIER,
    /* ... the one kernel over groups (ipc-hier-twoshot) with half and twice its blocks by size, where the
     * hierarchical paths take it (right after hier, as above): on one H200 4 ranks as 0,1|2,3 took 1.42x the flat group's time at 4 MB with
     * 66 blocks a rank, about 16 KB a block a step */
    HIAR_TUNE_DEV_HIER_HALF,
    HIAR_TUNE_DEV_HIER_DOUBLE,
    /* one group with CUDA IPC: its kernel by size over pinned host memory instead (core/gpu.h alt), where
     * P2P works but is slower than the GPUs' links to host memory (P2P through a CPU's root complex) */
    HIAR_TUNE_DEV_PINNED,
    HIAR_TUNE_DEV_COUNT
} hiar_tune_dev_t;

/*
 * Device paths are chosen per mode: a call captured in a CUDA graph pays no
 * launch on the CPU, so its choice may differ from an eager call's (on one
 * H200, 2 ranks, bf16 at 1 MB: pull 7.7 us against push's 8.3 in a graph).
 */
#define HIAR_TUNE_DEV_NMODES 2
typedef enum { HIAR_TUNE_DEV_EAGER, HIAR_TUNE_DEV_GRAPH } hiar_tune_dev_mode_t;
const char *hiar_tune_dev_mode_name(int mode); /* "eager", "graph" */

/* The crossovers the plan takes (core/plan.h's tuned_* inputs); 0: never the small path. */
typedef struct {
    size_t shm_oneshot_max;
    size_t hier_oneshot_max;
    /* Device buffers: per mode, the path at each size of the device ladder (hiar_tune_dev_t; BUILTIN: the
     * plan's own), for messages nearest that size (hiar_tune_dev_bucket); device_n sizes, 0: none tuned. */
    unsigned char device[HIAR_TUNE_DEV_NMODES][HIAR_TUNE_DEV_NSIZES];
    int device_n;
} hiar_tune_limits_t;

/* The dtypes device paths are timed on: the kernels' costs differ by dtype (on one H200, 2 ranks, 1 MB
 * in a CUDA graph: pull 7.7 us against push's 8.3 on bf16, 9.8 against 7.8 on float32). */
#define HIAR_TUNE_DEV_NDTYPES 2
hiar_dtype_t hiar_tune_dev_dtype(int d); /* bfloat16, float32 */

/* The device paths' timings, agreed over the ranks (the max of each rank's best mean). */
typedef struct {
    /* [mode][dtype][path][size], us per call; < 0: not timed (no candidate there, dropped, or in a graph one
     * whose calls wait on the host) */
    double us[HIAR_TUNE_DEV_NMODES][HIAR_TUNE_DEV_NDTYPES][HIAR_TUNE_DEV_COUNT][HIAR_TUNE_DEV_NSIZES];
    int dropped[HIAR_TUNE_DEV_COUNT];                     /* failed the canary: never chosen */
    unsigned char builtin[HIAR_TUNE_DEV_NSIZES];          /* the plan's built-in path at each size */
    int nsizes;                                           /* sizes timed (the time bound may stop it early) */
} hiar_tune_dev_table_t;

/* Device ladder size i; the ladder size whose choice serves a message of bytes (the nearest on a log
 * scale), -1 above twice the ladder's top or past n sizes. */
size_t hiar_tune_dev_size(int i);
int hiar_tune_dev_bucket(size_t bytes, int n);
/* "builtin", "ipc-ll", "ipc-push", "ipc-pull", "ipc-twoshot", "ipc-twoshot-half", "ipc-twoshot-double", "flat",
 * "hier"; NULL past the end. */
const char *hiar_tune_dev_name(int k);
/*
 * Per size, from an agreed table, for calls of one mode: of the candidates
 * not dropped and timed in that mode on every dtype, the one whose worst ratio over the dtypes to the
 * built-in path's time is least, where that ratio is below 1 -
 * HIAR_TUNE_MARGIN (so it is faster on every dtype); where the built-in
 * path was dropped or not timed, the one whose worst ratio to each dtype's
 * best is least; else BUILTIN.
 */
void hiar_tune_dev_choose(const hiar_tune_dev_table_t *t, int mode, unsigned char choice[HIAR_TUNE_DEV_NSIZES]);

/* One crossover's timings, agreed over the ranks (the max of each rank's mean). */
typedef struct {
    const char *names[HIAR_TUNE_NCAND]; /* "oneshot", "twoshot"; "hier-oneshot", "hier" */
    double us[HIAR_TUNE_NCAND][HIAR_TUNE_NSIZES]; /* microseconds per call; < 0: not timed */
    int dropped[HIAR_TUNE_NCAND];                 /* failed the canary: never chosen */
    int nsizes;                                   /* ladder sizes timed (the time bound may stop it early) */
} hiar_tune_table_t;

/* A comm's tuning: where its limits came from, for the plan and hiar_comm_describe. */
typedef struct {
    hiar_tune_from_t from;
    hiar_tune_limits_t limits; /* unless from == HIAR_TUNED_DEFAULTS */
    int measured;              /* table holds a measurement (from == HIAR_TUNED_MEASURED) */
    hiar_tune_table_t table;
    int dev_measured;          /* dev holds a measurement */
    hiar_tune_dev_table_t dev;
    size_t chosen;             /* the table's chosen limit */
    double seconds;            /* the measurement's */
    char path[512];            /* the cache file read or written ("" if none) */
    char why[600];             /* HIAR_TUNED_DEFAULTS: why (room for a path) */
} hiar_tune_t;

/* Ladder size i (0 .. HIAR_TUNE_NSIZES - 1). */
size_t hiar_tune_size(int i);

/*
 * The crossover from an agreed table: the limit L (0, a ladder size, or
 * def) for which "small path up to L" takes a dropped candidate at the
 * fewest sizes, then costs the least, summed over the timed sizes as time
 * over the best time of that size.  A limit other than def must cost
 * HIAR_TUNE_MARGIN less than def; ties between others go to the smaller L.
 */
size_t hiar_tune_choose(const hiar_tune_table_t *t, size_t def);

/* What the choice depends on, for the signature; strings never NULL ("none"). */
typedef struct {
    int nranks;
    int ngroups;
    const int *group_sizes; /* [ngroups] of the host grouping */
    int nhosts;
    const char *host_transport;   /* "shm" or "none" */
    const char *device_transport; /* "ipc", "pinned", ... or "none" */
    const char *mpi;              /* MPI_Get_library_version's first line */
    const char *gpu;              /* "NVIDIA H200 sm_90 sms=132 driver=13000", "unknown" or "none" */
    const char *layout;           /* device buffers: "groups=2,2 shared=1 flat=1" (their grouping, GPUs shared by
                                   * ranks, the group over the host), or "none" */
    /* The slots calls are cut to (0: none): the host's shm slot, the device groups' smallest.  Their
     * defaults follow /dev/shm and HIAR_BUFFER_SIZE, and a smaller slot cuts a call into more pieces. */
    size_t host_slot, device_slot;
    /* The built-in one-shot limit of host buffers (core/plan.h), which a choice must beat: a cache timed
     * against another kept that one where nothing beat it. */
    size_t shm_oneshot_default;
} hiar_tune_facts_t;

/* The signature, one line: "hiar=0.1.0 ranks=4 groups=2,2 hosts=1 ...". */
hiar_result_t hiar_tune_signature(const hiar_tune_facts_t *f, char *out, size_t len);

/* FNV-1a, 64 bits, of a signature: its cache file's name, and the ranks' comparison of theirs. */
unsigned long long hiar_tune_hash(const char *signature);

/* The default cache file of a signature: $XDG_CACHE_HOME/hiar/tune-<hash>.txt, else ~/.cache/hiar/... */
hiar_result_t hiar_tune_default_path(const char *signature, char *out, size_t len);

/*
 * Writes the cache atomically: a temporary file of this pid in the same
 * folder, mode 0600, fsync, rename (two writers at once leave one whole
 * file); missing folders are made 0700.  table may be NULL.
 */
hiar_result_t hiar_tune_cache_write(const char *path, const char *signature, const hiar_tune_limits_t *l,
                                    const hiar_tune_table_t *table, const hiar_tune_dev_table_t *dev,
                                    double seconds);

typedef enum { HIAR_TUNE_CACHE_ABSENT, HIAR_TUNE_CACHE_IGNORED, HIAR_TUNE_CACHE_LOADED } hiar_tune_cache_t;

/*
 * Reads the cache at path for signature (NULL: any signature, as hiar-info
 * lists them; but device paths of another device ladder are not any): LOADED
 * with *l, ABSENT where there is no file, IGNORED where it is corrupt, of
 * another hiar version or another signature, or holds a limit out of range
 * (why says which; the caller logs it).  signature_out,
 * when not NULL, gets the file's signature.
 */
hiar_tune_cache_t hiar_tune_cache_read(const char *path, const char *signature, hiar_tune_limits_t *l,
                                       char *why, size_t whylen, char *signature_out, size_t siglen);

#endif
