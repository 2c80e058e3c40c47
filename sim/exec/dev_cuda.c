/* The CUDA device: cuBLAS GEMMs at the plan's per-rank shapes, the kernels of kernels/ for attention,
 * norms and element-wise ops, a side stream for the shared expert, CUDA events per op, and the whole
 * cycle captured as one CUDA graph, as the server does.
 *
 * Weight-only quantised GEMMs (INT4 W4A16 routed experts, block FP8) are replayed by a bf16 GEMM that
 * reads the same number of weight bytes: the output width is scaled by bytes-per-weight / 2. At decode
 * sizes (m <= a few dozen rows) these GEMMs are memory-bound, so time follows the bytes; what the
 * stand-in misses is the dequantisation arithmetic (small next to the DRAM traffic at m <= 32) and
 * any difference in the tuned kernels' efficiency. README "Replay fidelity" states the error. */
#include "dev_bf16.h"
#include "dev_cuda_facts.h"
#include "dev_nvml.h"
#include "dev_sizes.h"
#include "exec.h"
#include "../dist/dist_cuda.h"

#include "../../kernels/vp_kernels.h"
#include "../../kernels/vp_pattern.h"
#include "../util/util.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VP_CUBLAS(call)                                                                                                 \
    do {                                                                                                                \
        cublasStatus_t vp_s_ = (call);                                                                                  \
        if (vp_s_ != CUBLAS_STATUS_SUCCESS)                                                                             \
            dist_fail(__FILE__, __LINE__, #call, cublasGetStatusString(vp_s_));                                    \
    } while (0)

#define CUBLAS_WORKSPACE_BYTES (32u << 20)

typedef struct cuda_op {
    void *w;         /* weights: [batch][n_eff][k] bf16 */
    long long n_eff; /* output width of the same-bytes stand-in */
    void *k, *v;     /* attention cache */
} cuda_op;

typedef struct cuda_state {
    int device;
    cudaStream_t s[2]; /* main, side */
    cudaEvent_t fork_ev, join_ev;
    cublasHandle_t blas[2];
    void *blas_ws[2];
    cuda_op *ops;
    int n_ops;
    char *arena;
    size_t arena_bytes;
    void *x, *y;
    void *attn_ws;
    void *norm_w;
    int *ids;
    void *send, *recv;
    void *aux[EXEC_AUX_COUNT]; /* allreduce_norm's residual and norm weight (dev_norm_extent) */
    long long *bad_dev;
    uint16_t *host_bf16;
    cudaEvent_t *timers;
    int n_timers;
    cudaGraph_t graph[EXEC_GRAPH_SLOTS];
    cudaGraphExec_t graph_exec[EXEC_GRAPH_SLOTS];
    dev_nvml nvml;
} cuda_state;

static cuda_state *st(exec_ctx *x) { return x->dev_state; }

/* The GPU's state (clocks, temperature, power) in the results' environment, before and after a run. */
static void nvml_read(exec_ctx *x, const char *when)
{
    char key[48], state[96];
    snprintf(key, sizeof(key), "gpu_state_%s", when);
    if (dev_nvml_state(&st(x)->nvml, state, sizeof(state)))
        exec_env_set(x, "gpu_clocks", "not read (NVML unavailable)");
    else
        exec_env_set(x, key, "%s", state);
}

/* ---------------- setup ---------------- */

/* A machine without a GPU, or with a driver older than the runtime, fails its first CUDA call; asked
 * here, before MPI or any device state, it is a plain refusal instead of an abort of every rank. */
static int cuda_probe(char *why, size_t len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable CUDA device here (cudaGetDeviceCount: %s): use --device cpu",
                 cudaGetErrorString(e));
        return -1;
    }
    if (count < 1) {
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(why, len, "no usable CUDA device here (no GPU visible%s%s): use --device cpu",
                 vis ? "; CUDA_VISIBLE_DEVICES=" : "", vis ? vis : "");
        return -1;
    }
    return 0;
}

