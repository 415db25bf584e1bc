/*
 * hiar-bench: allreduce time and bandwidth of hiar beside MPI_Allreduce and
 * NCCL, measured the same way in one run, in nccl-tests' columns:
 *
 *     mpirun -np 4 hiar-bench -b 8 -e 64M -f 2 -d bfloat16 -o avg
 *
 * Per size and implementation: a check call on fresh inputs, WARMUP calls,
 * a barrier, then ITERS calls back to back under MPI_Wtime (device buffers:
 * until the stream is synchronized).
 *   time  = max over ranks of the per-rank mean time of one call
 *   algbw = bytes / time, busbw = algbw * 2(n-1)/n (nccl-tests' definition)
 * --split times hiar's parts the same way (bench-split.h).
 *
 * Exit status: 0 all results right, 1 a wrong result or a failed call,
 * 2 bad usage.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif
#ifdef HIAR_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef HIAR_HAVE_NCCL
#include <nccl.h>
#endif

#include "bench-check.h"
#include "bench-split.h"
#include "hiar.h"

/* The compared implementations, then --split's parts of hiar (bench-split.h). */
enum {
    IMPL_HIAR, IMPL_MPI, IMPL_NCCL, IMPL_MAIN_COUNT,
    IMPL_HIAR_INTRA = IMPL_MAIN_COUNT, IMPL_MPI_SHARD, IMPL_HIAR_FLAT, IMPL_COUNT
};
static const char *const impl_names[IMPL_COUNT] = {"hiar", "mpi", "nccl",
                                                   "hiar-intra", "mpi-shard", "hiar-flat"};
#define IMPL_BIT(_impl) (1u << (_impl))

typedef enum { MODE_AUTO, MODE_HOST, MODE_DEVICE } bench_mode_t;

/* Long options without a short form: values past any character. */
enum { OPT_IMPL = 256, OPT_CSV, OPT_NO_CHECK, OPT_GRAPH, OPT_INPLACE, OPT_MPI_DEVICE, OPT_SPLIT };

typedef struct {
    size_t min_bytes, max_bytes;
    int factor;
    hiar_dtype_t dtype;
    hiar_op_t op;
    int iters, warmup;
    bench_mode_t mode;
    unsigned impls; /* IMPL_BIT per implementation; 0: the default set */
    int csv, check, graph, inplace;
    int mpi_device; /* pass device buffers to MPI_Allreduce as they are */
    int split;      /* also time hiar's parts: intra, inter, flat */
} options_t;

/* Defaults, set through the option parser and shown by --help from here. */
static const struct {
    int opt;
    const char *value;
} defaults[] = {{'b', "8"}, {'e', "64M"}, {'f', "2"}, {'d', "float32"},
                {'o', "sum"}, {'n', "20"}, {'w', "5"}};

/* Ordered: ranks agree on the worst status so that they all take one branch. */
typedef enum { RUN_OK, RUN_NA, RUN_FAILED } run_t;

typedef struct {
    run_t status;
    double time_us;  /* max over ranks of the per-rank mean */
    long long wrong; /* wrong elements summed over ranks; -1: not checked */
} result_t;

typedef struct {
    long long wrong;
    int failed;
    double busbw_sum;
    int rows; /* sizes measured */
} totals_t;

typedef struct {
    options_t opt;
    int rank, nranks;
    int device; /* send/recv are GPU memory */
    size_t esize;
    void *send, *recv; /* recv == send with --inplace */
    void *host;        /* host memory: inputs, results to check, MPI staging */
    hiar_comm_t *comm; /* NULL when hiar is not measured */
    bench_split_t split; /* --split's communicators */
    MPI_Datatype mpi_type;
    MPI_Op mpi_op;
    int mpi_user_op; /* mpi_op was created here (half types) */
    /* The timed MPI_Allreduce runs on its own communicator, made after the GPU
     * is chosen: a PMPI tool (libhiar_mpi.so) that sets up per communicator
     * at the first call then sees the right GPU, not the bench's bookkeeping. */
    MPI_Comm mpi_comm;
    int mpi_staged;  /* MPI sees device data through b->host */
    int dead[IMPL_COUNT];            /* failed once: not run again */
    char na_reason[IMPL_COUNT][256]; /* why an implementation showed n/a */
    FILE *info; /* '#' lines: stdout, or stderr with --csv */
#ifdef HIAR_HAVE_CUDA
    cudaStream_t stream;
#endif
#ifdef HIAR_HAVE_NCCL
    ncclComm_t nccl;
#endif
} bench_t;

#define ERR_LEN 256

/* A byte no expected result is made of: unwritten elements fail the check. */
#define POISON 0x7f

/* ---- errors */

