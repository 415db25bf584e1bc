/* POSIX shared memory segments of a group (created 0600 with O_EXCL, unlinked once every member mapped them). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "net/coll.h"
#include "transport/segment.h"

#define SEGMENT_NAME_MAX 64

/* Leader: create, size and map a fresh segment; its name goes to the peers. */
static hiar_result_t segment_create(size_t bytes, char name[SEGMENT_NAME_MAX], void **base)
{
    static atomic_uint counter;
    int fd = -1, err;

    for (int attempt = 0; fd < 0; attempt++) {
        snprintf(name, SEGMENT_NAME_MAX, "/hiar-%u-%ld-%u", (unsigned)getuid(), (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, S_IRUSR | S_IWUSR);
        if (fd < 0 && (errno != EEXIST || attempt > 100))
            return hiar_error_set(HIAR_SYSTEM_ERROR, "shm_open(%s) failed: %s", name, strerror(errno));
    }
    /* Reserve the pages now: a full /dev/shm fails here, not as SIGBUS later. */
    err = posix_fallocate(fd, 0, (off_t)bytes);
    if (err) {
        close(fd);
        shm_unlink(name);
        return hiar_error_set(HIAR_SYSTEM_ERROR,
                              "cannot reserve %zu bytes in /dev/shm for %s: %s; lower "
                              "HIAR_BUFFER_SIZE or enlarge /dev/shm (docker: --shm-size)",
                              bytes, name, strerror(err));
    }
    *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (*base == MAP_FAILED) {
        shm_unlink(name);
        return hiar_error_set(HIAR_SYSTEM_ERROR, "mmap of %zu bytes of %s failed: %s", bytes, name,
                              strerror(errno));
    }
    return HIAR_SUCCESS;
}

static hiar_result_t segment_open(const char *name, size_t bytes, void **base)
{
    int fd = shm_open(name, O_RDWR, 0);

    if (fd < 0)
        return hiar_error_set(HIAR_SYSTEM_ERROR,
                              "shm_open(%s) of the group leader's segment failed: %s (do the ranks "
                              "share /dev/shm?)",
                              name, strerror(errno));
    *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (*base == MAP_FAILED)
        return hiar_error_set(HIAR_SYSTEM_ERROR, "mmap of %zu bytes of %s failed: %s", bytes, name,
                              strerror(errno));
    return HIAR_SUCCESS;
}

hiar_result_t hiar_segment_map(MPI_Comm group, int me, size_t bytes, const char *what, int quiet, void **base)
{
    char name[SEGMENT_NAME_MAX] = "";
    hiar_result_t rc = HIAR_SUCCESS;
    int any_failed;

    *base = NULL;
    if (me == 0 && (rc = segment_create(bytes, name, base)) != HIAR_SUCCESS) {
        /* Peers must not look for a segment that is gone (and blame /dev/shm sharing). */
        name[0] = '\0';
        HIAR_LOG_AT(quiet ? HIAR_LOG_INFO : HIAR_LOG_WARN, SHM, "%s", hiar_last_error());
    }
    hiar_net_bcast(group, name, sizeof(name), 0);
    if (me != 0 && name[0] && (rc = segment_open(name, bytes, base)) != HIAR_SUCCESS)
        HIAR_LOG_AT(quiet ? HIAR_LOG_INFO : HIAR_LOG_WARN, SHM, "%s", hiar_last_error());
    any_failed = rc != HIAR_SUCCESS || !name[0];
    if (hiar_net_max(group, &any_failed, 1) != HIAR_SUCCESS)
        any_failed = 1;
    if (me == 0 && name[0])
        shm_unlink(name);
    if (rc == HIAR_SUCCESS && any_failed)
        rc = hiar_error_set(HIAR_SYSTEM_ERROR, "%s: another rank of the group failed to map the shared segment "
                                               "(its log says why)", what);
    if (rc != HIAR_SUCCESS && *base && *base != MAP_FAILED)
        munmap(*base, bytes);
    if (rc != HIAR_SUCCESS)
        *base = NULL;
    else
        HIAR_INFO(SHM, "%s: segment %s of %zu bytes, unlinked after mapping", what, name, bytes);
    return rc;
}