static void cuda_init(exec_ctx *x)
{
    cuda_state *s = util_xcalloc(1, sizeof(*s));
    x->dev_state = s;
    int count = 0;
    VP_CUDA(cudaGetDeviceCount(&count));
    s->device = x->dist.local_rank % count;
    VP_CUDA(cudaSetDevice(s->device));
    for (int i = 0; i < 2; i++) {
        VP_CUDA(cudaStreamCreateWithFlags(&s->s[i], cudaStreamNonBlocking));
        VP_CUBLAS(cublasCreate(&s->blas[i]));
        VP_CUBLAS(cublasSetStream(s->blas[i], s->s[i]));
        /* A fixed workspace keeps cuBLAS from allocating during graph capture. */
        VP_CUDA(cudaMalloc(&s->blas_ws[i], CUBLAS_WORKSPACE_BYTES));
        VP_CUBLAS(cublasSetWorkspace(s->blas[i], s->blas_ws[i], CUBLAS_WORKSPACE_BYTES));
    }
    VP_CUDA(cudaEventCreateWithFlags(&s->fork_ev, cudaEventDisableTiming));
    VP_CUDA(cudaEventCreateWithFlags(&s->join_ev, cudaEventDisableTiming));
    char bus[32];
    dev_nvml_open(&s->nvml, cudaDeviceGetPCIBusId(bus, sizeof(bus), s->device) == cudaSuccess ? bus : NULL);
    if (x->dist.local_size > count)
        exec_env_set(x, "virtual_ranks", "%d ranks share %d GPU(s) on %s: correct for protocol tests, meaningless for "
                                         "interconnect timing",
                     x->dist.local_size, count, x->dist.host);
}

/* Bytes of the op's private memory and its largest activation (elements), built with dev_size_* (the
 * shapes come from a plan file anyone can edit); dev_op_check has passed. */
static dev_size op_bytes(const plan_op *op, long long *n_eff, dev_size *scratch)
{
    *n_eff = op->n;
    dev_size in = dev_size_of(0), out = dev_size_of(0), bytes = dev_size_of(0);
    switch (op->kind) {
    case PLAN_OP_GEMM:
        *n_eff = plan_op_effective_n(op);
        bytes = dev_size_prod(op->k, *n_eff, op->batch, 2);
        in = dev_size_prod(op->m, op->k, op->batch, 1);
        out = dev_size_prod(op->m, *n_eff, op->batch, 1);
        break;
    case PLAN_OP_GROUPED_GEMM: {
        *n_eff = plan_op_effective_n(op);
        long long rows = (op->m + op->batch - 1) / op->batch;
        bytes = dev_size_prod(op->k, *n_eff, op->batch, 2);
        in = dev_size_prod(rows, op->batch, op->k, 1);
        out = dev_size_prod(rows, op->batch, *n_eff, 1);
        break;
    }
    case PLAN_OP_EMBEDDING:
        bytes = dev_size_prod(op->k, op->n, 2, 1);
        out = dev_size_prod(op->m, op->n, 1, 1);
        break;
    case PLAN_OP_ATTENTION: {
        dev_size kv = dev_size_prod(op->batch, op->kv_len, op->kv_shared ? 1 : op->kv_heads, 1);
        bytes = dev_size_mul(kv, (long long)op->qk_dim * 2);
        if (!op->kv_shared)
            bytes = dev_size_add(bytes, dev_size_mul(kv, (long long)op->v_dim * 2));
        in = dev_size_prod(op->batch, op->q_len, op->heads, op->qk_dim);
        out = dev_size_prod(op->batch, op->q_len, op->heads, op->v_dim);
        break;
    }
    case PLAN_OP_NORM:
    case PLAN_OP_ELEMENTWISE: in = out = dev_size_prod(op->m, op->n, 2, 1); break;
    default: break;
    }
    *scratch = dev_size_max(in, out);
    return dev_size_align(bytes, 256);
}

static vp_attn_args attn_args(cuda_state *s, const plan_op *op, const cuda_op *o)
{
    vp_attn_args a = {.q = s->x, .k = o->k, .v = op->kv_shared ? o->k : o->v, .out = s->y, .workspace = s->attn_ws,
                      .batch = op->batch, .q_len = (int)op->q_len, .kv_len = (int)op->kv_len, .heads = op->heads,
                      .kv_heads = op->kv_shared ? 1 : op->kv_heads, .qk_dim = op->qk_dim, .v_dim = op->v_dim,
                      .v_in_k = op->kv_shared, .scale = 1.0f};
    return a;
}