/* Setup and CUDA failures end the job: the CUDA context is lost anyway. */
__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    int rank = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hiar-bench: rank %d: %s\n", rank, msg); /* one write: ranks interleave */
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#ifdef HIAR_HAVE_CUDA
#define CUDA_DIE(_call)                                                                    \
    do {                                                                                   \
        cudaError_t cuda_err_ = (_call);                                                   \
        if (cuda_err_ != cudaSuccess)                                                      \
            die("%s: %s", #_call, cudaGetErrorString(cuda_err_));                          \
    } while (0)
#endif

#ifdef HIAR_HAVE_NCCL
#define NCCL_DIE(_call)                                                                    \
    do {                                                                                   \
        ncclResult_t nccl_rc_ = (_call);                                                   \
        if (nccl_rc_ != ncclSuccess)                                                       \
            die("%s: %s", #_call, ncclGetErrorString(nccl_rc_));                           \
    } while (0)
#endif

/* Usage error: the message for rank 0 to print; returns the exit status 2. */
__attribute__((format(printf, 2, 3))) static int bad(char *err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return 2;
}

/* ---- options */

static const char *default_of(int opt)
{
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (defaults[i].opt == opt)
            return defaults[i].value;
    return "";
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N hiar-bench [options]\n"
            "  -b MIN       smallest message in bytes, with K, M or G (default %s)\n"
            "  -e MAX       largest message (default %s)\n"
            "  -f FACTOR    size multiplier from row to row (default %s)\n"
            "  -d DTYPE     int32 int64 float16 bfloat16 float32 float64 uint8 int8, or\n"
            "               fp16 half bf16 f32 fp32 float f64 fp64 double (default %s)\n"
            "  -o OP        sum prod min max avg (default %s)\n"
            "  -n ITERS     timed calls per size and implementation (default %s)\n"
            "  -w WARMUP    untimed calls before them (default %s)\n"
            "  -m MODE      host or device buffers (default: device when built with CUDA\n"
            "               and a GPU is present)\n"
            "  --impl LIST  comma list of hiar, mpi, nccl (default hiar,mpi, plus nccl with\n"
            "               device buffers when built with NCCL)\n"
            "  --csv        CSV rows on stdout, '#' lines on stderr\n"
            "  --no-check   skip the result check\n"
            "  --graph      device buffers: time a CUDA graph of ITERS calls (mpi stays eager)\n"
            "  --inplace    sendbuf == recvbuf\n"
            "  --mpi-device device buffers go to MPI_Allreduce as they are (CUDA-aware MPI,\n"
            "               or MPI_Allreduce interposed by libhiar_mpi.so)\n"
            "  --split      several groups: also time hiar's parts, intra (hiar over one\n"
            "               group), inter (MPI_Allreduce of its shards), flat (hiar, one group)\n"
            "  -h, --help   this text\n"
            "Time is the max over ranks of the per-rank mean; busbw = algbw * 2(n-1)/n.\n"
            "Exit status: 0 results right, 1 a wrong result or a failed call, 2 bad usage.\n",
            default_of('b'), default_of('e'), default_of('f'), default_of('d'), default_of('o'),
            default_of('n'), default_of('w'));
}

/* "64M" -> 67108864: a positive decimal with an optional K, M or G (powers of 1024). */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    int shift = 0;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (errno || *end || v == 0 || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_dtype(const char *s, hiar_dtype_t *out)
{
    static const struct {
        const char *name;
        hiar_dtype_t dtype;
    } aliases[] = {{"fp16", HIAR_FLOAT16}, {"half", HIAR_FLOAT16},  {"bf16", HIAR_BFLOAT16},
                   {"f32", HIAR_FLOAT32},  {"fp32", HIAR_FLOAT32},  {"float", HIAR_FLOAT32},
                   {"f64", HIAR_FLOAT64},  {"fp64", HIAR_FLOAT64},  {"double", HIAR_FLOAT64}};

    for (int d = 0; d < HIAR_DTYPE_COUNT; d++)
        if (strcasecmp(s, hiar_dtype_name((hiar_dtype_t)d)) == 0) {
            *out = (hiar_dtype_t)d;
            return 0;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(s, aliases[i].name) == 0) {
            *out = aliases[i].dtype;
            return 0;
        }
    return -1;
}

static int parse_op(const char *s, hiar_op_t *out)
{
    for (int op = 0; op < HIAR_OP_COUNT; op++)
        if (strcasecmp(s, hiar_op_name((hiar_op_t)op)) == 0) {
            *out = (hiar_op_t)op;
            return 0;
        }
    return -1;
}

/* "hiar,nccl" -> IMPL_BIT(IMPL_HIAR) | IMPL_BIT(IMPL_NCCL). */
static int parse_impls(const char *list, unsigned *out)
{
    unsigned set = 0;

    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        int i = 0;
        while (i < IMPL_MAIN_COUNT && !(strlen(impl_names[i]) == len && strncmp(p, impl_names[i], len) == 0))
            i++;
        if (i == IMPL_MAIN_COUNT)
            return -1;
        set |= IMPL_BIT(i);
        p += len;
        if (*p == '\0')
            break;
    }
    *out = set;
    return 0;
}

static int set_option(options_t *o, int opt, const char *arg, char *err)
{
    switch (opt) {
    case 'b':
    case 'e':
        if (parse_size(arg, opt == 'b' ? &o->min_bytes : &o->max_bytes))
            return bad(err, "-%c '%s': expected a size in bytes such as 8, 64K, 1M", opt, arg);
        return 0;
    case 'f':
        if (parse_int(arg, 2, &o->factor))
            return bad(err, "-f '%s': expected an integer factor of at least 2", arg);
        return 0;
    case 'd':
        if (parse_dtype(arg, &o->dtype))
            return bad(err, "-d '%s': expected int32, int64, float16, bfloat16, float32, "
                            "float64, uint8 or int8", arg);
        return 0;
    case 'o':
        if (parse_op(arg, &o->op))
            return bad(err, "-o '%s': expected sum, prod, min, max or avg", arg);
        return 0;
    case 'n':
    case 'w':
        if (parse_int(arg, opt == 'n', opt == 'n' ? &o->iters : &o->warmup))
            return bad(err, "-%c '%s': expected an integer of at least %d", opt, arg, opt == 'n');
        return 0;
    case 'm':
        if (strcmp(arg, "host") != 0 && strcmp(arg, "device") != 0)
            return bad(err, "-m '%s': expected host or device", arg);
        o->mode = arg[0] == 'h' ? MODE_HOST : MODE_DEVICE;
        return 0;
    case OPT_IMPL:
        if (parse_impls(arg, &o->impls))
            return bad(err, "--impl '%s': expected a comma list of hiar, mpi, nccl", arg);
        return 0;
    case OPT_CSV: o->csv = 1; return 0;
    case OPT_NO_CHECK: o->check = 0; return 0;
    case OPT_GRAPH: o->graph = 1; return 0;
    case OPT_MPI_DEVICE: o->mpi_device = 1; return 0;
    case OPT_SPLIT: o->split = 1; return 0;
    default: o->inplace = 1; return 0; /* OPT_INPLACE */
    }
}

/* What the build cannot do, and limits between options. */
static int check_options(const options_t *o, char *err)
{
#ifndef HIAR_HAVE_CUDA
    if (o->mode == MODE_DEVICE || o->graph)
        return bad(err, "%s: this hiar-bench was built without CUDA", o->graph ? "--graph" : "-m device");
#endif
#ifndef HIAR_HAVE_NCCL
    if (o->impls & IMPL_BIT(IMPL_NCCL))
        return bad(err, "--impl nccl: this hiar-bench was built without NCCL");
#endif
    if (o->min_bytes > o->max_bytes)
        return bad(err, "-b %zu is larger than -e %zu", o->min_bytes, o->max_bytes);
    if (o->max_bytes / hiar_dtype_size(o->dtype) > INT_MAX)
        return bad(err, "-e %zu: more than INT_MAX elements of %s, the most one MPI call takes",
                   o->max_bytes, hiar_dtype_name(o->dtype));
    return 0;
}

/* Returns 0, 1 for --help, or 2 with err set. */
static int parse_options(int argc, char **argv, options_t *o, char *err)
{
    static const struct option longopts[] = {
        {"impl", required_argument, NULL, OPT_IMPL}, {"csv", no_argument, NULL, OPT_CSV},
        {"no-check", no_argument, NULL, OPT_NO_CHECK}, {"graph", no_argument, NULL, OPT_GRAPH},
        {"inplace", no_argument, NULL, OPT_INPLACE},   {"help", no_argument, NULL, 'h'},
        {"mpi-device", no_argument, NULL, OPT_MPI_DEVICE}, {"split", no_argument, NULL, OPT_SPLIT},
        {NULL, 0, NULL, 0}};
    int opt;

    *o = (options_t){.check = 1};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        set_option(o, defaults[i].opt, defaults[i].value, err);
    opterr = 0; /* every rank parses; rank 0 alone reports */
    while ((opt = getopt_long(argc, argv, ":b:e:f:d:o:n:w:m:h", longopts, NULL)) != -1) {
        if (opt == 'h')
            return 1;
        /* optopt: the unknown short option; 0 or a long option's value otherwise. */
        if (opt == '?' && optopt > 0 && optopt < OPT_IMPL)
            return bad(err, "unknown option '-%c'", optopt);
        if (opt == '?')
            return bad(err, "unknown option, or a value where none is taken: '%s'", argv[optind - 1]);
        if (opt == ':')
            return bad(err, "option '%s' needs a value", argv[optind - 1]);
        if (set_option(o, opt, optarg, err))
            return 2;
    }
    if (optind < argc)
        return bad(err, "unexpected argument '%s'", argv[optind]);
    return check_options(o, err);
}

/* ---- setup */

#ifdef HIAR_HAVE_CUDA
static int gpu_count(void)
{
    int n = 0;

    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
#endif

/* Host or device buffers, and the default implementations; alike on every rank. */
static int resolve_mode(bench_t *b, char *err)
{
    options_t *o = &b->opt;
    int ngpu = 0;

#ifdef HIAR_HAVE_CUDA
    if (o->mode != MODE_HOST) {
        ngpu = gpu_count();
        MPI_Allreduce(MPI_IN_PLACE, &ngpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
#endif
    if (o->mode == MODE_DEVICE && ngpu == 0)
        return bad(err, "-m device: no GPU (cudaGetDeviceCount found none on some rank)");
    b->device = o->mode == MODE_DEVICE || (o->mode == MODE_AUTO && ngpu > 0);
    if (!o->impls) {
        o->impls = IMPL_BIT(IMPL_HIAR) | IMPL_BIT(IMPL_MPI);
#ifdef HIAR_HAVE_NCCL
        if (b->device)
            o->impls |= IMPL_BIT(IMPL_NCCL);
#endif
    }
    /* Not device here with -m auto means no GPU was found. */
    if (!b->device && (o->impls & IMPL_BIT(IMPL_NCCL)))
        return bad(err, "--impl nccl needs device buffers (-m device)%s",
                   o->mode == MODE_AUTO ? "; no GPU found" : "");
    if (!b->device && o->graph)
        return bad(err, "--graph needs device buffers (-m device)%s",
                   o->mode == MODE_AUTO ? "; no GPU found" : "");
    if (o->split && !(o->impls & IMPL_BIT(IMPL_HIAR)))
        return bad(err, "--split needs hiar in --impl");
    if (o->split)
        o->impls |= IMPL_BIT(IMPL_HIAR_INTRA) | IMPL_BIT(IMPL_MPI_SHARD) | IMPL_BIT(IMPL_HIAR_FLAT);
    return 0;
}

#ifdef HIAR_HAVE_CUDA
/* One GPU per rank: the rank's index on its host, round robin over the host's GPUs. */
static void device_setup(bench_t *b)
{
    MPI_Comm local;
    int local_rank, ngpu;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    CUDA_DIE(cudaGetDeviceCount(&ngpu));
    CUDA_DIE(cudaSetDevice(local_rank % ngpu));
    CUDA_DIE(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
}
#endif

/*
 * GPU memory in device mode, or, with `host`, pinned host memory there, so
 * that MPI's staging copies run as fast as a careful user's would.
 */
static void *alloc(const bench_t *b, size_t bytes, int host)
{
    void *p = NULL;

#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        CUDA_DIE(host ? cudaMallocHost(&p, bytes) : cudaMalloc(&p, bytes));
        return p;
    }
#else
    (void)b;
    (void)host;
#endif
    if (!(p = malloc(bytes)))
        die("cannot allocate %zu bytes", bytes);
    return p;
}

static void release(const bench_t *b, void *p, int host)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        if (host)
            cudaFreeHost(p);
        else
            cudaFree(p);
        return;
    }
#else
    (void)b;
    (void)host;
#endif
    free(p);
}

/* ---- host <-> benchmark buffers */

static void stream_sync(const bench_t *b)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        CUDA_DIE(cudaStreamSynchronize(b->stream));
#else
    (void)b;
#endif
}

/* memcpy that also reaches GPU memory; complete on return. */
static void copy(const bench_t *b, void *dst, const void *src, size_t bytes)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        CUDA_DIE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, b->stream));
        stream_sync(b);
        return;
    }
