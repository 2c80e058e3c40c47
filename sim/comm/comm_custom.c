/* Backends `oneshot`, `twoshot`, `push`: the custom allreduce kernels of kernels/vp_allreduce.cu over
 * buffers registered once per rank and mapped into every peer with CUDA IPC, or with --p2p sysmem in
 * pinned host memory that every rank maps (comm_sysmem.c): then the signal, scratch and stage buffers
 * live in one POSIX shared-memory segment per rank, the device's send/recv buffers are not shared, and
 * every input a peer reads goes through the (host-memory) stage buffer; push's allreduce, whose
 * peers read only their own landing buffers, still reads its input in place.
 *
 * init (collective): allocate the signal block, scratch and stage buffers; take IPC handles of those
 * and of the device's fixed collective buffers (send, recv), or the shm segment's name; MPI_Allgather
 * the packed registration records (comm_records.c); open every peer's handles or segments; then a P2P
 * check that really writes and reads through every mapping (not only cudaDeviceCanAccessPeer). Calls on the registered send/recv buffers
 * pass them straight to the kernels, so they can be captured in CUDA graphs; any other input pointer
 * (or one-shot in place) is first copied into the registered stage buffer. All ranks must call with
 * the same buffer roles, as the executor and `vpsim bench-allreduce` do.
 *
 * Nothing is gated silently: supported() (comm_peers.c) refuses only what cannot work (no CUDA device,
 * ranks on several hosts, more than 8 ranks, GPUs without P2P access in direct mode), and describe()
 * reports the p2p mode, the topology,
 * the P2P check, and what vLLM/SGLang would have done here. Virtual ranks (several processes on one
 * GPU) work and are reported as such: their timings say nothing about an interconnect. */
#include "comm_custom.h"
#include "comm_sysmem.h"
#include "../config/cfg_policy.h"
#include "comm.h"
#include "../dist/dist_cuda.h"

#include "../../kernels/vp_allreduce.h"
#include "../../kernels/vp_allreduce_norm.h"
#include "../util/util.h"

#include <cuda.h> /* CUdeviceptr, CUresult: types only; the driver function comes from the runtime */
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(COMM_MAX_RANKS == VP_AR_MAX_RANKS, "comm_custom.h and vp_allreduce.h disagree on the rank limit");
_Static_assert(sizeof(cudaIpcMemHandle_t) == COMM_REG_HANDLE_BYTES, "IPC handle size changed");

typedef enum { ALGO_ONESHOT, ALGO_TWOSHOT, ALGO_PUSH } custom_algo;
static const char *const algo_names[] = {"oneshot", "twoshot", "push"};
static const char *const algo_desc[] = {
    "one-shot: every rank loads all N inputs through the peer mappings and sums them in fp32 in rank order; "
    "start and end barriers",
    "two-shot: reduce-scatter of 1/N slices then all-gather of the reduced slices through the peer mappings; "
    "start and mid barriers",
    "push: every rank stores its input into each peer's landing buffer as (epoch flag, data) 64-bit words; no "
    "barrier; double-buffered by epoch parity",
};
static const char *const wait_names[] = {"start", "mid", "end", "data"};

#define DEFAULT_TIMEOUT_MS 5000

typedef struct custom_state {
    custom_algo algo;
    int rank, world, device;
    long long max_count;
    void *local[COMM_REG_REGIONS]; /* registered pointer in this process; NULL when absent */
    size_t bytes[COMM_REG_REGIONS];
    bool owned[COMM_REG_REGIONS];                        /* allocated here, freed at fini */
    void *peer[COMM_REG_REGIONS][COMM_MAX_RANKS];       /* registered pointer as mapped here (own: local) */
    void *opened[COMM_REG_REGIONS][COMM_MAX_RANKS];     /* cudaIpcOpenMemHandle results, to close */
    int p2p;                                             /* comm_p2p */
    comm_shm shm[COMM_MAX_RANKS];                        /* sysmem: every rank's segment as mapped here */
    comm_reg_region shm_region[COMM_REG_REGIONS];        /* sysmem: this rank's record entries */
    void *self;                                          /* the kernels' local state (vp_ar_args.self) */
    vp_ar_error *err_host;                               /* host-mapped error record */
    vp_ar_error *err_dev;
    unsigned long long timeout_ns;
    comm_topo topo;
    int probed_pairs;
    long long calls, staged;
} custom_state;

