/* The link probe on the CPU device: the same quantities between processes through POSIX shared memory
 * (exec_links_internal.h). Every rank owns one segment (flags, a pointer chain, a bandwidth buffer) and
 * maps every other rank's. Flags are C11 atomics (release stores, acquire loads); every wait yields the
 * core and gives up after c->timeout_s, so that an oversubscribed CI machine neither deadlocks nor
 * hangs. The figures are the CPU's: a self-test of the pipeline, not any interconnect. */
#include "exec_links_internal.h"

#include "../util/util.h"

#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Segment layout: flags written by peers (slot = the writer), flags written by the owner (slot = the
 * reader), each slot on its own 64-byte line; then the chain, then the bandwidth buffer. */
#define FLAG_STRIDE 16 /* unsigned ints per slot: 64 bytes */
#define FLAGS_OFF 0
#define HFLAGS_OFF 4096
#define CHAIN_OFF 8192

typedef struct cpu_state {
    unsigned long long token; /* of the segment names (dist_shm_token) */
    size_t seg_bytes;
    char *seg[CFG_PATHS_MAX]; /* every rank's segment as mapped here */
    char *local;              /* private buffer: the source of stores, the sink of loads */
} cpu_state;

static size_t buf_off(const links_ctx *c) { return CHAIN_OFF + (size_t)c->hops * EXEC_LINKS_NODE_BYTES; }

static _Atomic unsigned *flag_at(char *seg, size_t off, int slot)
{
    return (_Atomic unsigned *)(void *)(seg + off + (size_t)slot * FLAG_STRIDE * sizeof(unsigned));
}

static void cpu_model(char *buf, size_t len)
{
    if (!util_cpuinfo("model name", buf, len))
        snprintf(buf, len, "CPU");
}

static int cpu_open(links_ctx *c, exec_links_result *out, char *why, size_t len)
{
    cpu_state *s = util_xcalloc(1, sizeof(*s));
    c->state = s;
    const dist_job *d = c->d;
    s->token = dist_shm_token();
    s->seg_bytes = buf_off(c) + (size_t)c->bw_bytes;
    s->local = malloc((size_t)c->bw_bytes);
    char mine[300] = "";
    if (!s->local)
        snprintf(mine, sizeof(mine), "cannot allocate %lld bytes", c->bw_bytes);
    else {
        memset(s->local, 0x5a, (size_t)c->bw_bytes);
        /* Created untouched: the names live only while every rank maps every segment (no work in that
         * window, as comm_sysmem's segments), and the pages are filled once the names are gone. */
        s->seg[d->rank] = dist_shm_create(exec_links_seg_name(s->token, d->rank).s, s->seg_bytes, false, mine,
                                          sizeof(mine));
    }
    int rc = dist_agree(d, mine[0] != 0, mine, sizeof(mine));
    for (int p = 0; p < d->size && rc == 0; p++)
        if (p != d->rank && !(s->seg[p] = exec_links_shm(exec_links_seg_name(s->token, p).s, s->seg_bytes, false, -1, mine, sizeof(mine))))
            break;
    if (rc == 0)
        rc = dist_agree(d, mine[0] != 0, mine, sizeof(mine));
    dist_barrier(); /* every rank has opened every segment (or given up): the names can go */
    if (s->seg[d->rank])
        dist_shm_release(exec_links_seg_name(s->token, d->rank).s);
    if (rc) {
        snprintf(why, len, "shared memory between the ranks: %s", mine);
        return -1;
    }
    memset(s->seg[d->rank], 0, s->seg_bytes);
    unsigned *next = util_xmalloc((size_t)c->hops * sizeof(*next));
    exec_links_chain(next, c->hops, 0x11ull + (unsigned long long)d->rank);
    exec_links_chain_fill(s->seg[d->rank] + CHAIN_OFF, next, c->hops);
    free(next);
    dist_barrier(); /* every rank's chain is in place before anyone follows a peer's */
    cpu_model(out->device_name, sizeof(out->device_name));
    for (int p = 0; p < d->size; p++) {
        out->bus_id[p][0] = '\0';
        out->numa[p] = -1;
        for (int q = 0; q < d->size; q++)
            out->peer_access[p][q] = -1;
    }
    out->virtual_ranks = false;
    c->host_far = false;
    return 0;
}

static void cpu_close(links_ctx *c)
{
    cpu_state *s = c->state;
    if (!s)
        return;
    for (int p = 0; p < CFG_PATHS_MAX; p++)
        exec_links_unmap(s->seg[p], s->seg_bytes);
    free(s->local);
    free(s);
    c->state = NULL;
}