#else
    (void)b;
#endif
    memcpy(dst, src, bytes);
}

static void poison(const bench_t *b, void *buf, size_t bytes)
{
#ifdef HIAR_HAVE_CUDA
    if (b->device) {
        CUDA_DIE(cudaMemsetAsync(buf, POISON, bytes, b->stream));
        stream_sync(b);
        return;
    }
#else
    (void)b;
#endif
    memset(buf, POISON, bytes);
}

/* ---- implementations: one allreduce of `count` elements each */

static int is_hiar(int impl)
{
    return impl == IMPL_HIAR || impl == IMPL_HIAR_INTRA || impl == IMPL_HIAR_FLAT;
}

/* The hiar communicator an implementation calls; NULL: not made (flat: n/a). */
static hiar_comm_t *comm_of(const bench_t *b, int impl)
{
    switch (impl) {
    case IMPL_HIAR_INTRA: return b->split.intra;
    case IMPL_HIAR_FLAT: return b->split.flat;
    default: return b->comm;
    }
}

static run_t run_hiar(bench_t *b, int impl, size_t count)
{
    hiar_stream_t stream = NULL;
    hiar_result_t rc;

#ifdef HIAR_HAVE_CUDA
    stream = b->stream;
#endif
    rc = hiar_allreduce(b->send, b->recv, count, b->opt.dtype, b->opt.op, comm_of(b, impl), stream);
    if (rc == HIAR_SUCCESS)
        return RUN_OK;
    if (rc == HIAR_UNSUPPORTED && b->device) {
        snprintf(b->na_reason[impl], sizeof b->na_reason[impl], "%s", hiar_last_error());
        return RUN_NA;
    }
    fprintf(stderr, "hiar-bench: rank %d: %s: hiar_allreduce: %s: %s\n", b->rank, impl_names[impl],
            hiar_strerror(rc), hiar_last_error());
    return RUN_FAILED;
}

