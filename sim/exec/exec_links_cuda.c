/* The link probe on the CUDA device (exec_links_internal.h): what each rank allocates, how the ranks map
 * each other's memory, and how one step is timed.
 *
 * Every rank allocates on its GPU a flag block (one 128-byte slot per writer), a pointer chain and a
 * bandwidth buffer, takes CUDA IPC handles of the three, MPI_Allgathers them with its bus id, and opens
 * every peer's (as comm_custom.c does for the allreduce kernels). A peer whose handles do not open is
 * not fatal: that pair's cells stay unmeasured. Pinned host memory for the per-GPU host lists is
 * allocated with mbind on the GPU's NUMA node (sysfs) and on another node when the machine has one,
 * then registered mapped; the host flags of host_visible_us live in one POSIX shared-memory page per
 * rank, registered mapped in every rank (the few lines that needs are here, not in sim/comm).
 *
 * Ping-pongs and chases time themselves on the GPU (%globaltimer), so neither the launch nor the other
 * rank's start skew is in the figure; bandwidth kernels are timed with events around the one kernel. */
#include "exec_links_internal.h"

#include "../../kernels/vp_links.h"
#include "../dist/dist_cuda.h"
#include "../util/util.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOT_WORDS 32 /* unsigned ints per flag slot: 128 bytes, one writer each */
#define FLAG_BYTES (CFG_PATHS_MAX * SLOT_WORDS * sizeof(unsigned))
#define HSEG_BYTES 4096
enum { REG_FLAGS, REG_CHAIN, REG_BUF, REG_COUNT };

typedef struct cuda_record { /* what a rank tells the others */
    char bus[32];
    int numa;
    cudaIpcMemHandle_t h[REG_COUNT];
} cuda_record;

typedef struct cuda_state {
    int dev, sms;
    cudaStream_t st;
    cudaEvent_t ev[2];
    void *local[REG_COUNT];
    void *peer[REG_COUNT][CFG_PATHS_MAX]; /* opened mappings (NULL: not opened) */
    bool ok[CFG_PATHS_MAX]; /* this rank mapped that rank's memory, and that rank this one's */
    vp_links_res *res, *res_dev; /* host-mapped result record */
    unsigned *sink;              /* device word the load kernel adds its sum into */
    size_t host_bytes;
    void *host[2], *host_dev[2]; /* near, far: chain, then buffer */
    unsigned long long token; /* of the segment names (dist_shm_token) */
    void *hseg[CFG_PATHS_MAX], *hseg_dev[CFG_PATHS_MAX]; /* every rank's host flag page */
    bool hflags_ok;                                      /* every rank mapped every page */
} cuda_state;

static void *dev_zeroed(size_t bytes)
{
    void *p = NULL;
    VP_CUDA(cudaMalloc(&p, bytes));
    VP_CUDA(cudaMemset(p, 0, bytes));
    return p;
}

static void fill_chain_dev(void *dst, int hops, unsigned long long seed)
{
    const size_t bytes = (size_t)hops * EXEC_LINKS_NODE_BYTES;
    unsigned *next = util_xmalloc((size_t)hops * sizeof(*next));
    char *img = util_xcalloc(1, bytes);
    exec_links_chain(next, hops, seed);
    exec_links_chain_fill(img, next, hops);
    VP_CUDA(cudaMemcpy(dst, img, bytes, cudaMemcpyHostToDevice));
    free(img);
    free(next);
}

/* Pinned host memory on `node` (any when < 0), mapped into this GPU, chain filled; false when it cannot
 * be placed or registered (the caller decides whether that matters). */
