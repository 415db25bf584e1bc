/* hiar-bench's options: parsing, defaults, usage text, limits. */
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

#include "bench-opts.h"

/* Long options without a short form: values past any character. */
enum { OPT_IMPL = 256, OPT_CSV, OPT_NO_CHECK, OPT_GRAPH, OPT_INPLACE, OPT_MPI_DEVICE, OPT_SPLIT, OPT_REGISTER,
       OPT_FLAT, OPT_OVERLAP, OPT_JSON, OPT_DECODE, OPT_TOKENS, OPT_HIDDEN, OPT_LAYERS, OPT_SYNC,
       OPT_TRAIN, OPT_BUCKETS, OPT_BUCKET_BYTES, OPT_COMPUTE_US, OPT_COMPUTE_SMS, OPT_JSON_FILE, OPT_TUNE };

/* Defaults, set through the option parser and shown by --help from here. */
static const struct {
    int opt;
    const char *value;
} defaults[] = {{'b', "8"}, {'e', "64M"}, {'f', "2"}, {'d', "float32"},
                {'o', "sum"}, {'n', "auto"}, {'w', "5"}, {OPT_TOKENS, "1,4,16,32,64,256"},
                {OPT_HIDDEN, "4096,8192"}, {OPT_LAYERS, "8"}, {OPT_BUCKETS, "8"},
                {OPT_BUCKET_BYTES, "25M"}, {OPT_COMPUTE_SMS, "8"}};

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

void bench_usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N hiar-bench [options]\n"
            "  -b MIN       smallest message in bytes, with K, M or G (default %s)\n"
            "  -e MAX       largest message (default %s)\n"
            "  -f FACTOR    size multiplier from row to row (default %s)\n"
            "  -d DTYPE     int32 int64 float16 bfloat16 float32 float64 uint8 int8, or\n"
            "               fp16 half bf16 f32 fp32 float f64 fp64 double (default %s;\n"
            "               bfloat16 with --train)\n"
            "  -o OP        sum prod min max avg (default %s)\n"
            "  -n ITERS     timed calls per size and implementation, or auto: eager calls\n"
            "               for about %.0f ms a size (%d to %d calls, as many on every\n"
            "               rank, in %d rounds of the implementations in turn), --graph's\n"
            "               graph of %d calls replayed for about %.0f ms, %d elsewhere\n"
            "               (--overlap, --train, --decode) (default %s)\n"
            "  -w WARMUP    untimed calls before them (default %s)\n"
            "  -m MODE      host or device buffers (default: device when built with CUDA\n"
            "               and a GPU is present)\n"
            "  --impl LIST  comma list of hiar, mpi, nccl, nccl-sym (default hiar,mpi, plus\n"
            "               nccl with device buffers when built with NCCL); nccl-sym: NCCL on\n"
            "               buffers of its own from ncclMemAlloc, registered as symmetric\n"
            "               windows (NCCL 2.27+; not with --train or --decode)\n"
            "  --csv        CSV rows on stdout, '#' lines on stderr\n"
            "  --json       one JSON object per row and implementation on stdout, '#' lines\n"
            "               on stderr (scripts/hiar-plot draws them)\n"
            "  --json-file PATH\n"
            "               the same JSON rows into PATH too; stdout shows what it would\n"
            "               anyway (the table and its '#' lines by default)\n"
            "  --no-check   skip the result check\n"
            "  --graph      device buffers: time a CUDA graph of ITERS calls (mpi stays eager)\n"
            "  --inplace    sendbuf == recvbuf\n"
            "  --decode     device buffers: tensor-parallel decode steps, allreduce + residual\n"
            "               add + RMSNorm on [tokens x hidden] of -d (weights alike), 2 per\n"
            "               layer, all in one CUDA graph: hiar fused against hiar's allreduce\n"
            "               then a norm kernel (and NCCL then the same kernel with nccl)\n"
            "  --tokens L   --decode: comma list of token counts (default %s)\n"
            "  --hidden L   --decode: comma list of hidden sizes (default %s)\n"
            "  --layers N   --decode: layers per graph (default %s)\n"
            "  --train      device buffers: data-parallel training steps, DDP's gradient\n"
            "               buckets allreduced in place (-d, -o) while the next backward\n"
            "               kernels run; prints compute-only, comm-only and step time and\n"
            "               the overlap, per implementation; -n steps after -w warm-up ones\n"
            "  --buckets L  --train: buckets, each after its backward kernel (default %s)\n"
            "  --bucket-bytes S  --train: bytes per bucket, with K, M or G (default %s)\n"
            "  --compute-us D    --train: each backward kernel's time in microseconds\n"
            "               (default: hiar's comm-only time over L, compute as long as comm)\n"
            "  --compute-sms K   --train: blocks of each backward kernel, an SM each\n"
            "               (default %s)\n"
            "  --register   device buffers from hiar_mem_alloc (registered with hiar, and\n"
            "               with ncclCommRegister for NCCL): hiar's zero-copy two-shot\n"
            "  --mpi-device device buffers go to MPI_Allreduce (and --split's link) as they\n"
            "               are (CUDA-aware MPI, or MPI_Allreduce interposed by libhiar_mpi.so)\n"
            "  --split      several groups: also time hiar's parts, intra (hiar over one\n"
            "               group), inter (MPI_Allreduce of its shards), link (MPI point-to-\n"
            "               point of the same shards, from the memory hiar sends from), flat\n"
            "               (hiar, one group), and hiar/(intra+inter), hiar/max(intra,link)\n"
            "  --flat       several groups: of --split's parts, flat only (intra comms of\n"
            "               several groups that share a GPU can starve each other)\n"
            "  --overlap    device buffers: time how soon each call returns to the caller\n"
            "               when 5 ms of work is ahead of it on the stream (eager only)\n"
            "  --sync       device buffers: wait for the stream after every timed call, as\n"
            "               MPI_Allreduce does (the preload's cost against hiar + sync)\n"
            "  --tune       measure hiar's choices now as HIAR_TUNE=1 does (the host\n"
            "               crossovers, and where the ranks have GPUs the device paths per\n"
            "               size), print the tables (us per call and candidate, '*' the one\n"
            "               taken at each size) and write the tuning cache\n"
            "               (HIAR_TUNE_CACHE); nothing else is timed\n"
            "  -h, --help   this text\n"
            "Time is the max over ranks of the per-rank mean; busbw = algbw * 2(n-1)/n.\n"
            "Exit status: 0 results right, 1 a wrong result or a failed call, 2 bad usage.\n",
            default_of('b'), default_of('e'), default_of('f'), default_of('d'), default_of('o'),
            BENCH_AUTO_SECONDS * 1e3, BENCH_AUTO_MIN_ITERS, BENCH_AUTO_MAX_ITERS, BENCH_AUTO_ROUNDS,
            BENCH_AUTO_MIN_ITERS, BENCH_AUTO_SECONDS * 1e3, BENCH_AUTO_MIN_ITERS,
            default_of('n'), default_of('w'), default_of(OPT_TOKENS), default_of(OPT_HIDDEN),
            default_of(OPT_LAYERS), default_of(OPT_BUCKETS), default_of(OPT_BUCKET_BYTES),
            default_of(OPT_COMPUTE_SMS));
}

