/* The link probe's pieces behind exec_links_measure (exec_links.h): the driver (exec_links.c) walks the
 * schedule of pairs and repetitions; a backend (exec_links_cpu.c, exec_links_cuda.c) does one timed
 * thing on this rank when asked; exec_links_host.c holds the plain-C helpers both need (pointer chains,
 * medians, POSIX shared memory, NUMA placement). Not for callers outside sim/exec. */
#ifndef VPSIM_EXEC_LINKS_INTERNAL_H
#define VPSIM_EXEC_LINKS_INTERNAL_H

#include "exec_links.h"
#include "../config/cfg.h" /* cfg_device */
#include "../dist/dist_shm.h"
#include "../util/util.h"  /* util_percentile: every median of the probe */

#include <stdbool.h>
#include <stddef.h>

/* A pointer chain: node i lives at byte i * EXEC_LINKS_NODE_BYTES; each of its EXEC_LINKS_CHAIN_LINES
 * lines (EXEC_LINKS_LINE_BYTES apart) holds the same 32-bit index of the next node. Repetition r walks
 * line r % EXEC_LINKS_CHAIN_LINES, so no repetition reads a cache line an earlier one brought in, and
 * the 4 KiB stride in random order leaves no pattern for a prefetcher. */
#define EXEC_LINKS_NODE_BYTES 4096
#define EXEC_LINKS_LINE_BYTES 128
#define EXEC_LINKS_CHAIN_LINES (EXEC_LINKS_NODE_BYTES / EXEC_LINKS_LINE_BYTES)

/* Where a flag, chain or buffer lives. */
enum { LINKS_MEM_PEER, LINKS_MEM_HOST_NEAR, LINKS_MEM_HOST_FAR };

typedef struct links_ctx {
    dist_job *d;
    const exec_links_opts *o;
    int rounds;         /* ping-pong round trips timed */
    int hops;           /* nodes of each chain, all visited once per walk */
    long long bw_bytes; /* per transfer and pair, a multiple of 16 */
    double timeout_s;   /* one wait without progress longer than this fails the measurement */
    bool host_far;      /* the backend has host memory on another NUMA node */
    void *state;        /* the backend's */
} links_ctx;

typedef struct links_backend {
    /* Collective. Allocate, exchange and map what the measurements need; fill out's identity fields
     * (device_name, bus_id, numa, peer_access, virtual_ranks) on every rank and set c->host_far.
     * Anything it cannot do that makes every measurement impossible: -1 with why (the driver agrees). */
    int (*open)(links_ctx *c, exec_links_result *out, char *why, size_t len);
    void (*close)(links_ctx *c);
    /* Whether this rank and `peer` reached each other's memory (both mappings opened). */
    bool (*peer_ok)(links_ctx *c, int peer);
    /* `rounds` round trips with `peer`, the two ranks calling at once: the initiator stores base + i and
     * waits for the echo. mem LINKS_MEM_PEER: each flag in the reader's device memory; otherwise in
     * pinned host memory near the writer. One-way us on the initiator, 0 on the responder, < 0 when a
     * wait timed out. */
    double (*pingpong)(links_ctx *c, int peer, bool initiator, int mem, unsigned base);
    /* One dependent load through `peer`'s chain (LINKS_MEM_PEER) or this rank's host chain (near, far):
     * us per hop, < 0 on failure. */
    double (*chase)(links_ctx *c, int mem, int peer, int rep);
    /* Store into (or load from) c->bw_bytes of each of peers[0..n) (LINKS_MEM_PEER) or of this rank's
     * host buffer (n = 1, peers ignored), all in one go: seconds, < 0 on failure. */
    double (*stream)(links_ctx *c, bool store, int mem, const int *peers, int n);
    /* Launch costs into out (this rank alone); NULL where there are none (CPU). */
    void (*launch_costs)(links_ctx *c, exec_links_result *out);
    /* Host seconds to launch k empty kernels eagerly, back to back (the device drains them after the
     * clock stops): what one rank's host spends between two collectives. On the CPU device k calls of
     * an empty function, a self-test of the pipeline. */
    double (*eager_burst)(links_ctx *c, int k);
} links_backend;

extern const links_backend exec_links_cpu;
#if VPSIM_HAVE_CUDA
extern const links_backend exec_links_cuda;
#endif

/* Testing hook of exec_links.c: ranks a and b act as if their mappings of each other had not opened
 * (the failure a real box shows as a pair that fails its P2P check); -1, -1 turns it off. */
void exec_links_test_unmapped(int a, int b);

/* ---- exec_links_host.c ---- */

/* A random single cycle over n nodes (Sattolo's algorithm): next[i] is the node after i, and walking
 * from any node visits all n before returning. */
void exec_links_chain(unsigned *next, int n, unsigned long long seed);
/* Write a chain of n nodes into buf (n * EXEC_LINKS_NODE_BYTES bytes) in the layout above. */
void exec_links_chain_fill(void *buf, const unsigned *next, int n);
/* (max - min) / median of n positive values, in percent; 0 for n < 2. */
double exec_links_spread_pct(const double *v, int n);
/* Index of (row, col) in a row-major gpus x gpus list. */
static inline int exec_links_cell(int gpus, int row, int col) { return row * gpus + col; }
/* Wrap-safe "seen has reached want" for flags that only move forward. */
static inline bool exec_links_reached(unsigned seen, unsigned want) { return (int)(seen - want) >= 0; }

double exec_links_now_s(void);
/* NUMA node of PCI device `bus` (sysfs), -1 when unknown. */
int exec_links_bus_numa(const char *bus);
/* A NUMA node with memory other than `near`, -1 when the machine has one node (or sysfs says nothing). */
int exec_links_far_node(int near);
/* Anonymous memory of `bytes` bound to NUMA node `node` (any node when node < 0), touched; NULL on
 * failure. Uses the mbind system call directly: no libnuma needed. Free with exec_links_unmap. */
void *exec_links_alloc_on(size_t bytes, int node);
/* Ask for the pages of [p, p + bytes) on NUMA node `node` (mbind; < 0: no policy). 0, or -1 when the
 * kernel refused. */
int exec_links_bind(void *p, size_t bytes, int node);
/* A rank's shared segment `name` (dist_shm_name, tag "links"): created by its owner, placed on NUMA node
 * `node` (< 0: anywhere) and touched, or mapped by the others; NULL with why on failure. The owner
 * unlinks the name (shm_unlink) once every rank has mapped it. */
void *exec_links_shm(const char *name, size_t bytes, bool create, int node, char *why, size_t len);
/* Rank `rank`'s segment name in the job whose token (dist_shm_token) is `token`. */
typedef struct exec_links_name {
    char s[64];
} exec_links_name;
exec_links_name exec_links_seg_name(unsigned long long token, int rank);
void exec_links_unmap(void *p, size_t bytes);

#endif