/* The allocation a device pointer belongs to: cudaIpcGetMemHandle wants the allocation's base, and the
 * peer adds our offset. cuMemGetAddressRange comes through the runtime's driver entry point, so the
 * binary needs no -lcuda. */
typedef CUresult (*get_range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);

static void alloc_range(void *p, void **base, size_t *size)
{
    static get_range_fn fn;
    if (!fn) {
        void *f = NULL;
        enum cudaDriverEntryPointQueryResult q;
        VP_CUDA(cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !f)
            dist_fail(__FILE__, __LINE__, "cudaGetDriverEntryPointByVersion(cuMemGetAddressRange)",
                           "the driver does not provide cuMemGetAddressRange");
        fn = (get_range_fn)(uintptr_t)f;
    }
    CUdeviceptr b = 0;
    size_t n = 0;
    CUresult r = fn(&b, &n, (CUdeviceptr)(uintptr_t)p);
    if (r != CUDA_SUCCESS) {
        char msg[96];
        snprintf(msg, sizeof(msg), "CUresult %d for pointer %p", (int)r, p);
        dist_fail(__FILE__, __LINE__, "cuMemGetAddressRange", msg);
    }
    *base = (void *)(uintptr_t)b;
    *size = n;
}

/* ---------------- registration ---------------- */

static void *alloc_zeroed(size_t bytes)
{
    void *p = NULL;
    VP_CUDA(cudaMalloc(&p, bytes));
    VP_CUDA(cudaMemset(p, 0, bytes));
    return p;
}

static void fill_record(comm_ctx *x, custom_state *s, comm_reg_record *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->rank = s->rank;
    rec->world = s->world;
    rec->device = s->device;
    rec->pid = (int32_t)getpid();
    snprintf(rec->host, sizeof(rec->host), "%s", x->dist.host);
    VP_CUDA(cudaDeviceGetPCIBusId(rec->bus_id, sizeof(rec->bus_id), s->device));
    for (int k = 0; k < COMM_REG_REGIONS; k++) {
        if (s->shm_region[k].present) {
            rec->region[k] = s->shm_region[k];
            continue;
        }
        if (!s->local[k])
            continue;
        void *base;
        size_t size;
        alloc_range(s->local[k], &base, &size);
        cudaIpcMemHandle_t h;
        VP_CUDA(cudaIpcGetMemHandle(&h, base));
        comm_reg_region *g = &rec->region[k];
        g->present = true;
        memcpy(g->handle, &h, sizeof(h));
        g->offset = (uint64_t)((char *)s->local[k] - (char *)base);
        g->bytes = s->bytes[k];
    }
}

/* Pack, MPI_Allgather, unpack and check every rank's record; map every peer's buffers. The verdict is
 * agreed before anyone aborts, and in sysmem mode every rank unlinks its segment's name once all have
 * mapped it (or given up), so that no failure here leaves a segment behind. */