/* "1,4,16" -> {1, 4, 16}: at most BENCH_LIST_MAX positive integers. */
static int parse_list(const char *s, size_t *out, int *n)
{
    char *end;

    for (*n = 0; *n < BENCH_LIST_MAX; s = end + 1) {
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || v == 0 || (*end && *end != ','))
            return -1;
        out[(*n)++] = (size_t)v;
        if (!*end)
            return 0;
    }
    return -1;
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
        while (i < IMPL_MAIN_COUNT &&
               !(strlen(bench_impls[i].name) == len && strncmp(p, bench_impls[i].name, len) == 0))
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

/* --buckets, --compute-us, --compute-sms: integers of at least 1. */
static int train_int(options_t *o, int opt, const char *arg, char *err)
{
    int *out = opt == OPT_BUCKETS ? &o->buckets : opt == OPT_COMPUTE_US ? &o->compute_us : &o->compute_sms;
    const char *name = opt == OPT_BUCKETS ? "buckets" : opt == OPT_COMPUTE_US ? "compute-us" : "compute-sms";

    if (parse_int(arg, 1, out))
        return bad(err, "--%s '%s': expected an integer of at least 1", name, arg);
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
        o->iters_auto = strcmp(arg, "auto") == 0;
        if (o->iters_auto) {
            o->iters = BENCH_AUTO_MIN_ITERS;
            return 0;
        }
        /* fall through */
    case 'w':
        if (parse_int(arg, opt == 'n', opt == 'n' ? &o->iters : &o->warmup))
            return bad(err, "-%c '%s': expected %san integer of at least %d", opt, arg, opt == 'n' ? "auto or " : "",
                       opt == 'n');
        return 0;
    case 'm':
        if (strcmp(arg, "host") != 0 && strcmp(arg, "device") != 0)
            return bad(err, "-m '%s': expected host or device", arg);
        o->mode = arg[0] == 'h' ? MODE_HOST : MODE_DEVICE;
        return 0;
    case OPT_IMPL:
        if (parse_impls(arg, &o->impls))
            return bad(err, "--impl '%s': expected a comma list of hiar, mpi, nccl, nccl-sym", arg);
        return 0;
    case OPT_CSV: o->csv = 1; return 0;
    case OPT_JSON: o->json = 1; return 0;
    case OPT_JSON_FILE: o->json_file = arg; return 0;
    case OPT_NO_CHECK: o->check = 0; return 0;
    case OPT_GRAPH: o->graph = 1; return 0;
    case OPT_MPI_DEVICE: o->mpi_device = 1; return 0;
    case OPT_SPLIT: o->split = 1; return 0;
    case OPT_REGISTER: o->reg = 1; return 0;
    case OPT_FLAT: o->split = o->flat_only = 1; return 0;
    case OPT_OVERLAP: o->overlap = 1; return 0;
    case OPT_DECODE: o->decode = 1; return 0;
    case OPT_TOKENS:
    case OPT_HIDDEN:
        if (parse_list(arg, opt == OPT_TOKENS ? o->tokens : o->hidden, opt == OPT_TOKENS ? &o->ntokens : &o->nhidden))
            return bad(err, "--%s '%s': expected a comma list of up to %d positive integers",
                       opt == OPT_TOKENS ? "tokens" : "hidden", arg, BENCH_LIST_MAX);
        return 0;
    case OPT_LAYERS:
        if (parse_int(arg, 1, &o->layers))
            return bad(err, "--layers '%s': expected an integer of at least 1", arg);
        return 0;
    case OPT_SYNC: o->sync = 1; return 0;
    case OPT_TRAIN: o->train = 1; return 0;
    case OPT_TUNE: o->tune = 1; return 0;
    case OPT_BUCKET_BYTES:
        if (parse_size(arg, &o->bucket_bytes))
            return bad(err, "--bucket-bytes '%s': expected a size in bytes such as 25M", arg);
        return 0;
    case OPT_BUCKETS:
    case OPT_COMPUTE_US:
    case OPT_COMPUTE_SMS:
        return train_int(o, opt, arg, err);
    default: o->inplace = 1; return 0; /* OPT_INPLACE */
    }
}