static void aux_prepare(exec_ctx *x);

static int cuda_prepare(exec_ctx *x)
{
    cuda_state *s = st(x);
    const plan *p = x->plan;
    for (int ph = 0; ph < p->n_phases; ph++)
        s->n_ops += p->phases[ph].n_ops;
    s->ops = util_xcalloc((size_t)s->n_ops, sizeof(cuda_op));
    dev_size arena = dev_size_of(0), scratch = dev_size_of(1);
    size_t attn_ws = 256, norm_n = 1;
    long long max_rows = 1;
    unsigned attn_used = 0; /* bit k: an attention op of the plan runs kernel k (vp_attention_kernel_of) */
    /* --attn-kernel, before any workspace is sized: the plan a kernel gets sets its workspace. */
    VP_CUDA(vp_attention_set_kernel(x->opt->attn_kernel));
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            const char *phase = p->phases[ph].name;
            if (dev_op_check(op, phase, x->why, sizeof(x->why)))
                return -1;
            dev_size sc, b = op_bytes(op, &s->ops[flat].n_eff, &sc);
            if (b.bad || sc.bad)
                return dev_size_refuse(x->why, sizeof(x->why), "its weight, cache or activation size", op, phase);
            arena = dev_size_add(arena, b);
            scratch = dev_size_max(scratch, sc);
            if (op->kind == PLAN_OP_NORM && (size_t)op->n > norm_n)
                norm_n = (size_t)op->n;
            if (op->m > max_rows)
                max_rows = op->m;
            if (op->kind == PLAN_OP_ATTENTION) {
                vp_attn_args a = attn_args(s, op, &s->ops[flat]);
                size_t w = vp_attention_workspace_bytes(&a);
                attn_ws = w > attn_ws ? w : attn_ws;
                const int kn = vp_attention_kernel_of(&a);
                if (kn > 0 && kn < 8)
                    attn_used |= 1u << kn;
            }
        }
    if (attn_used) {
        char used[64] = "";
        for (int k = 1; k < 8; k++)
            if (attn_used & (1u << k) && cfg_attn_kernel_names[k])
                snprintf(used + strlen(used), sizeof used - strlen(used), "%s%s", used[0] ? "," : "",
                         cfg_attn_kernel_names[k]);
        exec_env_set(x, "attention_kernel", "%s (--attn-kernel %s)", used, cfg_attn_kernel_names[x->opt->attn_kernel]);
    }
    dev_size comm_sz = dev_size_mul(dev_size_of(x->cc.max_comm_elems > 0 ? x->cc.max_comm_elems : 1), 2);
    dev_size need_sz = dev_size_add(arena, dev_size_mul(scratch, 4));
    need_sz = dev_size_add(need_sz, dev_size_of((long long)attn_ws));
    need_sz = dev_size_add(need_sz, dev_size_prod((long long)norm_n, 2, 1, 1));
    need_sz = dev_size_add(need_sz, dev_size_mul(comm_sz, 2));
    need_sz = dev_size_add(need_sz, dev_size_prod(max_rows, 4, 1, 1));
    need_sz = dev_size_add(need_sz, dev_size_of(64ll << 20));
    if (need_sz.bad) {
        snprintf(x->why, sizeof(x->why), "the plan's GPU memory per rank does not fit a 64-bit byte count; the plan "
                                         "asks for an impossible size");
        return -1;
    }
    const size_t comm = (size_t)comm_sz.v, need = (size_t)need_sz.v;
    size_t free_b = 0, total_b = 0;
    VP_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (need > free_b) {
        char a[32], b[32];
        snprintf(x->why, sizeof(x->why), "the plan needs %s of GPU memory per rank but %s is free on GPU %d",
                 util_fmt_bytes((double)need, a, sizeof(a)), util_fmt_bytes((double)free_b, b, sizeof(b)), s->device);
        return -1;
    }
    s->arena_bytes = (size_t)arena.v;
    VP_CUDA(cudaMalloc((void **)&s->arena, s->arena_bytes ? s->arena_bytes : 256));
    VP_KERNEL(vp_fill_random(s->arena, (long long)(s->arena_bytes / 2), (unsigned long long)x->opt->seed, s->s[0]));
    size_t off = 0;
    flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            long long ne;
            dev_size sc, b = op_bytes(op, &ne, &sc); /* checked above */
            cuda_op *o = &s->ops[flat];
            if (op->kind == PLAN_OP_ATTENTION) {
                o->k = s->arena + off;
                size_t kv = (size_t)op->batch * op->kv_len * (op->kv_shared ? 1 : op->kv_heads);
                o->v = op->kv_shared ? o->k : (void *)(s->arena + off + kv * op->qk_dim * 2);
            } else {
                o->w = s->arena + off;
            }
            off += (size_t)b.v;
        }
    VP_CUDA(cudaMalloc(&s->x, (size_t)scratch.v * 2));
    VP_CUDA(cudaMalloc(&s->y, (size_t)scratch.v * 2));
    VP_KERNEL(vp_fill_random(s->x, (long long)scratch.v, (unsigned long long)x->opt->seed + 1, s->s[0]));
    VP_KERNEL(vp_fill_random(s->y, (long long)scratch.v, (unsigned long long)x->opt->seed + 2, s->s[0]));
    VP_CUDA(cudaMalloc(&s->attn_ws, attn_ws));
    VP_CUDA(cudaMalloc(&s->norm_w, norm_n * 2));
    VP_KERNEL(vp_fill_random(s->norm_w, (long long)norm_n, 7, s->s[0]));
    VP_CUDA(cudaMalloc((void **)&s->ids, (size_t)max_rows * sizeof(int)));
    VP_CUDA(cudaMemsetAsync(s->ids, 0, (size_t)max_rows * sizeof(int), s->s[0]));
    VP_CUDA(cudaMalloc(&s->send, comm));
    VP_CUDA(cudaMalloc(&s->recv, comm));
    VP_KERNEL(vp_fill_random(s->send, (long long)(comm / 2), (unsigned long long)x->opt->seed + 3, s->s[0]));
    VP_CUDA(cudaMalloc((void **)&s->bad_dev, sizeof(long long)));
    VP_CUDA(cudaMallocHost((void **)&s->host_bf16, comm));
    aux_prepare(x);
    VP_CUDA(cudaStreamSynchronize(s->s[0]));
    char b[32];
    exec_env_set(x, "device_memory_per_rank", "%s", util_fmt_bytes((double)need, b, sizeof(b)));
    return 0;
}

