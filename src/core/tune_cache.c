/* Tuning's pure parts: the ladder, the choice from a timing table, the signature and the cache file. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/param.h"
#include "core/tune_cache.h"

size_t hiar_tune_size(int i)
{
    return HIAR_TUNE_MIN_BYTES << (2 * i);
}

/* The cost of "small path up to limit": sizes on a dropped candidate, then the sum of time / best time. */
typedef struct {
    int drops;
    double ratio;
} cost_t;

static cost_t cost_of(const hiar_tune_table_t *t, size_t limit)
{
    cost_t c = {0, 0.0};

    for (int i = 0; i < t->nsizes; i++) {
        int k = hiar_tune_size(i) <= limit ? 0 : 1;
        double best = -1.0;
        if (t->dropped[k]) {
            c.drops++;
            continue;
        }
        for (int j = 0; j < HIAR_TUNE_NCAND; j++)
            if (!t->dropped[j] && t->us[j][i] > 0 && (best < 0 || t->us[j][i] < best))
                best = t->us[j][i];
        if (best > 0 && t->us[k][i] > 0)
            c.ratio += t->us[k][i] / best;
    }
    return c;
}

static int cheaper(cost_t a, cost_t b)
{
    return a.drops != b.drops ? a.drops < b.drops : a.ratio < b.ratio;
}

size_t hiar_tune_choose(const hiar_tune_table_t *t, size_t def)
{
    size_t best = def;
    cost_t least = cost_of(t, def);

    /* def first: another limit must cost less by the margin; then 0 and the ladder upwards. */
    least.ratio *= 1.0 - HIAR_TUNE_MARGIN;
    for (int i = -1; i < t->nsizes; i++) {
        size_t limit = i < 0 ? 0 : hiar_tune_size(i);
        cost_t c = cost_of(t, limit);
        if (cheaper(c, least)) {
            least = c;
            best = limit;
        }
    }
    return best;
}

/*
 * The device ladder: 1 KB to 256 MB by x4, and 512 KB, the largest message
 * the LL kernel's packet area takes: its budget per rank (core/plan.h)
 * gives LL up to 256 KB on 4 ranks, and the x4 ladder never timed LL
 * against push at 512 KB, where LL was 2.2-3.2x faster on one H200 (4
 * ranks under MPS, bf16, in CUDA graphs: hiar-bench --decode's allreduce
 * alone at 32 x 8192 7.07 against 22.30 us, hiar-bench 7.08 against 15.55,
 * tuning's own timing 7.0 against 21.1).  Each size serves
 * the messages nearest it on a log scale: up to the geometric mean with
 * the next size (x2 between sizes 4x apart), the top one up to 2x itself.
 */
static const struct {
    size_t bytes, upto;
} dev_ladder[HIAR_TUNE_DEV_NSIZES] = {
    {1 << 10, 2 << 10},    {4 << 10, 8 << 10},     {16 << 10, 32 << 10},   {64 << 10, 128 << 10},
    {256 << 10, 370727},   {512 << 10, 741455},    {1 << 20, 2 << 20},     {4 << 20, 8 << 20},
    {16 << 20, 32 << 20},  {64 << 20, 128 << 20},  {256u << 20, 512u << 20}};

size_t hiar_tune_dev_size(int i)
{
    return dev_ladder[i].bytes;
}

int hiar_tune_dev_bucket(size_t bytes, int n)
{
    for (int i = 0; i < n && i < HIAR_TUNE_DEV_NSIZES; i++)
        if (bytes <= dev_ladder[i].upto)
            return i;
    return -1;
}

const char *hiar_tune_dev_name(int k)
{
    static const char *const names[HIAR_TUNE_DEV_COUNT] = {
        "builtin", "ipc-ll", "ipc-push", "ipc-pull", "ipc-twoshot", "ipc-twoshot-half", "ipc-twoshot-double",
        "flat",    "hier",   "hier-half", "hier-double", "pinned"};
    return k >= 0 && k < HIAR_TUNE_DEV_COUNT ? names[k] : NULL;
}

