/* Whether MPI takes device pointers (HIAR_MPI_DEVICE): the facts, gathered without risk, and the answer. */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>
#endif

#include "base/param.h"
#include "net/coll.h"
#include "net/mpidev.h"

#define STAGED "device buffers are staged through pinned host memory"

/* Whether list (tokens ended by any of seps) holds the token name[0..len). */
static int has_token(const char *list, const char *seps, const char *name, size_t len)
{
    for (const char *t = list; *t;) {
        size_t n = strcspn(t, seps);
        if (n == len && strncmp(t, name, len) == 0)
            return 1;
        t += n + (t[n] != '\0');
    }
    return 0;
}

/* ---- /proc/self/maps */

/* Keeps the first folder in dst and counts the different ones (one too long to keep counts too). */
static void note_dir(char *dst, int *count, const char *dir, size_t len)
{
    if (*count && strlen(dst) == len && memcmp(dst, dir, len) == 0)
        return;
    if (++*count == 1 && len < PATH_MAX) {
        memcpy(dst, dir, len);
        dst[len] = '\0';
    }
}

/* Adds a PML's name to the '+'-joined list; a list too long to hold becomes "(several)", never "ucx". */
static void note_pml(char *pml, size_t size, const char *name, size_t len)
{
    size_t used = strlen(pml);

    if (*pml == '(' || has_token(pml, "+", name, len))
        return;
    if (used + (used > 0) + len + 1 > size) {
        snprintf(pml, size, "(several)");
        return;
    }
    if (used)
        pml[used++] = '+';
    memcpy(pml + used, name, len);
    pml[used + len] = '\0';
}

static int starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

/* One line, "start-end perms offset dev inode   /path/of/file[ (deleted)]". */
static void scan_line(const char *line, size_t len, hiar_mpi_maps_t *m)
{
    static const char deleted[] = " (deleted)";
    const size_t ndeleted = sizeof(deleted) - 1;
    const char *p = line, *end = line + len, *base;

    for (int field = 0; field < 5; field++) {
        while (p < end && *p != ' ')
            p++;
        while (p < end && *p == ' ')
            p++;
    }
    if (p >= end || *p != '/')
        return; /* anonymous, [heap], [stack], [vdso] */
    if ((size_t)(end - p) > ndeleted && memcmp(end - ndeleted, deleted, ndeleted) == 0)
        end -= ndeleted;
    base = p;
    for (const char *c = p; c < end; c++)
        if (*c == '/')
            base = c + 1;
    len = (size_t)(end - base);
    /* Open MPI's components are mca_<framework>_<name>.so. */
    if (starts_with(base, len, "mca_pml_") && len > 11 && memcmp(end - 3, ".so", 3) == 0)
        note_pml(m->pml, sizeof(m->pml), base + 8, len - 11);
    else if (starts_with(base, len, "libucs.so"))
        note_dir(m->ucs_dir, &m->ucs_dirs, p, (size_t)(base - 1 - p));
    else if (starts_with(base, len, "libuct_cuda.so"))
        note_dir(m->cuda_dir, &m->cuda_dirs, p, (size_t)(base - 1 - p));
}

void hiar_net_mpi_maps_scan(const char *text, hiar_mpi_maps_t *m)
{
    memset(m, 0, sizeof(*m));
    for (const char *line = text; line && *line;) {
        size_t len = strcspn(line, "\n");
        scan_line(line, len, m);
        line += len + (line[len] != '\0');
    }
}

/* The whole of /proc/self/maps, NULL where it cannot be read; the caller frees it. */
static char *read_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    size_t cap = 64 * 1024, n = 0, got;
    char *text = f ? malloc(cap) : NULL;

    while (text && (got = fread(text + n, 1, cap - 1 - n, f)) > 0) {
        n += got;
        if (n == cap - 1) {
            char *more = realloc(text, cap *= 2);
            if (!more)
                free(text);
            text = more;
        }
    }
    if (text)
        text[n] = '\0';
    if (f)
        fclose(f);
    return text;
}

/* ---- the rest of the facts */

