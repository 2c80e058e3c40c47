/* Pinned host memory shared between the ranks of one host (see comm_sysmem.h). Every function reports
 * a failure to its caller instead of aborting, so that comm_custom.c can first unlink what it created
 * and then fail on every rank at once. */
#include "comm_sysmem.h"
#include "../dist/dist.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void comm_shm_job_name(char *name, size_t len, int rank)
{
    /* 16 hex digits from rank 0: two jobs on one host (or a crashed earlier run whose names were not
     * yet unlinked) never share a name, and O_EXCL catches the rest. */
    unsigned long long token = 0;
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        token = ((unsigned long long)getpid() << 40) ^ ((unsigned long long)ts.tv_sec << 20) ^
                (unsigned long long)ts.tv_nsec ^ (unsigned long long)(uintptr_t)&ts;
    }
    dist_bcast(&token, sizeof(token), 0);
    snprintf(name, len, "/vpsim-%016llx-r%d", token, rank);
}

size_t comm_shm_round(size_t bytes)
{
    const long page = sysconf(_SC_PAGESIZE);
    const size_t p = page > 0 ? (size_t)page : 4096;
    return (bytes + p - 1) / p * p;
}

/* Map `fd` (at least `bytes` long), then register the mapping with CUDA in this process. */
static int map_and_register(comm_shm *m, int fd, size_t bytes, char *why, size_t len)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, len, "mmap of shm segment %s (%zu bytes): %s", m->name, bytes, strerror(errno));
        return -1;
    }
    m->host = p;
    m->bytes = bytes;
    /* Portable: usable from every CUDA context of the process; mapped: the GPU loads and stores it
     * directly over PCIe (zero-copy), which is the path being measured. */
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaHostRegister of shm segment %s (%zu bytes): %s", m->name, bytes,
                 cudaGetErrorString(e));
        cudaGetLastError();
        return -1;
    }
    m->registered = true;
    e = cudaHostGetDevicePointer(&m->dev, p, 0);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaHostGetDevicePointer of shm segment %s: %s", m->name, cudaGetErrorString(e));
        cudaGetLastError();
        return -1;
    }
    return 0;
}

int comm_shm_create(comm_shm *m, const char *name, size_t bytes, char *why, size_t len)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", name);
    const size_t size = comm_shm_round(bytes);
    const int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(why, len, "shm_open(%s, create): %s", name, strerror(errno));
        return -1;
    }
    m->linked = true;
    /* A fresh segment reads as zeros: no memset needed. Its pages are reserved now, so that a /dev/shm
     * too small for them (containers default to 64 MiB) is a clear error here, not a SIGBUS later. */
    int rc = 0, e = 0;
    if (ftruncate(fd, (off_t)size) != 0)
        e = errno;
    else
        e = posix_fallocate(fd, 0, (off_t)size);
    if (e) {
        snprintf(why, len,
                 "cannot reserve %zu bytes for shm segment %s: %s (/dev/shm too small? `df -h /dev/shm`; in a "
                 "container, raise --shm-size)",
                 size, name, strerror(e));
        rc = -1;
    }
    if (rc == 0)
        rc = map_and_register(m, fd, size, why, len);
    close(fd);
    if (rc)
        comm_shm_detach(m);
    return rc;
}

int comm_shm_attach(comm_shm *m, const char *name, size_t bytes, char *why, size_t len)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", name);
    const int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        snprintf(why, len, "shm_open(%s): %s", name, strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        snprintf(why, len, "fstat of shm segment %s: %s", name, strerror(errno));
        rc = -1;
    } else if ((size_t)st.st_size < bytes) {
        snprintf(why, len, "shm segment %s holds %lld bytes, its owner announced %zu", name, (long long)st.st_size,
                 bytes);
        rc = -1;
    }
    if (rc == 0)
        rc = map_and_register(m, fd, comm_shm_round(bytes), why, len);
    close(fd);
    if (rc)
        comm_shm_detach(m);
    return rc;
}

void comm_shm_unlink(comm_shm *m)
{
    if (m->linked)
        shm_unlink(m->name);
    m->linked = false;
}

void comm_shm_detach(comm_shm *m)
{
    comm_shm_unlink(m);
    if (m->registered && cudaHostUnregister(m->host) != cudaSuccess)
        cudaGetLastError(); /* at teardown there is nothing better to do than to unmap anyway */
    if (m->host)
        munmap(m->host, m->bytes);
    m->host = m->dev = NULL;
    m->registered = false;
    m->bytes = 0;
}

int comm_sysmem_alloc(comm_shm *own, int rank, const size_t bytes[COMM_REG_REGIONS], void *local[COMM_REG_REGIONS],
                      comm_reg_region regions[COMM_REG_REGIONS], char *why, size_t len)
{
    char name[COMM_REG_HANDLE_BYTES];
    comm_shm_job_name(name, sizeof(name), rank);
    /* Page-aligned regions: the kernels' 16-byte vector path holds on every rank, and no region shares
     * a page (or a cache line) with another one. */
    size_t offset[COMM_REG_REGIONS] = {0}, total = 0;
    for (int k = 0; k < COMM_REG_REGIONS; k++)
        if (bytes[k]) {
            offset[k] = total;
            total += comm_shm_round(bytes[k]);
        }
    if (comm_shm_create(own, name, total, why, len))
        return -1;
    for (int k = 0; k < COMM_REG_REGIONS; k++) {
        if (!bytes[k])
            continue;
        local[k] = (char *)own->dev + offset[k];
        comm_reg_region *g = &regions[k];
        memset(g, 0, sizeof(*g));
        g->present = true;
        g->handle_kind = COMM_REG_HANDLE_SHM;
        snprintf((char *)g->handle, sizeof(g->handle), "%s", name);
        g->offset = offset[k];
        g->bytes = bytes[k];
    }
    return 0;
}

int comm_sysmem_map_peers(comm_shm shm[COMM_MAX_RANKS], const comm_reg_record *recs, int world, int rank,
                          void *peer[COMM_REG_REGIONS][COMM_MAX_RANKS], char *why, size_t len)
{
    for (int p = 0; p < world; p++) {
        for (int k = 0; k < COMM_REG_REGIONS; k++) {
            const comm_reg_region *g = &recs[p].region[k];
            if (!g->present || g->handle_kind != COMM_REG_HANDLE_SHM)
                continue;
            const char *name = (const char *)g->handle;
            char err[256] = "";
            int rc = 0;
            if (!shm[p].host) /* the first of the peer's regions: map its segment */
                rc = comm_shm_attach(&shm[p], name, (size_t)comm_reg_segment_bytes(&recs[p], k), err, sizeof(err));
            else if (strcmp(name, shm[p].name) != 0) {
                snprintf(err, sizeof(err), "its buffers are in two segments (%s, %s); one per rank is expected",
                         shm[p].name, name);
                rc = -1;
            }
            if (rc) {
                snprintf(why, len, "rank %d cannot map rank %d's %s buffer (pid %d) in pinned host memory: %s", rank,
                         p, comm_reg_kind_names[k], recs[p].pid, err);
                return -1;
            }
            peer[k][p] = (char *)shm[p].dev + g->offset;
        }
    }
    return 0;
}