/* Destroying a graph drops what its nodes hold: NCCL's persistent plans (a communicator cannot be
 * destroyed while one lives) and the kernel arguments pointing into IPC-mapped peer memory. */
static void cuda_graphs_release(exec_ctx *x)
{
    cuda_state *s = st(x);
    for (int g = 0; g < EXEC_GRAPH_SLOTS; g++) {
        if (s->graph_exec[g])
            VP_CUDA(cudaGraphExecDestroy(s->graph_exec[g]));
        if (s->graph[g])
            VP_CUDA(cudaGraphDestroy(s->graph[g]));
        s->graph_exec[g] = NULL;
        s->graph[g] = NULL;
    }
}

static void cuda_fini(exec_ctx *x)
{
    cuda_state *s = st(x);
    if (!s)
        return;
    cudaDeviceSynchronize();
    cuda_graphs_release(x);
    for (int i = 0; i < s->n_timers; i++)
        cudaEventDestroy(s->timers[i]);
    free(s->timers);
    cudaFree(s->arena);
    cudaFree(s->x);
    cudaFree(s->y);
    cudaFree(s->attn_ws);
    cudaFree(s->norm_w);
    cudaFree(s->ids);
    cudaFree(s->send);
    cudaFree(s->recv);
    cudaFree(s->bad_dev);
    cudaFree(s->aux[EXEC_AUX_RESIDUAL]);
    cudaFree(s->aux[EXEC_AUX_NORM_WEIGHT]);
    cudaFreeHost(s->host_bf16);
    for (int i = 0; i < 2; i++) {
        cublasDestroy(s->blas[i]);
        cudaFree(s->blas_ws[i]);
        cudaStreamDestroy(s->s[i]);
    }
    cudaEventDestroy(s->fork_ev);
    cudaEventDestroy(s->join_ev);
    dev_nvml_close(&s->nvml);
    free(s->ops);
    free(s);
    x->dev_state = NULL;
}

