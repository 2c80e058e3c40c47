/* Named POSIX shared memory between the ranks of one host (dist_shm.h). */
#include "dist_shm.h"
#include "dist.h"

#include <errno.h>
#include <mpi.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

unsigned long long dist_shm_token(void)
{
    unsigned long long token = 0;
    int rank = 0;
    VP_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        token = ((unsigned long long)getpid() << 40) ^ ((unsigned long long)ts.tv_sec << 20) ^
                (unsigned long long)ts.tv_nsec ^ (unsigned long long)(uintptr_t)&ts;
    }
    dist_bcast(&token, sizeof(token), 0);
    return token;
}

void dist_shm_name(char *name, size_t len, const char *tag, unsigned long long token, int rank)
{
    snprintf(name, len, "/vpsim-%s-%016llx-r%d", tag, token, rank);
}

size_t dist_shm_round(size_t bytes)
{
    const long page = sysconf(_SC_PAGESIZE);
    const size_t p = page > 0 ? (size_t)page : 4096;
    return (bytes + p - 1) / p * p;
}

static void *map_fd(int fd, const char *name, size_t size, char *why, size_t len)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, len, "mmap of shm segment %s (%zu bytes): %s", name, size, strerror(errno));
        return NULL;
    }
    return p;
}

/* The names this rank created and has not unlinked yet, without their "-r<rank>" tail: a job's ranks
 * name their segments alike, so a rank being ended can unlink every rank's segment of that kind,
 * including those of a peer that was killed (SIGKILL) while the segments were being set up. */
#define DIST_SHM_PENDING 8
static char pending[DIST_SHM_PENDING][64];

static void pending_set(const char *name, bool on)
{
    const char *tail = strrchr(name, '-');
    const size_t n = tail ? (size_t)(tail - name) : strlen(name);
    for (int i = 0; i < DIST_SHM_PENDING; i++) {
        const bool same = pending[i][0] && strlen(pending[i]) == n && !strncmp(pending[i], name, n);
        if (!on && same)
            pending[i][0] = '\0';
        if (on && same)
            return;
    }
    for (int i = 0; on && i < DIST_SHM_PENDING; i++)
        if (!pending[i][0] && n < sizeof(pending[i])) {
            memcpy(pending[i], name, n);
            pending[i][n] = '\0';
            return;
        }
}

void dist_shm_release(const char *name)
{
    shm_unlink(name);
    pending_set(name, false);
}

void dist_shm_cleanup(int world)
{
    /* Async-signal-safe: unlink(2) of the /dev/shm path shm_unlink would take, no stdio, no malloc. */
    for (int i = 0; i < DIST_SHM_PENDING; i++) {
        if (!pending[i][0])
            continue;
        for (int r = 0; r < world; r++) {
            char path[128] = "/dev/shm";
            size_t n = strlen(path);
            for (const char *s = pending[i]; *s && n + 16 < sizeof(path); s++)
                path[n++] = *s;
            path[n++] = '-';
            path[n++] = 'r';
            char digits[12];
            int k = 0, v = r;
            do
                digits[k++] = (char)('0' + v % 10);
            while ((v /= 10) && k < (int)sizeof(digits));
            while (k > 0)
                path[n++] = digits[--k];
            path[n] = '\0';
            (void)unlink(path);
        }
        pending[i][0] = '\0';
    }
}

void *dist_shm_create(const char *name, size_t bytes, bool reserve, char *why, size_t len)
{
    const size_t size = dist_shm_round(bytes);
    const int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(why, len, "shm_open(%s, create): %s", name, strerror(errno));
        return NULL;
    }
    int e = ftruncate(fd, (off_t)size) != 0 ? errno : 0;
    if (!e && reserve)
        e = posix_fallocate(fd, 0, (off_t)size);
    void *p = NULL;
    if (e)
        snprintf(why, len,
                 "cannot size shm segment %s to %zu bytes: %s (/dev/shm too small? `df -h /dev/shm`; in a "
                 "container, raise --shm-size)",
                 name, size, strerror(e));
    else
        p = map_fd(fd, name, size, why, len);
    close(fd);
    if (!p)
        shm_unlink(name);
    else
        pending_set(name, true);
    return p;
}

void *dist_shm_attach(const char *name, size_t bytes, char *why, size_t len)
{
    const int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        snprintf(why, len, "shm_open(%s): %s", name, strerror(errno));
        return NULL;
    }
    struct stat st;
    void *p = NULL;
    if (fstat(fd, &st) != 0)
        snprintf(why, len, "fstat of shm segment %s: %s", name, strerror(errno));
    else if ((size_t)st.st_size < bytes)
        snprintf(why, len, "shm segment %s holds %lld bytes, its owner announced %zu", name, (long long)st.st_size,
                 bytes);
    else
        p = map_fd(fd, name, dist_shm_round(bytes), why, len);
    close(fd);
    return p;
}

void dist_shm_unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, dist_shm_round(bytes));
}