static bool host_alloc(links_ctx *c, cuda_state *s, int which, int node)
{
    void *p = exec_links_alloc_on(s->host_bytes, node);
    if (!p)
        return false;
    if (cudaHostRegister(p, s->host_bytes, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess) {
        cudaGetLastError();
        exec_links_unmap(p, s->host_bytes);
        return false;
    }
    VP_CUDA(cudaHostGetDevicePointer(&s->host_dev[which], p, 0));
    unsigned *next = util_xmalloc((size_t)c->hops * sizeof(*next));
    exec_links_chain(next, c->hops, 0x77ull + (unsigned long long)which);
    exec_links_chain_fill(p, next, c->hops);
    free(next);
    s->host[which] = p;
    return true;
}

/* Open every peer's three regions; a peer that fails is recorded, not fatal. */
static void open_peers(links_ctx *c, cuda_state *s, const cuda_record *all, util_buf *bad)
{
    const int me = c->d->rank;
    for (int p = 0; p < c->d->size; p++) {
        if (p == me)
            continue;
        s->ok[p] = true;
        for (int k = 0; k < REG_COUNT && s->ok[p]; k++) {
            cudaIpcMemHandle_t h = all[p].h[k];
            const cudaError_t e = cudaIpcOpenMemHandle(&s->peer[k][p], h, cudaIpcMemLazyEnablePeerAccess);
            if (e != cudaSuccess) {
                s->peer[k][p] = NULL;
                s->ok[p] = false;
                util_buf_printf(bad, "%srank %d cannot map rank %d's memory (GPU %s): %s", bad->len ? "; " : "", me,
                                p, all[p].bus, cudaGetErrorString(e));
                cudaGetLastError();
            }
        }
    }
}

/* Identity, peer access and virtual ranks into out (every rank). */
static void describe(links_ctx *c, cuda_state *s, const cuda_record *all, exec_links_result *out)
{
    const int n = c->d->size, me = c->d->rank;
    struct cudaDeviceProp prop;
    VP_CUDA(cudaGetDeviceProperties(&prop, s->dev));
    snprintf(out->device_name, sizeof(out->device_name), "%.95s", prop.name);
    int row[CFG_PATHS_MAX];
    for (int p = 0; p < CFG_PATHS_MAX; p++)
        row[p] = -1;
    out->virtual_ranks = false;
    for (int p = 0; p < n; p++) {
        snprintf(out->bus_id[p], sizeof(out->bus_id[p]), "%s", all[p].bus);
        out->numa[p] = all[p].numa;
        if (p != me && strcmp(all[p].bus, all[me].bus) == 0)
            out->virtual_ranks = true;
        int ord = -1, can = 0;
        if (p == me || strcmp(all[p].bus, all[me].bus) == 0 || cudaDeviceGetByPCIBusId(&ord, all[p].bus) != cudaSuccess)
            continue; /* the same GPU, or not visible from here: unknown */
        if (cudaDeviceCanAccessPeer(&can, s->dev, ord) == cudaSuccess)
            row[p] = can;
    }
    cudaGetLastError();
    int *rows = util_xcalloc((size_t)n * CFG_PATHS_MAX, sizeof(int));
    VP_MPI(MPI_Allgather(row, CFG_PATHS_MAX, MPI_INT, rows, CFG_PATHS_MAX, MPI_INT, MPI_COMM_WORLD));
    for (int a = 0; a < n; a++)
        for (int b = 0; b < CFG_PATHS_MAX; b++)
            out->peer_access[a][b] = rows[(size_t)a * CFG_PATHS_MAX + (size_t)b];
    free(rows);
    out->virtual_ranks = !dist_all(!out->virtual_ranks);
}

/* Every rank's host flag page: created near its GPU, registered mapped in every rank. Not fatal: where
 * any rank cannot, host_visible_us stays unmeasured and that rank says why. */
static void host_flags(links_ctx *c, cuda_state *s, int numa)
{
    const int n = c->d->size, me = c->d->rank;
    s->token = dist_shm_token();
    char mine[300] = "";
    s->hseg[me] = exec_links_shm(exec_links_seg_name(s->token, me).s, HSEG_BYTES, true, numa, mine, sizeof(mine));
    const bool created = dist_all(s->hseg[me] != NULL);
    for (int p = 0; p < n && created && !mine[0]; p++)
        if (p != me && !(s->hseg[p] = exec_links_shm(exec_links_seg_name(s->token, p).s, HSEG_BYTES, false, -1, mine, sizeof(mine))))
            break;
    for (int p = 0; p < n && created && !mine[0]; p++) {
        if (cudaHostRegister(s->hseg[p], HSEG_BYTES, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess ||
            cudaHostGetDevicePointer(&s->hseg_dev[p], s->hseg[p], 0) != cudaSuccess) {
            snprintf(mine, sizeof(mine), "cannot register rank %d's shared host page with CUDA: %s", p,
                     cudaGetErrorString(cudaGetLastError()));
            s->hseg_dev[p] = NULL;
        }
    }
    s->hflags_ok = dist_all(created && !mine[0]);
    dist_barrier(); /* every rank has opened every page (or given up): the names can go */
    if (s->hseg[me])
        dist_shm_release(exec_links_seg_name(s->token, me).s);
    if (mine[0]) {
        fprintf(stderr, "vpsim[rank %d@%s]: probe: host flags in shared memory: %s (host_visible_us stays unmeasured)\n",
                me, c->d->host, mine);
        fflush(stderr);
    }
}

static int cuda_open(links_ctx *c, exec_links_result *out, char *why, size_t len)
{
    cuda_state *s = util_xcalloc(1, sizeof(*s));
    c->state = s;
    int count = 0;
    char mine[400] = "";
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1)
        snprintf(mine, sizeof(mine), "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    if (dist_agree(c->d, mine[0] != 0, mine, sizeof(mine))) {
        snprintf(why, len, "%s", mine);
        return -1;
    }
    s->dev = c->d->local_rank % count; /* as the CUDA device picks it (dev_cuda.c) */
    VP_CUDA(cudaSetDevice(s->dev));
    VP_CUDA(cudaDeviceGetAttribute(&s->sms, cudaDevAttrMultiProcessorCount, s->dev));
    VP_CUDA(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
    VP_CUDA(cudaEventCreate(&s->ev[0]));
    VP_CUDA(cudaEventCreate(&s->ev[1]));
    VP_CUDA(cudaHostAlloc((void **)&s->res, sizeof(*s->res), cudaHostAllocMapped));
    VP_CUDA(cudaHostGetDevicePointer((void **)&s->res_dev, s->res, 0));
    s->sink = dev_zeroed(sizeof(unsigned));
    s->local[REG_FLAGS] = dev_zeroed(FLAG_BYTES);
    s->local[REG_CHAIN] = dev_zeroed((size_t)c->hops * EXEC_LINKS_NODE_BYTES);
    s->local[REG_BUF] = dev_zeroed((size_t)c->bw_bytes);
    fill_chain_dev(s->local[REG_CHAIN], c->hops, 0x11ull + (unsigned long long)c->d->rank);
    VP_CUDA(cudaDeviceSynchronize()); /* zeroed before any peer can write into it */

    cuda_record rec;
    memset(&rec, 0, sizeof(rec));
    VP_CUDA(cudaDeviceGetPCIBusId(rec.bus, sizeof(rec.bus), s->dev));
    rec.numa = exec_links_bus_numa(rec.bus);
    for (int k = 0; k < REG_COUNT; k++)
        VP_CUDA(cudaIpcGetMemHandle(&rec.h[k], s->local[k]));
    cuda_record *all = util_xcalloc((size_t)c->d->size, sizeof(*all));
    VP_MPI(MPI_Allgather(&rec, (int)sizeof(rec), MPI_BYTE, all, (int)sizeof(rec), MPI_BYTE, MPI_COMM_WORLD));
    util_buf bad = {0};
    open_peers(c, s, all, &bad);
    if (bad.len) {
        fprintf(stderr, "vpsim[rank %d@%s]: probe: %s (those pairs stay unmeasured)\n", c->d->rank, c->d->host, bad.s);
        fflush(stderr);
    }
    util_buf_free(&bad);
    /* A pair is usable when both ends mapped each other: a ping-pong needs both directions, and a
     * one-sided pair would leave its partner spinning until the timeout. */
    int mine_ok[CFG_PATHS_MAX] = {0}, *oks = util_xcalloc((size_t)c->d->size * CFG_PATHS_MAX, sizeof(int));
    for (int p = 0; p < c->d->size; p++)
        mine_ok[p] = s->ok[p];
    VP_MPI(MPI_Allgather(mine_ok, CFG_PATHS_MAX, MPI_INT, oks, CFG_PATHS_MAX, MPI_INT, MPI_COMM_WORLD));
    for (int p = 0; p < c->d->size; p++)
        s->ok[p] = s->ok[p] && oks[(size_t)p * CFG_PATHS_MAX + (size_t)c->d->rank];
    free(oks);
    describe(c, s, all, out);
    free(all);

    /* Host memory: near the GPU (or wherever the kernel puts it when the GPU's node is unknown), and on
     * another node when every rank can place some there. */
    s->host_bytes = (size_t)c->hops * EXEC_LINKS_NODE_BYTES + (size_t)c->bw_bytes;
    if (!host_alloc(c, s, 0, rec.numa) && !host_alloc(c, s, 0, -1))
        snprintf(mine, sizeof(mine), "cannot allocate and register %zu bytes of pinned host memory", s->host_bytes);
    const int far = exec_links_far_node(rec.numa);
    c->host_far = dist_all(far >= 0 && !mine[0] && host_alloc(c, s, 1, far));
    if (dist_agree(c->d, mine[0] != 0, mine, sizeof(mine))) {
        snprintf(why, len, "%s", mine);
        return -1;
    }
    host_flags(c, s, rec.numa);
    return 0;
}

static void cuda_close(links_ctx *c)
{
    cuda_state *s = c->state;
    if (!s)
        return;
    cudaDeviceSynchronize();
    for (int k = 0; k < REG_COUNT; k++)
        for (int p = 0; p < CFG_PATHS_MAX; p++)
            if (s->peer[k][p])
                cudaIpcCloseMemHandle(s->peer[k][p]);
    dist_barrier(); /* no rank maps this rank's memory any more: it can go */
    for (int p = 0; p < CFG_PATHS_MAX; p++)
        if (s->hseg[p]) {
            if (s->hseg_dev[p])
                cudaHostUnregister(s->hseg[p]);
            exec_links_unmap(s->hseg[p], HSEG_BYTES);
        }
    for (int w = 0; w < 2; w++)
        if (s->host[w]) {
            cudaHostUnregister(s->host[w]);
            exec_links_unmap(s->host[w], s->host_bytes);
        }
    for (int k = 0; k < REG_COUNT; k++)
        cudaFree(s->local[k]);
    cudaFree(s->sink);
    cudaFreeHost(s->res);
    if (s->st) {
        cudaEventDestroy(s->ev[0]);
        cudaEventDestroy(s->ev[1]);
        cudaStreamDestroy(s->st);
    }
    cudaGetLastError();
    free(s);
    c->state = NULL;
}

static bool cuda_peer_ok(links_ctx *c, int peer) { return ((cuda_state *)c->state)->ok[peer]; }

static double cuda_pingpong(links_ctx *c, int peer, bool initiator, int mem, unsigned base)
{
    cuda_state *s = c->state;
    const int me = c->d->rank;
    unsigned *send, *recv;
    if (mem == LINKS_MEM_PEER) { /* each flag in its reader's GPU memory */
        send = (unsigned *)s->peer[REG_FLAGS][peer] + (size_t)me * SLOT_WORDS;
        recv = (unsigned *)s->local[REG_FLAGS] + (size_t)peer * SLOT_WORDS;
    } else { /* each flag in pinned host memory near its writer */
        if (!s->hflags_ok)
            return -1;
        send = (unsigned *)s->hseg_dev[me] + (size_t)peer * SLOT_WORDS;
        recv = (unsigned *)s->hseg_dev[peer] + (size_t)me * SLOT_WORDS;
    }
    memset(s->res, 0, sizeof(*s->res));
    VP_KERNEL(vp_links_pingpong(send, recv, initiator, base, c->rounds,
                                (unsigned long long)(c->timeout_s * 1e9), s->res_dev, s->st));
    VP_CUDA(cudaStreamSynchronize(s->st));
    if (s->res->status != 0)
        return -1;
    return initiator ? (double)s->res->ns / 1e3 / c->rounds / 2.0 : 0.0;
}

static double cuda_chase(links_ctx *c, int mem, int peer, int rep)
{
    cuda_state *s = c->state;
    const void *chain = mem == LINKS_MEM_PEER ? s->peer[REG_CHAIN][peer] : s->host_dev[mem == LINKS_MEM_HOST_FAR];
    if (!chain)
        return -1;
    memset(s->res, 0, sizeof(*s->res));
    s->res->aux = ~0ull;
    VP_KERNEL(vp_links_chase(chain, c->hops, EXEC_LINKS_NODE_BYTES,
                             (long long)(rep % EXEC_LINKS_CHAIN_LINES) * EXEC_LINKS_LINE_BYTES, s->res_dev, s->st));
    VP_CUDA(cudaStreamSynchronize(s->st));
    /* A single cycle of `hops` nodes is back at node 0: anything else read a broken chain. */
    return s->res->aux == 0 ? (double)s->res->ns / 1e3 / c->hops : -1.0;
}

static double cuda_stream(links_ctx *c, bool store, int mem, const int *peers, int n)
{
    cuda_state *s = c->state;
    vp_links_targets t;
    memset(&t, 0, sizeof(t));
    if (mem == LINKS_MEM_PEER) {
        t.n = n;
        for (int i = 0; i < n; i++)
            t.p[i] = s->peer[REG_BUF][peers[i]];
    } else {
        t.n = 1;
        t.p[0] = s->host_dev[mem == LINKS_MEM_HOST_FAR]
                     ? (char *)s->host_dev[mem == LINKS_MEM_HOST_FAR] + (size_t)c->hops * EXEC_LINKS_NODE_BYTES
                     : NULL;
    }
    const int blocks = 4 * s->sms;
    VP_CUDA(cudaEventRecord(s->ev[0], s->st));
    const int rc = store ? vp_links_store(t, c->bw_bytes, 0x5eedu, blocks, s->st)
                         : vp_links_load(t, c->bw_bytes, blocks, s->sink, s->st);
    if (rc == (int)cudaErrorInvalidValue) { /* a target that is not mapped */
        cudaGetLastError();
        VP_CUDA(cudaStreamSynchronize(s->st));
        return -1;
    }
    VP_KERNEL(rc);
    VP_CUDA(cudaEventRecord(s->ev[1], s->st));
    VP_CUDA(cudaEventSynchronize(s->ev[1]));
    float ms = 0;
    VP_CUDA(cudaEventElapsedTime(&ms, s->ev[0], s->ev[1]));
    return ms / 1e3;
}

/* Launch costs, on this rank's GPU alone. A kernel that stamps %globaltimer stands for an empty kernel:
 * the period between the stamps of back-to-back kernels is the gap the models charge per kernel (plus
 * one store, which is noise at this scale). */
static double cuda_eager_burst(links_ctx *c, int k)
{
    cuda_state *s = c->state;
    const double t0 = exec_links_now_s();
    for (int i = 0; i < k; i++)
        VP_KERNEL(vp_links_empty(s->st));
    const double t = exec_links_now_s() - t0;
    VP_CUDA(cudaStreamSynchronize(s->st));
    return t;
}

static void cuda_launch_costs(links_ctx *c, exec_links_result *out)
{
    enum { LAUNCHES = 200, NODES = 64, REPS = 20 };
    cuda_state *s = c->state;
    double host[LAUNCHES], gpu[REPS];
    unsigned long long stamps[NODES];
    unsigned long long *stamps_dev = dev_zeroed(sizeof(stamps));
    for (int i = 0; i < 20; i++) /* module load, first-launch costs */
        VP_KERNEL(vp_links_empty(s->st));
    VP_CUDA(cudaStreamSynchronize(s->st));
    for (int i = 0; i < LAUNCHES; i++) {
        const double t0 = exec_links_now_s();
        VP_KERNEL(vp_links_empty(s->st));
        host[i] = (exec_links_now_s() - t0) * 1e6;
    }
    VP_CUDA(cudaStreamSynchronize(s->st));
    out->eager_launch_us = util_percentile(host, LAUNCHES, 0.5);
    /* Eager gap: a spinning kernel holds the GPU while the host queues the stamps, so the GPU, not the
     * host, sets their pace. */
    for (int r = 0; r < REPS; r++) {
        VP_KERNEL(vp_links_spin(2000000ull, s->st));
        for (int i = 0; i < NODES; i++)
            VP_KERNEL(vp_links_stamp(stamps_dev, i, s->st));
        VP_CUDA(cudaMemcpyAsync(stamps, stamps_dev, sizeof(stamps), cudaMemcpyDeviceToHost, s->st));
        VP_CUDA(cudaStreamSynchronize(s->st));
        gpu[r] = (double)(stamps[NODES - 1] - stamps[0]) / 1e3 / (NODES - 1);
    }
    out->eager_gap_us = util_percentile(gpu, REPS, 0.5);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    VP_CUDA(cudaStreamBeginCapture(s->st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < NODES; i++)
        VP_KERNEL(vp_links_stamp(stamps_dev, i, s->st));
    VP_CUDA(cudaStreamEndCapture(s->st, &g));
    VP_CUDA(cudaGraphInstantiate(&ge, g, 0));
    VP_CUDA(cudaGraphLaunch(ge, s->st));
    VP_CUDA(cudaStreamSynchronize(s->st));
    for (int r = 0; r < REPS; r++) {
        const double t0 = exec_links_now_s();
        VP_CUDA(cudaGraphLaunch(ge, s->st));
        host[r] = (exec_links_now_s() - t0) * 1e6;
        VP_CUDA(cudaMemcpyAsync(stamps, stamps_dev, sizeof(stamps), cudaMemcpyDeviceToHost, s->st));
        VP_CUDA(cudaStreamSynchronize(s->st));
        gpu[r] = (double)(stamps[NODES - 1] - stamps[0]) / 1e3 / (NODES - 1);
    }
    out->graph_launch_us = util_percentile(host, REPS, 0.5);
    out->graph_node_us = util_percentile(gpu, REPS, 0.5);
    out->graph_nodes = NODES;
    /* One small staged copy each way (64 B, pinned host memory), synchronised, as comm_mpi.c's staging
     * does through dev_cuda.c: host.memcpy_lat_us is the mean of the two directions. */
    void *pinned = NULL;
    VP_CUDA(cudaMallocHost(&pinned, 64));
    for (int i = 0; i < LAUNCHES; i++) {
        const double t0 = exec_links_now_s();
        VP_CUDA(cudaMemcpyAsync(pinned, stamps_dev, 64, cudaMemcpyDeviceToHost, s->st));
        VP_CUDA(cudaStreamSynchronize(s->st));
        VP_CUDA(cudaMemcpyAsync(stamps_dev, pinned, 64, cudaMemcpyHostToDevice, s->st));
        VP_CUDA(cudaStreamSynchronize(s->st));
        host[i] = (exec_links_now_s() - t0) * 1e6 / 2.0;
    }
    out->memcpy_lat_us = util_percentile(host, LAUNCHES, 0.5);
    VP_CUDA(cudaFreeHost(pinned));
    VP_CUDA(cudaGraphExecDestroy(ge));
    VP_CUDA(cudaGraphDestroy(g));
    VP_CUDA(cudaFree(stamps_dev));
}

const links_backend exec_links_cuda = {
    .open = cuda_open,
    .close = cuda_close,
    .peer_ok = cuda_peer_ok,
    .pingpong = cuda_pingpong,
    .chase = cuda_chase,
    .stream = cuda_stream,
    .launch_costs = cuda_launch_costs,
    .eager_burst = cuda_eager_burst,
};