/*
 * --train's buckets are the messages: -b and -e become the bucket size (the
 * buffers setup() makes, the element limit below), reduced in place as DDP's
 * are, of bfloat16 unless -d says otherwise.
 */
static void train_defaults(options_t *o, int dtype_given)
{
    if (!o->train)
        return;
    o->min_bytes = o->max_bytes = o->bucket_bytes;
    o->inplace = 1;
    if (!dtype_given)
        o->dtype = HIAR_BFLOAT16;
}

/* What the build cannot do, and limits between options. */
static int check_options(const options_t *o, char *err)
{
#ifndef HIAR_HAVE_CUDA
    if (o->mode == MODE_DEVICE || o->graph)
        return bad(err, "%s: this hiar-bench was built without CUDA", o->graph ? "--graph" : "-m device");
    if (o->train)
        return bad(err, "--train: this hiar-bench was built without CUDA (its backward kernels run on the GPU)");
#endif
#ifndef HIAR_HAVE_NCCL
    if (o->impls & IMPL_BIT(IMPL_NCCL))
        return bad(err, "--impl nccl: this hiar-bench was built without NCCL");
#endif
#ifndef BENCH_NCCL_SYM
    if (o->impls & IMPL_BIT(IMPL_NCCL_SYM))
        return bad(err, "--impl nccl-sym: this hiar-bench was built without NCCL 2.27 or later (symmetric windows)");
#endif
    if ((o->impls & IMPL_BIT(IMPL_NCCL_SYM)) && (o->train || o->decode))
        return bad(err, "--impl nccl-sym: %s takes nccl (nccl-sym runs on buffers of its own; the size sweep only)",
                   o->train ? "--train" : "--decode");
    if (o->min_bytes > o->max_bytes)
        return bad(err, "-b %zu is larger than -e %zu", o->min_bytes, o->max_bytes);
    if (o->max_bytes / hiar_dtype_size(o->dtype) > INT_MAX)
        return bad(err, "%s %zu: more than INT_MAX elements of %s, the most one MPI call takes",
                   o->train ? "--bucket-bytes" : "-e", o->max_bytes, hiar_dtype_name(o->dtype));
    if (o->train && o->bucket_bytes < hiar_dtype_size(o->dtype))
        return bad(err, "--bucket-bytes %zu: less than one element of %s", o->bucket_bytes,
                   hiar_dtype_name(o->dtype));
    return 0;
}