static bool cpu_peer_ok(links_ctx *c, int peer)
{
    const cpu_state *s = c->state;
    return s->seg[peer] != NULL;
}

/* Spin on f until it reaches want, yielding the core after a short busy spell; false after timeout_s
 * without it. */
static bool wait_flag(_Atomic unsigned *f, unsigned want, double timeout_s)
{
    double t0 = 0;
    for (unsigned spin = 0;; spin++) {
        if (exec_links_reached(atomic_load_explicit(f, memory_order_acquire), want))
            return true;
        if (spin < 64) /* a short busy spell, then give the core away: CI runs more ranks than cores */
            continue;
        sched_yield();
        if ((spin & 63u) == 0) {
            const double now = exec_links_now_s();
            if (t0 == 0)
                t0 = now;
            else if (now - t0 > timeout_s)
                return false;
        }
    }
}

static double cpu_pingpong(links_ctx *c, int peer, bool initiator, int mem, unsigned base)
{
    cpu_state *s = c->state;
    const int me = c->d->rank;
    _Atomic unsigned *send, *recv;
    if (mem == LINKS_MEM_PEER) { /* each flag in its reader's segment */
        send = flag_at(s->seg[peer], FLAGS_OFF, me);
        recv = flag_at(s->seg[me], FLAGS_OFF, peer);
    } else { /* each flag in its writer's segment */
        send = flag_at(s->seg[me], HFLAGS_OFF, peer);
        recv = flag_at(s->seg[peer], HFLAGS_OFF, me);
    }
    /* Round 1 lines the two up and is not timed; rounds 2 .. rounds + 1 are. */
    double t0 = 0;
    for (int i = 1; i <= c->rounds + 1; i++) {
        const unsigned v = base + (unsigned)i;
        if (initiator) {
            if (i == 2)
                t0 = exec_links_now_s();
            atomic_store_explicit(send, v, memory_order_release);
            if (!wait_flag(recv, v, c->timeout_s))
                return -1;
        } else {
            if (!wait_flag(recv, v, c->timeout_s))
                return -1;
            atomic_store_explicit(send, v, memory_order_release);
        }
    }
    return initiator ? (exec_links_now_s() - t0) * 1e6 / c->rounds / 2.0 : 0.0;
}

static double cpu_chase(links_ctx *c, int mem, int peer, int rep)
{
    cpu_state *s = c->state;
    const char *chain = (mem == LINKS_MEM_PEER ? s->seg[peer] : s->seg[c->d->rank]) + CHAIN_OFF +
                        (size_t)(rep % EXEC_LINKS_CHAIN_LINES) * EXEC_LINKS_LINE_BYTES;
    unsigned idx = 0;
    const double t0 = exec_links_now_s();
    for (int h = 0; h < c->hops; h++)
        idx = *(const volatile unsigned *)(const void *)(chain + (size_t)idx * EXEC_LINKS_NODE_BYTES);
    const double t = exec_links_now_s() - t0;
    /* A single cycle returns to its start after exactly `hops` hops; anything else is a broken chain. */
    return idx == 0 ? t * 1e6 / c->hops : -1.0;
}

static double cpu_stream(links_ctx *c, bool store, int mem, const int *peers, int n)
{
    cpu_state *s = c->state;
    const size_t off = buf_off(c), bytes = (size_t)c->bw_bytes;
    const double t0 = exec_links_now_s();
    for (int i = 0; i < n; i++) {
        char *remote = (mem == LINKS_MEM_PEER ? s->seg[peers[i]] : s->seg[c->d->rank]) + off;
        if (store)
            memcpy(remote, s->local, bytes);
        else
            memcpy(s->local, remote, bytes);
    }
    return exec_links_now_s() - t0;
}

/* A "launch" on the CPU device: a call the compiler cannot drop. */
static void cpu_empty(volatile int *sink)
{
    *sink += 1;
}

static double cpu_eager_burst(links_ctx *c, int k)
{
    (void)c;
    volatile int sink = 0;
    void (*volatile call)(volatile int *) = cpu_empty;
    const double t0 = exec_links_now_s();
    for (int i = 0; i < k; i++)
        call(&sink);
    return exec_links_now_s() - t0;
}

const links_backend exec_links_cpu = {
    .open = cpu_open,
    .close = cpu_close,
    .peer_ok = cpu_peer_ok,
    .pingpong = cpu_pingpong,
    .chase = cpu_chase,
    .stream = cpu_stream,
    .launch_costs = NULL,
    .eager_burst = cpu_eager_burst,
};