static void exchange(comm_ctx *x, custom_state *s, comm_reg_record *recs)
{
    comm_reg_record mine;
    fill_record(x, s, &mine);
    const size_t n = comm_reg_packed_bytes();
    unsigned char *out = util_xmalloc(n), *in = util_xmalloc(n * (size_t)s->world);
    comm_reg_pack(&mine, out, n);
    VP_MPI(MPI_Allgather(out, (int)n, MPI_BYTE, in, (int)n, MPI_BYTE, MPI_COMM_WORLD));
    char why[400] = "";
    int rc = 0;
    for (int r = 0; r < s->world && !rc; r++)
        rc = comm_reg_unpack(in + (size_t)r * n, n, &recs[r], why, sizeof(why));
    free(out);
    free(in);
    if (!rc)
        rc = comm_reg_check_set(recs, s->world, why, sizeof(why));
    if (!rc && s->p2p == COMM_P2P_SYSMEM)
        rc = comm_sysmem_map_peers(s->shm, recs, s->world, s->rank, s->peer, why, sizeof(why));
    rc = dist_agree(&x->dist, rc, why, sizeof(why));
    comm_shm_unlink(&s->shm[s->rank]);
    if (rc)
        dist_fail(__FILE__, __LINE__, "custom allreduce registration", why);
    for (int k = 0; k < COMM_REG_REGIONS && s->p2p == COMM_P2P_DIRECT; k++) {
        for (int p = 0; p < s->world && s->local[k]; p++) {
            if (p == s->rank) {
                s->peer[k][p] = s->local[k];
                continue;
            }
            cudaIpcMemHandle_t h;
            memcpy(&h, recs[p].region[k].handle, sizeof(h));
            void *base = NULL;
            cudaError_t e = cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess);
            if (e != cudaSuccess) {
                snprintf(why, sizeof(why), "rank %d (GPU %s) cannot map rank %d's %s buffer (GPU %s, pid %d): %s",
                         s->rank, mine.bus_id, p, comm_reg_kind_names[k], recs[p].bus_id, recs[p].pid,
                         cudaGetErrorString(e));
                dist_fail(__FILE__, __LINE__, "cudaIpcOpenMemHandle", why);
            }
            s->opened[k][p] = base;
            s->peer[k][p] = (char *)base + recs[p].region[k].offset;
        }
    }
}

static vp_ar_args base_args(const custom_state *s, long long count, void *out)
{
    vp_ar_args a;
    memset(&a, 0, sizeof(a));
    a.count = count;
    a.out = out;
    a.rank = s->rank;
    a.world = s->world;
    for (int r = 0; r < s->world; r++) {
        a.scratch[r] = s->peer[COMM_REG_SCRATCH][r];
        a.signal[r] = s->peer[COMM_REG_SIGNAL][r];
    }
    a.self = s->self;
    a.error = s->err_dev;
    a.timeout_ns = s->timeout_ns;
    a.push_lines = vp_ar_push_lines(s->max_count);
    return a;
}

/* Every rank writes a word into every peer's signal and reads every peer's word, through the
 * mappings; a pair that fails is named by both ends before the job aborts. */
static void p2p_check(comm_ctx *x, custom_state *s)
{
    static const char *const via[] = {"GPU memory (CUDA IPC)", "pinned host memory"};
    vp_ar_args a = base_args(s, 0, s->local[COMM_REG_SIGNAL]); /* out: unused; keeps the argument check simple */
    cudaStream_t st = x->dev->stream(x, 0);
    VP_KERNEL(vp_ar_probe(&a, st));
    VP_CUDA(cudaStreamSynchronize(st));
    dist_barrier(); /* every peer's probe writes have completed */
    vp_ar_signal sig;
    VP_CUDA(cudaMemcpy(&sig, s->local[COMM_REG_SIGNAL], sizeof(sig), cudaMemcpyDefault)); /* device or host */
    util_buf bad = {0};
    for (int p = 0; p < s->world; p++) {
        if (p == s->rank)
            continue;
        unsigned want_in = vp_ar_probe_value(p, s->rank), want_src = vp_ar_probe_value(p, COMM_MAX_RANKS);
        if (sig.probe_in[p] != want_in)
            util_buf_printf(&bad, "%srank %d's store through its mapping of rank %d's %s was not seen (0x%08x, "
                                  "expected 0x%08x)",
                            bad.len ? "; " : "", p, s->rank, via[s->p2p], sig.probe_in[p], want_in);
        if (sig.probe_seen[p] != want_src)
            util_buf_printf(&bad, "%srank %d's load through its mapping of rank %d's %s returned 0x%08x (expected "
                                  "0x%08x)",
                            bad.len ? "; " : "", s->rank, p, via[s->p2p], sig.probe_seen[p], want_src);
    }
    const bool ok = bad.len == 0;
    if (!ok) {
        fprintf(stderr, "vpsim[rank %d@%s]: custom allreduce P2P check: %s\n", s->rank, x->dist.host, bad.s);
        fflush(stderr);
    }
    util_buf_free(&bad);
    if (!dist_all(ok))
        dist_fail(__FILE__, __LINE__, "custom allreduce P2P check",
                  ok ? "failed on another rank (see its message)"
                     : s->p2p == COMM_P2P_SYSMEM ? "loads and stores through pinned host memory mappings do not work here"
                                                 : "P2P through CUDA IPC mappings does not work here; use --backend nccl "
                                                   "or --p2p sysmem");
    s->probed_pairs = s->world * (s->world - 1);
}