/* MPI has no half types: reduce their bits in float, round back to nearest even. */
#define HALF_OP(_name, _load, _store, _expr)                                               \
    static void _name(void *in, void *inout, int *len, MPI_Datatype *type)                 \
    {                                                                                      \
        const uint16_t *a = in;                                                            \
        uint16_t *b = inout;                                                               \
        (void)type;                                                                        \
        for (int i = 0; i < *len; i++) {                                                   \
            float x = _load(a[i]), y = _load(b[i]);                                        \
            b[i] = _store(_expr);                                                          \
        }                                                                                  \
    }
#define HALF_OPS(_kind, _load, _store)                                                     \
    HALF_OP(_kind##_sum, _load, _store, x + y)                                             \
    HALF_OP(_kind##_prod, _load, _store, x * y)                                            \
    HALF_OP(_kind##_min, _load, _store, x < y ? x : y)                                     \
    HALF_OP(_kind##_max, _load, _store, x > y ? x : y)
HALF_OPS(fp16, bench_half_to_float, bench_float_to_half)
HALF_OPS(bf16, bench_bf16_to_float, bench_float_to_bf16)

/* [bfloat16?][HIAR_SUM..HIAR_MAX] */
static MPI_User_function *const half_ops[2][4] = {{fp16_sum, fp16_prod, fp16_min, fp16_max},
                                                  {bf16_sum, bf16_prod, bf16_min, bf16_max}};

static MPI_Datatype mpi_type_of(hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_INT32: return MPI_INT32_T;
    case HIAR_INT64: return MPI_INT64_T;
    case HIAR_FLOAT32: return MPI_FLOAT;
    case HIAR_FLOAT64: return MPI_DOUBLE;
    case HIAR_UINT8: return MPI_UINT8_T;
    case HIAR_INT8: return MPI_INT8_T;
    default: return MPI_UINT16_T; /* float16, bfloat16: reduced by half_ops */
    }
}

static MPI_Op mpi_op_of(hiar_op_t op)
{
    switch (op) {
    case HIAR_PROD: return MPI_PROD;
    case HIAR_MIN: return MPI_MIN;
    case HIAR_MAX: return MPI_MAX;
    default: return MPI_SUM; /* HIAR_SUM; HIAR_AVG divides afterwards */
    }
}

static int mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

static void mpi_setup(bench_t *b)
{
    hiar_dtype_t dtype = b->opt.dtype;
    hiar_op_t op = b->opt.op == HIAR_AVG ? HIAR_SUM : b->opt.op;

    MPI_Comm_dup(MPI_COMM_WORLD, &b->mpi_comm);
    b->mpi_type = mpi_type_of(dtype);
    b->mpi_op = mpi_op_of(op);
    b->mpi_user_op = dtype == HIAR_FLOAT16 || dtype == HIAR_BFLOAT16;
    if (b->mpi_user_op)
        MPI_Op_create(half_ops[dtype == HIAR_BFLOAT16][op], 1, &b->mpi_op);
    /* AVG's division runs on the host, so it is staged even with CUDA-aware MPI. */
    b->mpi_staged = b->device && !((mpi_cuda_aware() || b->opt.mpi_device) && b->opt.op != HIAR_AVG);
}

/* AVG on top of MPI_SUM, as an MPI user writes it; integers truncate toward zero. */
static void divide(void *buf, size_t count, hiar_dtype_t dtype, int n)
{
#define DIVIDE(_type)                                                                      \
    for (size_t i = 0; i < count; i++)                                                     \
        ((_type *)buf)[i] = (_type)(((_type *)buf)[i] / n)
#define DIVIDE_HALF(_load, _store)                                                         \
    for (size_t i = 0; i < count; i++)                                                     \
        ((uint16_t *)buf)[i] = _store(_load(((uint16_t *)buf)[i]) / (float)n)

    switch (dtype) {
    case HIAR_INT32: DIVIDE(int32_t); break;
    case HIAR_INT64: DIVIDE(int64_t); break;
    case HIAR_FLOAT16: DIVIDE_HALF(bench_half_to_float, bench_float_to_half); break;
    case HIAR_BFLOAT16: DIVIDE_HALF(bench_bf16_to_float, bench_float_to_bf16); break;
    case HIAR_FLOAT32: DIVIDE(float); break;
    case HIAR_FLOAT64: DIVIDE(double); break;
    case HIAR_UINT8: DIVIDE(uint8_t); break;
    default: DIVIDE(int8_t); break; /* HIAR_INT8 */
    }
#undef DIVIDE
#undef DIVIDE_HALF
}

/*
 * MPI_Allreduce over `comm` of elements [first, first + count), as users get
 * it: device buffers go through host memory (copies timed) unless MPI is
 * CUDA-aware; AVG divides by all ranks.  Errors abort (MPI's default).
 */
static void mpi_range(bench_t *b, MPI_Comm comm, size_t first, size_t count)
{
    size_t offset = first * b->esize, bytes = count * b->esize;
    char *send = (char *)b->send + offset, *recv = (char *)b->recv + offset;
    char *host = (char *)b->host + offset;
    const void *mpi_send = b->opt.inplace ? MPI_IN_PLACE : send;
    void *mpi_recv = recv;

    if (b->mpi_staged) {
        copy(b, host, send, bytes);
        mpi_send = MPI_IN_PLACE;
        mpi_recv = host;
    }
    MPI_Allreduce(mpi_send, mpi_recv, (int)count, b->mpi_type, b->mpi_op, comm);
    if (b->opt.op == HIAR_AVG)
        divide(mpi_recv, count, b->opt.dtype, b->nranks);
    if (b->mpi_staged)
        copy(b, recv, host, bytes);
}

static run_t run_mpi(bench_t *b, size_t count)
{
    mpi_range(b, b->mpi_comm, 0, count);
    return RUN_OK;
}

/* --split's inter: this rank's shards of the message, one after the other, as hiar's MPI step. */
static run_t run_mpi_shards(bench_t *b, size_t count)
{
    for (int sh = 0; sh < b->split.nshards; sh++) {
        size_t first, n;
        if (b->split.shard_comm[sh] == MPI_COMM_NULL)
            continue;
        bench_split_shard(&b->split, count, sh, &first, &n);
        mpi_range(b, b->split.shard_comm[sh], first, n);
    }
    return RUN_OK;
}

#ifdef HIAR_HAVE_NCCL
static ncclDataType_t nccl_type_of(hiar_dtype_t dtype)
{
    switch (dtype) {
    case HIAR_INT32: return ncclInt32;
    case HIAR_INT64: return ncclInt64;
    case HIAR_FLOAT16: return ncclFloat16;
    case HIAR_BFLOAT16: return ncclBfloat16;
    case HIAR_FLOAT32: return ncclFloat32;
    case HIAR_FLOAT64: return ncclFloat64;
    case HIAR_UINT8: return ncclUint8;
    default: return ncclInt8; /* HIAR_INT8 */
    }
}

static ncclRedOp_t nccl_op_of(hiar_op_t op)
{
    switch (op) {
    case HIAR_PROD: return ncclProd;
    case HIAR_MIN: return ncclMin;
    case HIAR_MAX: return ncclMax;
    case HIAR_AVG: return ncclAvg;
    default: return ncclSum;
    }
}

static void nccl_setup(bench_t *b)
{
    ncclUniqueId id;

    if (b->rank == 0)
        NCCL_DIE(ncclGetUniqueId(&id));
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    NCCL_DIE(ncclCommInitRank(&b->nccl, b->nranks, id, b->rank));
}

static run_t run_nccl(bench_t *b, size_t count)
{
    ncclResult_t rc = ncclAllReduce(b->send, b->recv, count, nccl_type_of(b->opt.dtype),
                                    nccl_op_of(b->opt.op), b->nccl, b->stream);

    if (rc == ncclSuccess)
        return RUN_OK;
    fprintf(stderr, "hiar-bench: rank %d: ncclAllReduce: %s: %s\n", b->rank, ncclGetErrorString(rc),
            ncclGetLastError(b->nccl));
    return RUN_FAILED;
}
#endif

static run_t run_once(bench_t *b, int impl, size_t count)
{
    switch (impl) {
    case IMPL_HIAR:
    case IMPL_HIAR_INTRA:
    case IMPL_HIAR_FLAT: return run_hiar(b, impl, count);
    case IMPL_MPI: return run_mpi(b, count);
    case IMPL_MPI_SHARD: return run_mpi_shards(b, count);
#ifdef HIAR_HAVE_NCCL
    case IMPL_NCCL: return run_nccl(b, count);
#endif
    default: return RUN_FAILED; /* not built: options reject it */
    }
}

/* ---- measuring */

static run_t agree(run_t status)
{
    int v = (int)status;

    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return (run_t)v;
}

/* `n` calls back to back, up to the first that does not succeed. */
static run_t run_many(bench_t *b, int impl, size_t count, int n)
{
    run_t status = RUN_OK;

    for (int i = 0; i < n && status == RUN_OK; i++)
        status = run_once(b, impl, count);
    return status;
}

/*
 * Float AVG: hiar and MPI divide the exact sum once (1 ulp); NCCL sums
 * inputs pre-multiplied by 1/n, rounding every term and partial sum.
 */
static int avg_ulps(const bench_t *b, int impl)
{
    if (b->opt.op != HIAR_AVG)
        return 0;
    return impl == IMPL_NCCL ? 2 * b->nranks : 1;
}

/*
 * hiar reports a failure of an asynchronous call (device buffers: a kernel
 * that gave up on a peer) only afterwards; ask once the stream is idle.
 */
static run_t async_status(bench_t *b, int impl, run_t status)
{
    hiar_result_t error = HIAR_SUCCESS, rc;

    if (status != RUN_OK || !is_hiar(impl) || !b->device)
        return status;
    rc = hiar_comm_get_async_error(comm_of(b, impl), &error);
    if (rc == HIAR_SUCCESS && error == HIAR_SUCCESS)
        return RUN_OK;
    fprintf(stderr, "hiar-bench: rank %d: %s: hiar_allreduce on the GPU: %s: %s\n", b->rank,
            impl_names[impl], hiar_strerror(rc != HIAR_SUCCESS ? rc : error), hiar_last_error());
    return RUN_FAILED;
}

/*
 * The ranks whose inputs an implementation reduces, and this rank's index
 * among them: --split's intra reduces over this rank's group only.
 */
static void reduced_ranks(const bench_t *b, int impl, int *rank, int *nranks)
{
    *rank = impl == IMPL_HIAR_INTRA ? b->split.local_rank : b->rank;
    *nranks = impl == IMPL_HIAR_INTRA ? b->split.local_size : b->nranks;
}

/* One call on fresh inputs; *wrong: elements off the reference, summed over ranks. */
static run_t check(bench_t *b, int impl, size_t count, long long *wrong)
{
    size_t bytes = count * b->esize;
    long long mine;
    run_t status;
    int rank, nranks;

    reduced_ranks(b, impl, &rank, &nranks);
    bench_check_fill(b->host, count, b->opt.dtype, b->opt.op, rank, nranks);
    copy(b, b->send, b->host, bytes);
    if (!b->opt.inplace)
        poison(b, b->recv, bytes);
    status = run_once(b, impl, count);
    stream_sync(b);
    status = agree(async_status(b, impl, status));
    if (status != RUN_OK)
        return status;
    copy(b, b->host, b->recv, bytes);
    mine = (long long)bench_check_count(b->host, count, b->opt.dtype, b->opt.op, nranks,
                                        avg_ulps(b, impl));
    MPI_Allreduce(&mine, wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return RUN_OK;
}

static run_t warm_up(bench_t *b, int impl, size_t count)
{
    run_t status = run_many(b, impl, count, b->opt.warmup);

    stream_sync(b);
    return agree(async_status(b, impl, status));
}

static run_t time_eager(bench_t *b, int impl, size_t count, double *seconds)
{
    run_t status = warm_up(b, impl, count);
    double t0;

    if (status != RUN_OK)
        return status;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    status = run_many(b, impl, count, b->opt.iters);
    stream_sync(b);
    *seconds = (MPI_Wtime() - t0) / b->opt.iters;
    return agree(async_status(b, impl, status));
}

#ifdef HIAR_HAVE_CUDA
/* ITERS calls captured into *exec; the warm-up runs eagerly first (NCCL connects then). */
static run_t capture(bench_t *b, int impl, size_t count, cudaGraphExec_t *exec)
{
    cudaGraph_t graph = NULL;
    cudaError_t err;
    run_t status = warm_up(b, impl, count);

    if (status != RUN_OK)
        return status;
    CUDA_DIE(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
    status = run_many(b, impl, count, b->opt.iters);
    err = cudaStreamEndCapture(b->stream, &graph);
    if (status == RUN_OK && err != cudaSuccess) {
        fprintf(stderr, "hiar-bench: rank %d: %s calls cannot be captured in a CUDA graph: %s\n",
                b->rank, impl_names[impl], cudaGetErrorString(err));
        status = RUN_FAILED;
    }
    (void)cudaGetLastError(); /* a broken capture's error is not sticky: forget it */
    status = agree(status);
    if (status == RUN_OK)
        CUDA_DIE(cudaGraphInstantiateWithFlags(exec, graph, 0));
    if (graph)
        cudaGraphDestroy(graph);
    return status;
}

static run_t time_graph(bench_t *b, int impl, size_t count, double *seconds)
{
    cudaGraphExec_t exec;
    run_t status = capture(b, impl, count, &exec);
    double t0;

    if (status != RUN_OK)
        return status;
    CUDA_DIE(cudaGraphLaunch(exec, b->stream)); /* first replay uploads the graph */
    stream_sync(b);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    CUDA_DIE(cudaGraphLaunch(exec, b->stream));
    stream_sync(b);
    *seconds = (MPI_Wtime() - t0) / b->opt.iters;
    cudaGraphExecDestroy(exec);
    return agree(async_status(b, impl, RUN_OK));
}
#endif

#ifdef HIAR_HAVE_CUDA
/* MPI calls cannot be captured in a graph: they stay eager under --graph. */
static int is_mpi(int impl)
{
    return impl == IMPL_MPI || impl == IMPL_MPI_SHARD;
}
#endif

static run_t time_calls(bench_t *b, int impl, size_t count, double *seconds)
{
#ifdef HIAR_HAVE_CUDA
    if (b->opt.graph && !is_mpi(impl))
        return time_graph(b, impl, count, seconds);
#endif
    return time_eager(b, impl, count, seconds);
}

/* The result check applies to all but --split's inter (several shards, each over its own ranks). */
static int checked(const bench_t *b, int impl)
{
    return b->opt.check && impl != IMPL_MPI_SHARD;
}

/*
 * Check, warm up, time; an implementation that failed once is not run again,
 * one whose hiar comm could not be made (--split's flat) shows n/a.
 */
static result_t measure(bench_t *b, int impl, size_t count)
{
    result_t r = {RUN_FAILED, 0.0, -1};
    double seconds = 0.0, slowest;

    if (b->dead[impl])
        return r;
    if (is_hiar(impl) && !comm_of(b, impl)) {
        snprintf(b->na_reason[impl], sizeof b->na_reason[impl], "%s", b->split.flat_na);
        r.status = RUN_NA;
        return r;
    }
    r.status = checked(b, impl) ? check(b, impl, count, &r.wrong) : RUN_OK;
    if (r.status == RUN_OK)
        r.status = time_calls(b, impl, count, &seconds);
    MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    r.time_us = slowest * 1e6;
    b->dead[impl] = r.status == RUN_FAILED;
    return r;
}

/* ---- output */

/* Row layout: 4 leading columns, a 33-character group per implementation, ratios. */
#define LEAD_W 42
#define GROUP_W 33

static double algbw(size_t bytes, double time_us)
{
    return (double)bytes / time_us / 1e3; /* GB/s */
}

static double busbw(int nranks, size_t bytes, double time_us)
{
    return algbw(bytes, time_us) * 2.0 * (nranks - 1) / nranks;
}

/*
 * What one call reduces, for its bandwidth: the message over all ranks;
 * --split's intra over the largest group, its inter one shard over the groups.
 */
static void reduced_size(const bench_t *b, int impl, size_t count, size_t *bytes, int *nranks)
{
    size_t first;

    *bytes = count * b->esize;
    *nranks = impl == IMPL_HIAR_INTRA ? b->split.nshards
              : impl == IMPL_MPI_SHARD ? b->split.ngroups : b->nranks;
    if (impl == IMPL_MPI_SHARD) {
        bench_split_shard(&b->split, count, 0, &first, &count);
        *bytes = count * b->esize;
    }
}

static int has(const bench_t *b, int impl)
{
    return (b->opt.impls & IMPL_BIT(impl)) != 0;
}

/* Implementations compared with hiar in the ratio columns. */
static int has_ratio(const bench_t *b, int impl)
{
    return impl != IMPL_HIAR && impl < IMPL_MAIN_COUNT && has(b, IMPL_HIAR) && has(b, impl);
}

static int ratio_count(const bench_t *b)
{
    int n = 0;

    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        n += has_ratio(b, i);
    return n;
}

/* The last implementation with columns of its own in the table. */
static int last_impl(const bench_t *b)
{
    int last = IMPL_MAIN_COUNT - 1;

    while (last > 0 && !has(b, last))
        last--;
    return last;
}

/*
 * Three lines: implementation names centred over their columns, names, units
 * (--split: its time columns and ratio follow the ratios).
 */
static void print_table_header(const bench_t *b)
{
    int last = last_impl(b);

    printf("#%*s", LEAD_W - 1, "");
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i)) {
            int len = (int)strlen(impl_names[i]), pad = (GROUP_W - len) / 2;
            printf("%*s%s%*s", pad, "", impl_names[i], i == last ? 0 : GROUP_W - pad - len, "");
        }
    printf("\n#%11s %12s %9s %6s", "size", "count", "type", "redop");
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i))
            printf(" %9s %7s %7s %6s", "time", "algbw", "busbw", "#wrong");
    for (int i = 0; i < IMPL_MAIN_COUNT; i++)
        if (has_ratio(b, i)) {
            char name[16];
            snprintf(name, sizeof name, "hiar/%s", impl_names[i]);
            printf(" %10s", name);
        }
    if (b->opt.split)
        bench_split_print_names();
    /* Units stop at busbw: the blanks below type, redop and #wrong are skipped over. */
    printf("\n#%11s %12s%17s", "(B)", "(elements)", "");
    for (int i = 0, first = 1; i < IMPL_MAIN_COUNT; i++)
        if (has(b, i)) {
            printf("%*s %9s %7s %7s", first ? 0 : 7, "", "(us)", "(GB/s)", "(GB/s)");
            first = 0;
        }
    if (b->opt.split) {
        printf("%*s", 7 + 11 * ratio_count(b), ""); /* the last #wrong, the ratios */
        bench_split_print_units();
    }
    printf("\n");
}

/* A result as a --split cell: its time, or the word the table shows instead. */
static bench_split_cell_t split_cell(const result_t *r)
{
    if (r->status == RUN_OK)
        return (bench_split_cell_t){r->time_us, NULL};
    return (bench_split_cell_t){0.0, r->status == RUN_NA ? "n/a" : "failed"};
}

static void print_row(const bench_t *b, size_t count, const result_t *res)
{
    size_t bytes = count * b->esize;

    printf("%12zu %12zu %9s %6s", bytes, count, hiar_dtype_name(b->opt.dtype), hiar_op_name(b->opt.op));
    for (int i = 0; i < IMPL_MAIN_COUNT; i++) {
        const result_t *r = &res[i];
        char wrong[24] = "n/a";
        if (!has(b, i))
            continue;
        if (r->status != RUN_OK) {
            const char *what = r->status == RUN_NA ? "n/a" : "failed";
            printf(" %9s %7s %7s %6s", what, what, what, what);
            continue;
        }
        if (r->wrong >= 0)
            snprintf(wrong, sizeof wrong, "%lld", r->wrong);
        printf(" %9.2f %7.2f %7.2f %6s", r->time_us, algbw(bytes, r->time_us),
               busbw(b->nranks, bytes, r->time_us), wrong);
    }
    for (int i = 0; i < IMPL_MAIN_COUNT; i++) {
        if (!has_ratio(b, i))
            continue;
        if (res[IMPL_HIAR].status == RUN_OK && res[i].status == RUN_OK)
            printf(" %10.2f", res[IMPL_HIAR].time_us / res[i].time_us);
        else
            printf(" %10s", "n/a");
    }
    if (b->opt.split)
        bench_split_print_row(split_cell(&res[IMPL_HIAR_INTRA]), split_cell(&res[IMPL_MPI_SHARD]),
                              split_cell(&res[IMPL_HIAR_FLAT]), split_cell(&res[IMPL_HIAR]));
    printf("\n");
    fflush(stdout);
}

/* size_bytes and count: the message; algbw and busbw: what the implementation reduced. */
static void print_csv_rows(const bench_t *b, size_t count, const result_t *res)
{
    for (int i = 0; i < IMPL_COUNT; i++) {
        const result_t *r = &res[i];
        size_t bytes;
        int nranks;
        if (!has(b, i))
            continue;
        reduced_size(b, i, count, &bytes, &nranks);
        printf("%zu,%zu,%s,%s,%s,", count * b->esize, count, hiar_dtype_name(b->opt.dtype),
               hiar_op_name(b->opt.op), impl_names[i]);
        if (r->status == RUN_OK)
            printf("%.3f,%.4f,%.4f,", r->time_us, algbw(bytes, r->time_us),
                   busbw(nranks, bytes, r->time_us));
        else
            printf("n/a,n/a,n/a,");
        if (r->status == RUN_OK && r->wrong >= 0)
            printf("%lld\n", r->wrong);
        else
            printf("n/a\n");
    }
    fflush(stdout);
}

static void print_footer(const bench_t *b, const totals_t *totals)
{
    for (int i = 0; i < IMPL_COUNT; i++) {
        const totals_t *t = &totals[i];
        if (!has(b, i))
            continue;
        if (!checked(b, i))
            fprintf(b->info, "# Out of bounds values : not checked (%s)\n", impl_names[i]);
        else if (t->wrong || t->failed || t->rows)
            fprintf(b->info, "# Out of bounds values : %lld %s (%s)\n", t->wrong,
                    t->wrong || t->failed ? "FAILED" : "OK", impl_names[i]);
        else
            fprintf(b->info, "# Out of bounds values : n/a (%s)\n", impl_names[i]);
        if (t->rows)
            fprintf(b->info, "# Avg bus bandwidth    : %.4f (%s)\n", t->busbw_sum / t->rows,
                    impl_names[i]);
        else
            fprintf(b->info, "# Avg bus bandwidth    : n/a (%s)\n", impl_names[i]);
        if (b->na_reason[i][0])
            fprintf(b->info, "# %s n/a: %s\n", impl_names[i], b->na_reason[i]);
    }
}

/* A line per rank: pid, host and GPU, as nccl-tests lists them. */
static void print_ranks(const bench_t *b)
{
    char line[256], host[MPI_MAX_PROCESSOR_NAME], *all = NULL;
    int len, n;

    MPI_Get_processor_name(host, &len);
    n = snprintf(line, sizeof line, "#  Rank %3d Pid %7d on %.64s", b->rank, (int)getpid(), host);
#ifdef HIAR_HAVE_CUDA
    if (b->device && n > 0 && (size_t)n < sizeof line) {
        struct cudaDeviceProp prop;
        char bus[32];
        int dev;
        CUDA_DIE(cudaGetDevice(&dev));
        CUDA_DIE(cudaGetDeviceProperties(&prop, dev));
        CUDA_DIE(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
        snprintf(line + n, sizeof line - (size_t)n, " device %d [%.16s] %.64s", dev, bus, prop.name);
    }
#else
    (void)n;
#endif
    if (b->rank == 0 && !(all = malloc(sizeof line * (size_t)b->nranks)))
        die("cannot allocate the rank table");
    MPI_Gather(line, sizeof line, MPI_CHAR, all, sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; b->rank == 0 && r < b->nranks; r++)
        fprintf(b->info, "%s\n", all + r * sizeof line);
    free(all);
}

/* hiar_comm_describe's text, each line behind "# ". */
static void print_describe(const bench_t *b)
{
    char *text = NULL, *save = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    hiar_result_t rc;

    if (!mem)
        die("open_memstream: %s", strerror(errno));
    rc = hiar_comm_describe(b->comm, mem);
    fclose(mem);
    if (rc != HIAR_SUCCESS)
        fprintf(b->info, "# hiar_comm_describe: %s: %s\n", hiar_strerror(rc), hiar_last_error());
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        fprintf(b->info, "# %s\n", line);
    free(text);
}

static void print_info(const bench_t *b)
{
    const options_t *o = &b->opt;
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, mpi = has(b, IMPL_MPI) || has(b, IMPL_MPI_SHARD);

    MPI_Get_library_version(mpi_version, &len);
    mpi_version[strcspn(mpi_version, "\n")] = '\0';
    fprintf(b->info, "# hiar-bench: hiar %s\n# MPI: %s\n", hiar_version(), mpi_version);
#ifdef HIAR_HAVE_NCCL
    if (has(b, IMPL_NCCL)) {
        int v = 0;
        ncclGetVersion(&v);
        /* NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, *1000 before. */
        fprintf(b->info, "# NCCL: %d.%d.%d\n", v >= 20900 ? v / 10000 : v / 1000,
                v >= 20900 ? v / 100 % 100 : v / 100 % 10, v % 100);
    }
#endif
    fprintf(b->info, "# nranks %d, %s buffers, %s, %s %s, %s\n", b->nranks, b->device ? "device" : "host",
            o->graph ? "CUDA graph of ITERS calls" : "eager", hiar_dtype_name(o->dtype),
            hiar_op_name(o->op), o->inplace ? "in-place" : "out-of-place");
    fprintf(b->info, "# iterations %d, warmup %d, check %s\n", o->iters, o->warmup, o->check ? "on" : "off");
    if (mpi && o->op == HIAR_AVG)
        fprintf(b->info, "# mpi: avg is MPI_SUM, then a division by nranks on each rank (timed)\n");
    if (mpi && b->mpi_user_op)
        fprintf(b->info, "# mpi: %s as MPI_UINT16_T with a user op that reduces in float\n",
                hiar_dtype_name(o->dtype));
    if (mpi && b->device)
        fprintf(b->info, "# mpi: %s\n", b->mpi_staged
                ? "device buffers staged through host memory: D2H copy, MPI_Allreduce, H2D copy, all timed"
                : "device buffers passed to MPI_Allreduce as they are");
    if (mpi && o->graph)
        fprintf(b->info, "# mpi: timed eagerly (MPI calls cannot be captured in a CUDA graph)\n");
    if (o->split)
        bench_split_describe(&b->split, b->info, b->nranks,
                             !b->device       ? "host buffers"
                             : b->mpi_staged ? "device buffers staged as the mpi column's"
                                             : "device buffers passed as they are");
}

static void print_header(const bench_t *b)
{
    if (b->rank == 0)
        print_info(b);
    print_ranks(b);
    if (b->rank == 0 && b->comm)
        print_describe(b);
    if (b->rank == 0 && b->opt.csv)
        printf("size_bytes,count,dtype,op,impl,time_us,algbw_GBps,busbw_GBps,wrong\n");
    else if (b->rank == 0)
        print_table_header(b);
    if (b->rank == 0)
        fflush(NULL);
}

/* ---- main */

static void setup(bench_t *b)
{
    const options_t *o = &b->opt;
    hiar_result_t rc;

    b->esize = hiar_dtype_size(o->dtype);
    b->info = o->csv ? stderr : stdout;
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        device_setup(b);
#endif
    b->host = alloc(b, o->max_bytes, 1);
    b->send = alloc(b, o->max_bytes, 0);
    b->recv = o->inplace ? b->send : alloc(b, o->max_bytes, 0);
    mpi_setup(b);
    if (has(b, IMPL_HIAR) && (rc = hiar_comm_create(MPI_COMM_WORLD, NULL, &b->comm)) != HIAR_SUCCESS)
        die("hiar_comm_create: %s: %s", hiar_strerror(rc), hiar_last_error());
#ifdef HIAR_HAVE_NCCL
    if (has(b, IMPL_NCCL))
        nccl_setup(b);
#endif
}

/* --split's communicators; 2 (bad usage, err set) when hiar's ranks form one group. */
static int split_setup(bench_t *b, char *err)
{
    int rc;

    if (!b->opt.split)
        return 0;
    rc = bench_split_setup(&b->split, b->comm, b->device, err, ERR_LEN);
    if (rc == 1)
        die("%s", err);
    return rc;
}

static void teardown(bench_t *b)
{
    /* A failed communicator cannot be destroyed collectively: its peers may be gone. */
#ifdef HIAR_HAVE_NCCL
    if (b->nccl && b->dead[IMPL_NCCL])
        ncclCommAbort(b->nccl);
    else if (b->nccl)
        ncclCommDestroy(b->nccl);
#endif
    bench_split_teardown(&b->split, b->dead[IMPL_HIAR_INTRA], b->dead[IMPL_HIAR_FLAT]);
    if (b->comm && b->dead[IMPL_HIAR])
        hiar_comm_abort(b->comm);
    else if (b->comm)
        hiar_comm_destroy(b->comm);
    if (b->mpi_user_op)
        MPI_Op_free(&b->mpi_op);
    if (b->mpi_comm != MPI_COMM_NULL)
        MPI_Comm_free(&b->mpi_comm);
    if (b->recv != b->send)
        release(b, b->recv, 0);
    release(b, b->send, 0);
    release(b, b->host, 1);
#ifdef HIAR_HAVE_CUDA
    if (b->device)
        cudaStreamDestroy(b->stream);
#endif
}

static void account(totals_t *t, const bench_t *b, int impl, size_t count, const result_t *r)
{
    size_t bytes;
    int nranks;

    reduced_size(b, impl, count, &bytes, &nranks);
    t->failed |= r->status == RUN_FAILED;
    if (r->wrong > 0)
        t->wrong += r->wrong;
    if (r->status == RUN_OK) {
        t->busbw_sum += busbw(nranks, bytes, r->time_us);
        t->rows++;
    }
}

/* Every size from -b to -e, every implementation; returns the exit status. */
static int run_sizes(bench_t *b)
{
    const options_t *o = &b->opt;
    totals_t totals[IMPL_COUNT] = {{0}};
    int status = 0;

    print_header(b);
    for (size_t size = o->min_bytes;; size *= (size_t)o->factor) {
        size_t count = size / b->esize;
        result_t res[IMPL_COUNT];
        for (int i = 0; count > 0 && i < IMPL_COUNT; i++) {
            if (!has(b, i))
                continue;
            res[i] = measure(b, i, count);
            account(&totals[i], b, i, count, &res[i]);
        }
        if (count > 0 && b->rank == 0)
            (o->csv ? print_csv_rows : print_row)(b, count, res);
        if (size > o->max_bytes / (size_t)o->factor)
            break;
    }
    if (b->rank == 0)
        print_footer(b, totals);
    for (int i = 0; i < IMPL_COUNT; i++)
        if (has(b, i) && (totals[i].wrong || totals[i].failed))
            status = 1;
    return status;
}

int main(int argc, char **argv)
{
    bench_t b = {0};
    char err[ERR_LEN] = "";
    int rc;

    b.mpi_comm = MPI_COMM_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    rc = parse_options(argc, argv, &b.opt, err);
    if (rc == 0)
        rc = resolve_mode(&b, err);
    if (rc != 0) {
        if (b.rank == 0 && rc == 1)
            usage(stdout);
        else if (b.rank == 0)
            fprintf(stderr, "hiar-bench: %s\nTry 'hiar-bench --help'.\n", err);
        MPI_Finalize();
        return rc == 1 ? 0 : 2;
    }
    setup(&b);
    rc = split_setup(&b, err);
    if (rc == 0)
        rc = run_sizes(&b);
    else if (b.rank == 0)
        fprintf(stderr, "hiar-bench: %s\n", err);
    teardown(&b);
    MPI_Finalize();
    return rc;
}
