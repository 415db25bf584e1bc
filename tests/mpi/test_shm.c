/*
 * Shared-memory segments are private to the job (DESIGN.md, "Errors, faults
 * and bad input"): created with O_CREAT|O_EXCL and mode 0600 under a name
 * that holds the uid, never taken over from someone who created that name
 * first, and unlinked as soon as every rank of the group has mapped them, so
 * /dev/shm holds nothing of a live job.
 *
 * This program links the static core library with
 *     -Wl,--wrap=shm_open -Wl,--wrap=shm_unlink
 * so every shm_open / shm_unlink of hiar's own code goes through the
 * wrappers below (Open MPI's own calls, from its shared libraries, do not).
 * They record each call; on a group leader the first creation meets a
 * squatter: the wrapper creates that very name first (mode 0644, some
 * bytes), as another user or a stale job could.  hiar must see EEXIST, pick
 * another name, and leave the squatter's file alone.
 *
 *   test_shm --leaders=N    N: the number of groups with more than one rank
 *   test_shm --leaders=N --free-by-rank
 *                           statvfs("/dev/shm") (wrapped too) shows 64 MB free
 *                           on rank 0, half that on rank 1, and so on: the
 *                           default slots, sized from the least free space,
 *                           must still be one size on every rank (the chunks
 *                           hiar_comm_describe names), and a sum of 4 MB right
 *
 * Rank 0 ends with "np=3: 6 passed, 0 failed"; exit 0 only when all passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "harness.h"
#include "hiar.h"

#define NAME_MAX_LEN 64
#define MAX_CALLS 32
#define SQUATTER_TEXT "squatter"

typedef struct {
    char name[NAME_MAX_LEN];
    int oflag, err;
    mode_t mode;    /* the mode argument */
    mode_t st_mode; /* permission bits of the object, when created */
    uid_t st_uid;
} open_call_t;

static struct {
    open_call_t open[MAX_CALLS];
    int nopen;
    char unlinked[MAX_CALLS][NAME_MAX_LEN];
    int nunlink;
    char squatter[NAME_MAX_LEN]; /* "" until the squatter has struck */
} rec;

/* --free-by-rank: the free space of /dev/shm that statvfs shows, by world rank. */
static int fake_free;

int __real_statvfs(const char *path, struct statvfs *buf);
int __wrap_statvfs(const char *path, struct statvfs *buf);

int __wrap_statvfs(const char *path, struct statvfs *buf)
{
    int rc = __real_statvfs(path, buf);

    if (rc == 0 && fake_free && strcmp(path, "/dev/shm") == 0) {
        buf->f_frsize = 4096;
        buf->f_bavail = (((size_t)64 << 20) >> (world_rank < 4 ? world_rank : 4)) / 4096;
    }
    return rc;
}

/* Every rank's chunk size as hiar_comm_describe names it is the same, and a sum of 4 MB is right. */
static int slots_agree(hiar_comm_t *comm)
{
    enum { COUNT = 1 << 20 };
    char *text = NULL, *at;
    size_t len = 0;
    long long chunk = -1, lo, hi;
    FILE *f = open_memstream(&text, &len);
    float *buf = malloc(COUNT * sizeof(float));
    int ok = f && buf;

    if (f) {
        hiar_comm_describe(comm, f);
        fclose(f);
    }
    if (text && (at = strstr(text, "chunks of ")) != NULL)
        chunk = strtoll(at + 10, NULL, 10);
    free(text);
    MPI_Allreduce(&chunk, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&chunk, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("chunks of %lld to %lld bytes over the ranks\n", lo, hi);
    ok = ok && lo == hi && lo > 0;
    for (int i = 0; buf && i < COUNT; i++)
        buf[i] = (float)(world_rank + 1);
    ok = ok && hiar_allreduce(buf, buf, COUNT, HIAR_FLOAT32, HIAR_SUM, comm, NULL) == HIAR_SUCCESS;
    for (int i = 0; ok && i < COUNT; i++)
        ok = buf[i] == (float)(world_size * (world_size + 1) / 2);
    free(buf);
    return ok;
}

int __real_shm_open(const char *name, int oflag, mode_t mode);
int __real_shm_unlink(const char *name);
int __wrap_shm_open(const char *name, int oflag, mode_t mode);
int __wrap_shm_unlink(const char *name);

/* Creates name before hiar does: mode 0644 and some content, as a stranger would. */
static void squat(const char *name)
{
    int fd = __real_shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0644);

    if (fd < 0)
        return;
    if (fchmod(fd, 0644) != 0 || write(fd, SQUATTER_TEXT, sizeof(SQUATTER_TEXT)) != (ssize_t)sizeof(SQUATTER_TEXT))
        perror("squatter");
    close(fd);
    snprintf(rec.squatter, sizeof(rec.squatter), "%s", name);
}