/* Signal, scratch and stage: device memory (direct), or one shared segment of pinned host memory
 * (sysmem; zero-filled), with the kernels' local state kept apart in device memory. The device's send
 * and recv buffers are registered only in direct mode: in sysmem mode no peer reads GPU memory, so
 * every input a peer reads is staged (map_input finds no registered buffer). */
static void alloc_buffers(comm_ctx *x, custom_state *s)
{
    if (s->p2p == COMM_P2P_SYSMEM) {
        char why[320] = "";
        int rc = comm_sysmem_alloc(&s->shm[s->rank], s->rank, s->bytes, s->local, s->shm_region, why, sizeof(why));
        if (dist_agree(&x->dist, rc, why, sizeof(why))) {
            comm_shm_detach(&s->shm[s->rank]);
            dist_fail(__FILE__, __LINE__, "custom allreduce --p2p sysmem", why);
        }
        s->self = alloc_zeroed(sizeof(vp_ar_signal));
        return;
    }
    for (int k = COMM_REG_SIGNAL; k <= COMM_REG_STAGE; k++)
        if (s->bytes[k]) {
            s->local[k] = alloc_zeroed(s->bytes[k]);
            s->owned[k] = true;
        }
    s->self = s->local[COMM_REG_SIGNAL];
    /* Push's allreduce reads only its own input; its all-gather uses these like the others. */
    s->local[COMM_REG_SEND] = x->dev->comm_send(x);
    s->local[COMM_REG_RECV] = x->dev->comm_recv(x);
    s->bytes[COMM_REG_SEND] = s->bytes[COMM_REG_RECV] = (size_t)s->max_count * 2;
}

static void custom_init(comm_ctx *x, custom_algo algo)
{
    custom_state *s = util_xcalloc(1, sizeof(*s));
    x->state = s;
    s->algo = algo;
    s->p2p = x->p2p == COMM_P2P_SYSMEM ? COMM_P2P_SYSMEM : COMM_P2P_DIRECT;
    s->rank = x->dist.rank;
    s->world = x->dist.size;
    VP_CUDA(cudaGetDevice(&s->device));
    s->max_count = x->max_comm_elems > 0 ? x->max_comm_elems : 1;
    const char *t = getenv("VPSIM_COMM_TIMEOUT_MS");
    long ms = t && atol(t) > 0 ? atol(t) : DEFAULT_TIMEOUT_MS;
    s->timeout_ns = (unsigned long long)ms * 1000000ull;

    s->bytes[COMM_REG_SIGNAL] = sizeof(vp_ar_signal);
    if (algo == ALGO_TWOSHOT)
        s->bytes[COMM_REG_SCRATCH] = vp_ar_twoshot_scratch_bytes(s->max_count);
    if (algo == ALGO_PUSH)
        s->bytes[COMM_REG_SCRATCH] = vp_ar_push_scratch_bytes(s->max_count, s->world);
    s->bytes[COMM_REG_STAGE] = (size_t)s->max_count * 2;
    alloc_buffers(x, s);
    unsigned probe_src = vp_ar_probe_value(s->rank, COMM_MAX_RANKS);
    VP_CUDA(cudaMemcpy((char *)s->local[COMM_REG_SIGNAL] + offsetof(vp_ar_signal, probe_src), &probe_src,
                       sizeof(probe_src), cudaMemcpyDefault));
    VP_CUDA(cudaHostAlloc((void **)&s->err_host, sizeof(vp_ar_error), cudaHostAllocMapped));
    memset((void *)s->err_host, 0, sizeof(vp_ar_error));
    VP_CUDA(cudaHostGetDevicePointer((void **)&s->err_dev, s->err_host, 0));
    VP_CUDA(cudaDeviceSynchronize()); /* zeroed before any peer can write into it */

    comm_reg_record *recs = util_xcalloc((size_t)s->world, sizeof(*recs));
    exchange(x, s, recs);
    comm_custom_topology(&s->topo, s->device, s->rank, s->world, recs);
    free(recs);
    p2p_check(x, s);
}