/* ---------------- ops ---------------- */

/* Row-major C[m, n] = A[m, k] x W[n, k]^T (W stored as torch.nn.Linear keeps it). In cuBLAS's
 * column-major terms: C^T[n, m] = W[n, k] (op T on the [k, n] column-major view) x A^T[k, m]. */
static void gemm(cublasHandle_t h, const void *w, const void *a, void *c, int m, int n, int k, int batch,
                 long long stride_a, long long stride_c)
{
    const float alpha = 1.0f, beta = 0.0f;
    if (batch == 1)
        VP_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16BF, k, a, CUDA_R_16BF, k,
                               &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        VP_CUBLAS(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16BF, k,
                                             (long long)n * k, a, CUDA_R_16BF, k, stride_a, &beta, c, CUDA_R_16BF, n,
                                             stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void cuda_compute(exec_ctx *x, const plan_op *op, int flat)
{
    cuda_state *s = st(x);
    const cuda_op *o = &s->ops[flat];
    const int si = op->stream == PLAN_STREAM_SIDE ? 1 : 0;
    cudaStream_t stream = s->s[si];
    const int m = (int)op->m, n = (int)o->n_eff, k = (int)op->k;
    switch (op->kind) {
    case PLAN_OP_GEMM:
        gemm(s->blas[si], o->w, s->x, s->y, m, n, k, op->batch, (long long)m * k, (long long)m * n);
        break;
    case PLAN_OP_GROUPED_GEMM: {
        /* One launch over the touched experts, rows spread evenly (the routing is synthetic). */
        int rows = (int)((op->m + op->batch - 1) / op->batch);
        gemm(s->blas[si], o->w, s->x, s->y, rows, n, k, op->batch, (long long)rows * k, (long long)rows * n);
        break;
    }
    case PLAN_OP_ATTENTION: {
        vp_attn_args a = attn_args(s, op, o);
        a.scale = 1.0f / 24.0f; /* ~1/sqrt(576); the value does not change the work */
        VP_KERNEL(vp_attention_decode(&a, stream));
        break;
    }
    case PLAN_OP_NORM: VP_KERNEL(vp_rmsnorm(s->y, s->x, s->norm_w, m, (int)op->n, 1e-6f, stream)); break;
    case PLAN_OP_ELEMENTWISE:
        if (plan_op_is_silu_mul(op))
            VP_KERNEL(vp_silu_mul(s->y, s->x, m, (int)op->n, stream));
        else
            VP_KERNEL(vp_axpby(s->y, s->x, op->m * op->n, 0.5f, 0.5f, stream));
        break;
    case PLAN_OP_EMBEDDING:
        VP_KERNEL(vp_embedding(s->y, o->w, s->ids, m, (int)op->n, x->dist.rank * k, k, stream));
        break;
    default: break;
    }
}

static void cuda_fork(exec_ctx *x)
{
    cuda_state *s = st(x);
    VP_CUDA(cudaEventRecord(s->fork_ev, s->s[0]));
    VP_CUDA(cudaStreamWaitEvent(s->s[1], s->fork_ev, 0));
}

static void cuda_join(exec_ctx *x)
{
    cuda_state *s = st(x);
    VP_CUDA(cudaEventRecord(s->join_ev, s->s[1]));
    VP_CUDA(cudaStreamWaitEvent(s->s[0], s->join_ev, 0));
}

static void cuda_sync(exec_ctx *x)
{
    cuda_state *s = st(x);
    VP_CUDA(cudaStreamSynchronize(s->s[1]));
    VP_CUDA(cudaStreamSynchronize(s->s[0]));
}

static void cuda_timers_alloc(exec_ctx *x, int n)
{
    cuda_state *s = st(x);
    s->timers = util_xcalloc((size_t)n, sizeof(cudaEvent_t));
    for (int i = 0; i < n; i++)
        VP_CUDA(cudaEventCreate(&s->timers[i]));
    s->n_timers = n;
}

static void cuda_timer_record(exec_ctx *x, int slot, int stream)
{
    cuda_state *s = st(x);
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    VP_CUDA(cudaStreamIsCapturing(s->s[stream], &cap));
    /* Under capture an ordinary record only orders the graph; "external" makes it a timed node. */
    if (cap == cudaStreamCaptureStatusActive)
        VP_CUDA(cudaEventRecordWithFlags(s->timers[slot], s->s[stream], cudaEventRecordExternal));
    else
        VP_CUDA(cudaEventRecord(s->timers[slot], s->s[stream]));
}

static double cuda_timer_elapsed(exec_ctx *x, int a, int b)
{
    cuda_state *s = st(x);
    float ms = 0.f;
    VP_CUDA(cudaEventElapsedTime(&ms, s->timers[a], s->timers[b]));
    return ms * 1e3;
}

static void cuda_capture_begin(exec_ctx *x)
{
    VP_CUDA(cudaStreamBeginCapture(st(x)->s[0], cudaStreamCaptureModeThreadLocal));
}

static void cuda_capture_end(exec_ctx *x, int slot)
{
    cuda_state *s = st(x);
    cudaGraph_t graph = NULL;
    VP_CUDA(cudaStreamEndCapture(s->s[0], &graph));
    /* A slot may be captured again (bench-allreduce captures per size): free the old graph, which
     * is only allowed once no stream is capturing. */
    if (s->graph_exec[slot])
        VP_CUDA(cudaGraphExecDestroy(s->graph_exec[slot]));
    if (s->graph[slot])
        VP_CUDA(cudaGraphDestroy(s->graph[slot]));
    s->graph[slot] = graph;
    VP_CUDA(cudaGraphInstantiate(&s->graph_exec[slot], s->graph[slot], 0));
}

static void cuda_graph_launch(exec_ctx *x, int slot)
{
    cuda_state *s = st(x);
    VP_CUDA(cudaGraphLaunch(s->graph_exec[slot], s->s[0]));
}

static void *cuda_send(exec_ctx *x) { return st(x)->send; }
static void *cuda_recv(exec_ctx *x) { return st(x)->recv; }
static void *cuda_stream(exec_ctx *x, int which) { return st(x)->s[which]; }

static void cuda_to_host(exec_ctx *x, float *dst, const void *src, long long n)
{
    cuda_state *s = st(x);
    VP_CUDA(cudaMemcpyAsync(s->host_bf16, src, (size_t)n * 2, cudaMemcpyDeviceToHost, s->s[0]));
    VP_CUDA(cudaStreamSynchronize(s->s[0]));
    dev_bf16_to_float(dst, s->host_bf16, n);
}

static void cuda_from_host(exec_ctx *x, void *dst, const float *src, long long n)
{
    cuda_state *s = st(x);
    dev_float_to_bf16(s->host_bf16, src, n);
    VP_CUDA(cudaMemcpyAsync(dst, s->host_bf16, (size_t)n * 2, cudaMemcpyHostToDevice, s->s[0]));
    VP_CUDA(cudaStreamSynchronize(s->s[0]));
}

/* allreduce_norm's operands: a zeroed residual and the deterministic weight --check expects (a norm's
 * width never exceeds its count, so the staging buffer holds it). */
static void aux_prepare(exec_ctx *x)
{
    cuda_state *s = st(x);
    long long count = 0, width = 0;
    dev_norm_extent(x->plan, &count, &width);
    VP_CUDA(cudaMalloc(&s->aux[EXEC_AUX_RESIDUAL], (size_t)(count + 1) * 2));
    VP_CUDA(cudaMemsetAsync(s->aux[EXEC_AUX_RESIDUAL], 0, (size_t)(count + 1) * 2, s->s[0]));
    VP_CUDA(cudaMalloc(&s->aux[EXEC_AUX_NORM_WEIGHT], (size_t)(width + 1) * 2));
    float *w = util_xcalloc((size_t)width + 1, sizeof(float));
    for (long long j = 0; j < width; j++)
        w[j] = vp_norm_weight_value(j);
    cuda_from_host(x, s->aux[EXEC_AUX_NORM_WEIGHT], w, width);
    free(w);
}

static void *cuda_aux(exec_ctx *x, int which) { return st(x)->aux[which]; }

static void cuda_residual_norm(exec_ctx *x, void *recv, void *residual, const void *weight, long long rows,
                               long long width)
{
    VP_KERNEL(vp_residual_rmsnorm(recv, residual, weight, (int)rows, (int)width, 1e-6f, st(x)->s[0]));
}

static void cuda_fill_pattern(exec_ctx *x, void *buf, long long n, int salt)
{
    VP_KERNEL(vp_fill_pattern(buf, n, x->dist.rank, salt, st(x)->s[0]));
}

static void cuda_poison(exec_ctx *x, void *buf, long long n) { VP_KERNEL(vp_fill_poison(buf, n, st(x)->s[0])); }

static long long cuda_check(exec_ctx *x, const void *buf, long long n, int salt, bool gather)
{
    cuda_state *s = st(x);
    VP_KERNEL(vp_check_collective(buf, n, x->dist.size, salt, gather ? 1 : 0, s->bad_dev, s->s[0]));
    long long bad = -1;
    VP_CUDA(cudaMemcpyAsync(&bad, s->bad_dev, sizeof(bad), cudaMemcpyDeviceToHost, s->s[0]));
    VP_CUDA(cudaStreamSynchronize(s->s[0]));
    return bad;
}

static void cuda_delay(exec_ctx *x, double ns)
{
    VP_KERNEL(vp_launch_delay((unsigned long long)(ns > 0 ? ns : 0), st(x)->s[0]));
}

static void cuda_describe(exec_ctx *x, bool after)
{
    cuda_state *s = st(x);
    if (after) {
        nvml_read(x, "after");
        return;
    }
    struct cudaDeviceProp prop;
    VP_CUDA(cudaGetDeviceProperties(&prop, s->device));
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    int blas = 0;
    cublasGetVersion(s->blas[0], &blas);
    exec_env_set(x, "device", "cuda");
    exec_env_set(x, "gpu", "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major, prop.minor,
                 prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
    exec_env_set(x, "cuda_driver", "%d.%d", drv / 1000, (drv % 1000) / 10);
    exec_env_set(x, "cuda_runtime", "%d.%d", rt / 1000, (rt % 1000) / 10);
    exec_env_set(x, "cublas", "%d", blas);
    exec_env_set(x, "quantised_gemm_stand_in", "bf16 GEMM reading the same weight bytes (output width scaled)");
    nvml_read(x, "before");
}

const exec_device exec_device_cuda = {
    .name = "cuda",
    .elem_bytes = 2,
    .has_graphs = true,
    .probe = cuda_probe,
    .init = cuda_init,
    .prepare = cuda_prepare,
    .fini = cuda_fini,
    .compute = cuda_compute,
    .fork = cuda_fork,
    .join = cuda_join,
    .sync = cuda_sync,
    .timers_alloc = cuda_timers_alloc,
    .timer_record = cuda_timer_record,
    .timer_elapsed_us = cuda_timer_elapsed,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graphs_release = cuda_graphs_release,
    .comm_send = cuda_send,
    .comm_recv = cuda_recv,
    .comm_aux = cuda_aux,
    .residual_norm = cuda_residual_norm,
    .stream = cuda_stream,
    .to_host_float = cuda_to_host,
    .from_host_float = cuda_from_host,
    .fill_pattern = cuda_fill_pattern,
    .poison = cuda_poison,
    .check = cuda_check,
    .delay = cuda_delay,
    .describe = cuda_describe,
    .facts = dev_cuda_facts,
};