int __wrap_shm_open(const char *name, int oflag, mode_t mode)
{
    open_call_t *c = rec.nopen < MAX_CALLS ? &rec.open[rec.nopen++] : NULL;
    int fd;

    if ((oflag & O_CREAT) && !rec.squatter[0])
        squat(name);
    fd = __real_shm_open(name, oflag, mode);
    if (c) {
        struct stat st;
        snprintf(c->name, sizeof(c->name), "%s", name);
        c->oflag = oflag;
        c->mode = mode;
        c->err = fd < 0 ? errno : 0;
        if (fd >= 0 && fstat(fd, &st) == 0) {
            c->st_mode = st.st_mode & 07777;
            c->st_uid = st.st_uid;
        }
        if (fd < 0)
            errno = c->err;
    }
    return fd;
}

int __wrap_shm_unlink(const char *name)
{
    if (rec.nunlink < MAX_CALLS)
        snprintf(rec.unlinked[rec.nunlink++], NAME_MAX_LEN, "%s", name);
    return __real_shm_unlink(name);
}

static int was_unlinked(const char *name)
{
    for (int i = 0; i < rec.nunlink; i++)
        if (strcmp(rec.unlinked[i], name) == 0)
            return 1;
    return 0;
}

/* The segment this rank created (its successful O_CREAT call), or NULL. */
static const open_call_t *created(void)
{
    for (int i = 0; i < rec.nopen; i++)
        if ((rec.open[i].oflag & O_CREAT) && !rec.open[i].err)
            return &rec.open[i];
    return NULL;
}

/* Every creation: O_CREAT|O_EXCL, mode 0600, a name with the uid; the object 0600 and ours. */
static int creations_private(void)
{
    char prefix[32];
    int ok = 1;

    snprintf(prefix, sizeof(prefix), "/hiar-%u-", (unsigned)getuid());
    for (int i = 0; i < rec.nopen; i++) {
        const open_call_t *c = &rec.open[i];
        if (!(c->oflag & O_CREAT))
            continue;
        if (!(c->oflag & O_EXCL) || (c->mode & 07777) != (S_IRUSR | S_IWUSR) ||
            strncmp(c->name, prefix, strlen(prefix)) != 0) {
            printf("[rank %d] shm_open(\"%s\", 0x%x, 0%o): expected O_CREAT|O_EXCL, mode 0600 and a "
                   "name starting with %s\n",
                   world_rank, c->name, (unsigned)c->oflag, (unsigned)c->mode, prefix);
            ok = 0;
        }
        if (!c->err && (c->st_mode != (S_IRUSR | S_IWUSR) || c->st_uid != getuid())) {
            printf("[rank %d] %s was created with mode 0%o, owner %u; expected 0600, owner %u\n",
                   world_rank, c->name, (unsigned)c->st_mode, (unsigned)c->st_uid, (unsigned)getuid());
            ok = 0;
        }
    }
    return ok;
}

/* The leader met the squatter: EEXIST, another name, and the squatter's file untouched. */
static int squatter_respected(void)
{
    char path[NAME_MAX_LEN + 16], text[sizeof(SQUATTER_TEXT)] = "";
    const open_call_t *mine = created();
    struct stat st;
    int ok = 1, fd;

    if (!rec.squatter[0])
        return 1; /* not a leader */
    if (rec.open[0].err != EEXIST || !mine || strcmp(mine->name, rec.squatter) == 0) {
        printf("[rank %d] with %s taken, shm_open gave %s and hiar used %s; expected EEXIST and "
               "another name\n",
               world_rank, rec.squatter, strerror(rec.open[0].err), mine ? mine->name : "nothing");
        ok = 0;
    }
    if (was_unlinked(rec.squatter)) {
        printf("[rank %d] hiar unlinked %s, which it did not create\n", world_rank, rec.squatter);
        ok = 0;
    }
    snprintf(path, sizeof(path), "/dev/shm%s", rec.squatter);
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || (st.st_mode & 07777) != 0644 ||
        read(fd, text, sizeof(text)) != (ssize_t)sizeof(text) || strcmp(text, SQUATTER_TEXT) != 0) {
        printf("[rank %d] the squatter's %s was changed (mode, content or gone)\n", world_rank, path);
        ok = 0;
    }
    if (fd >= 0)
        close(fd);
    __real_shm_unlink(rec.squatter);
    return ok;
}

