/* dist_shm: named POSIX shared memory between the ranks of one host — the custom kernels' exchange
 * buffers under --p2p sysmem (comm_sysmem.c, which registers them with CUDA) and the link probe's
 * segments (exec_links). One rank creates a segment and hands its name to the others, who map it; the
 * creator unlinks the name once every rank has mapped it, so a rank that dies later leaves nothing in
 * /dev/shm. Plain C (no CUDA); failures are returned, never fatal, so callers can agree (dist_agree)
 * before anyone gives up. */
#ifndef VPSIM_DIST_SHM_H
#define VPSIM_DIST_SHM_H

#include <stdbool.h>
#include <stddef.h>

/* A token for this job's segment names, made by rank 0 (pid, time, an address) and broadcast, so two
 * jobs on one host (or a crashed run whose names were not unlinked) never share a name. Collective. */
unsigned long long dist_shm_token(void);
/* "/vpsim-<tag>-<token, 16 hex digits>-r<rank>": rank `rank`'s segment (any rank can name any other's). */
void dist_shm_name(char *name, size_t len, const char *tag, unsigned long long token, int rank);
/* `bytes` rounded up to whole pages: what a segment of `bytes` maps. */
size_t dist_shm_round(size_t bytes);
/* Create (exclusively), size and map a zero-filled segment of dist_shm_round(bytes). `reserve`: take its
 * pages now (posix_fallocate), so that a /dev/shm too small for them is a clear error here rather than a
 * SIGBUS at first touch; without it the pages come at first touch, under the placement policy the caller
 * gives the mapping first (NUMA). NULL with a reason (the name unlinked again) on failure. */
void *dist_shm_create(const char *name, size_t bytes, bool reserve, char *why, size_t len);
/* Map another rank's segment, which must hold at least `bytes` (checked): dist_shm_round(bytes) mapped.
 * NULL with a reason. */
void *dist_shm_attach(const char *name, size_t bytes, char *why, size_t len);
/* Unlink the name of a segment this rank created, once every rank has mapped it. */
void dist_shm_release(const char *name);
/* Unlink the names of every rank's segments of each kind this rank created and has not released
 * (ranks 0..world-1): called when the rank is being ended (the launcher's SIGTERM, dist_fail), so that a
 * job that dies while its segments are set up leaves nothing in /dev/shm. Async-signal-safe. */
void dist_shm_cleanup(int world);
/* Unmap what create or attach mapped for `bytes` (NULL: nothing). */
void dist_shm_unmap(void *p, size_t bytes);

#endif
