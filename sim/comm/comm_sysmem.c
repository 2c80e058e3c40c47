/* Pinned host memory shared between the ranks of one host (see comm_sysmem.h). Every function reports
 * a failure to its caller instead of aborting, so that comm_custom.c can first unlink what it created
 * and then fail on every rank at once. */
#include "comm_sysmem.h"
#include "../dist/dist.h"
#include "../dist/dist_shm.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Register the mapping of segment m->name (bytes long) with CUDA in this process: portable, usable from
 * every CUDA context of the process; mapped, the GPU loads and stores it directly over PCIe (zero-copy),
 * which is the path being measured. */
static int register_mapping(comm_shm *m, void *p, size_t bytes, char *why, size_t len)
{
    m->host = p;
    m->bytes = bytes;
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
    /* Reserved now: a fresh segment reads as zeros, and a /dev/shm too small for it fails here. */
    void *p = dist_shm_create(name, bytes, true, why, len);
    if (!p)
        return -1;
    m->linked = true;
    const int rc = register_mapping(m, p, dist_shm_round(bytes), why, len);
    if (rc)
        comm_shm_detach(m);
    return rc;
}

int comm_shm_attach(comm_shm *m, const char *name, size_t bytes, char *why, size_t len)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", name);
    void *p = dist_shm_attach(name, bytes, why, len);
    if (!p)
        return -1;
    const int rc = register_mapping(m, p, dist_shm_round(bytes), why, len);
    if (rc)
        comm_shm_detach(m);
    return rc;
}

void comm_shm_unlink(comm_shm *m)
{
    if (m->linked)
        dist_shm_release(m->name);
    m->linked = false;
}

void comm_shm_detach(comm_shm *m)
{
    comm_shm_unlink(m);
    if (m->registered && cudaHostUnregister(m->host) != cudaSuccess)
        cudaGetLastError(); /* at teardown there is nothing better to do than to unmap anyway */
    dist_shm_unmap(m->host, m->bytes);
    m->host = m->dev = NULL;
    m->registered = false;
    m->bytes = 0;
}

int comm_sysmem_alloc(comm_shm *own, int rank, const size_t bytes[COMM_REG_REGIONS], void *local[COMM_REG_REGIONS],
                      comm_reg_region regions[COMM_REG_REGIONS], char *why, size_t len)
{
    char name[COMM_REG_HANDLE_BYTES];
    dist_shm_name(name, sizeof(name), "ar", dist_shm_token(), rank);
    /* Page-aligned regions: the kernels' 16-byte vector path holds on every rank, and no region shares
     * a page (or a cache line) with another one. */
    size_t offset[COMM_REG_REGIONS] = {0}, total = 0;
    for (int k = 0; k < COMM_REG_REGIONS; k++)
        if (bytes[k]) {
            offset[k] = total;
            total += dist_shm_round(bytes[k]);
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