/* Non-leaders only opened (no O_CREAT) a name some leader created. */
static int members_only_open(const char *all_created)
{
    int ok = 1;

    for (int i = 0; i < rec.nopen; i++) {
        int known = 0;
        if (rec.open[i].oflag & O_CREAT)
            continue;
        for (int r = 0; r < world_size; r++)
            known |= strcmp(all_created + (size_t)r * NAME_MAX_LEN, rec.open[i].name) == 0;
        if (!known || (rec.open[i].oflag & O_ACCMODE) != O_RDWR) {
            printf("[rank %d] opened %s (flags 0x%x), which no leader created\n", world_rank,
                   rec.open[i].name, (unsigned)rec.open[i].oflag);
            ok = 0;
        }
    }
    return ok;
}

/* While the comm lives: every segment of the job is unlinked already, yet the comm works. */
static int unlinked_while_alive(hiar_comm_t *comm, const char *all_created)
{
    const open_call_t *mine = created();
    float buf[1000];
    int ok = 1;

    if (mine && !was_unlinked(mine->name)) {
        printf("[rank %d] %s was not unlinked by the end of hiar_comm_create\n", world_rank, mine->name);
        ok = 0;
    }
    for (int r = 0; r < world_size; r++) {
        const char *name = all_created + (size_t)r * NAME_MAX_LEN;
        char path[NAME_MAX_LEN + 16];
        snprintf(path, sizeof(path), "/dev/shm%s", name);
        if (name[0] && access(path, F_OK) == 0) {
            printf("[rank %d] %s still exists while the comm is alive\n", world_rank, path);
            ok = 0;
        }
    }
    for (int i = 0; i < 1000; i++)
        buf[i] = (float)(world_rank + 1);
    if (hiar_allreduce(buf, buf, 1000, HIAR_FLOAT32, HIAR_SUM, comm, NULL) != HIAR_SUCCESS ||
        buf[999] != (float)(world_size * (world_size + 1) / 2)) {
        printf("[rank %d] the allreduce over the unlinked segment failed: %s\n", world_rank, hiar_last_error());
        ok = 0;
    }
    return ok;
}

int main(int argc, char **argv)
{
    char mine[NAME_MAX_LEN] = "", *all_created;
    int leaders = 1, nleaders = 0, is_leader;
    hiar_comm_t *comm = NULL;

    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--leaders=", 10) == 0)
            leaders = atoi(argv[i] + 10);
        else if (strcmp(argv[i], "--free-by-rank") == 0)
            fake_free = 1;
    if (!harness_init(&argc, &argv, "test_shm", 2))
        return HARNESS_SKIP;
    harness_verdict("hiar_comm_create", hiar_comm_create(MPI_COMM_WORLD, NULL, &comm) == HIAR_SUCCESS);
    if (!comm) {
        printf("[rank %d] hiar_comm_create: %s\n", world_rank, hiar_last_error());
        MPI_Finalize();
        return 1;
    }
    if (created())
        snprintf(mine, sizeof(mine), "%s", created()->name);
    all_created = calloc((size_t)world_size, NAME_MAX_LEN);
    MPI_Allgather(mine, NAME_MAX_LEN, MPI_CHAR, all_created, NAME_MAX_LEN, MPI_CHAR, MPI_COMM_WORLD);
    is_leader = mine[0] != 0;
    MPI_Allreduce(&is_leader, &nleaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("%d group leaders created segments, e.g. %s\n", nleaders, all_created);
    harness_verdict("one segment per group of more than one rank", nleaders == leaders);
    harness_verdict("segments are created O_CREAT|O_EXCL, mode 0600, owned by us, named with the uid",
                    creations_private());
    harness_verdict("a name taken by someone else: EEXIST, another name, the other file untouched",
                    squatter_respected());
    harness_verdict("the other ranks only open (never create) their leader's segment",
                    members_only_open(all_created));
    harness_verdict("segments are unlinked once mapped: none in /dev/shm while the comm works",
                    unlinked_while_alive(comm, all_created));
    if (fake_free)
        harness_verdict("ranks that see different free /dev/shm take one slot size, and sum right",
                        slots_agree(comm));
    hiar_comm_destroy(comm);
    free(all_created);
    MPI_Finalize();
    return harness_summary();
}