/* MPI_Get_library_version's first line up to a comma, blanks squeezed: "Open MPI v4.1.6". */
static void library_name(char *out, size_t size)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    size_t o = 0;
    int len = 0;

    MPI_Get_library_version(v, &len);
    v[sizeof(v) - 1] = '\0';
    for (const char *c = v; *c && *c != '\n' && *c != ',' && o + 1 < size; c++) {
        int blank = isspace((unsigned char)*c);
        if (!blank || (o > 0 && out[o - 1] != ' '))
            out[o++] = blank ? ' ' : *c;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

static int cuda_query(void)
{
#ifdef HAVE_MPIX_QUERY_CUDA_SUPPORT
    return MPIX_Query_cuda_support() != 0;
#else
    return -1;
#endif
}

static int gpu_query(void)
{
#ifdef HAVE_MPIX_GPU_QUERY_SUPPORT
    int yes = 0;
    return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS ? yes != 0 : -1;
#else
    return -1;
#endif
}

/*
 * Open MPI's control variable "pml", "" where it cannot be read.  Only this
 * variable: it belongs to the PML framework, in libmpi, for the life of the
 * process; reading Open MPI 4.1.4's pml_ucx_release_version through MPI_T
 * segfaulted here.  Open MPI copies a string cvar whole into buf (strcpy)
 * and says it may be 2048 bytes; buf holds twice that.
 */
static void pml_cvar(char *out, size_t size)
{
#if MPI_VERSION > 3 || (MPI_VERSION == 3 && MPI_SUBVERSION >= 1)
    char name[64], desc[256], buf[4096];
    int provided, index, count = 0, verbosity, bind, scope, nlen = sizeof(name), dlen = sizeof(desc);
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_cvar_get_index("pml", &index) == MPI_SUCCESS &&
        MPI_T_cvar_get_info(index, name, &nlen, &verbosity, &type, &enumtype, desc, &dlen, &bind, &scope) ==
            MPI_SUCCESS &&
        type == MPI_CHAR && bind == MPI_T_BIND_NO_OBJECT &&
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
        buf[0] = '\0';
        if (count > 0 && (size_t)count <= sizeof(buf) / 2 && MPI_T_cvar_read(handle, buf) == MPI_SUCCESS) {
            size_t n = strnlen(buf, size - 1); /* not snprintf: GCC warns that 4 KB may not fit */
            memcpy(out, buf, n);
            out[n] = '\0';
        }
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
#else
    (void)out, (void)size;
#endif
}

/*
 * Whether the UCX of this process reports the cuda memory type: a UCP context
 * of our own on cuda_copy (what UCX moves device memory with) and self (a
 * context with no transport for host memory may be refused, which would
 * read as "no GPU"), asked for its memory types.  libuct_cuda loads wherever
 * libcuda.so.1 does, also where cuda_copy then finds no device: the CUDA
 * stubs standing in for the driver gave exactly that here, and so would a
 * driver older than the CUDA runtime UCX was built with.  Through the libucp
 * already loaded (RTLD_NOLOAD loads nothing new), with UCX's own prefixes of
 * ucp_params_t and ucp_context_attr_t (stable across UCX 1.x; a UCX without
 * the memory-types field leaves it 0).  -1 where there is no libucp or it
 * lacks a call; 0 or 1 otherwise.
 */
static int ucp_reports_cuda(void *ucp)
{
    /* ucp.h's and ucs's values. */
    enum { UCP_PARAM_FIELD_FEATURES = 1, UCP_FEATURE_TAG = 1, UCP_ATTR_FIELD_MEMORY_TYPES = 4 };
    enum { UCS_MEMORY_TYPE_CUDA = 1 };
    struct {
        uint64_t field_mask, features;
        char rest[512];
    } params = {UCP_PARAM_FIELD_FEATURES, UCP_FEATURE_TAG, {0}};
    struct {
        uint64_t field_mask;
        size_t request_size;
        int thread_mode;
        uint64_t memory_types;
        char rest[512];
    } attr = {UCP_ATTR_FIELD_MEMORY_TYPES, 0, 0, 0, {0}};
    int (*config_read)(const char *, const char *, void **);
    int (*config_modify)(void *, const char *, const char *);
    void (*config_release)(void *);
    int (*init)(unsigned, unsigned, const void *, const void *, void **);
    int (*query)(void *, void *);
    void (*cleanup)(void *);
    void *config, *context;
    int yes;

    config_read = (int (*)(const char *, const char *, void **))dlsym(ucp, "ucp_config_read");
    config_modify = (int (*)(void *, const char *, const char *))dlsym(ucp, "ucp_config_modify");
    config_release = (void (*)(void *))dlsym(ucp, "ucp_config_release");
    init = (int (*)(unsigned, unsigned, const void *, const void *, void **))dlsym(ucp, "ucp_init_version");
    query = (int (*)(void *, void *))dlsym(ucp, "ucp_context_query");
    cleanup = (void (*)(void *))dlsym(ucp, "ucp_cleanup");
    if (!config_read || !config_modify || !config_release || !init || !query || !cleanup ||
        config_read(NULL, NULL, &config) != 0)
        return -1;
    yes = 0;
    /* UCS_OK is 0; API 1.10, the first with the memory types. */
    if (config_modify(config, "TLS", "self,cuda_copy") == 0 && init(1, 10, &params, config, &context) == 0) {
        yes = query(context, &attr) == 0 && (attr.memory_types & (1u << UCS_MEMORY_TYPE_CUDA));
        cleanup(context);
    }
    config_release(config);
    return yes;
}

/* ucp_reports_cuda with UCX's log at FATAL: where cuda_copy finds no device, UCX logs a WARN and an ERROR. */
static int ucx_cuda_memtype(void)
{
    void *ucp = dlopen("libucp.so.0", RTLD_LAZY | RTLD_NOLOAD), *ucs = dlopen("libucs.so.0", RTLD_LAZY | RTLD_NOLOAD);
    int (*get)(const char *, char *, size_t) = NULL;
    int (*set)(const char *, const char *) = NULL;
    char level[32];
    int yes = -1, quiet = 0;

    if (ucs) {
        get = (int (*)(const char *, char *, size_t))dlsym(ucs, "ucs_global_opts_get_value");
        set = (int (*)(const char *, const char *))dlsym(ucs, "ucs_global_opts_set_value");
    }
    if (get && set && get("LOG_LEVEL", level, sizeof(level)) == 0)
        quiet = set("LOG_LEVEL", "fatal") == 0;
    if (ucp)
        yes = ucp_reports_cuda(ucp);
    if (quiet)
        set("LOG_LEVEL", level);
    if (ucs)
        dlclose(ucs);
    if (ucp)
        dlclose(ucp);
    return yes;
}

static void gather(hiar_mpi_facts_t *f)
{
    char *maps;

    memset(f, 0, sizeof(*f));
    library_name(f->library, sizeof(f->library));
    f->cuda_query = cuda_query();
    f->gpu_query = gpu_query();
    maps = read_maps();
    hiar_net_mpi_maps_scan(maps, &f->maps);
    free(maps);
    /* Only for PMLs built into libmpi: Open MPI 4.1.4's MPI_T_init_thread took 210 ms here. */
    if (strncmp(f->library, "Open MPI", 8) == 0 && !*f->maps.pml)
        pml_cvar(f->pml_cvar, sizeof(f->pml_cvar));
    f->ucx_cuda = f->maps.cuda_dirs ? ucx_cuda_memtype() : -1;
    f->ucx_tls = getenv("UCX_TLS");
    f->impi_offload = getenv("I_MPI_OFFLOAD");
    f->impi_mode = getenv("I_MPI_OFFLOAD_MODE");
}

/* ---- the answer */

static void say(hiar_mpi_device_t *out, int yes, const char *fmt, ...)
{
    va_list ap;

    out->yes = yes;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof(out->why), fmt, ap);
    va_end(ap);
}