hiar_dtype_t hiar_tune_dev_dtype(int d)
{
    return d == 0 ? HIAR_BFLOAT16 : HIAR_FLOAT32;
}

const char *hiar_tune_dev_mode_name(int mode)
{
    return mode == HIAR_TUNE_DEV_GRAPH ? "graph" : "eager";
}

static int dev_timed(const hiar_tune_dev_table_t *t, int m, int k, int i)
{
    int timed = k > HIAR_TUNE_DEV_BUILTIN && k < HIAR_TUNE_DEV_COUNT && !t->dropped[k];

    for (int d = 0; timed && d < HIAR_TUNE_DEV_NDTYPES; d++)
        timed = t->us[m][d][k][i] > 0;
    return timed;
}

/* Candidate k's worst ratio over the dtypes at size i in mode m, to ref's time (ref < 0: to each dtype's best). */
static double dev_worst(const hiar_tune_dev_table_t *t, int m, int k, int ref, int i)
{
    double worst = 0;

    for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++) {
        double base = ref >= 0 ? t->us[m][d][ref][i] : -1;
        for (int j = 0; ref < 0 && j < HIAR_TUNE_DEV_COUNT; j++)
            if (dev_timed(t, m, j, i) && (base < 0 || t->us[m][d][j][i] < base))
                base = t->us[m][d][j][i];
        worst = t->us[m][d][k][i] / base > worst ? t->us[m][d][k][i] / base : worst;
    }
    return worst;
}

void hiar_tune_dev_choose(const hiar_tune_dev_table_t *t, int m, unsigned char choice[HIAR_TUNE_DEV_NSIZES])
{
    memset(choice, HIAR_TUNE_DEV_BUILTIN, HIAR_TUNE_DEV_NSIZES);
    for (int i = 0; i < t->nsizes && i < HIAR_TUNE_DEV_NSIZES; i++) {
        int def = t->builtin[i], ref = dev_timed(t, m, def, i) ? def : -1, best = -1;
        double least = ref >= 0 ? 1.0 - HIAR_TUNE_MARGIN : 1e300;
        for (int k = 0; k < HIAR_TUNE_DEV_COUNT; k++)
            if (k != def && dev_timed(t, m, k, i) && dev_worst(t, m, k, ref, i) < least) {
                least = dev_worst(t, m, k, ref, i);
                best = k;
            }
        if (best >= 0)
            choice[i] = (unsigned char)best;
    }
}

/* The signature's last field: the device ladder's length. */
#define LADDER_FMT " ladder=%d"

/* Whether a signature is of this build's device ladder (its last field). */
static int same_ladder(const char *signature)
{
    char mine[32];
    size_t n = (size_t)snprintf(mine, sizeof(mine), LADDER_FMT, HIAR_TUNE_DEV_NSIZES), len = strlen(signature);

    return len >= n && strcmp(signature + len - n, mine) == 0;
}

