/* comm_sysmem: pinned host memory shared by the ranks of one host, for the custom backends' --p2p
 * sysmem (comm_custom.c; CUDA builds only).
 *
 * Each rank creates one POSIX shared-memory segment (dist_shm.h: named per job, reserved, mapped),
 * registers it with cudaHostRegister(mapped, portable) and hands its name to the peers through the registration
 * records (comm_records.c, handle kind shm); each peer maps the same pages and registers them in its own
 * CUDA context. A segment's name is unlinked as soon as every rank has mapped it, so a rank that dies
 * later leaves nothing behind in /dev/shm; the mappings live until comm_shm_detach. */
#ifndef VPSIM_COMM_SYSMEM_H
#define VPSIM_COMM_SYSMEM_H

#include "comm_custom.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct comm_shm {
    char name[COMM_REG_HANDLE_BYTES];
    void *host;      /* the mapping in this process (NULL: nothing mapped) */
    void *dev;       /* its device pointer (cudaHostGetDevicePointer) */
    size_t bytes;    /* mapped bytes */
    bool registered; /* cudaHostRegister succeeded */
    bool linked;     /* created here and its name not yet unlinked */
} comm_shm;

/* Create, size (zero-filled), map and register this rank's segment. 0, or -1 with a reason (nothing
 * left behind: the name is unlinked again on failure). */
int comm_shm_create(comm_shm *m, const char *name, size_t bytes, char *why, size_t len);
/* Map and register a peer's segment of at least `bytes` bytes. 0, or -1 with a reason. */
int comm_shm_attach(comm_shm *m, const char *name, size_t bytes, char *why, size_t len);
/* This rank's exchange buffers in one new segment: region k (bytes[k] > 0; 0 = absent) at a page
 * offset. Sets local[k] to its device pointer and regions[k] to its record entry (handle kind shm,
 * the segment's name, offset, bytes). Collective (the job name); 0, or -1 with a reason. */
int comm_sysmem_alloc(comm_shm *own, int rank, const size_t bytes[COMM_REG_REGIONS], void *local[COMM_REG_REGIONS],
                      comm_reg_region regions[COMM_REG_REGIONS], char *why, size_t len);
/* Map every peer's segment named in its (checked) record into shm[peer], and point peer[k][p] at
 * region k of rank p as the GPU sees it here (this rank's own entries from shm[rank]). 0, or -1 with a
 * reason naming the peer and buffer. */
int comm_sysmem_map_peers(comm_shm shm[COMM_MAX_RANKS], const comm_reg_record *recs, int world, int rank,
                          void *peer[COMM_REG_REGIONS][COMM_MAX_RANKS], char *why, size_t len);
/* Remove the name of a segment created here (its mappings stay valid). Idempotent. */
void comm_shm_unlink(comm_shm *m);
/* Unregister and unmap (and unlink, if still linked). Idempotent. */
void comm_shm_detach(comm_shm *m);

#endif