static void init_oneshot(comm_ctx *x) { custom_init(x, ALGO_ONESHOT); }
static void init_twoshot(comm_ctx *x) { custom_init(x, ALGO_TWOSHOT); }
static void init_push(comm_ctx *x) { custom_init(x, ALGO_PUSH); }

/* ---------------- calls ---------------- */

/* A wait timed out on this rank (in this or an earlier call): name rank, peer and flag, abort all. */
static void check_error(custom_state *s)
{
    if (!s->err_host || s->err_host->code == 0)
        return;
    const volatile vp_ar_error *e = s->err_host;
    const int ph = e->phase >= 0 && e->phase <= 3 ? e->phase : 3;
    char where[64] = "";
    if (e->index >= 0)
        snprintf(where, sizeof(where), " for line %lld", (long long)e->index);
    char msg[512];
    snprintf(msg, sizeof(msg),
             "%s: rank %d gave up after %.0f ms in block %d waiting for peer rank %d's '%s' flag%s (expected epoch %u, "
             "last saw %u): rank %d is stuck, dead, or not in the same collective (timeout: VPSIM_COMM_TIMEOUT_MS)",
             algo_names[s->algo], e->rank, (double)e->waited_ns / 1e6, e->block, e->peer, wait_names[ph], where,
             e->expected, e->seen, e->peer);
    dist_fail(__FILE__, __LINE__, "custom allreduce timeout", msg);
}

static bool overlaps(const void *a, long long a_count, const void *b, long long b_count)
{
    const char *x = a, *y = b;
    return x < y + b_count * 2 && y < x + a_count * 2;
}

/* The prologue of every collective: an earlier call's timeout aborts first, an empty call does nothing
 * (false), `elems` (what it touches in a registered buffer) must fit the registration; then it counts. */
static bool begin_call(custom_state *s, vp_ar_args *a, void *recv, long long count, long long elems)
{
    check_error(s);
    if (count <= 0)
        return false;
    if (elems > s->max_count) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%lld elements exceed the %lld registered at init", elems, s->max_count);
        dist_fail(__FILE__, __LINE__, "custom allreduce", msg);
    }
    *a = base_args(s, count, recv);
    s->calls++;
    return true;
}

/* Inputs that peers read must be registered buffers at their base (the same offset on every rank);
 * anything else, or an input the call's output overlaps while peers may still read it, is first
 * copied into the registered stage buffer. Fills a->in[] with every rank's copy. */
static void map_input(comm_ctx *x, custom_state *s, vp_ar_args *a, const void *send, bool staged_if_alias,
                      const void *recv, long long out_count)
{
    int kind = send == s->local[COMM_REG_SEND] ? COMM_REG_SEND : send == s->local[COMM_REG_RECV] ? COMM_REG_RECV : -1;
    if (kind < 0 || (staged_if_alias && overlaps(send, a->count, recv, out_count))) {
        VP_CUDA(cudaMemcpyAsync(s->local[COMM_REG_STAGE], send, (size_t)a->count * 2, cudaMemcpyDefault,
                                x->dev->stream(x, 0))); /* the stage: device or pinned host memory */
        kind = COMM_REG_STAGE;
        s->staged++;
    }
    for (int r = 0; r < s->world; r++)
        a->in[r] = s->peer[kind][r];
}