hiar_result_t hiar_tune_signature(const hiar_tune_facts_t *f, char *out, size_t len)
{
    char groups[256] = "";
    size_t n = 0;
    int w;

    for (int g = 0; g < f->ngroups && n < sizeof(groups); g++)
        n += (size_t)snprintf(groups + n, sizeof(groups) - n, "%s%d", g ? "," : "", f->group_sizes[g]);
    /* Spaces inside the MPI's and the GPU's names stay: the signature is compared whole, never split.  The
     * device ladder's length is in it: a cache of another ladder names paths for other sizes. */
    w = snprintf(out, len,
                 "hiar=%s ranks=%d groups=%s hosts=%d host=%s device=%s layout=(%s) slots=%zu,%zu shm1=%zu gpu=%s "
                 "mpi=%s" LADDER_FMT,
                 hiar_version(), f->nranks, groups, f->nhosts, f->host_transport, f->device_transport, f->layout,
                 f->host_slot, f->device_slot, f->shm_oneshot_default, f->gpu, f->mpi,
                 HIAR_TUNE_DEV_NSIZES);
    if (w < 0 || (size_t)w >= len || n >= sizeof(groups))
        return hiar_error_set(HIAR_INTERNAL_ERROR, "the tuning signature needs more than %zu bytes", len);
    for (char *c = out; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    return HIAR_SUCCESS;
}

unsigned long long hiar_tune_hash(const char *s)
{
    unsigned long long h = 14695981039346656037ull;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

hiar_result_t hiar_tune_default_path(const char *signature, char *out, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;

    if (xdg && *xdg)
        w = snprintf(out, len, "%s/hiar/tune-%016llx.txt", xdg, hiar_tune_hash(signature));
    else if (home && *home)
        w = snprintf(out, len, "%s/.cache/hiar/tune-%016llx.txt", home, hiar_tune_hash(signature));
    else
        return hiar_error_set(HIAR_INVALID_ARGUMENT,
                              "no tuning cache folder: neither XDG_CACHE_HOME nor HOME is set; set HIAR_TUNE_CACHE");
    if (w < 0 || (size_t)w >= len)
        return hiar_error_set(HIAR_INVALID_ARGUMENT, "the tuning cache path is longer than %zu bytes", len);
    return HIAR_SUCCESS;
}

/* mkdir -p of path's folder, each made 0700 (existing ones are left as they are). */
static hiar_result_t make_folders(const char *path)
{
    char dir[1024];

    if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
        return hiar_error_set(HIAR_INVALID_ARGUMENT, "tuning cache path %s is too long", path);
    for (char *c = dir + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return hiar_error_set(HIAR_SYSTEM_ERROR, "cannot make folder %s for the tuning cache: %s", dir,
                                  strerror(errno));
        *c = '/';
    }
    return HIAR_SUCCESS;
}

static void write_table(FILE *f, const hiar_tune_table_t *t)
{
    fprintf(f, "# bytes %s %s (us per call, max over ranks; -1: not timed or dropped)\n", t->names[0], t->names[1]);
    for (int i = 0; i < t->nsizes; i++)
        fprintf(f, "# %zu %.2f %.2f\n", hiar_tune_size(i), t->dropped[0] ? -1.0 : t->us[0][i],
                t->dropped[1] ? -1.0 : t->us[1][i]);
}

static void write_dev_table(FILE *f, const hiar_tune_dev_table_t *t)
{
    fprintf(f, "# device MODE bytes, then us per call of each path on each dtype (max over ranks; -1: not a "
               "candidate there, or dropped), then the built-in path\n");
    for (int m = 0; m < HIAR_TUNE_DEV_NMODES; m++)
        for (int i = 0; i < t->nsizes; i++) {
            fprintf(f, "# device %s %zu", hiar_tune_dev_mode_name(m), hiar_tune_dev_size(i));
            for (int k = 1; k < HIAR_TUNE_DEV_COUNT; k++)
                for (int d = 0; d < HIAR_TUNE_DEV_NDTYPES; d++)
                    fprintf(f, " %s/%s=%.2f", hiar_tune_dev_name(k), hiar_dtype_name(hiar_tune_dev_dtype(d)),
                            t->dropped[k] ? -1.0 : t->us[m][d][k][i]);
            fprintf(f, " builtin=%s\n", hiar_tune_dev_name(t->builtin[i]));
        }
}

/* "device" (eager calls) and "device-graph": a path name per ladder size. */
static void write_dev_choice(FILE *f, const hiar_tune_limits_t *l)
{
    for (int m = 0; l->device_n > 0 && m < HIAR_TUNE_DEV_NMODES; m++) {
        fprintf(f, m == HIAR_TUNE_DEV_GRAPH ? "device-graph" : "device");
        for (int i = 0; i < l->device_n; i++)
            fprintf(f, " %s", hiar_tune_dev_name(l->device[m][i]));
        fprintf(f, "\n");
    }
}

static hiar_result_t write_file(int fd, const char *tmp, const char *signature, const hiar_tune_limits_t *l,
                                const hiar_tune_table_t *table, const hiar_tune_dev_table_t *dev, double seconds)
{
    FILE *f = fdopen(fd, "w");
    int ok;

    if (!f) {
        close(fd);
        return hiar_error_set(HIAR_SYSTEM_ERROR, "cannot write the tuning cache %s: %s", tmp, strerror(errno));
    }
    fprintf(f, "# hiar tuning cache (HIAR_TUNE=1 or hiar-bench --tune wrote it); delete it to tune again\n");
    fprintf(f, "version %s\nsignature %s\n", hiar_version(), signature);
    fprintf(f, "shm_oneshot_max %zu\nhier_oneshot_max %zu\nmeasured_s %.3f\n", l->shm_oneshot_max,
            l->hier_oneshot_max, seconds);
    write_dev_choice(f, l);
    if (table)
        write_table(f, table);
    if (dev)
        write_dev_table(f, dev);
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    return ok ? HIAR_SUCCESS
              : hiar_error_set(HIAR_SYSTEM_ERROR, "cannot write the tuning cache %s: %s", tmp, strerror(errno));
}

hiar_result_t hiar_tune_cache_write(const char *path, const char *signature, const hiar_tune_limits_t *l,
                                    const hiar_tune_table_t *table, const hiar_tune_dev_table_t *dev,
                                    double seconds)
{
    char tmp[1100];
    hiar_result_t rc;
    int fd;

    HIAR_CHECK(make_folders(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return hiar_error_set(HIAR_SYSTEM_ERROR, "cannot create the tuning cache's temporary file %s: %s", tmp,
                              strerror(errno));
    rc = write_file(fd, tmp, signature, l, table, dev, seconds);
    if (rc == HIAR_SUCCESS && rename(tmp, path) != 0)
        rc = hiar_error_set(HIAR_SYSTEM_ERROR, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc != HIAR_SUCCESS)
        unlink(tmp);
    return rc;
}

/* A whole decimal size in [0, HIAR_TUNE_LIMIT_MAX]. */
static int parse_limit(const char *text, size_t *out)
{
    long long v;

    if (hiar_parse_number(text, 0, &v) != 0 || (unsigned long long)v > HIAR_TUNE_LIMIT_MAX)
        return 0;
    *out = (size_t)v;
    return 1;
}

typedef struct {
    char version[64], signature[1600]; /* tune.c's signatures are at most 1536 */
    int nlimits; /* bit 0 shm, bit 1 hier */
    hiar_tune_limits_t l;
    int device_n[HIAR_TUNE_DEV_NMODES]; /* names on the "device" and "device-graph" lines, -1: no such line */
} cache_file_t;

/* "device[-graph] NAME...": a known path name per ladder size, at most the ladder's. */
static int parse_device(char *value, cache_file_t *c, int m)
{
    char *save = NULL;
    int n = 0;

    for (char *w = strtok_r(value, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        int k = 0;
        while (hiar_tune_dev_name(k) && strcmp(hiar_tune_dev_name(k), w) != 0)
            k++;
        if (!hiar_tune_dev_name(k) || n == HIAR_TUNE_DEV_NSIZES)
            return 0;
        c->l.device[m][n++] = (unsigned char)k;
    }
    c->device_n[m] = n;
    return n > 0;
}

/* One "key value" line into c; 0 where it is not one this reader knows, or its value is bad. */
static int parse_line(char *line, cache_file_t *c)
{
    char *value = strchr(line, ' ');

    line[strcspn(line, "\n")] = '\0';
    if (!value)
        return 0;
    *value++ = '\0';
    if (strcmp(line, "version") == 0)
        return snprintf(c->version, sizeof(c->version), "%s", value) < (int)sizeof(c->version);
    if (strcmp(line, "signature") == 0)
        return snprintf(c->signature, sizeof(c->signature), "%s", value) < (int)sizeof(c->signature);
    if (strcmp(line, "shm_oneshot_max") == 0)
        return parse_limit(value, &c->l.shm_oneshot_max) && (c->nlimits |= 1);
    if (strcmp(line, "hier_oneshot_max") == 0)
        return parse_limit(value, &c->l.hier_oneshot_max) && (c->nlimits |= 2);
    if (strcmp(line, "device") == 0)
        return parse_device(value, c, HIAR_TUNE_DEV_EAGER);
    if (strcmp(line, "device-graph") == 0)
        return parse_device(value, c, HIAR_TUNE_DEV_GRAPH);
    return strcmp(line, "measured_s") == 0;
}

static hiar_tune_cache_t ignored(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static hiar_tune_cache_t ignored(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return HIAR_TUNE_CACHE_IGNORED;
}

hiar_tune_cache_t hiar_tune_cache_read(const char *path, const char *signature, hiar_tune_limits_t *l,
                                       char *why, size_t whylen, char *signature_out, size_t siglen)
{
    FILE *f = fopen(path, "r");
    cache_file_t c = {.device_n = {-1, -1}};
    char line[1700];
    int n = 0, bad = 0;

    if (!f) {
        int err = errno;
        snprintf(why, whylen, "%s", strerror(err));
        return err == ENOENT ? HIAR_TUNE_CACHE_ABSENT : ignored(why, whylen, "cannot read it: %s", strerror(err));
    }
    while (!bad && fgets(line, sizeof(line), f)) {
        n++;
        if (line[0] != '#' && line[0] != '\n')
            bad = !strchr(line, '\n') || !parse_line(line, &c);
    }
    fclose(f);
    if (signature_out)
        snprintf(signature_out, siglen, "%s", c.signature);
    if (bad)
        return ignored(why, whylen, "corrupt at line %d (expected \"key value\": version, signature, "
                                    "shm_oneshot_max and hier_oneshot_max up to %zu, measured_s, device and "
                                    "device-graph and up to %d path names)",
                       n, HIAR_TUNE_LIMIT_MAX, HIAR_TUNE_DEV_NSIZES);
    if (!c.version[0] || !c.signature[0] || c.nlimits != 3)
        return ignored(why, whylen, "corrupt: it lacks %s",
                       !c.version[0] ? "its version" : !c.signature[0] ? "its signature" : "a limit");
    /* No graph line: captured calls take the eager choices. */
    c.l.device_n = c.device_n[HIAR_TUNE_DEV_EAGER] > 0 ? c.device_n[HIAR_TUNE_DEV_EAGER] : 0;
    if (c.device_n[HIAR_TUNE_DEV_GRAPH] < 0)
        memcpy(c.l.device[HIAR_TUNE_DEV_GRAPH], c.l.device[HIAR_TUNE_DEV_EAGER], HIAR_TUNE_DEV_NSIZES);
    if (strcmp(c.version, hiar_version()) != 0)
        return ignored(why, whylen, "written by hiar %s, this is %s", c.version, hiar_version());
    if (signature && strcmp(c.signature, signature) != 0)
        return ignored(why, whylen, "of another signature (%s; this comm's: %s)", c.signature, signature);
    /* Read for any signature (hiar-info): device paths named for another ladder's sizes are not shown as ours. */
    if (!signature && c.l.device_n && !same_ladder(c.signature))
        return ignored(why, whylen, "of another device ladder (this hiar's signatures end \"" LADDER_FMT "\")",
                       HIAR_TUNE_DEV_NSIZES);
    if (c.device_n[HIAR_TUNE_DEV_GRAPH] >= 0 && c.device_n[HIAR_TUNE_DEV_GRAPH] != c.device_n[HIAR_TUNE_DEV_EAGER])
        return ignored(why, whylen, "corrupt: %d device paths for graphs, %d for eager calls (expected as many)",
                       c.device_n[HIAR_TUNE_DEV_GRAPH], c.device_n[HIAR_TUNE_DEV_EAGER]);
    *l = c.l;
    return HIAR_TUNE_CACHE_LOADED;
}