/* Whether UCX_TLS (NULL: unset) keeps cuda_copy, the transport UCX moves device memory with. */
static int ucx_tls_keeps_cuda(const char *tls)
{
    /* ':' too: "cuda_copy:aux" names cuda_copy. */
    static const char *const names[] = {"cuda_copy", "cuda", "all"};
    int negated = tls && *tls == '^', named = 0;

    if (!tls || !*tls)
        return 1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        named |= has_token(tls + negated, ",:", names[i], strlen(names[i]));
    return negated ? !named : named;
}

/* Open MPI: NULL where its PML takes device pointers (pml ucx over a UCX with CUDA), else why not. */
static const char *ompi_no(const hiar_mpi_facts_t *f, char *buf, size_t size)
{
    const hiar_mpi_maps_t *m = &f->maps;
    size_t n = strlen(m->ucs_dir);

    if (strcmp(m->pml, "ucx") != 0 && strcmp(f->pml_cvar, "ucx") != 0) {
        snprintf(buf, size, "pml %s", *m->pml ? m->pml : "not known (no mca_pml_*.so mapped)");
        return buf;
    }
    if (m->ucs_dirs != 1 || n == 0)
        return m->ucs_dirs > 1 ? "pml ucx, but UCX is mapped from two folders" : "pml ucx, but no libucs.so is mapped";
    if (m->cuda_dirs == 0)
        return "pml ucx over a UCX without its cuda transport (libuct_cuda not loaded)";
    if (m->cuda_dirs != 1 || strncmp(m->cuda_dir, m->ucs_dir, n) != 0 || strcmp(m->cuda_dir + n, "/ucx") != 0)
        return "pml ucx, but libuct_cuda is mapped from outside that UCX's ucx/ folder";
    if (!ucx_tls_keeps_cuda(f->ucx_tls)) {
        snprintf(buf, size, "pml ucx, but UCX_TLS=%.40s leaves out cuda_copy", f->ucx_tls);
        return buf;
    }
    if (f->ucx_cuda < 0)
        return "pml ucx, but its libucp could not be asked for the cuda memory type";
    if (f->ucx_cuda == 0)
        return "pml ucx, but UCX's cuda_copy finds no GPU (none, or a driver older than UCX's CUDA)";
    return NULL;
}