static void custom_allreduce(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op, (void)flat;
    custom_state *s = x->state;
    vp_ar_args a;
    if (!begin_call(s, &a, recv, count, count))
        return;
    cudaStream_t st = x->dev->stream(x, 0);
    if (s->algo == ALGO_PUSH) { /* reads only its own input, locally: any pointer, in place included */
        a.in[s->rank] = send;
        VP_KERNEL(vp_allreduce_push(&a, st));
        return;
    }
    /* One-shot writes the output while peers may still read the input, so in place it stages; two-shot
     * in place is safe (a slice is overwritten only after its readers passed the mid barrier). */
    map_input(x, s, &a, send, s->algo == ALGO_ONESHOT, recv, count);
    if (s->algo == ALGO_ONESHOT)
        VP_KERNEL(vp_allreduce_oneshot(&a, st));
    else
        VP_KERNEL(vp_allreduce_twoshot(&a, st));
}

/* fusion.allreduce_residual_norm. oneshot and push: one fused kernel (vp_allreduce_norm.cu). twoshot,
 * and push where a row is not whole push lines: the unfused sequence (allreduce, then the device's
 * residual add and norm). */
static void custom_allreduce_norm(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                                  void *residual, const void *weight, long long count)
{
    custom_state *s = x->state;
    const bool fused = s->algo == ALGO_ONESHOT || (s->algo == ALGO_PUSH && op->n % 4 == 0);
    vp_ar_args a;
    if (!fused || !begin_call(s, &a, recv, count, count)) { /* unfused, or an empty call */
        custom_allreduce(x, op, flat, send, recv, count);
        if (count > 0)
            x->dev->residual_norm(x, recv, residual, weight, op->m, op->n);
        return;
    }
    cudaStream_t st = x->dev->stream(x, 0);
    const vp_ar_norm nm = {residual, weight, (int)op->m, (int)op->n, 1e-6f};
    if (s->algo == ALGO_PUSH) {
        a.in[s->rank] = send;
        VP_KERNEL(vp_allreduce_norm_push(&a, &nm, st));
        return;
    }
    map_input(x, s, &a, send, true, recv, count);
    VP_KERNEL(vp_allreduce_norm_oneshot(&a, &nm, st));
}

/* All three backends gather the same way (one-shot copy through the mappings): the plan's one
 * all-gather (logits) is not what they are compared on. */
static void custom_allgather(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op, (void)flat;
    custom_state *s = x->state;
    vp_ar_args a;
    if (!begin_call(s, &a, recv, count, count * s->world))
        return;
    map_input(x, s, &a, send, true, recv, count * s->world);
    VP_KERNEL(vp_allgather_oneshot(&a, x->dev->stream(x, 0)));
}

/* All three backends reduce-scatter alike: each rank loads its block from every peer and sums it (the
 * one-shot kernel on shifted inputs); the input is read by peers while outputs are written, so an
 * in-place call stages. */
static void custom_reduce_scatter(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv,
                                  long long count)
{
    (void)op, (void)flat;
    custom_state *s = x->state;
    vp_ar_args a;
    if (!begin_call(s, &a, recv, count, count))
        return;
    map_input(x, s, &a, send, true, recv, count / s->world);
    VP_KERNEL(vp_reduce_scatter_oneshot(&a, x->dev->stream(x, 0)));
}