/* Returns 0, 1 for --help, or 2 with err set. */
int bench_parse_options(int argc, char **argv, options_t *o, char *err)
{
    static const struct option longopts[] = {
        {"impl", required_argument, NULL, OPT_IMPL}, {"csv", no_argument, NULL, OPT_CSV},
        {"no-check", no_argument, NULL, OPT_NO_CHECK}, {"graph", no_argument, NULL, OPT_GRAPH},
        {"inplace", no_argument, NULL, OPT_INPLACE},   {"help", no_argument, NULL, 'h'},
        {"mpi-device", no_argument, NULL, OPT_MPI_DEVICE}, {"split", no_argument, NULL, OPT_SPLIT},
        {"register", no_argument, NULL, OPT_REGISTER}, {"flat", no_argument, NULL, OPT_FLAT},
        {"overlap", no_argument, NULL, OPT_OVERLAP}, {"json", no_argument, NULL, OPT_JSON},
        {"decode", no_argument, NULL, OPT_DECODE}, {"tokens", required_argument, NULL, OPT_TOKENS},
        {"hidden", required_argument, NULL, OPT_HIDDEN}, {"layers", required_argument, NULL, OPT_LAYERS},
        {"sync", no_argument, NULL, OPT_SYNC}, {"train", no_argument, NULL, OPT_TRAIN},
        {"json-file", required_argument, NULL, OPT_JSON_FILE},
        {"buckets", required_argument, NULL, OPT_BUCKETS},
        {"bucket-bytes", required_argument, NULL, OPT_BUCKET_BYTES},
        {"compute-us", required_argument, NULL, OPT_COMPUTE_US},
        {"compute-sms", required_argument, NULL, OPT_COMPUTE_SMS}, {"tune", no_argument, NULL, OPT_TUNE},
        {NULL, 0, NULL, 0}};
    int opt, dtype_given = 0;

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
        dtype_given |= opt == 'd';
    }
    if (optind < argc)
        return bad(err, "unexpected argument '%s'", argv[optind]);
    train_defaults(o, dtype_given);
    return check_options(o, err);
}

/* ---- against the ranks' GPUs */

#ifdef HIAR_HAVE_CUDA
static int gpu_count(void)
{
    int n = 0;

    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
#endif

/* Host or device buffers, and the default implementations; alike on every rank. */
int bench_resolve_mode(bench_t *b, char *err)
{
    options_t *o = &b->opt;
    int ngpu = 0;

#ifdef HIAR_HAVE_CUDA
    if (o->mode != MODE_HOST || o->tune) {
        ngpu = gpu_count();
        MPI_Allreduce(MPI_IN_PLACE, &ngpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
#endif
    b->ngpu = ngpu;
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
    if (!b->device && (o->impls & (IMPL_BIT(IMPL_NCCL) | IMPL_BIT(IMPL_NCCL_SYM))))
        return bad(err, "--impl %s needs device buffers (-m device)%s",
                   o->impls & IMPL_BIT(IMPL_NCCL) ? "nccl" : "nccl-sym", o->mode == MODE_AUTO ? "; no GPU found" : "");
    if (!b->device && o->graph)
        return bad(err, "--graph needs device buffers (-m device)%s",
                   o->mode == MODE_AUTO ? "; no GPU found" : "");
    if (o->csv && o->json)
        return bad(err, "--csv and --json: choose one");
    if (o->train && !b->device)
        return bad(err, "--train needs device buffers (-m device)%s", o->mode == MODE_AUTO ? "; no GPU found" : "");
    if (o->train && (o->decode || o->split || o->overlap || o->graph || o->sync || o->reg || o->csv || o->json_file))
        return bad(err, "--train takes none of --decode, --split, --overlap, --graph, --sync, --register, --csv, --json-file");
    if (o->decode && (!b->device || o->split || o->overlap || o->csv || o->json || o->json_file))
        return bad(err, "--decode needs device buffers (-m device)%s and takes none of --split, --overlap, "
                   "--csv, --json, --json-file", o->mode == MODE_AUTO && !b->device ? "; no GPU found" : "");
    if (o->overlap && (!b->device || o->graph))
        return bad(err, "--overlap needs device buffers (-m device) and eager calls (no --graph)");
    if (o->sync && (!b->device || o->graph))
        return bad(err, "--sync needs device buffers (-m device) and eager calls (no --graph)");
    if (o->tune && (o->split || o->decode || o->train || o->csv || o->json || o->json_file))
        return bad(err, "--tune takes none of --split, --decode, --train, --csv, --json, --json-file");
    if (o->split && !(o->impls & IMPL_BIT(IMPL_HIAR)))
        return bad(err, "--split needs hiar in --impl");
    if (o->reg && (!b->device || !(o->impls & IMPL_BIT(IMPL_HIAR))))
        return bad(err, "--register needs device buffers (-m device) and hiar in --impl");
    if (o->split)
        o->impls |= IMPL_BIT(IMPL_HIAR_FLAT);
    if (o->split && !o->flat_only)
        o->impls |= IMPL_BIT(IMPL_HIAR_INTRA) | IMPL_BIT(IMPL_MPI_SHARD) | IMPL_BIT(IMPL_MPI_LINK);
    return 0;
}