/* Intel MPI: NULL where I_MPI_OFFLOAD turns its CUDA buffer support on, else why not. */
static const char *impi_no(const hiar_mpi_facts_t *f, char *buf, size_t size)
{
    const char *mode = f->impi_mode;

    if (!f->impi_offload || strtol(f->impi_offload, NULL, 10) < 1) {
        snprintf(buf, size, "I_MPI_OFFLOAD=%.16s (1 turns GPU buffers on)",
                 f->impi_offload ? f->impi_offload : "unset");
        return buf;
    }
    if (mode && *mode && strcasecmp(mode, "auto") != 0 && strcasecmp(mode, "cuda") != 0) {
        snprintf(buf, size, "I_MPI_OFFLOAD_MODE=%.24s, not cuda", mode);
        return buf;
    }
    return NULL;
}

static const char *query_words(const hiar_mpi_facts_t *f)
{
    if (f->cuda_query == 0)
        return "MPIX_Query_cuda_support() = 0";
    if (f->gpu_query == 0)
        return "MPIX_GPU_query_support(CUDA) = 0";
    return "no MPIX_Query_cuda_support";
}

void hiar_net_mpi_device_decide(int setting, const hiar_mpi_facts_t *f, hiar_mpi_device_t *out)
{
    const char *lib = *f->library ? f->library : "this MPI", *no = NULL;
    int intel = strstr(lib, "Intel") != NULL, ompi = strncmp(lib, "Open MPI", 8) == 0;
    char buf[128];

    if (setting == HIAR_MPIDEV_YES)
        say(out, 1, "forced by HIAR_MPI_DEVICE=1");
    else if (setting == HIAR_MPIDEV_NO)
        say(out, 0, "forced by HIAR_MPI_DEVICE=0: " STAGED);
    else if (f->cuda_query == 1)
        say(out, 1, "%s: MPIX_Query_cuda_support() = 1", lib);
    else if (f->gpu_query == 1)
        say(out, 1, "%s: MPIX_GPU_query_support(CUDA) = 1", lib);
    else if (intel && !(no = impi_no(f, buf, sizeof(buf))))
        say(out, 1, "%s with I_MPI_OFFLOAD=%s", lib, f->impi_offload);
    else if (ompi && !(no = ompi_no(f, buf, sizeof(buf))))
        say(out, 1, "%s with pml ucx and UCX's cuda transport loaded (point-to-point only: its collectives are "
                    "not CUDA-aware)",
            lib);
    else
        say(out, 0, "%s without CUDA support, %s%s%s: " STAGED, lib, query_words(f), no ? ", " : "", no ? no : "");
}

void hiar_net_mpi_device_local(int setting, hiar_mpi_device_t *out)
{
    hiar_mpi_facts_t f;

    /* Forced: gather nothing, in case gathering is what went wrong. */
    if (setting == HIAR_MPIDEV_AUTO)
        gather(&f);
    else
        memset(&f, 0, sizeof(f));
    hiar_net_mpi_device_decide(setting, &f, out);
}

hiar_result_t hiar_net_mpi_device(MPI_Comm comm, int setting, hiar_mpi_device_t *out)
{
    hiar_mpi_device_t mine;
    int all;

    hiar_net_mpi_device_local(setting, &mine);
    all = mine.yes;
    HIAR_CHECK(hiar_net_min(comm, &all, 1));
    if (mine.yes && !all) {
        char why[sizeof(mine.why)];
        memcpy(why, mine.why, sizeof(why));
        say(&mine, 0, "another rank's MPI cannot take them, so " STAGED "; this rank's: %s", why);
    }
    *out = mine;
    return HIAR_SUCCESS;
}