static void custom_fini(comm_ctx *x)
{
    custom_state *s = x->state;
    if (!s)
        return;
    VP_CUDA(cudaDeviceSynchronize());
    check_error(s);
    for (int k = 0; k < COMM_REG_REGIONS; k++)
        for (int p = 0; p < s->world; p++)
            if (s->opened[k][p])
                VP_CUDA(cudaIpcCloseMemHandle(s->opened[k][p]));
    for (int p = 0; p < s->world; p++)
        if (p != s->rank)
            comm_shm_detach(&s->shm[p]);
    /* Freeing memory a peer still maps is undefined (cudaIpcOpenMemHandle docs): everyone unmaps first. */
    dist_barrier();
    for (int k = 0; k < COMM_REG_REGIONS; k++)
        if (s->owned[k])
            VP_CUDA(cudaFree(s->local[k]));
    comm_shm_detach(&s->shm[s->rank]);
    if (s->self != s->local[COMM_REG_SIGNAL])
        VP_CUDA(cudaFree(s->self));
    VP_CUDA(cudaFreeHost(s->err_host));
    free(s);
    x->state = NULL;
}

static void custom_describe(comm_ctx *x)
{
    custom_state *s = x->state;
    if (!s)
        return;
    char buf[160];
    comm_env_set(x, "comm", "%s", algo_desc[s->algo]);
    comm_env_set(x, "custom_launch", "%d threads x up to %d blocks per call; timeout %.0f ms per wait", VP_AR_THREADS,
                 VP_AR_MAX_BLOCKS, (double)s->timeout_ns / 1e6);
    comm_env_set(x, "custom_topology", "%s", comm_topo_summary(&s->topo, buf, sizeof(buf)));
    if (comm_topo_virtual(&s->topo))
        comm_env_set(x, "custom_note", "%s", COMM_VIRTUAL_NOTE);
    comm_env_set(x, "custom_p2p", "%s",
                 s->p2p == COMM_P2P_SYSMEM ? "sysmem (exchange buffers and flags in pinned host memory, mapped into "
                                             "every rank)"
                                           : "direct (exchange buffers and flags in GPU memory, mapped into every "
                                             "rank with CUDA IPC)");
    comm_env_set(x, "custom_p2p_check", "store and load through every %s mapping verified (%d rank pairs)",
                 s->p2p == COMM_P2P_SYSMEM ? "host memory" : "IPC", s->probed_pairs);
    /* vLLM reads full_nvlink from NVML; here native P2P atomics on every GPU pair stand in for it (PCIe
     * peers do not offer them), and virtual ranks are judged as if each had its own PCIe GPU. */
    bool nvlink = s->topo.n_gpus > 1;
    for (int i = 0; i < s->topo.n_gpus; i++)
        for (int j = 0; j < s->topo.n_gpus; j++)
            nvlink = nvlink && (i == j || s->topo.atomics[i][j] == 1);
    cfg_policy vllm;
    char why[200];
    cfg_policy_vllm(s->world, nvlink, &vllm, why, sizeof(why));
    comm_env_set(x, "custom_vllm_gate", "%s%.130s", nvlink ? "(NVLink inferred) " : "", why);
    comm_env_set(x, "custom_allreduce_norm", "%s",
                 s->algo == ALGO_TWOSHOT ? "no fused kernel: the unfused sequence (allreduce, then a residual add + "
                                           "RMSNorm kernel)"
                                         : "fused kernel: the residual add and RMSNorm in the allreduce's epilogue");
    comm_env_set(x, "custom_staged_calls", "%lld of %lld calls copied their input to the stage buffer", s->staged,
                 s->calls);
}

#define CUSTOM_BACKEND(var, nm, init_fn)                                                                               \
    const comm_backend var = {                                                                                          \
        .name = nm,                                                                                                     \
        .graph_safe = true,                                                                                             \
        .supported = comm_custom_supported,                                                                                  \
        .init = init_fn,                                                                                                \
        .fini = custom_fini,                                                                                            \
        .allreduce = custom_allreduce,                                                                                  \
        .allgather = custom_allgather,                                                                                  \
        .reduce_scatter = custom_reduce_scatter,                                                                        \
        .allreduce_norm = custom_allreduce_norm,                                                                        \
        .describe = custom_describe,                                                                                    \
    }

CUSTOM_BACKEND(comm_backend_oneshot, "oneshot", init_oneshot);
CUSTOM_BACKEND(comm_backend_twoshot, "twoshot", init_twoshot);
CUSTOM_BACKEND(comm_backend_push, "push", init_push);
